package status

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
)

// routeStatus is a route status with one parent per name of parents,
// Accepted with reason.
func routeStatus(reason string, parents ...string) *gwapiv1.RouteStatus {
	st := &gwapiv1.RouteStatus{}
	for _, p := range parents {
		st.Parents = append(st.Parents, gwapiv1.RouteParentStatus{
			ParentRef:  gwapiv1.ParentReference{Name: gwapiv1.ObjectName(p)},
			Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: reason}},
		})
	}
	return st
}

func TestSummariesUpdate(t *testing.T) {
	a := gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "ns", Name: "a"}
	b := gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "ns", Name: "b"}
	gw := &gwapiv1.GatewayStatus{Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted"}}}
	st := &gatewayapi.Status{
		Gateways: map[types.NamespacedName]*gwapiv1.GatewayStatus{{Namespace: "ns", Name: "gw"}: gw},
		Routes:   map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{a: routeStatus("Accepted", "gw", "other"), b: routeStatus("Accepted", "gw")},
	}
	var s Summaries
	changed, gone := s.Update(st)
	if !maps.Equal(changed, Summary(st)) || len(gone) != 0 {
		t.Fatalf("first update: changed %v gone %v, want the whole summary %v", changed, gone, Summary(st))
	}
	// The same objects: nothing to render.
	st2 := *st
	st2.Routes = maps.Clone(st.Routes)
	if changed, gone := s.Update(&st2); len(changed) != 0 || len(gone) != 0 {
		t.Errorf("unchanged: changed %v gone %v, want nothing", changed, gone)
	}
	// Route a is new and has lost a parent; b is gone.
	st3 := *st
	st3.Routes = map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{a: routeStatus("Changed", "gw")}
	changed, gone = s.Update(&st3)
	if want := map[string]string{"HTTPRoute ns/a -> ns/gw": "Accepted=True(Changed)"}; !maps.Equal(changed, want) {
		t.Errorf("changed %v, want %v", changed, want)
	}
	slices.Sort(gone)
	if want := []string{"HTTPRoute ns/a -> ns/other", "HTTPRoute ns/b -> ns/gw"}; !slices.Equal(gone, want) {
		t.Errorf("gone %v, want %v", gone, want)
	}
	// No status: every line is gone.
	changed, gone = s.Update(nil)
	slices.Sort(gone)
	if want := []string{"Gateway ns/gw", "HTTPRoute ns/a -> ns/gw"}; len(changed) != 0 || !slices.Equal(gone, want) {
		t.Errorf("nil status: changed %v gone %v, want gone %v", changed, gone, want)
	}
}

// TestSummariesProperty applies each Update's changes to the lines of the
// previous ones, over random sequences of statuses that keep, replace, add
// and remove objects, and compares them with Summary of the same status.
func TestSummariesProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for seq := range 50 {
		var s Summaries
		applied := map[string]string{}
		routes := map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{}
		gateways := map[types.NamespacedName]*gwapiv1.GatewayStatus{}
		for step := range 20 {
			routes = maps.Clone(routes)
			gateways = maps.Clone(gateways)
			for range rng.IntN(4) {
				k := gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "ns", Name: fmt.Sprint("r", rng.IntN(8))}
				switch rng.IntN(3) {
				case 0:
					delete(routes, k)
				default:
					parents := []string{"gw", "gw2", "gw3"}[:1+rng.IntN(3)]
					routes[k] = routeStatus(fmt.Sprint("R", rng.IntN(2)), parents...)
				}
			}
			if rng.IntN(3) == 0 {
				nn := types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("gw", rng.IntN(2))}
				gs := &gwapiv1.GatewayStatus{Conditions: []metav1.Condition{{Type: "Accepted", Status: "True", Reason: "Accepted"}}}
				for range rng.IntN(3) {
					gs.Listeners = append(gs.Listeners, gwapiv1.ListenerStatus{Name: gwapiv1.SectionName(fmt.Sprint("l", len(gs.Listeners))), AttachedRoutes: rng.Int32N(3)})
				}
				gateways[nn] = gs
			}
			st := &gatewayapi.Status{Routes: routes, Gateways: gateways}
			var stp *gatewayapi.Status
			if rng.IntN(10) > 0 {
				stp = st
			}
			changed, gone := s.Update(stp)
			for _, k := range gone {
				if _, ok := changed[k]; ok {
					t.Fatalf("sequence %d step %d: %s both changed and gone", seq, step, k)
				}
				delete(applied, k)
			}
			maps.Copy(applied, changed)
			if want := Summary(stp); !maps.Equal(applied, want) {
				t.Fatalf("sequence %d step %d: lines after the changes\n%v\nwant Summary's\n%v", seq, step, applied, want)
			}
		}
	}
}

// BenchmarkSummaryWorld is standalone mode's status lines at 20,000
// routes after one route changed: "full" renders and sorts every line
// (Summary and Keys, what printStatus did before Summaries), "changes" only
// the changed route's (Summaries.Update, and Keys of its changes).
func BenchmarkSummaryWorld(b *testing.B) {
	const n = 20000
	st := &gatewayapi.Status{Routes: map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{}}
	for i := range n {
		st.Routes[gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "default", Name: fmt.Sprint("route-", i)}] = routeStatus("Accepted", "bench")
	}
	// st and other differ in one route's status; the runs alternate.
	other := *st
	other.Routes = maps.Clone(st.Routes)
	other.Routes[gatewayapi.RouteKey{Kind: "HTTPRoute", Namespace: "default", Name: "route-7"}] = routeStatus("Accepted", "bench")
	statuses := []*gatewayapi.Status{st, &other}
	b.Run("full", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			Keys(Summary(statuses[i%2]))
		}
	})
	b.Run("changes", func(b *testing.B) {
		var s Summaries
		s.Update(st)
		i := 0
		for b.Loop() {
			i++
			lines, _ := s.Update(statuses[i%2])
			Keys(lines)
		}
	})
}
