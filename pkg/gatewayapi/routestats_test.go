package gatewayapi

import (
	"fmt"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestRouteStatsOption: Options.RouteStats gives every IR route of the
// Gateways it names, and only theirs, the StatName of its rule, shared by
// the rule's matches and hostnames.
func TestRouteStatsOption(t *testing.T) {
	res := fixture()
	res.Gateways = append(res.Gateways, gateway("quiet", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 81}))
	route := httpRoute("app",
		gwapiv1.HTTPRouteRule{
			Matches:     []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Value: ptr("/a")}}, {Path: &gwapiv1.HTTPPathMatch{Value: ptr("/b")}}},
			BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)},
		},
		gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}},
	)
	route.Spec.Hostnames = []gwapiv1.Hostname{"a.example.com", "b.example.com"}
	route.Spec.ParentRefs = []gwapiv1.ParentReference{{Name: "web"}, {Name: "quiet"}}
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{route}

	r := Translate(res, Options{RouteStats: func(gw *gwapiv1.Gateway) bool { return gw.Name == "web" }})
	mustValid(t, r)
	seen := map[string]int{}
	for _, gw := range r.IR.Gateways {
		for _, l := range gw.Listeners {
			for _, rt := range l.HTTPRoutes {
				key, rule := rt.Origin.Object, rt.Origin.Rule
				want := ""
				if gw.Name == "web" {
					want = fmt.Sprintf("httproute/%s/%s/rule/%d", key.Namespace, key.Name, rule)
				}
				if rt.StatName != want {
					t.Errorf("Gateway %s, route %s (%s): StatName %q, want %q", gw.Name, rt.Name, rt.Hostname, rt.StatName, want)
				}
				seen[gw.Name]++
			}
		}
	}
	// 2 hostnames x (2 matches + 1) on each Gateway.
	if seen["web"] != 6 || seen["quiet"] != 6 {
		t.Errorf("IR routes per Gateway: %v, want 6 each", seen)
	}
	// Without the option no route has one.
	for _, rt := range Translate(res, Options{}).IR.Gateways[0].Listeners[0].HTTPRoutes {
		if rt.StatName != "" {
			t.Errorf("without RouteStats: %s has StatName %q", rt.Name, rt.StatName)
		}
	}
}

// TestRouteStatsOptionIncremental: a Cache that translated a world without
// route statistics gives its routes StatNames once Options.RouteStats
// turns them on for the same objects (a GatewayParameters change), and
// drops them when it turns them off again.
func TestRouteStatsOptionIncremental(t *testing.T) {
	res := fixture()
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
	on := Options{RouteStats: func(*gwapiv1.Gateway) bool { return true }}
	statNames := func(r *Result) (names []string) {
		for _, gw := range r.IR.Gateways {
			for _, l := range gw.Listeners {
				for _, rt := range l.HTTPRoutes {
					names = append(names, rt.StatName)
				}
			}
		}
		return names
	}
	c := NewCache()
	for i, opts := range []Options{{}, on, {}} {
		got := statNames(c.Translate(res, opts))
		want := statNames(Translate(res, opts))
		if len(got) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("run %d: StatNames %q, a translation from scratch gives %q", i, got, want)
		}
	}
}
