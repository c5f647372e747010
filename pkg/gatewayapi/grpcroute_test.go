package gatewayapi

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

func grpcRoute(name string, rules ...gwapiv1.GRPCRouteRule) *gwapiv1.GRPCRoute {
	return &gwapiv1.GRPCRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 4},
		Spec: gwapiv1.GRPCRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "web"}}},
			Rules:           rules,
		},
	}
}

func grpcToApp() gwapiv1.GRPCBackendRef {
	return gwapiv1.GRPCBackendRef{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "app", Port: ptr(int32(80))}}}
}

func method(typ gwapiv1.GRPCMethodMatchType, service, method string) gwapiv1.GRPCRouteMatch {
	m := &gwapiv1.GRPCMethodMatch{Type: &typ}
	if service != "" {
		m.Service = &service
	}
	if method != "" {
		m.Method = &method
	}
	return gwapiv1.GRPCRouteMatch{Method: m}
}

// TestGRPCMethodMatches checks how each GRPCMethodMatch becomes a match on
// the request path, and which ones make the rule UnsupportedValue.
func TestGRPCMethodMatches(t *testing.T) {
	exact, regex := gwapiv1.GRPCMethodMatchExact, gwapiv1.GRPCMethodMatchRegularExpression
	for _, tc := range []struct {
		name  string
		match gwapiv1.GRPCRouteMatch
		want  *ir.StringMatch // nil: the rule is invalid
	}{
		{"exact service and method", method(exact, "pkg.Echo", "Say"), &ir.StringMatch{Type: ir.MatchExact, Value: "/pkg.Echo/Say"}},
		{"exact service", method(exact, "pkg.Echo", ""), &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/pkg.Echo"}},
		{"exact method", method(exact, "", "Say"), &ir.StringMatch{Type: ir.MatchRegex, Value: "/[^/]+/Say"}},
		{"regex both", method(regex, "a|b", "S.*"), &ir.StringMatch{Type: ir.MatchRegex, Value: "/(?:a|b)/(?:S.*)"}},
		{"regex service", method(regex, `pkg\.v[0-9]+\.Echo`, ""), &ir.StringMatch{Type: ir.MatchRegex, Value: `/(?:pkg\.v[0-9]+\.Echo)/[^/]+`}},
		{"no method match", gwapiv1.GRPCRouteMatch{}, nil},
		{"neither service nor method", method(exact, "", ""), nil},
		{"service with a slash", method(exact, "pkg/Echo", ""), nil},
		{"method with a dot", method(exact, "", "Say.Hi"), nil},
		{"invalid regex", method(regex, "(", ""), nil},
		{"unknown type", method("Prefix", "pkg.Echo", ""), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := fixture()
			res.GRPCRoutes = []*gwapiv1.GRPCRoute{grpcRoute("g", gwapiv1.GRPCRouteRule{
				Matches: []gwapiv1.GRPCRouteMatch{tc.match}, BackendRefs: []gwapiv1.GRPCBackendRef{grpcToApp()},
			})}
			r := Translate(res, Options{})
			mustValid(t, r)
			routes := r.IR.Gateways[0].Listeners[0].HTTPRoutes
			accepted := cond(t, r.Status.Routes[RouteKey{Kind: KindGRPCRoute, Namespace: "default", Name: "g"}].Parents[0].Conditions, "Accepted")
			if tc.match.Method == nil {
				if len(routes) != 1 || routes[0].Match.Path != nil || !routes[0].GRPC {
					t.Fatalf("a match without method: routes %+v, want one gRPC route matching every path", routes)
				}
				return
			}
			if tc.want == nil {
				if len(routes) != 0 || accepted.Status != metav1.ConditionFalse || accepted.Reason != "UnsupportedValue" {
					t.Fatalf("routes %+v, Accepted %s/%s (%s); want no route and Accepted=False UnsupportedValue", routes, accepted.Status, accepted.Reason, accepted.Message)
				}
				return
			}
			if len(routes) != 1 || routes[0].Match.Path == nil || *routes[0].Match.Path != *tc.want {
				t.Fatalf("routes %+v, want one with path %+v", routes, tc.want)
			}
			if accepted.Status != metav1.ConditionTrue {
				t.Errorf("Accepted = %s/%s: %s", accepted.Status, accepted.Reason, accepted.Message)
			}
		})
	}
}

