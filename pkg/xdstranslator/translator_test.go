package xdstranslator_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"

	"github.com/xds-controller/xds-controller/internal/xdstest"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
	"github.com/xds-controller/xds-controller/pkg/xdsvalidate"
)

const scope = "gatewayclass/xds"

func translate(t testing.TB, x *ir.IR) map[string]*xdstranslator.Resources {
	t.Helper()
	if err := x.Validate(); err != nil {
		t.Fatalf("invalid IR: %v", err)
	}
	out, err := xdstranslator.Translate(x)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// oneRoute translates one HTTP route on an HTTP listener and returns the
// Envoy route.
func oneRoute(t *testing.T, r *ir.HTTPRoute) *routev3.Route {
	t.Helper()
	x := oneRouteIR(r)
	rc := routeConfig(t, translate(t, x)[scope], "listener/0.0.0.0/80")
	return rc.VirtualHosts[0].Routes[0]
}

// oneRouteIR is the IR of oneRoute.
func oneRouteIR(r *ir.HTTPRoute) *ir.IR {
	if r.Name == "" {
		r.Name = "httproute/default/r/rule/0/match/0"
	}
	if r.Hostname == "" {
		r.Hostname = "*"
	}
	return &ir.IR{Gateways: []*ir.Gateway{{Namespace: "default", Name: "gw", Scope: scope, Listeners: []*ir.Listener{
		{Name: "default/gw/http", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 80, GatewayPort: 80, HTTPRoutes: []*ir.HTTPRoute{r}},
	}}}}
}

func routeConfig(t *testing.T, r *xdstranslator.Resources, name string) *routev3.RouteConfiguration {
	t.Helper()
	for _, res := range r.Routes {
		if rc := res.(*routev3.RouteConfiguration); rc.Name == name {
			return rc
		}
	}
	t.Fatalf("no route configuration %q", name)
	return nil
}

func listener(t *testing.T, r *xdstranslator.Resources, name string) *listenerv3.Listener {
	t.Helper()
	for _, res := range r.Listeners {
		if l := res.(*listenerv3.Listener); l.Name == name {
			return l
		}
	}
	t.Fatalf("no listener %q", name)
	return nil
}

func backend(name string, weight uint32) *ir.Backend {
	return xdstest.Service("default", name, 80, weight, 1)
}

func group(bs ...*ir.Backend) *ir.BackendGroup { return &ir.BackendGroup{Backends: bs} }

func TestPathMatch(t *testing.T) {
	for _, tc := range []struct {
		match *ir.StringMatch
		want  string // RouteMatch in text form, trimmed
	}{
		{nil, `prefix:"/"`},
		{&ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/"}, `prefix:"/"`},
		{&ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/foo"}, `path_separated_prefix:"/foo"`},
		{&ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/foo/"}, `path_separated_prefix:"/foo"`},
		{&ir.StringMatch{Type: ir.MatchExact, Value: "/foo/"}, `path:"/foo/"`},
		{&ir.StringMatch{Type: ir.MatchRegex, Value: "/f.o"}, `safe_regex:{regex:"/f.o"}`},
	} {
		r := oneRoute(t, &ir.HTTPRoute{Match: ir.HTTPMatch{Path: tc.match}, Backends: group(backend("web", 1))})
		got := strings.ReplaceAll(r.Match.String(), " ", "")
		if got != strings.ReplaceAll(tc.want, " ", "") {
			t.Errorf("%+v: got %s, want %s", tc.match, got, tc.want)
		}
	}
}

func TestHeaderQueryMethodMatch(t *testing.T) {
	r := oneRoute(t, &ir.HTTPRoute{Match: ir.HTTPMatch{
		Method:      "POST",
		Headers:     []ir.StringMatch{{Name: "X-A", Type: ir.MatchExact, Value: "1"}, {Name: "x-b", Type: ir.MatchRegex, Value: "b+"}},
		QueryParams: []ir.StringMatch{{Name: "q", Type: ir.MatchExact, Value: "v"}},
	}, Backends: group(backend("web", 1))})
	h := r.Match.Headers
	if len(h) != 3 || h[0].Name != ":method" || h[0].GetStringMatch().GetExact() != "POST" ||
		h[1].Name != "x-a" || h[1].GetStringMatch().GetExact() != "1" ||
		h[2].GetStringMatch().GetSafeRegex().GetRegex() != "b+" {
		t.Errorf("headers: %v", h)
	}
	if q := r.Match.QueryParameters; len(q) != 1 || q[0].Name != "q" || q[0].GetStringMatch().GetExact() != "v" {
		t.Errorf("query parameters: %v", q)
	}
}

func TestBackends(t *testing.T) {
	invalid := &ir.Backend{Name: "service/default/missing/80", Weight: 20, Invalid: true}
	t.Run("single", func(t *testing.T) {
		r := oneRoute(t, &ir.HTTPRoute{Backends: group(backend("web", 1), backend("zero", 0))})
		if got := r.GetRoute().GetCluster(); got != "service/default/web/80" {
			t.Errorf("cluster %q", got)
		}
	})
	t.Run("invalid share gets 500", func(t *testing.T) {
		r := oneRoute(t, &ir.HTTPRoute{Backends: group(backend("web", 80), invalid, backend("zero", 0))})
		a := r.GetRoute()
		var got []string
		for _, c := range a.GetWeightedClusters().GetClusters() {
			got = append(got, c.Name+"="+c.Weight.String())
		}
		want := []string{"service/default/web/80=value:80", xdstranslator.InvalidBackendCluster + "=value:20"}
		if !slices.Equal(got, want) {
			t.Errorf("weighted clusters %v, want %v", got, want)
		}
		if a.ClusterNotFoundResponseCode != routev3.RouteAction_INTERNAL_SERVER_ERROR {
			t.Errorf("cluster_not_found_response_code %v", a.ClusterNotFoundResponseCode)
		}
	})
	for name, g := range map[string]*ir.BackendGroup{
		"all weights zero": group(backend("web", 0), backend("api", 0)),
		"only invalid":     group(invalid),
	} {
		t.Run(name, func(t *testing.T) {
			r := oneRoute(t, &ir.HTTPRoute{Backends: g})
			if got := r.GetDirectResponse().GetStatus(); got != 500 {
				t.Errorf("want direct response 500, got %v", r.Action)
			}
		})
	}
	t.Run("backend filters", func(t *testing.T) {
		b := backend("web", 1)
		b.RequestHeaders = &ir.HeaderModifier{Set: []ir.Header{{Name: "x-b", Value: "1"}}}
		r := oneRoute(t, &ir.HTTPRoute{Backends: group(b)})
		cs := r.GetRoute().GetWeightedClusters().GetClusters()
		if len(cs) != 1 || len(cs[0].RequestHeadersToAdd) != 1 || cs[0].RequestHeadersToAdd[0].Header.Key != "x-b" {
			t.Errorf("want one weighted cluster with the backend's header, got %v", cs)
		}
	})
}

func TestRedirect(t *testing.T) {
	codes := map[uint32]routev3.RedirectAction_RedirectResponseCode{
		301: routev3.RedirectAction_MOVED_PERMANENTLY, 302: routev3.RedirectAction_FOUND,
		303: routev3.RedirectAction_SEE_OTHER, 307: routev3.RedirectAction_TEMPORARY_REDIRECT,
		308: routev3.RedirectAction_PERMANENT_REDIRECT,
	}
	for code, want := range codes {
		r := oneRoute(t, &ir.HTTPRoute{Filters: ir.HTTPFilters{Redirect: &ir.Redirect{StatusCode: code}}})
		if got := r.GetRedirect().GetResponseCode(); got != want {
			t.Errorf("%d: got %v, want %v", code, got, want)
		}
	}
	r := oneRoute(t, &ir.HTTPRoute{Filters: ir.HTTPFilters{Redirect: &ir.Redirect{Scheme: "https", StatusCode: 301}}})
	if rd := r.GetRedirect(); rd.GetSchemeRedirect() != "https" || rd.PortRedirect != 443 {
		t.Errorf("a scheme change without a port goes to the scheme's port: %v", rd)
	}
	r = oneRoute(t, &ir.HTTPRoute{Filters: ir.HTTPFilters{Redirect: &ir.Redirect{Hostname: "b.com", StatusCode: 302}}})
	if rd := r.GetRedirect(); rd.HostRedirect != "b.com" || rd.PortRedirect != 80 {
		t.Errorf("no scheme and no port: the listener's port 80 (left out of Location by Envoy): %v", rd)
	}
}

// HTTPRequestRedirectFilter.port: without a scheme or port, the redirect
// goes to the Gateway listener's port, not the request's Host port and not
// the port Envoy binds (conformance HTTPRouteRedirectPortAndScheme).
func TestRedirectWithoutSchemeKeepsTheListenerPort(t *testing.T) {
	r := &ir.HTTPRoute{Name: "httproute/default/r/rule/0/match/0", Hostname: "*",
		Filters: ir.HTTPFilters{Redirect: &ir.Redirect{Hostname: "example.org", StatusCode: 302}}}
	x := &ir.IR{Gateways: []*ir.Gateway{{Namespace: "default", Name: "gw", Scope: scope, Listeners: []*ir.Listener{
		{Name: "default/gw/http", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 18080, GatewayPort: 8080, HTTPRoutes: []*ir.HTTPRoute{r}},
	}}}}
	rd := routeConfig(t, translate(t, x)[scope], "listener/0.0.0.0/18080").VirtualHosts[0].Routes[0].GetRedirect()
	if rd.HostRedirect != "example.org" || rd.PortRedirect != 8080 {
		t.Errorf("redirect %v: want host example.org, port 8080", rd)
	}
	r.Filters.Redirect = &ir.Redirect{Scheme: "http", StatusCode: 302}
	rd = routeConfig(t, translate(t, x)[scope], "listener/0.0.0.0/18080").VirtualHosts[0].Routes[0].GetRedirect()
	if rd.PortRedirect != 80 {
		t.Errorf("scheme http without a port: port %d, want 80", rd.PortRedirect)
	}
	r.Filters.Redirect = &ir.Redirect{Port: 9090, StatusCode: 302}
	rd = routeConfig(t, translate(t, x)[scope], "listener/0.0.0.0/18080").VirtualHosts[0].Routes[0].GetRedirect()
	if rd.PortRedirect != 9090 {
		t.Errorf("explicit port: %d, want 9090", rd.PortRedirect)
	}
}

func TestPathModifiers(t *testing.T) {
	prefix := func(v string) *ir.StringMatch { return &ir.StringMatch{Type: ir.MatchPathPrefix, Value: v} }
	for _, tc := range []struct {
		match       *ir.StringMatch
		mod         ir.PathModifier
		prefix      string // prefix_rewrite
		regex, subs string // regex_rewrite
	}{
		{prefix("/foo"), ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/bar"}, "/bar", "", ""},
		{prefix("/foo/"), ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/bar/"}, "/bar", "", ""},
		{prefix("/foo"), ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/"}, "", "^/foo/*", "/"},
		{prefix("/"), ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/bar"}, "/bar/", "", ""},
		{prefix("/"), ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/"}, "", "", ""},
		{prefix("/a.b"), ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: "/"}, "", `^/a\.b/*`, "/"},
		{nil, ir.PathModifier{Type: ir.ReplaceFullPath, Value: "/full"}, "", "^/.*$", "/full"},
	} {
		r := oneRoute(t, &ir.HTTPRoute{Match: ir.HTTPMatch{Path: tc.match}, Backends: group(backend("web", 1)),
			Filters: ir.HTTPFilters{URLRewrite: &ir.URLRewrite{Path: &tc.mod}}})
		a := r.GetRoute()
		if a.PrefixRewrite != tc.prefix || a.GetRegexRewrite().GetPattern().GetRegex() != tc.regex || a.GetRegexRewrite().GetSubstitution() != tc.subs {
			t.Errorf("%v %v: got prefix %q regex %v", tc.match, tc.mod, a.PrefixRewrite, a.GetRegexRewrite())
		}
		// The same modifier in a redirect.
		r = oneRoute(t, &ir.HTTPRoute{Match: ir.HTTPMatch{Path: tc.match},
			Filters: ir.HTTPFilters{Redirect: &ir.Redirect{StatusCode: 302, Path: &tc.mod}}})
		rd := r.GetRedirect()
		if tc.mod.Type == ir.ReplaceFullPath {
			if rd.GetPathRedirect() != tc.mod.Value {
				t.Errorf("redirect %v: path_redirect %q", tc.mod, rd.GetPathRedirect())
			}
			continue
		}
		if rd.GetPrefixRewrite() != tc.prefix || rd.GetRegexRewrite().GetPattern().GetRegex() != tc.regex {
			t.Errorf("redirect %v %v: got %v", tc.match, tc.mod, rd)
		}
	}
}

// TestHeaderModifiers renders header modifiers; the Host and
// pseudo-header edits in it cannot come from pkg/gatewayapi (ir.Validate
// refuses them), and modifiable leaves them out rather than have Envoy
// refuse the whole route configuration.
func TestHeaderModifiers(t *testing.T) {
	x := oneRouteIR(&ir.HTTPRoute{Backends: group(backend("web", 1)), Filters: ir.HTTPFilters{
		RequestHeaders:  &ir.HeaderModifier{Set: []ir.Header{{Name: "x-s", Value: "1"}, {Name: "Host", Value: "no"}}, Add: []ir.Header{{Name: "x-a", Value: "2"}}, Remove: []string{"x-r", ":path"}},
		ResponseHeaders: &ir.HeaderModifier{Add: []ir.Header{{Name: "x-resp", Value: "3"}, {Name: ":status", Value: "201"}}, Remove: []string{"host"}},
	}})
	if err := x.Validate(); err == nil || !strings.Contains(err.Error(), `edits "Host"`) {
		t.Errorf("ir.Validate = %v, want the Host edit refused", err)
	}
	out, err := xdstranslator.Translate(x)
	if err != nil {
		t.Fatal(err)
	}
	r := routeConfig(t, out[scope], "listener/0.0.0.0/80").VirtualHosts[0].Routes[0]
	add := r.RequestHeadersToAdd
	if len(add) != 2 || add[0].Header.Key != "x-s" || add[0].AppendAction.String() != "OVERWRITE_IF_EXISTS_OR_ADD" ||
		add[1].Header.Key != "x-a" || add[1].AppendAction.String() != "APPEND_IF_EXISTS_OR_ADD" {
		t.Errorf("request_headers_to_add %v", add)
	}
	if !slices.Equal(r.RequestHeadersToRemove, []string{"x-r"}) {
		t.Errorf("request_headers_to_remove %v", r.RequestHeadersToRemove)
	}
	if len(r.ResponseHeadersToAdd) != 1 || len(r.ResponseHeadersToRemove) != 0 {
		t.Errorf("response_headers_to_add %v, response_headers_to_remove %v", r.ResponseHeadersToAdd, r.ResponseHeadersToRemove)
	}
}

// TestBackendHostRewrite: a backend's Host rewrite is its weighted
// cluster's host_rewrite_literal, even when it is the only backend; the
// route's own host rewrite stays unset.
func TestBackendHostRewrite(t *testing.T) {
	web, api := backend("web", 1), backend("api", 1)
	web.HostRewrite = "web.internal:8080"
	for _, bs := range [][]*ir.Backend{{web}, {web, api}} {
		ra := oneRoute(t, &ir.HTTPRoute{Backends: group(bs...)}).GetRoute()
		cs := ra.GetWeightedClusters().GetClusters()
		if len(cs) != len(bs) || ra.GetHostRewriteLiteral() != "" {
			t.Fatalf("%d backends: route action %v, want one weighted cluster each and no route host rewrite", len(bs), ra)
		}
		if got := cs[0].GetHostRewriteLiteral(); got != "web.internal:8080" {
			t.Errorf("%d backends: web host_rewrite_literal %q", len(bs), got)
		}
		if len(cs) > 1 && cs[1].GetHostRewriteSpecifier() != nil {
			t.Errorf("api has a host rewrite: %v", cs[1])
		}
	}
}

// TestHeaderValuesAreLiteral: Envoy reads header values as format strings,
// so "%" must reach it as "%%" to be sent as written.
func TestHeaderValuesAreLiteral(t *testing.T) {
	r := oneRoute(t, &ir.HTTPRoute{Backends: group(backend("web", 1)), Filters: ir.HTTPFilters{
		RequestHeaders:  &ir.HeaderModifier{Set: []ir.Header{{Name: "x-pct", Value: "50% of %DOWNSTREAM_REMOTE_ADDRESS%"}}},
		ResponseHeaders: &ir.HeaderModifier{Add: []ir.Header{{Name: "x-pct", Value: "100%"}}},
	}})
	if got := r.RequestHeadersToAdd[0].Header.Value; got != "50%% of %%DOWNSTREAM_REMOTE_ADDRESS%%" {
		t.Errorf("request header value = %q, want every %% doubled", got)
	}
	if got := r.ResponseHeadersToAdd[0].Header.Value; got != "100%%" {
		t.Errorf("response header value = %q, want 100%%%%", got)
	}
}

func TestTimeoutsAndRetries(t *testing.T) {
	d := ir.NewDuration
	for _, tc := range []struct {
		name     string
		timeouts *ir.Timeouts
		retry    *ir.Retry
		timeout  string // RouteAction.timeout, "" for unset
		perTry   string
		retries  string
	}{
		{"none", nil, nil, "", "", ""},
		{"request", &ir.Timeouts{Request: d(5 * time.Second)}, nil, "5s", "", ""},
		{"disabled", &ir.Timeouts{Request: d(0)}, nil, "0s", "", ""},
		{"backend only", &ir.Timeouts{BackendRequest: d(2 * time.Second)}, nil, "2s", "2s", "0"},
		{"backend with retries", &ir.Timeouts{BackendRequest: d(2 * time.Second)}, &ir.Retry{Attempts: 2}, "6s", "2s", "2"},
		{"both", &ir.Timeouts{Request: d(10 * time.Second), BackendRequest: d(2 * time.Second)}, &ir.Retry{Attempts: 1, Codes: []uint32{503}}, "10s", "2s", "1"},
	} {
		r := oneRoute(t, &ir.HTTPRoute{Backends: group(backend("web", 1)), Timeouts: tc.timeouts, Retry: tc.retry})
		a := r.GetRoute()
		str := func(dur interface{ AsDuration() time.Duration }, set bool) string {
			if !set {
				return ""
			}
			return dur.AsDuration().String()
		}
		gotRetries := ""
		if a.RetryPolicy != nil {
			gotRetries = a.RetryPolicy.NumRetries.String()
			gotRetries = strings.TrimPrefix(gotRetries, "value:")
			if gotRetries == "" {
				gotRetries = "0"
			}
		}
		if got := str(a.Timeout, a.Timeout != nil); got != tc.timeout {
			t.Errorf("%s: timeout %q, want %q", tc.name, got, tc.timeout)
		}
		if got := str(a.GetRetryPolicy().GetPerTryTimeout(), a.GetRetryPolicy().GetPerTryTimeout() != nil); got != tc.perTry {
			t.Errorf("%s: per_try_timeout %q, want %q", tc.name, got, tc.perTry)
		}
		if gotRetries != tc.retries {
			t.Errorf("%s: num_retries %q, want %q", tc.name, gotRetries, tc.retries)
		}
		if tc.retry != nil && len(tc.retry.Codes) > 0 && !strings.Contains(a.RetryPolicy.RetryOn, "retriable-status-codes") {
			t.Errorf("%s: retry_on %q", tc.name, a.RetryPolicy.RetryOn)
		}
	}
}

func TestFeatureIR(t *testing.T) {
	out := translate(t, xdstest.FeatureIR())
	if len(out) != 2 {
		t.Fatalf("want 2 scopes, got %d", len(out))
	}
	r := out[scope]

	// Every list is sorted by name.
	for _, list := range [][]types.Resource{r.Listeners, r.Routes, r.Clusters, r.Endpoints, r.Secrets} {
		names := resourceNames(list)
		if !slices.IsSorted(names) {
			t.Errorf("not sorted: %v", names)
		}
	}
	if got, want := resourceNames(r.Listeners), []string{"listener/0.0.0.0/5353/udp", "listener/0.0.0.0/5432", "listener/0.0.0.0/8080", "listener/0.0.0.0/8443"}; !slices.Equal(got, want) {
		t.Errorf("listeners %v, want %v (no listener for a TCP listener without routes)", got, want)
	}

	// Virtual hosts: specific first; the route for foo.example.com on the
	// listener without hostname is shadowed by listener http-foo.
	rc := routeConfig(t, r, "listener/0.0.0.0/8080")
	var hosts []string
	for _, vh := range rc.VirtualHosts {
		hosts = append(hosts, vh.Domains[0])
		for _, route := range vh.Routes {
			if strings.Contains(route.Name, "shadowed") {
				t.Errorf("shadowed route %s is in virtual host %s", route.Name, vh.Name)
			}
		}
	}
	if want := []string{"foo.example.com", "*.example.com", "*"}; !slices.Equal(hosts, want) {
		t.Errorf("virtual hosts %v, want %v", hosts, want)
	}
	if !rc.IgnorePortInHostMatching {
		t.Error("ignore_port_in_host_matching is off")
	}
	// The HTTPS wildcard listener gets an empty virtual host for its own
	// hostname, and answers 421 for the host of the more specific HTTPS
	// listener on its port (secure.example.com) and for every host it does
	// not cover ("*"): a client reusing its HTTP/2 connection for them is
	// misdirected.
	vhs := routeConfig(t, r, "listener/0.0.0.0/8443/default/gw/https-wild").VirtualHosts
	got := map[string]string{}
	for _, v := range vhs {
		what := fmt.Sprintf("%d routes", len(v.Routes))
		if len(v.Routes) == 1 && v.Routes[0].GetDirectResponse() != nil {
			what = fmt.Sprint(v.Routes[0].GetDirectResponse().GetStatus())
		}
		got[v.Domains[0]] = what
	}
	if want := map[string]string{"secure.example.com": "421", "bar.example.com": "1 routes", "*.example.com": "0 routes", "*": "421"}; !maps.Equal(got, want) {
		t.Errorf("https-wild virtual hosts %v, want %v", got, want)
	}

	// TLS port: HTTPS chains by SNI, then passthrough chains; the
	// passthrough route's secure.example.com loses to the HTTPS listener.
	l := listener(t, r, "listener/0.0.0.0/8443")
	var chains []string
	for _, fc := range l.FilterChains {
		chains = append(chains, fc.Name)
	}
	if want := []string{"https/default/gw/https", "https/default/gw/https-wild", "tls/default/gw/tls/pass.example.net", "tls/default/gw/tls/*"}; !slices.Equal(chains, want) {
		t.Errorf("filter chains %v, want %v", chains, want)
	}
	if len(l.ListenerFilters) != 1 || l.ListenerFilters[0].Name != "envoy.filters.listener.tls_inspector" {
		t.Errorf("listener filters %v", l.ListenerFilters)
	}

	// Clusters: valid backends and mirrors, never the invalid one; DNS
	// endpoints make a STRICT_DNS cluster without ClusterLoadAssignment.
	clusters := map[string]*clusterv3.Cluster{}
	for _, res := range r.Clusters {
		c := res.(*clusterv3.Cluster)
		clusters[c.Name] = c
	}
	for _, name := range []string{"service/default/mirror/80", "service/default/web/80", "service/default/dns/53"} {
		if clusters[name] == nil {
			t.Errorf("no cluster %s", name)
		}
	}
	if clusters["service/default/missing/80"] != nil || clusters[xdstranslator.InvalidBackendCluster] != nil {
		t.Error("an invalid backend has a cluster")
	}
	if c := clusters["service/default/external/80"]; c.GetType() != clusterv3.Cluster_STRICT_DNS || c.LoadAssignment == nil {
		t.Errorf("external: %v", c)
	}
	if slices.Contains(resourceNames(r.Endpoints), "service/default/external/80") {
		t.Error("a STRICT_DNS cluster has a ClusterLoadAssignment")
	}
	if c := clusters["service/default/grpc/9000"]; c.TypedExtensionProtocolOptions["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"] == nil {
		t.Error("h2c backend without HTTP/2 protocol options")
	}
	if c := clusters["service/default/web/80"]; c.TransportSocket != nil || len(c.TypedExtensionProtocolOptions) != 0 {
		t.Error("plain HTTP/1.1 backend with TLS or protocol options")
	}
	// A backend client certificate: the cluster of its own presents it
	// from SDS; the same Service port without one does not.
	for name, want := range map[string][]string{
		"service/default/secure/443": nil,
		"service/default/secure/443/client-certificate/default/backend-client": {"default/backend-client"},
	} {
		var tc tlsv3.UpstreamTlsContext
		if err := clusters[name].GetTransportSocket().GetTypedConfig().UnmarshalTo(&tc); err != nil {
			t.Fatalf("cluster %s: %v", name, err)
		}
		var got []string
		for _, sds := range tc.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs() {
			if sds.GetSdsConfig().GetAds() == nil {
				t.Errorf("cluster %s: secret %s is not fetched over ADS", name, sds.Name)
			}
			got = append(got, sds.Name)
		}
		if !slices.Equal(got, want) || tc.Sni != "backend.internal" {
			t.Errorf("cluster %s presents %v (SNI %q), want %v", name, got, tc.Sni, want)
		}
	}
	if got := resourceNames(r.Secrets); !slices.Equal(got, []string{"default/backend-client", "default/example-tls"}) {
		t.Errorf("secrets %v", got)
	}
}

func resourceNames(list []types.Resource) []string {
	var names []string
	for _, r := range list {
		switch v := r.(type) {
		case interface{ GetName() string }:
			names = append(names, v.GetName())
		case interface{ GetClusterName() string }:
			names = append(names, v.GetClusterName())
		}
	}
	return names
}

func marshalAll(t testing.TB, out map[string]*xdstranslator.Resources) []byte {
	var buf bytes.Buffer
	for _, s := range []string{scope, "gateway/other/dedicated"} {
		r := out[s]
		for _, list := range [][]types.Resource{r.Listeners, r.Routes, r.Clusters, r.Endpoints, r.Secrets} {
			for _, res := range list {
				b, err := proto.MarshalOptions{Deterministic: true}.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				buf.Write(b)
			}
		}
	}
	return buf.Bytes()
}

func TestDeterministic(t *testing.T) {
	x := xdstest.FeatureIR()
	a := marshalAll(t, translate(t, x))
	for range 5 {
		if b := marshalAll(t, translate(t, x.DeepCopy())); !bytes.Equal(a, b) {
			t.Fatal("two translations of the same IR differ")
		}
	}
}

// TestInvalidValueIsLeftToPreValidation: a value that breaks Envoy's
// protoc-gen-validate rules is rendered, and pkg/xdsvalidate names the
// route it is in, so that the HTTPRoute rule behind it can be blamed.
func TestInvalidValueIsLeftToPreValidation(t *testing.T) {
	x := xdstest.ScaleIR(1)
	route := x.Gateways[0].Listeners[0].HTTPRoutes[0]
	route.Match.Headers = []ir.StringMatch{{Name: "bad\nname", Type: ir.MatchExact, Value: "v"}}
	res, err := xdstranslator.Translate(x)
	if err != nil {
		t.Fatal(err)
	}
	problems := xdsvalidate.Check(res[x.Gateways[0].Scope])
	if len(problems) == 0 {
		t.Fatal("pre-validation found nothing")
	}
	inMatch := false
	for _, p := range problems {
		if p.Type != "RouteConfiguration" || p.Route != route.Name {
			t.Errorf("problem %s: want it in route %s", p, route.Name)
		}
		inMatch = inMatch || p.InMatch
	}
	if !inMatch {
		t.Errorf("no problem is placed in the route's match: %v", problems)
	}
}

// BenchmarkTranslate translates one Gateway with n HTTPRoutes, each with a
// hostname and a backend of its own.
func BenchmarkTranslate(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		x := xdstest.ScaleIR(n)
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := xdstranslator.Translate(x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// GEP-1911: a backend with appProtocol kubernetes.io/ws gets WebSocket
// upgrades (conformance HTTPRouteBackendProtocolWebSocket), so every HTTP
// connection manager allows the websocket upgrade.
func TestHTTPConnectionManagerAllowsWebSocket(t *testing.T) {
	r := &ir.HTTPRoute{Name: "httproute/default/r/rule/0/match/0", Hostname: "*",
		Backends: group(backend("ws", 1))}
	x := &ir.IR{Gateways: []*ir.Gateway{{Namespace: "default", Name: "gw", Scope: scope, Listeners: []*ir.Listener{
		{Name: "default/gw/http", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 80, GatewayPort: 80, HTTPRoutes: []*ir.HTTPRoute{r}},
	}}}}
	l := listener(t, translate(t, x)[scope], "listener/0.0.0.0/80")
	hcm := &hcmv3.HttpConnectionManager{}
	if err := l.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	ups := hcm.GetUpgradeConfigs()
	if len(ups) != 1 || ups[0].GetUpgradeType() != "websocket" || (ups[0].Enabled != nil && !ups[0].Enabled.Value) {
		t.Errorf("upgrade configs %v, want websocket enabled", ups)
	}
}

// GEP-1767: a preflight from an origin the CORS filter does not allow is
// answered by Envoy without CORS headers instead of reaching the backend
// (conformance HTTPRouteCORS).
func TestCORSAnswersNotMatchingPreflights(t *testing.T) {
	r := oneRoute(t, &ir.HTTPRoute{Backends: group(backend("a", 1)),
		Filters: ir.HTTPFilters{CORS: &ir.CORS{AllowOrigins: []string{"https://www.foo.com"}, AllowMethods: []string{"GET"}}}})
	p := &corsv3.CorsPolicy{}
	if err := r.TypedPerFilterConfig["envoy.filters.http.cors"].UnmarshalTo(p); err != nil {
		t.Fatal(err)
	}
	if p.ForwardNotMatchingPreflights == nil || p.ForwardNotMatchingPreflights.Value {
		t.Errorf("forward_not_matching_preflights = %v, want false", p.ForwardNotMatchingPreflights)
	}
	if len(p.AllowOriginStringMatch) != 1 || p.AllowOriginStringMatch[0].GetExact() != "https://www.foo.com" {
		t.Errorf("origins %v", p.AllowOriginStringMatch)
	}
}
