// Package simproxy simulates Envoy proxies on the xDS wire, for the
// fan-out benchmarks (issue 30; docs/performance.md "Scaling"): a Proxy
// is one delta ADS stream on mutual TLS that subscribes, ACKs and
// reconnects as Envoy does, and counts what it receives; a Fleet is many
// of them, connected to one xDS server, and measures how long a change
// takes to reach them all. The standalone benchmarks (test/e2e) run
// fleets in their own process; the cluster benchmark runs the simfleet
// command on the cluster's node.
package simproxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"

	// Every extension type the translator writes, so that a listener's
	// typed configs decode (a Proxy walks them for names).
	_ "github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// Proxy is a simulated Envoy on the wire: one gRPC connection with mutual
// TLS (Credentials), one delta ADS stream with the node Envoy's bootstrap
// gives (its own id, the fleet's scope as the node's cluster). It
// subscribes as Envoy does: clusters and listeners as wildcards, then by
// name the ClusterLoadAssignments of the EDS clusters, the route
// configurations the connection managers name and the secrets fetched
// over ADS; it ACKs every response with its nonce, and
// NACKs none (the controller's configuration is valid). It decodes
// clusters and listeners only (to find those names): route
// configurations, ClusterLoadAssignments and secrets are counted, never
// decoded, so that the simulation costs the benchmark's process little
// beside the controller.
type Proxy struct {
	// ID is the node id; scope the node's cluster (the fleet's scope).
	ID    string
	scope string
	// RDS counts the route configuration responses ACKed; RDSAck is the
	// time of the last ACK, RDSRcv of the last one's arrival (Unix ns).
	RDS            atomic.Int64
	RDSAck, RDSRcv atomic.Int64
	// Clusters is how many clusters the proxy holds.
	Clusters atomic.Int64
	// Synced is closed when every type subscribed has had a response.
	Synced chan struct{}
	// bytes adds up the encoded size of every response received (all
	// proxies of a fleet share one counter).
	bytes *atomic.Int64
	// Reconnects counts the streams opened again after a failure.
	Reconnects atomic.Int64
	// LastErr is the last stream failure's message (a string).
	LastErr atomic.Value
	once    sync.Once
	// versions are the resources held, per type URL, name to version;
	// subscribed the names asked for, per type URL; answered the types
	// that had a response (run's goroutine only).
	versions   map[string]map[string]string
	subscribed map[string]map[string]bool
	answered   map[string]bool
}

// envoyWindow is Envoy's default HTTP/2 stream and connection window.
const envoyWindow = 256 << 20

// Credentials is the TLS configuration proxies connect with: the SVID and
// trust bundle in folder sds (the files Envoy's file-based SDS reads:
// bootstrap.SVIDCertFile, SVIDKeyFile and BundleFile, as the SVID agent
// and standalone mode write them), and the xDS server authorized by its
// SPIFFE ID: serverPath (for example "/ns/xds-system/sa/xds-controller")
// in the SVID's trust domain. It fails when a file is missing or does not
// parse, or serverPath is not a SPIFFE ID path.
func Credentials(sds, serverPath string) (*tls.Config, error) {
	svid, err := x509svid.Load(filepath.Join(sds, bootstrap.SVIDCertFile), filepath.Join(sds, bootstrap.SVIDKeyFile))
	if err != nil {
		return nil, fmt.Errorf("Envoy's SVID: %w", err)
	}
	td := svid.ID.TrustDomain()
	bundle, err := x509bundle.Load(td, filepath.Join(sds, bootstrap.BundleFile))
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	server, err := spiffeid.FromPath(td, serverPath)
	if err != nil {
		return nil, fmt.Errorf("the server's SPIFFE ID: %w", err)
	}
	cfg := tlsconfig.MTLSClientConfig(svid, bundle, tlsconfig.AuthorizeID(server))
	cfg.NextProtos = []string{"h2"}
	return cfg, nil
}

