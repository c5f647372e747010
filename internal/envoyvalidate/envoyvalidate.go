// Package envoyvalidate checks xDS resources with a real Envoy: it folds
// one scope's dynamic resources into a static bootstrap and runs
// `envoy --mode validate` on it, which builds every listener, route,
// cluster and secret the way a serving Envoy would, without binding ports.
//
// The static bootstrap is the dynamic configuration with every indirection
// resolved in place:
//   - an HTTP connection manager's RDS reference becomes the inline
//     route_config (with validate_clusters off, because the reserved
//     xdstranslator.InvalidBackendCluster must stay undefined; Static checks
//     cluster references itself instead);
//   - an EDS cluster becomes a STATIC cluster whose load_assignment is its
//     ClusterLoadAssignment;
//   - SDS references over ADS (listener certificates, those of QUIC
//     chains inside QuicDownstreamTransport, and client certificates in
//     clusters' UpstreamTlsContext) lose their sds_config,
//     and the secrets go to static_resources.secrets, where Envoy resolves
//     a name-only reference.
//
// Static also checks the references Envoy would leave dangling in dynamic
// mode: every RDS name, EDS cluster, SDS secret and routed cluster must be
// defined (except the reserved invalid-backend cluster).
package envoyvalidate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"
	quicv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/quic/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// Validate runs `envoy --mode validate` on the static form of r. The error
// carries Envoy's own message when Envoy rejects the configuration, or
// warns that it uses a deprecated field.
func Validate(ctx context.Context, envoy string, r *xdstranslator.Resources) error {
	b, err := Static(r)
	if err != nil {
		return err
	}
	j, err := protojson.MarshalOptions{UseProtoNames: true, Multiline: true}.Marshal(b)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "envoyvalidate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bootstrap.json")
	if err := os.WriteFile(path, j, 0o600); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, envoy, "--mode", "validate", "-c", path,
		"--log-level", "warn", "--disable-hot-restart")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("envoy rejected the configuration (%v):\n%s", err, out)
	}
	// A deprecated field loads today and breaks on a later Envoy: refuse
	// it now.
	var deprecated []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(strings.ToLower(line), "deprecated") {
			deprecated = append(deprecated, strings.TrimSpace(line))
		}
	}
	if len(deprecated) > 0 {
		return fmt.Errorf("envoy accepted the configuration with deprecated fields:\n%s", strings.Join(deprecated, "\n"))
	}
	return nil
}

