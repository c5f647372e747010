package status

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// queued drains w's queue (the writer is not running) and returns what
// Update queued, in order.
func queued(w *Writer) []Key {
	var out []Key
	for w.queue.Len() > 0 {
		k, _ := w.queue.Get()
		w.queue.Done(k)
		w.queue.Forget(k)
		out = append(out, k)
	}
	return out
}

// TestUpdateWithTheSameRoutesMap: a data-plane refresh hands Update the
// very routes map of the last translation again. Update then compares
// only the other objects; after a translation it updates the routes in
// place. Either way what it holds and queues is what a full comparison
// would give.
func TestUpdateWithTheSameRoutesMap(t *testing.T) {
	w := NewWriter(fake.NewClientBuilder().Build(), nil, Options{})
	gwStatus := func(reason string) *gwapiv1.GatewayStatus {
		return &gwapiv1.GatewayStatus{Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: reason}}}
	}
	route := func(gen int64) *gwapiv1.RouteStatus {
		return &gwapiv1.RouteStatus{Parents: []gwapiv1.RouteParentStatus{{ControllerName: "c", Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, ObservedGeneration: gen}}}}}
	}
	r1 := gatewayapi.RouteKey{Kind: gatewayapi.KindHTTPRoute, Namespace: "ns", Name: "r1"}
	r2 := gatewayapi.RouteKey{Kind: gatewayapi.KindHTTPRoute, Namespace: "ns", Name: "r2"}
	r3 := gatewayapi.RouteKey{Kind: gatewayapi.KindHTTPRoute, Namespace: "ns", Name: "r3"}
	routes := map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{r1: route(1), r2: route(1)}
	g1 := types.NamespacedName{Namespace: "ns", Name: "g1"}
	g2 := types.NamespacedName{Namespace: "ns", Name: "g2"}
	kr1 := Key{Kind: gatewayapi.KindHTTPRoute, Namespace: "ns", Name: "r1"}
	kr2 := Key{Kind: gatewayapi.KindHTTPRoute, Namespace: "ns", Name: "r2"}
	kr3 := Key{Kind: gatewayapi.KindHTTPRoute, Namespace: "ns", Name: "r3"}
	kg1 := Key{Kind: resources.GatewayKind.Name(), Namespace: "ns", Name: "g1"}
	kg2 := Key{Kind: resources.GatewayKind.Name(), Namespace: "ns", Name: "g2"}

	steps := []struct {
		name string
		st   *gatewayapi.Status
		want []Key
	}{
		{"first translation", &gatewayapi.Status{Routes: routes, Gateways: map[types.NamespacedName]*gwapiv1.GatewayStatus{g1: gwStatus("Pending")}}, []Key{kg1, kr1, kr2}},
		{"refresh, Gateway unchanged (an equal copy)", &gatewayapi.Status{Routes: routes, Gateways: map[types.NamespacedName]*gwapiv1.GatewayStatus{g1: gwStatus("Pending")}}, nil},
		{"refresh, Gateway Programmed", &gatewayapi.Status{Routes: routes, Gateways: map[types.NamespacedName]*gwapiv1.GatewayStatus{g1: gwStatus("Programmed")}}, []Key{kg1}},
		{"refresh, Gateway g1 gone and g2 new", &gatewayapi.Status{Routes: routes, Gateways: map[types.NamespacedName]*gwapiv1.GatewayStatus{g2: gwStatus("Programmed")}}, []Key{kg2}},
		{"next translation, r2 changed", &gatewayapi.Status{Routes: map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{r1: routes[r1], r2: route(2)}, Gateways: map[types.NamespacedName]*gwapiv1.GatewayStatus{g2: gwStatus("Programmed")}}, []Key{kr2}},
		{"next translation, r1 an equal copy, r2 gone, r3 new", &gatewayapi.Status{Routes: map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{r1: route(1), r3: route(1)}, Gateways: map[types.NamespacedName]*gwapiv1.GatewayStatus{g2: gwStatus("Programmed")}}, []Key{kr3}},
	}
	for _, s := range steps {
		w.Update(s.st)
		if got := queued(w); !slices.Equal(got, s.want) {
			t.Errorf("%s: queued %v, want %v", s.name, got, s.want)
		}
		// What a writer that never saw the earlier steps holds.
		fresh := NewWriter(fake.NewClientBuilder().Build(), nil, Options{})
		fresh.Update(s.st)
		if !maps.Equal(w.desired, fresh.desired) {
			t.Errorf("%s: desired %v, want %v", s.name, w.desired, fresh.desired)
		}
	}
	// g1 and r2 are forgotten: an event for them queues nothing; r1
	// still counts.
	w.Enqueue(kg1)
	w.Enqueue(kr2)
	w.Enqueue(kr1)
	if got := queued(w); !slices.Equal(got, []Key{kr1}) {
		t.Errorf("Enqueue(g1), Enqueue(r2), Enqueue(r1) queued %v, want [r1]", got)
	}
}

// BenchmarkUpdate: Update at 3000 routes and 10 Gateways after a
// translation (a new routes map) and after a data-plane refresh (the
// same routes map, new Gateway statuses).
//
//	go test ./pkg/status -run '^$' -bench Update -benchmem
func BenchmarkUpdate(b *testing.B) {
	routes := map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{}
	for i := range 3000 {
		routes[gatewayapi.RouteKey{Kind: gatewayapi.KindHTTPRoute, Namespace: "default", Name: "route-" + string(rune('a'+i%26)) + string(rune('0'+i/26%10)) + string(rune('0'+i/260))}] = &gwapiv1.RouteStatus{}
	}
	gateways := func() map[types.NamespacedName]*gwapiv1.GatewayStatus {
		m := map[types.NamespacedName]*gwapiv1.GatewayStatus{}
		for i := range 10 {
			m[types.NamespacedName{Namespace: "default", Name: "gw-" + string(rune('0'+i))}] = &gwapiv1.GatewayStatus{}
		}
		return m
	}
	for _, c := range []struct {
		name   string
		routes func() map[gatewayapi.RouteKey]*gwapiv1.RouteStatus
	}{
		{"translation", func() map[gatewayapi.RouteKey]*gwapiv1.RouteStatus { return maps.Clone(routes) }},
		{"refresh", func() map[gatewayapi.RouteKey]*gwapiv1.RouteStatus { return routes }},
	} {
		b.Run(c.name, func(b *testing.B) {
			w := NewWriter(fake.NewClientBuilder().Build(), nil, Options{Leading: func() bool { return false }})
			w.Update(&gatewayapi.Status{Routes: routes, Gateways: gateways()})
			for b.Loop() {
				b.StopTimer()
				st := &gatewayapi.Status{Routes: c.routes(), Gateways: gateways()}
				b.StartTimer()
				w.Update(st)
			}
		})
	}
}