// run serves the proxy's ADS stream to the xDS server at addr until ctx
// ends. A stream that fails is opened again after a jittered backoff
// (0.5 s doubling to 30 s, as Envoy's gRPC mux), resuming with the
// versions it holds (initial_resource_versions), as Envoy does; a stream
// that is refused (PERMISSION_DENIED, a failed handshake) is an error.
func (p *Proxy) run(ctx context.Context, addr string, creds *tls.Config) error {
	p.versions = map[string]map[string]string{}
	p.subscribed = map[string]map[string]bool{}
	p.answered = map[string]bool{}
	backoff := 500 * time.Millisecond
	for {
		err := p.stream(ctx, addr, creds)
		if ctx.Err() != nil {
			return nil
		}
		if s, ok := status.FromError(err); ok && s.Code() == codes.PermissionDenied {
			return err
		}
		p.Reconnects.Add(1)
		p.LastErr.Store(err.Error())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff/2 + rand.N(backoff/2)):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// stream opens one ADS stream and serves it until it fails (its error)
// or ctx ends.
func (p *Proxy) stream(ctx context.Context, addr string, creds *tls.Config) error {
	// HTTP/2 windows of 256 MiB, Envoy's defaults for its xDS cluster
	// (http2_protocol_options initial_stream_window_size and
	// initial_connection_window_size): the server never waits for a
	// WINDOW_UPDATE, as with Envoy.
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(credentials.NewTLS(creds)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)),
		grpc.WithInitialWindowSize(envoyWindow), grpc.WithInitialConnWindowSize(envoyWindow))
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		return err
	}
	// Envoy's order: clusters first (the node on the first request only,
	// as set_node_on_first_message_only), then listeners, then what they
	// name; each with the versions held.
	node := &corev3.Node{Id: p.ID, Cluster: p.scope}
	for _, t := range []string{resource.ClusterType, resource.ListenerType, resource.EndpointType, resource.RouteType, resource.SecretType} {
		wildcard := t == resource.ClusterType || t == resource.ListenerType
		if !wildcard && len(p.subscribed[t]) == 0 {
			continue
		}
		req := &discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: t, InitialResourceVersions: p.versions[t]}
		for name := range p.subscribed[t] {
			req.ResourceNamesSubscribe = append(req.ResourceNamesSubscribe, name)
		}
		if err := stream.Send(req); err != nil {
			return err
		}
		node = nil
	}
	// answered are the types that had a response on any stream of the
	// proxy: a stream resumed with the versions held is sent nothing of
	// a type subscribed by name whose versions did not change (the xDS
	// protocol's "Incremental xDS": the server need not answer them).
	answered := p.answered
	for {
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		rcv := time.Now()
		p.bytes.Add(int64(proto.Size(resp)))
		typ := resp.GetTypeUrl()
		answered[typ] = true
		if p.versions[typ] == nil {
			p.versions[typ] = map[string]string{}
		}
		for _, name := range resp.GetRemovedResources() {
			delete(p.versions[typ], name)
		}
		// The names this response's resources need, per type.
		need := map[string][]string{}
		for _, r := range resp.GetResources() {
			p.versions[typ][r.GetName()] = r.GetVersion()
			if typ != resource.ClusterType && typ != resource.ListenerType {
				continue
			}
			m, err := r.GetResource().UnmarshalNew()
			if err != nil {
				return fmt.Errorf("%s %s: %w", typ, r.GetName(), err)
			}
			walkRefs(m.ProtoReflect(), func(t, name string) {
				if !p.subscribed[t][name] {
					if p.subscribed[t] == nil {
						p.subscribed[t] = map[string]bool{}
					}
					p.subscribed[t][name] = true
					need[t] = append(need[t], name)
				}
			})
		}
		if typ == resource.ClusterType {
			p.Clusters.Store(int64(len(p.versions[typ])))
		}
		if err := stream.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: typ, ResponseNonce: resp.GetNonce()}); err != nil {
			return err
		}
		if typ == resource.RouteType {
			p.RDSRcv.Store(rcv.UnixNano())
			p.RDSAck.Store(time.Now().UnixNano())
			p.RDS.Add(1)
		}
		for t, names := range need {
			if err := stream.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: t, ResourceNamesSubscribe: names}); err != nil {
				return err
			}
		}
		done := answered[resource.ClusterType] && answered[resource.ListenerType]
		for t := range p.subscribed {
			done = done && answered[t]
		}
		if done {
			p.once.Do(func() { close(p.Synced) })
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