// Static folds the resources of one scope into a static bootstrap (see the
// package comment) and checks that every reference between them resolves.
func Static(r *xdstranslator.Resources) (*bootstrapv3.Bootstrap, error) {
	routes := map[string]*routev3.RouteConfiguration{}
	for _, res := range r.Routes {
		rc := res.(*routev3.RouteConfiguration)
		routes[rc.Name] = rc
	}
	clas := map[string]*endpointv3.ClusterLoadAssignment{}
	for _, res := range r.Endpoints {
		cla := res.(*endpointv3.ClusterLoadAssignment)
		clas[cla.ClusterName] = cla
	}
	secrets := map[string]bool{}
	sr := &bootstrapv3.Bootstrap_StaticResources{}
	for _, res := range r.Secrets {
		s := proto.Clone(res.(*tlsv3.Secret)).(*tlsv3.Secret)
		secrets[s.Name] = true
		sr.Secrets = append(sr.Secrets, s)
	}
	clusters := map[string]bool{}
	var errs []error
	for _, res := range r.Clusters {
		c := proto.Clone(res.(*clusterv3.Cluster)).(*clusterv3.Cluster)
		clusters[c.Name] = true
		if c.GetType() == clusterv3.Cluster_EDS {
			cla, ok := clas[c.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("cluster %s: no ClusterLoadAssignment", c.Name))
				continue
			}
			c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
			c.EdsClusterConfig = nil
			c.LoadAssignment = proto.Clone(cla).(*endpointv3.ClusterLoadAssignment)
		}
		if ts := c.TransportSocket; ts != nil {
			// A PROXY protocol socket (BackendPolicy proxyProtocol) wraps
			// the raw or TLS one.
			var pp proxyprotocolv3.ProxyProtocolUpstreamTransport
			wrapped := ts.GetTypedConfig().MessageIs(&pp)
			if wrapped {
				if err := ts.GetTypedConfig().UnmarshalTo(&pp); err != nil {
					return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
				}
				ts = pp.TransportSocket
			}
			// A client certificate presented to the backend (Gateway
			// spec.tls.backend) is an SDS reference too.
			var tc tlsv3.UpstreamTlsContext
			if ts.GetTypedConfig().MessageIs(&tc) {
				if err := ts.GetTypedConfig().UnmarshalTo(&tc); err != nil {
					return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
				}
				for _, sds := range tc.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
					if !secrets[sds.Name] {
						errs = append(errs, fmt.Errorf("cluster %s: secret %q is not defined", c.Name, sds.Name))
					}
					sds.SdsConfig = nil
				}
				ts.ConfigType = &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(&tc)}
			}
			if wrapped {
				c.TransportSocket.ConfigType = &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(&pp)}
			}
		}
		sr.Clusters = append(sr.Clusters, c)
	}
	ref := func(where, cluster string) {
		if cluster != xdstranslator.InvalidBackendCluster && !clusters[cluster] {
			errs = append(errs, fmt.Errorf("%s: cluster %q is not defined", where, cluster))
		}
	}
	for _, res := range r.Listeners {
		l := proto.Clone(res.(*listenerv3.Listener)).(*listenerv3.Listener)
		for _, lf := range l.ListenerFilters {
			var u udpproxyv3.UdpProxyConfig
			if a := lf.GetTypedConfig(); a != nil && a.MessageIs(&u) {
				if err := a.UnmarshalTo(&u); err != nil {
					return nil, err
				}
				if act := u.GetMatcher().GetOnNoMatch().GetAction(); act != nil {
					var route udpproxyv3.Route
					if err := act.GetTypedConfig().UnmarshalTo(&route); err != nil {
						return nil, err
					}
					ref("listener "+l.Name, route.Cluster)
				}
			}
		}
		for _, fc := range l.FilterChains {
			where := "listener " + l.Name + " filter chain " + fc.Name
			if ts := fc.TransportSocket; ts != nil {
				// A QUIC chain (HTTP/3) wraps the TLS context.
				var q quicv3.QuicDownstreamTransport
				quic := ts.GetTypedConfig().MessageIs(&q)
				tc := &tlsv3.DownstreamTlsContext{}
				if quic {
					if err := ts.GetTypedConfig().UnmarshalTo(&q); err != nil {
						return nil, fmt.Errorf("%s: %w", where, err)
					}
					tc = q.GetDownstreamTlsContext()
				} else if err := ts.GetTypedConfig().UnmarshalTo(tc); err != nil {
					return nil, fmt.Errorf("%s: %w", where, err)
				}
				for _, sds := range tc.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
					if !secrets[sds.Name] {
						errs = append(errs, fmt.Errorf("%s: secret %q is not defined", where, sds.Name))
					}
					sds.SdsConfig = nil
				}
				if quic {
					ts.ConfigType = &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(&q)}
				} else {
					ts.ConfigType = &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(tc)}
				}
			}
			for _, f := range fc.Filters {
				a := f.GetTypedConfig()
				switch {
				case a.MessageIs(&hcmv3.HttpConnectionManager{}):
					var h hcmv3.HttpConnectionManager
					if err := a.UnmarshalTo(&h); err != nil {
						return nil, fmt.Errorf("%s: %w", where, err)
					}
					name := h.GetRds().GetRouteConfigName()
					rc, ok := routes[name]
					if !ok {
						errs = append(errs, fmt.Errorf("%s: route configuration %q is not defined", where, name))
						continue
					}
					rc = proto.Clone(rc).(*routev3.RouteConfiguration)
					rc.ValidateClusters = wrapperspb.Bool(false)
					routeRefs(rc, ref)
					h.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc}
					f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(&h)}
				case a.MessageIs(&tcpproxyv3.TcpProxy{}):
					var p tcpproxyv3.TcpProxy
					if err := a.UnmarshalTo(&p); err != nil {
						return nil, fmt.Errorf("%s: %w", where, err)
					}
					if c := p.GetCluster(); c != "" {
						ref(where, c)
					}
					for _, w := range p.GetWeightedClusters().GetClusters() {
						ref(where, w.Name)
					}
				}
			}
		}
		sr.Listeners = append(sr.Listeners, l)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &bootstrapv3.Bootstrap{
		Node:            &corev3.Node{Id: "envoyvalidate", Cluster: "envoyvalidate"},
		StaticResources: sr,
	}, nil
}

func routeRefs(rc *routev3.RouteConfiguration, ref func(where, cluster string)) {
	for _, vh := range rc.VirtualHosts {
		for _, r := range vh.Routes {
			where := "route configuration " + rc.Name + " route " + r.Name
			a := r.GetRoute()
			if a == nil {
				continue
			}
			if c := a.GetCluster(); c != "" {
				ref(where, c)
			}
			for _, w := range a.GetWeightedClusters().GetClusters() {
				ref(where, w.Name)
			}
			for _, m := range a.RequestMirrorPolicies {
				ref(where, m.Cluster)
			}
		}
	}
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return a
}
