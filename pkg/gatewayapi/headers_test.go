package gatewayapi

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

func TestCheckHostHeaderValue(t *testing.T) {
	for _, v := range []string{"api.internal", "API.Example.com", "api.internal:8443", "10.0.0.1", "10.0.0.1:80",
		"[2001:db8::1]", "[2001:db8::1]:8080", "localhost", "a-b.c"} {
		if p := checkHostHeaderValue(v); p != "" {
			t.Errorf("%q: %s, want valid", v, p)
		}
	}
	for _, v := range []string{"", " ", "a b", "*.example.com", "*", "api.internal:", "api.internal:0", "api.internal:65536",
		"api.internal:+80", "api.internal:8x", "a:b:c", "2001:db8::1", "[2001:db8::1", "[10.0.0.1]", "[fe80::1%eth0]",
		"[2001:db8::1]x", "-a.example.com", "a..b", "http://a", "a/b", "a\r\nb", strings.Repeat("a.", 130) + "com"} {
		if p := checkHostHeaderValue(v); p == "" {
			t.Errorf("%q is valid, want refused", v)
		}
	}
}

// TestHostAndPseudoHeaderEdits: a header modifier that names Host or a
// pseudo-header, on a rule or a backendRef, of an HTTPRoute and (where the
// kind has the filters) a GRPCRoute. Either the edit is honoured (a `set`
// of Host becomes the rule's or the backend's Host rewrite) or the rule is
// refused: PartiallyInvalid=True UnsupportedValue with a message naming
// the header, and the rule answers 500 (503 for GRPCRoute). The other rule
// of the route serves either way, and the IR passes ir.Validate (which
// refuses any Host or pseudo-header edit left in a header modifier).
func TestHostAndPseudoHeaderEdits(t *testing.T) {
	h := func(n, v string) []gwapiv1.HTTPHeader {
		return []gwapiv1.HTTPHeader{{Name: gwapiv1.HTTPHeaderName(n), Value: v}}
	}
	req := func(f gwapiv1.HTTPHeaderFilter) gwapiv1.HTTPRouteFilter {
		return headerFilter(gwapiv1.HTTPRouteFilterRequestHeaderModifier, f)
	}
	resp := func(f gwapiv1.HTTPHeaderFilter) gwapiv1.HTTPRouteFilter {
		return headerFilter(gwapiv1.HTTPRouteFilterResponseHeaderModifier, f)
	}
	setHost := req(gwapiv1.HTTPHeaderFilter{Set: h("Host", "rule.internal")})
	rewriteHost := rewrite(gwapiv1.HTTPURLRewriteFilter{Hostname: ptr(gwapiv1.PreciseHostname("rewrite.internal"))})
	for _, tc := range []struct {
		name    string
		rule    []gwapiv1.HTTPRouteFilter
		backend []gwapiv1.HTTPRouteFilter // filters of the rule's backendRef
		http    bool                      // HTTPRoute only (URLRewrite)
		// Accepted: the Host rewrite of the rule and of its backend.
		host, backendHost string
		// headers: the request headers the rule keeps setting.
		headers []ir.Header
		// refused: in the PartiallyInvalid message ("" when accepted).
		refused string
	}{
		{name: "set Host", rule: []gwapiv1.HTTPRouteFilter{setHost}, host: "rule.internal"},
		{name: "set host with a port", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Set: h("host", "api.internal:8443")})}, host: "api.internal:8443"},
		{name: "set Host to an IPv6 address", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Set: h("HOST", "[2001:db8::1]:8080")})}, host: "[2001:db8::1]:8080"},
		{name: "set Host and other headers", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{
			Set: append(h("x-env", "prod"), h("Host", "rule.internal")...), Add: h("x-trace", "on"), Remove: []string{"x-debug"},
		})}, host: "rule.internal", headers: []ir.Header{{Name: "x-env", Value: "prod"}}},
		{name: "set Host and a URLRewrite path", http: true, rule: []gwapiv1.HTTPRouteFilter{setHost, rewrite(gwapiv1.HTTPURLRewriteFilter{Path: fullPath("/v2")})}, host: "rule.internal"},
		{name: "set Host to an invalid host", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Set: h("Host", "*.example.com")})},
			refused: `filter 0: RequestHeaderModifier set "Host": value "*.example.com" is not a valid Host`},
		{name: "set Host twice", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Set: append(h("Host", "a.internal"), h("host", "b.internal")...)})},
			refused: "sets Host twice"},
		{name: "set Host with a URLRewrite hostname", http: true, rule: []gwapiv1.HTTPRouteFilter{setHost, rewriteHost},
			refused: "the URLRewrite hostname rewrites it too; keep one of them"},
		{name: "add Host", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Add: h("Host", "x.internal")})},
			refused: `RequestHeaderModifier add "Host": a request has exactly one Host`},
		{name: "remove Host", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Remove: []string{"host"}})},
			refused: `RequestHeaderModifier remove "host": a request cannot go without its Host`},
		{name: "set :authority", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Set: h(":authority", "x.internal")})},
			refused: `set ":authority": :authority is an HTTP/2 pseudo-header, which Envoy maintains itself and does not let a header filter set, add or remove; to change the authority, set Host`},
		{name: "add :path", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Add: h(":path", "/x")})},
			refused: `add ":path": :path is an HTTP/2 pseudo-header`},
		{name: "set :method", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Set: h(":method", "POST")})},
			refused: `set ":method": :method is an HTTP/2 pseudo-header`},
		{name: "remove :scheme", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Remove: []string{":scheme"}})},
			refused: `remove ":scheme": :scheme is an HTTP/2 pseudo-header`},
		{name: "response set Content-Length", rule: []gwapiv1.HTTPRouteFilter{resp(gwapiv1.HTTPHeaderFilter{Set: h("Content-Length", "5")})},
			refused: `ResponseHeaderModifier set "Content-Length": Content-Length frames the message`},
		{name: "request add transfer-encoding", rule: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Add: h("transfer-encoding", "chunked")})},
			refused: `RequestHeaderModifier add "transfer-encoding": transfer-encoding frames the message`},
		{name: "response set Host", rule: []gwapiv1.HTTPRouteFilter{resp(gwapiv1.HTTPHeaderFilter{Set: h("Host", "x.internal")})},
			refused: `ResponseHeaderModifier set "Host": Host is a request header`},
		{name: "response remove :status", rule: []gwapiv1.HTTPRouteFilter{resp(gwapiv1.HTTPHeaderFilter{Remove: []string{":status"}})},
			refused: `ResponseHeaderModifier remove ":status": :status is an HTTP/2 pseudo-header`},
		{name: "backendRef set Host", backend: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Set: h("Host", "backend.internal")})}, backendHost: "backend.internal"},
		{name: "backendRef set Host, the rule too", rule: []gwapiv1.HTTPRouteFilter{setHost}, backend: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Set: h("Host", "backend.internal")})},
			refused: "backendRef 0: filter 0: RequestHeaderModifier sets Host, which the rule rewrites already (its RequestHeaderModifier sets Host)"},
		{name: "backendRef set Host, the rule's URLRewrite hostname", http: true, rule: []gwapiv1.HTTPRouteFilter{rewriteHost},
			backend: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Set: h("Host", "backend.internal")})},
			refused: "which the rule rewrites already (its URLRewrite hostname)"},
		{name: "backendRef add Host", backend: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Add: h("Host", "x.internal")})},
			refused: `backendRef 0: filter 0: RequestHeaderModifier add "Host"`},
		{name: "backendRef remove :authority", backend: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Remove: []string{":authority"}})},
			refused: `backendRef 0: filter 0: RequestHeaderModifier remove ":authority"`},
		{name: "backendRef response add Host", backend: []gwapiv1.HTTPRouteFilter{resp(gwapiv1.HTTPHeaderFilter{Add: h("Host", "x")})},
			refused: `backendRef 0: filter 0: ResponseHeaderModifier add "Host"`},
		{name: "backendRef set Host twice", backend: []gwapiv1.HTTPRouteFilter{req(gwapiv1.HTTPHeaderFilter{Set: h("Host", "a.internal")}), req(gwapiv1.HTTPHeaderFilter{Set: h("Host", "b.internal")})},
			refused: `backendRef 0: filter 1: "RequestHeaderModifier" is not supported on a backendRef (or is repeated`},
	} {
		for _, kind := range []string{KindHTTPRoute, KindGRPCRoute} {
			if kind == KindGRPCRoute && tc.http {
				continue
			}
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				res := fixture()
				failure := uint32(500)
				ref := toApp(80)
				ref.Filters = tc.backend
				if kind == KindHTTPRoute {
					res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("r",
						gwapiv1.HTTPRouteRule{Matches: pathPrefix("/edit"), Filters: tc.rule, BackendRefs: []gwapiv1.HTTPBackendRef{ref}},
						gwapiv1.HTTPRouteRule{Matches: pathPrefix("/good"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
				} else {
					failure = 503
					gref := gwapiv1.GRPCBackendRef{BackendRef: ref.BackendRef}
					for _, f := range tc.backend {
						gref.Filters = append(gref.Filters, gwapiv1.GRPCRouteFilter{Type: gwapiv1.GRPCRouteFilterType(f.Type), RequestHeaderModifier: f.RequestHeaderModifier, ResponseHeaderModifier: f.ResponseHeaderModifier})
					}
					var fs []gwapiv1.GRPCRouteFilter
					for _, f := range tc.rule {
						fs = append(fs, gwapiv1.GRPCRouteFilter{Type: gwapiv1.GRPCRouteFilterType(f.Type), RequestHeaderModifier: f.RequestHeaderModifier, ResponseHeaderModifier: f.ResponseHeaderModifier})
					}
					exact := gwapiv1.GRPCMethodMatchExact
					res.GRPCRoutes = []*gwapiv1.GRPCRoute{grpcRoute("r",
						gwapiv1.GRPCRouteRule{Matches: []gwapiv1.GRPCRouteMatch{method(exact, "pkg.Echo", "Edit")}, Filters: fs, BackendRefs: []gwapiv1.GRPCBackendRef{gref}},
						gwapiv1.GRPCRouteRule{Matches: []gwapiv1.GRPCRouteMatch{method(exact, "pkg.Echo", "Good")}, BackendRefs: []gwapiv1.GRPCBackendRef{grpcToApp()}})}
				}
				r := Translate(res, Options{})
				mustValid(t, r)
				if _, err := xdstranslator.Translate(r.IR); err != nil {
					t.Fatalf("xDS translation failed: %v", err)
				}
				ps := r.Status.Routes[RouteKey{Kind: kind, Namespace: "default", Name: "r"}].Parents[0]
				wantCond(t, ps.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
				var edit, good *ir.HTTPRoute
				for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
					if strings.Contains(rt.Name, "/rule/0/") {
						edit = rt
					} else {
						good = rt
					}
				}
				if edit == nil || good == nil || good.Backends == nil {
					t.Fatalf("routes %+v, want rule 0's and a serving rule 1", r.IR.Gateways[0].Listeners[0].HTTPRoutes)
				}
				if tc.refused != "" {
					pi := cond(t, ps.Conditions, "PartiallyInvalid")
					if pi.Status != metav1.ConditionTrue || pi.Reason != string(gwapiv1.RouteReasonUnsupportedValue) ||
						!strings.Contains(pi.Message, "Dropped Rule(s) 0:") || !strings.Contains(pi.Message, tc.refused) {
						t.Errorf("PartiallyInvalid = %s/%s %q, want True/UnsupportedValue, rule 0 dropped, with %q", pi.Status, pi.Reason, pi.Message, tc.refused)
					}
					if edit.DirectResponse == nil || edit.DirectResponse.StatusCode != failure || edit.Backends != nil {
						t.Errorf("refused rule = %+v, want a direct %d", edit, failure)
					}
					return
				}
				if pi := meta.FindStatusCondition(ps.Conditions, "PartiallyInvalid"); pi != nil && pi.Status != metav1.ConditionFalse {
					t.Errorf("PartiallyInvalid = %s %q, want none", pi.Status, pi.Message)
				}
				if edit.Backends == nil {
					t.Fatalf("rule 0 = %+v, want it to forward", edit)
				}
				host := ""
				if u := edit.Filters.URLRewrite; u != nil {
					host = u.Hostname
				}
				if host != tc.host || edit.Backends.Backends[0].HostRewrite != tc.backendHost {
					t.Errorf("Host rewrite: rule %q, backend %q; want %q, %q", host, edit.Backends.Backends[0].HostRewrite, tc.host, tc.backendHost)
				}
				var set []ir.Header
				if m := edit.Filters.RequestHeaders; m != nil {
					set = m.Set
				}
				if len(set) != len(tc.headers) || (len(set) > 0 && set[0] != tc.headers[0]) {
					t.Errorf("request headers set %v, want %v", set, tc.headers)
				}
			})
		}
	}
}