// TestGRPCPrecedence checks the order of a listener's gRPC routes:
// GRPCRouteRule matches (more service characters, then method characters,
// then header matches), Exact method matches before regular expressions,
// matches without a method last; rule order breaks ties.
func TestGRPCPrecedence(t *testing.T) {
	exact, regex := gwapiv1.GRPCMethodMatchExact, gwapiv1.GRPCMethodMatchRegularExpression
	withHeader := method(exact, "pkg.Echo", "Say")
	withHeader.Headers = []gwapiv1.GRPCHeaderMatch{{Name: "x-tenant", Value: "blue"}}
	rules := []gwapiv1.GRPCRouteMatch{
		{},                                  // 0: every method
		method(regex, "pkg.Echo.Long", ""),  // 1: a regex, however long
		method(exact, "", "Say"),            // 2: method only
		method(exact, "pkg.Echo", ""),       // 3: service only
		method(exact, "pkg.Echo", "Say"),    // 4: service and method
		withHeader,                          // 5: the same and a header
		method(exact, "pkg.EchoLonger", ""), // 6: a longer service
	}
	gr := grpcRoute("g")
	for _, m := range rules {
		gr.Spec.Rules = append(gr.Spec.Rules, gwapiv1.GRPCRouteRule{Matches: []gwapiv1.GRPCRouteMatch{m}, BackendRefs: []gwapiv1.GRPCBackendRef{grpcToApp()}})
	}
	res := fixture()
	res.GRPCRoutes = []*gwapiv1.GRPCRoute{gr}
	r := Translate(res, Options{})
	mustValid(t, r)
	var got []string
	for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
		got = append(got, strings.TrimPrefix(rt.Name, "grpcroute/default/g/"))
	}
	want := "rule/6/match/0 rule/5/match/0 rule/4/match/0 rule/3/match/0 rule/2/match/0 rule/1/match/0 rule/0/match/0"
	if strings.Join(got, " ") != want {
		t.Errorf("order:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestKindConflictOnOneListenerOfTwo: a GRPCRoute whose parentRef selects
// two listeners, on one of which an older HTTPRoute holds its hostname,
// stays accepted, serves only on the other listener and says where it is
// not attached; the listeners count what attached to them.
func TestKindConflictOnOneListenerOfTwo(t *testing.T) {
	res := fixture()
	res.Gateways = []*gwapiv1.Gateway{gateway("web",
		gwapiv1.Listener{Name: "a", Protocol: gwapiv1.HTTPProtocolType, Port: 80},
		gwapiv1.Listener{Name: "b", Protocol: gwapiv1.HTTPProtocolType, Port: 8080},
	)}
	older := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	hr := httpRoute("web-a", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
	hr.CreationTimestamp = older
	hr.Spec.ParentRefs[0].SectionName = ptr(gwapiv1.SectionName("a"))
	hr.Spec.Hostnames = []gwapiv1.Hostname{"*.example.com"}
	gr := grpcRoute("echo", gwapiv1.GRPCRouteRule{BackendRefs: []gwapiv1.GRPCBackendRef{grpcToApp()}})
	gr.CreationTimestamp = metav1.NewTime(older.Add(time.Hour))
	gr.Spec.Hostnames = []gwapiv1.Hostname{"grpc.example.com"}
	res.HTTPRoutes, res.GRPCRoutes = []*gwapiv1.HTTPRoute{hr}, []*gwapiv1.GRPCRoute{gr}

	r := Translate(res, Options{})
	mustValid(t, r)
	p := r.Status.Routes[RouteKey{Kind: KindGRPCRoute, Namespace: "default", Name: "echo"}].Parents[0]
	a := cond(t, p.Conditions, "Accepted")
	if a.Status != metav1.ConditionTrue || !strings.Contains(a.Message, "a (HTTPRoute default/web-a holds *.example.com there)") {
		t.Errorf("GRPCRoute Accepted = %s: %s; want True, naming listener a and the HTTPRoute", a.Status, a.Message)
	}
	wantCond(t, routeParent(t, r, "web-a", 0).Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
	for _, l := range r.IR.Gateways[0].Listeners {
		for _, rt := range l.HTTPRoutes {
			if rt.GRPC != (l.Name == "default/web/b") {
				t.Errorf("listener %s serves %s", l.Name, rt.Name)
			}
		}
	}
	for _, ls := range r.Status.Gateways[nn("default", "web")].Listeners {
		if ls.AttachedRoutes != 1 {
			t.Errorf("listener %s: attachedRoutes %d, want 1", ls.Name, ls.AttachedRoutes)
		}
	}
}

// TestRouteOrigins: every IR route of an HTTPRoute and a GRPCRoute carries
// its object, rule and match as its Origin, the same that its name says.
func TestRouteOrigins(t *testing.T) {
	res := fixture()
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("web",
		gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}},
		gwapiv1.HTTPRouteRule{
			Matches:     []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Value: ptr("/a")}}, {Path: &gwapiv1.HTTPPathMatch{Value: ptr("/b")}}},
			BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)},
		})}
	res.GRPCRoutes = []*gwapiv1.GRPCRoute{grpcRoute("echo", gwapiv1.GRPCRouteRule{
		Matches: []gwapiv1.GRPCRouteMatch{method(gwapiv1.GRPCMethodMatchExact, "pkg.Echo", "Say")}, BackendRefs: []gwapiv1.GRPCBackendRef{grpcToApp()},
	})}
	// Routes of two kinds on one listener need hostnames of their own.
	res.HTTPRoutes[0].Spec.Hostnames = []gwapiv1.Hostname{"web.example.com"}
	res.GRPCRoutes[0].Spec.Hostnames = []gwapiv1.Hostname{"echo.example.com"}
	r := Translate(res, Options{})
	mustValid(t, r)
	var got []string
	for _, gw := range r.IR.Gateways {
		for _, l := range gw.Listeners {
			for _, rt := range l.HTTPRoutes {
				o := rt.Origin
				got = append(got, fmt.Sprintf("%s %d %d", o.Object, o.Rule, o.Match))
				if want := routeMatchName(o.Object, o.Rule, o.Match); rt.Name != want {
					t.Errorf("IR route %s has origin %+v, whose name is %s", rt.Name, o, want)
				}
			}
		}
	}
	slices.Sort(got)
	if want := "GRPCRoute default/echo 0 0,HTTPRoute default/web 0 0,HTTPRoute default/web 1 0,HTTPRoute default/web 1 1"; strings.Join(got, ",") != want {
		t.Errorf("origins %s, want %s", strings.Join(got, ","), want)
	}
}
