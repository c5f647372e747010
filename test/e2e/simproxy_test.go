package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"
	"github.com/xds-controller/xds-controller/pkg/standalone"

	// Every extension type the translator writes, so that a listener's
	// typed configs decode (simProxy walks them for names).
	_ "github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// simProxy is a simulated Envoy on the wire, for the fan-out benchmark: one
// gRPC connection with mutual TLS (standalone mode's Envoy SVID from its
// state folder, the server's SPIFFE ID checked), one delta ADS stream with
// the node standalone's bootstrap gives (its own id, the scope
// standalone.Scope). It subscribes as Envoy does: clusters and listeners
// as wildcards, then by name the ClusterLoadAssignments of the EDS
// clusters, the route configurations the connection managers name and the
// secrets fetched over ADS; it ACKs every response with its nonce, and
// NACKs none (the controller's configuration is valid). It decodes
// clusters and listeners only (to find those names): route
// configurations, ClusterLoadAssignments and secrets are counted, never
// decoded, so that the simulation costs the benchmark's process little
// beside the controller.
type simProxy struct {
	id string
	// rds counts the route configuration responses ACKed; rdsAck is the
	// time of the last ACK, rdsRecv of the last one's arrival (Unix ns).
	rds            atomic.Int64
	rdsAck, rdsRcv atomic.Int64
	// clusters is how many clusters the proxy holds.
	clusters atomic.Int64
	// synced is closed when every type subscribed has had a response.
	synced chan struct{}
	// bytes adds up the encoded size of every response received (all
	// proxies share one counter).
	bytes *atomic.Int64
}

// simCredentials is the TLS configuration simulated proxies connect with:
// standalone mode's Envoy SVID and bundle in state/sds, and the server's
// SPIFFE ID.
func simCredentials(state string) (*tls.Config, error) {
	sds := filepath.Join(state, "sds")
	svid, err := x509svid.Load(filepath.Join(sds, bootstrap.SVIDCertFile), filepath.Join(sds, bootstrap.SVIDKeyFile))
	if err != nil {
		return nil, fmt.Errorf("Envoy's SVID: %w", err)
	}
	td := svid.ID.TrustDomain()
	bundle, err := x509bundle.Load(td, filepath.Join(sds, bootstrap.BundleFile))
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	server := spiffeid.RequireFromPath(td, "/ns/standalone/sa/xds-controller")
	cfg := tlsconfig.MTLSClientConfig(svid, bundle, tlsconfig.AuthorizeID(server))
	cfg.NextProtos = []string{"h2"}
	return cfg, nil
}

// run connects to the xDS server at addr and serves the stream until ctx
// ends (nil then) or the stream fails (its error).
func (p *simProxy) run(ctx context.Context, addr string, creds *tls.Config) error {
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(credentials.NewTLS(creds)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		return err
	}
	var sendMu sync.Mutex
	send := func(r *discoveryv3.DeltaDiscoveryRequest) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(r)
	}
	// Envoy's order: clusters first (the node on the first request only,
	// as set_node_on_first_message_only), then listeners.
	if err := send(&discoveryv3.DeltaDiscoveryRequest{Node: &corev3.Node{Id: p.id, Cluster: standalone.Scope}, TypeUrl: resource.ClusterType}); err != nil {
		return err
	}
	if err := send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resource.ListenerType}); err != nil {
		return err
	}
	// subscribed are the names asked for per type, answered the types
	// that had a response.
	subscribed := map[string]map[string]bool{}
	answered := map[string]bool{}
	var once sync.Once
	for {
		resp, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		rcv := time.Now()
		p.bytes.Add(int64(proto.Size(resp)))
		typ := resp.GetTypeUrl()
		answered[typ] = true
		// The names this response's resources need, per type.
		need := map[string][]string{}
		switch typ {
		case resource.ClusterType, resource.ListenerType:
			for _, r := range resp.GetResources() {
				m, err := r.GetResource().UnmarshalNew()
				if err != nil {
					return fmt.Errorf("%s %s: %w", typ, r.GetName(), err)
				}
				walkRefs(m.ProtoReflect(), func(t, name string) {
					if !subscribed[t][name] {
						if subscribed[t] == nil {
							subscribed[t] = map[string]bool{}
						}
						subscribed[t][name] = true
						need[t] = append(need[t], name)
					}
				})
			}
			if typ == resource.ClusterType {
				p.clusters.Add(int64(len(resp.GetResources()) - len(resp.GetRemovedResources())))
			}
		}
		if err := send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: typ, ResponseNonce: resp.GetNonce()}); err != nil {
			return err
		}
		if typ == resource.RouteType {
			p.rdsRcv.Store(rcv.UnixNano())
			p.rdsAck.Store(time.Now().UnixNano())
			p.rds.Add(1)
		}
		for t, names := range need {
			if err := send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: t, ResourceNamesSubscribe: names}); err != nil {
				return err
			}
		}
		done := answered[resource.ClusterType] && answered[resource.ListenerType]
		for t := range subscribed {
			done = done && answered[t]
		}
		if done {
			once.Do(func() { close(p.synced) })
		}
	}
}

// walkRefs calls ref with the type URL and name of every resource that m
// names for a proxy to fetch over ADS: the ClusterLoadAssignment of an EDS
// cluster, the route configuration of a connection manager (RDS), and
// secrets whose SDS config is ADS. It descends into typed configs (Any).
func walkRefs(m protoreflect.Message, ref func(typeURL, name string)) {
	switch v := m.Interface().(type) {
	case *anypb.Any:
		inner, err := v.UnmarshalNew()
		if err == nil {
			walkRefs(inner.ProtoReflect(), ref)
		}
		return
	case *clusterv3.Cluster:
		if v.GetType() == clusterv3.Cluster_EDS {
			name := v.GetEdsClusterConfig().GetServiceName()
			if name == "" {
				name = v.GetName()
			}
			ref(resource.EndpointType, name)
		}
	case *hcmv3.Rds:
		ref(resource.RouteType, v.GetRouteConfigName())
		return
	case *tlsv3.SdsSecretConfig:
		if v.GetSdsConfig().GetAds() != nil {
			ref(resource.SecretType, v.GetName())
		}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			return true
		}
		switch {
		case fd.IsList():
			l := val.List()
			for i := range l.Len() {
				walkRefs(l.Get(i).Message(), ref)
			}
		case fd.IsMap():
			val.Map().Range(func(_ protoreflect.MapKey, v protoreflect.Value) bool {
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					walkRefs(v.Message(), ref)
				}
				return true
			})
		default:
			walkRefs(val.Message(), ref)
		}
		return true
	})
}