// TestHostHeaderWithRedirect: a rule that redirects forwards nothing, so a
// `set` of Host in it cannot rewrite anything: refused, with a pointer to
// the redirect's own hostname.
func TestHostHeaderWithRedirect(t *testing.T) {
	res := fixture()
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("r", gwapiv1.HTTPRouteRule{Filters: []gwapiv1.HTTPRouteFilter{
		redirectTo(gwapiv1.HTTPRequestRedirectFilter{Scheme: ptr("https")}),
		headerFilter(gwapiv1.HTTPRouteFilterRequestHeaderModifier, gwapiv1.HTTPHeaderFilter{Set: []gwapiv1.HTTPHeader{{Name: "Host", Value: "x.internal"}}}),
	}})}
	r := Translate(res, Options{})
	mustValid(t, r)
	c := cond(t, routeParent(t, r, "r", 0).Conditions, "Accepted")
	if c.Status != metav1.ConditionFalse || c.Reason != string(gwapiv1.RouteReasonUnsupportedValue) || !strings.Contains(c.Message, "use the redirect's hostname") {
		t.Errorf("Accepted = %s/%s %q, want False/UnsupportedValue about the redirect's hostname", c.Status, c.Reason, c.Message)
	}
	for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
		if rt.DirectResponse == nil || rt.DirectResponse.StatusCode != 500 {
			t.Errorf("route %+v, want a direct 500", rt)
		}
	}
}
