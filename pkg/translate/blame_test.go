package translate

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
	"github.com/xds-controller/xds-controller/pkg/xdsvalidate"
)

// TestBlame: problems that only pre-validation sees (the Gateway API
// translator lets them through here because the IR is made by hand) are
// traced back to their HTTPRoute rules; everything else keeps serving.
func TestBlame(t *testing.T) {
	// direct is the IR route of match j of rule 0 of HTTPRoute default/obj,
	// named and with its origin as pkg/gatewayapi makes them.
	direct := func(obj string, j int, m ir.HTTPMatch) *ir.HTTPRoute {
		return &ir.HTTPRoute{Name: fmt.Sprintf("httproute/default/%s/rule/0/match/%d", obj, j), Hostname: "*", Match: m,
			DirectResponse: &ir.DirectResponse{StatusCode: 200}, Origin: ir.Origin{Object: httpRoute(obj), Match: j}}
	}
	prefix := func(p string) ir.HTTPMatch {
		return ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: p}}
	}
	// A regex rewrite over Envoy's program size limit (\w is 3 RE2
	// instructions): a problem outside the match.
	badRewrite := direct("hdr", 0, prefix("/"))
	badRewrite.DirectResponse = nil
	badRewrite.Backends = &ir.BackendGroup{Backends: []*ir.Backend{{Name: "web", Weight: 1}}}
	badRewrite.Filters.URLRewrite = &ir.URLRewrite{Path: &ir.PathModifier{Type: ir.RegexReplace, Pattern: `/\w{40}`, Value: "/"}}
	huge := ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchRegex, Value: "/" + strings.Repeat("a", 120)}}
	res := &Result{
		IR: &ir.IR{Gateways: []*ir.Gateway{{Namespace: "default", Name: "gw", Class: "c", Scope: "s", Listeners: []*ir.Listener{{
			Name: "default/gw/http", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 8080, GatewayPort: 8080,
			HTTPRoutes: []*ir.HTTPRoute{
				badRewrite,
				direct("re", 0, huge),
				direct("re", 1, prefix("/re")),
				direct("ok", 0, prefix("/")),
			},
		}}}}},
		Status: &gatewayapi.Status{Routes: map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{}},
	}
	for _, n := range []string{"hdr", "re", "ok"} {
		res.Status.Routes[httpRoute(n)] = &gwapiv1.RouteStatus{
			Parents: []gwapiv1.RouteParentStatus{{Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted", ObservedGeneration: 4}}}}}
	}
	x, err := xdstranslator.Translate(res.IR)
	if err != nil {
		t.Fatal(err)
	}
	// What blame changes it copies: an earlier result may share it.
	before := res.IR.DeepCopy()
	routesBefore := slices.Clone(res.IR.Gateways[0].Listeners[0].HTTPRoutes)
	statusBefore := res.Status.Routes[httpRoute("hdr")]
	condsBefore := slices.Clone(statusBefore.Parents[0].Conditions)
	problems := map[string][]xdsvalidate.Problem{"s": xdsvalidate.Check(x["s"])}
	changed := blame(res, problems)
	for i, r := range routesBefore {
		if !reflect.DeepEqual(r, before.Gateways[0].Listeners[0].HTTPRoutes[i]) {
			t.Errorf("blame modified IR route %s in place", r.Name)
		}
	}
	if !reflect.DeepEqual(statusBefore.Parents[0].Conditions, condsBefore) {
		t.Error("blame modified a route status in place")
	}
	if !changed {
		t.Fatal("nothing blamed")
	}
	if n := len(problems[res.IR.Gateways[0].Scope]); n != 2 {
		t.Errorf("%d problems reported for the scope, want the 2 found (rewrite, regex)", n)
	}
	routes := res.IR.Gateways[0].Listeners[0].HTTPRoutes
	var names []string
	for _, r := range routes {
		names = append(names, r.Name)
	}
	if strings.Join(names, " ") != "httproute/default/hdr/rule/0/match/0 httproute/default/re/rule/0/match/1 httproute/default/ok/rule/0/match/0" {
		t.Errorf("routes left: %v, want the oversized regex match dropped and the rest kept", names)
	}
	if r := routes[0]; r.DirectResponse == nil || r.DirectResponse.StatusCode != 500 || r.Filters.URLRewrite != nil || r.Backends != nil {
		t.Errorf("the rule with an oversized rewrite: %+v, want a bare 500", r)
	}
	if r := routes[2]; r.DirectResponse.StatusCode != 200 {
		t.Errorf("an innocent route changed: %+v", r)
	}
	for n, want := range map[string]string{"hdr": "rule 0: ", "re": "rule 0 match 0: regex"} {
		c := meta.FindStatusCondition(res.Status.Routes[httpRoute(n)].Parents[0].Conditions, "PartiallyInvalid")
		if c == nil || c.Status != "True" || c.Reason != "UnsupportedValue" || !strings.HasPrefix(c.Message, want) || c.ObservedGeneration != 4 || !c.LastTransitionTime.IsZero() {
			t.Errorf("HTTPRoute %s PartiallyInvalid = %+v, want True UnsupportedValue %q...", n, c, want)
		}
	}
	if c := meta.FindStatusCondition(res.Status.Routes[httpRoute("ok")].Parents[0].Conditions, "PartiallyInvalid"); c != nil {
		t.Errorf("an innocent route got %+v", c)
	}
	x, _ = xdstranslator.Translate(res.IR)
	if ps := xdsvalidate.Check(x["s"]); len(ps) != 0 {
		t.Errorf("problems left after blame: %v", ps)
	}
}

func httpRoute(name string) gatewayapi.RouteKey {
	return gatewayapi.RouteKey{Kind: gatewayapi.KindHTTPRoute, Namespace: "default", Name: name}
}

// TestBlameIngress: a problem in the Envoy route of an Ingress path is
// blamed on that path (by its origin), which answers 503; the Ingress's
// other path and its default backend keep serving.
func TestBlameIngress(t *testing.T) {
	ing := ir.ObjectKey{Kind: gatewayapi.KindIngress, Namespace: "default", Name: "web"}
	route := func(what string, rule, path int, m ir.HTTPMatch) *ir.HTTPRoute {
		return &ir.HTTPRoute{Name: "ingress/default/web/" + what, Hostname: "*", Match: m,
			Backends: &ir.BackendGroup{Backends: []*ir.Backend{{Name: "web", Weight: 1}}}, Origin: ir.Origin{Object: ing, Rule: rule, Match: path}}
	}
	bad := route("rule/0/path/0", 0, 0, ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/a"}})
	bad.Filters.URLRewrite = &ir.URLRewrite{Path: &ir.PathModifier{Type: ir.RegexReplace, Pattern: `/\w{40}`, Value: "/"}}
	res := &Result{
		IR: &ir.IR{Gateways: []*ir.Gateway{{Namespace: "default", Name: "ingress-xds", Class: "c", Scope: "s", Listeners: []*ir.Listener{{
			Name: "default/ingress-xds/http", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 8080, GatewayPort: 8080,
			HTTPRoutes: []*ir.HTTPRoute{
				bad,
				route("rule/0/path/1", 0, 1, ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/b"}}),
				route("defaultBackend", -1, 0, ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/"}}),
			},
		}}}}},
		Status:    &gatewayapi.Status{},
		Ingresses: map[types.NamespacedName]*ingress.Status{{Namespace: "default", Name: "web"}: {}},
	}
	x, err := xdstranslator.Translate(res.IR)
	if err != nil {
		t.Fatal(err)
	}
	if !blame(res, map[string][]xdsvalidate.Problem{"s": xdsvalidate.Check(x["s"])}) {
		t.Fatal("nothing blamed")
	}
	routes := res.IR.Gateways[0].Listeners[0].HTTPRoutes
	if len(routes) != 3 || routes[0].DirectResponse == nil || routes[0].DirectResponse.StatusCode != 503 || routes[0].Backends != nil {
		t.Errorf("the path with an oversized rewrite: %+v, want a bare 503", routes[0])
	}
	for _, r := range routes[1:] {
		if r.DirectResponse != nil || r.Backends == nil {
			t.Errorf("an innocent path changed: %+v", r)
		}
	}
	st := res.Ingresses[types.NamespacedName{Namespace: "default", Name: "web"}]
	if len(st.Problems) != 1 || st.Problems[0].Reason != "InvalidConfiguration" || !strings.HasPrefix(st.Problems[0].Message, "rule/0/path/0: ") ||
		!strings.HasSuffix(st.Problems[0].Message, "Envoy would refuse it, so the path answers 503") {
		t.Errorf("Ingress problems %+v, want one InvalidConfiguration of rule/0/path/0", st.Problems)
	}
}
