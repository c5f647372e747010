package xdstranslator_test

import (
	"maps"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"

	"github.com/xds-controller/xds-controller/internal/xdstest"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// chainStats returns the stat_prefix of each filter chain of l (its HTTP
// connection manager or tcp_proxy) by chain name, and of its udp_proxy
// under "udp".
func chainStats(t *testing.T, l *listenerv3.Listener) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, fc := range l.FilterChains {
		for _, f := range fc.Filters {
			var hcm hcmv3.HttpConnectionManager
			var tcp tcpproxyv3.TcpProxy
			switch {
			case f.GetTypedConfig().UnmarshalTo(&hcm) == nil:
				out[fc.Name] = hcm.StatPrefix
			case f.GetTypedConfig().UnmarshalTo(&tcp) == nil:
				out[fc.Name] = tcp.StatPrefix
			default:
				t.Fatalf("listener %s chain %s: filter %s", l.Name, fc.Name, f.Name)
			}
		}
	}
	for _, f := range l.ListenerFilters {
		var udp udpproxyv3.UdpProxyConfig
		if f.GetTypedConfig().UnmarshalTo(&udp) == nil {
			out["udp"] = udp.StatPrefix
		}
	}
	return out
}

// TestStatNamesMapBackToGatewayListeners: every filter chain that serves
// one Gateway listener carries that listener's name as its stat_prefix,
// the HTTP connection manager that several share carries their Gateway
// and port, and every Envoy listener its Gateway and port; virtual hosts
// are named after the listener that owns them and their hostname.
func TestStatNamesMapBackToGatewayListeners(t *testing.T) {
	out := translate(t, xdstest.FeatureIR())
	r := out[scope]
	for name, want := range map[string]struct {
		listener string
		chains   map[string]string
	}{
		// Two HTTP listeners (no hostname, foo.example.com) share port 80.
		"listener/0.0.0.0/8080": {"default/gw/port=80", map[string]string{"http": "default/gw/port=80"}},
		"listener/0.0.0.0/8443": {"default/gw/port=443", map[string]string{
			"https/default/gw/https":              "default/gw/https",
			"https/default/gw/https-wild":         "default/gw/https-wild",
			"tls/default/gw/tls/pass.example.net": "default/gw/tls",
			"tls/default/gw/tls/*":                "default/gw/tls",
		}},
		"listener/0.0.0.0/5432":     {"default/gw/port=5432", map[string]string{"tcp/default/gw/tcp": "default/gw/tcp"}},
		"listener/0.0.0.0/5353/udp": {"default/gw/port=53/udp", map[string]string{"udp": "default/gw/udp"}},
	} {
		l := listener(t, r, name)
		if l.StatPrefix != want.listener {
			t.Errorf("listener %s: stat_prefix %q, want %q", name, l.StatPrefix, want.listener)
		}
		if got := chainStats(t, l); !maps.Equal(got, want.chains) {
			t.Errorf("listener %s: chain stat prefixes %v, want %v", name, got, want.chains)
		}
	}
	dedicated := listener(t, out["gateway/other/dedicated"], "listener/::/80")
	if got := chainStats(t, dedicated); dedicated.StatPrefix != "other/dedicated/port=80" || got["http"] != "other/dedicated/http" {
		t.Errorf("the dedicated Gateway's listener: %q, chains %v", dedicated.StatPrefix, got)
	}

	vhosts := map[string]string{}
	for _, vh := range routeConfig(t, r, "listener/0.0.0.0/8080").VirtualHosts {
		vhosts[vh.Domains[0]] = vh.Name
	}
	if want := map[string]string{
		"foo.example.com": "default/gw/http-foo/foo_example_com",
		"*.example.com":   "default/gw/http/*_example_com",
		"*":               "default/gw/http/*",
	}; !maps.Equal(vhosts, want) {
		t.Errorf("virtual hosts %v, want %v", vhosts, want)
	}
}

// TestRouteStatPrefix: an IR route with a StatName that forwards gets it as
// its Envoy stat_prefix (dots made "_"); a route that answers itself (a
// redirect) gets none, Envoy's route statistics counting upstream
// requests only; a route without StatName gets none.
func TestRouteStatPrefix(t *testing.T) {
	for _, tc := range []struct {
		what  string
		route *ir.HTTPRoute
		want  string
	}{
		{"forwarding", &ir.HTTPRoute{StatName: "httproute/default/web.v2/rule/1", Backends: group(backend("web", 1))}, "httproute/default/web_v2/rule/1"},
		{"weighted", &ir.HTTPRoute{StatName: "grpcroute/default/echo/rule/0", GRPC: true, Backends: group(backend("a", 1), backend("b", 1))}, "grpcroute/default/echo/rule/0"},
		{"redirect", &ir.HTTPRoute{StatName: "httproute/default/r/rule/0", Filters: ir.HTTPFilters{Redirect: &ir.Redirect{Scheme: "https", StatusCode: 301}}}, ""},
		{"direct response", &ir.HTTPRoute{StatName: "httproute/default/r/rule/0", DirectResponse: &ir.DirectResponse{StatusCode: 500}}, ""},
		{"no StatName", &ir.HTTPRoute{Backends: group(backend("web", 1))}, ""},
	} {
		got := oneRoute(t, tc.route)
		if got.StatPrefix != tc.want {
			t.Errorf("%s route: stat_prefix %q, want %q", tc.what, got.StatPrefix, tc.want)
		}
	}
}
