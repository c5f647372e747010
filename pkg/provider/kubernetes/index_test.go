package kubernetes

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// TestObjectIndexFollowsEvents: after random adds, updates (of spec, of
// status only, or none) and deletes of HTTPRoutes and Services, delivered
// through the index's handlers with snapshots taken in between, every
// snapshot lists exactly the live objects sorted by namespace/name; an
// object whose update changed nothing the translation reads is the
// object of the earlier snapshot, and the live status is the newest.
func TestObjectIndexFollowsEvents(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := newObjectIndex()
	routes, svcs := x.handler(resources.HTTPRouteKind), x.handler(resources.ServiceKind)
	liveRoutes := map[types.NamespacedName]*gwapiv1.HTTPRoute{}
	liveSvcs := map[types.NamespacedName]*corev1.Service{}
	rv := 0
	next := func() string { rv++; return fmt.Sprint(rv) }
	for step := range 3000 {
		k := types.NamespacedName{Namespace: fmt.Sprintf("ns%d", rng.IntN(3)), Name: fmt.Sprintf("o%d", rng.IntN(40))}
		if rng.IntN(2) == 0 {
			old := liveRoutes[k]
			switch n := rng.IntN(10); {
			case n < 2 && old != nil:
				delete(liveRoutes, k)
				if rng.IntN(2) == 0 {
					routes.OnDelete(toolscache.DeletedFinalStateUnknown{Key: k.String(), Obj: old})
				} else {
					routes.OnDelete(old)
				}
			case old == nil:
				r := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, UID: types.UID(next()), ResourceVersion: next(), Generation: 1}}
				liveRoutes[k] = r
				routes.OnAdd(r, false)
			default:
				r := old.DeepCopy()
				r.ResourceVersion = next()
				if rng.IntN(2) == 0 {
					r.Generation++ // a spec change
				} else {
					r.Status.Parents = append(r.Status.Parents, gwapiv1.RouteParentStatus{ControllerName: "x/y"})
				}
				liveRoutes[k] = r
				routes.OnUpdate(old, r)
			}
		} else {
			old := liveSvcs[k]
			switch {
			case old != nil && rng.IntN(3) == 0:
				delete(liveSvcs, k)
				svcs.OnDelete(old)
			default:
				s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, UID: types.UID(next()), ResourceVersion: next()}}
				if old != nil {
					s.UID = old.UID
				}
				liveSvcs[k] = s
				svcs.OnAdd(s, false)
			}
		}
		// Two bursts without a snapshot (the informers' initial adds, a
		// relist) take the path that rebuilds a kind's list.
		burst := step < 400 || step >= 1500 && step < 1900
		if burst || rng.IntN(7) != 0 && step != 2999 {
			continue
		}
		before := x.kinds[resources.HTTPRouteKind.Name()]
		var prev []resources.Object
		if before != nil {
			prev = slices.Clone(before.objs)
		}
		res := x.snapshot()
		live := x.liveStatus(res)
		checkSorted(t, res.HTTPRoutes, liveRoutes, func(got, want *gwapiv1.HTTPRoute) bool {
			if got == want {
				return true
			}
			// An older object of the same spec, kept from the last snapshot.
			return slices.Contains(prev, resources.Object(got)) && got.UID == want.UID && got.Generation == want.Generation
		})
		checkSorted(t, res.Services, liveSvcs, func(got, want *corev1.Service) bool { return got == want })
		for _, ro := range live.routes {
			want := liveRoutes[types.NamespacedName{Namespace: ro.Object.GetNamespace(), Name: ro.Object.GetName()}]
			if len(ro.Parents) != len(want.Status.Parents) {
				t.Fatalf("step %d: live status of %s/%s has %d parents, the newest object %d", step, want.Namespace, want.Name, len(ro.Parents), len(want.Status.Parents))
			}
		}
		if len(live.routes) != len(liveRoutes) {
			t.Fatalf("step %d: %d live routes, want %d", step, len(live.routes), len(liveRoutes))
		}
	}
}

func checkSorted[T metav1.Object](t *testing.T, got []T, want map[types.NamespacedName]T, same func(got, want T) bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d objects, want %d", len(got), len(want))
	}
	for i, o := range got {
		k := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
		if i > 0 && compareNN(types.NamespacedName{Namespace: got[i-1].GetNamespace(), Name: got[i-1].GetName()}, k) >= 0 {
			t.Fatalf("not sorted at %d: %s after %s/%s", i, k, got[i-1].GetNamespace(), got[i-1].GetName())
		}
		w, ok := want[k]
		if !ok || !same(o, w) {
			t.Fatalf("%s: the snapshot holds resourceVersion %s, the newest is %v", k, o.GetResourceVersion(), w)
		}
	}
}

// TestObjectIndexIgnoresOurStatusWrites: a Gateway updated with a new
// resourceVersion but the same generation, labels, annotations and
// deletionTimestamp (a status write) stays the object of the last
// snapshot; a new generation, label, annotation, deletionTimestamp or UID
// makes it the new one. A Service (whose status the translation may read)
// is new at every resourceVersion, a Namespace only with new labels.
func TestObjectIndexIgnoresOurStatusWrites(t *testing.T) {
	gw := func(rv string, edit func(*gwapiv1.Gateway)) *gwapiv1.Gateway {
		g := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g", UID: "u1", ResourceVersion: rv, Generation: 1,
			Labels: map[string]string{"a": "1"}}}
		if edit != nil {
			edit(g)
		}
		return g
	}
	x := newObjectIndex()
	gws, svcs, nss := x.handler(resources.GatewayKind), x.handler(resources.ServiceKind), x.handler(resources.NamespaceKind)
	first := gw("1", nil)
	gws.OnAdd(first, false)
	svcs.OnAdd(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s", UID: "u2", ResourceVersion: "1"}}, false)
	nss.OnAdd(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "u3", ResourceVersion: "1", Labels: map[string]string{"x": "1"}}}, false)
	res1 := x.snapshot()
	gws.OnUpdate(first, gw("2", func(g *gwapiv1.Gateway) {
		g.Status.Listeners = []gwapiv1.ListenerStatus{{Name: "http", AttachedRoutes: 3}}
	}))
	svcs.OnUpdate(nil, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s", UID: "u2", ResourceVersion: "2"}})
	nss.OnUpdate(nil, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "u3", ResourceVersion: "2", Labels: map[string]string{"x": "1"},
		Annotations: map[string]string{"note": "a"}}})
	res2 := x.snapshot()
	if res2.Gateways[0] != first {
		t.Error("a Gateway whose status alone changed is a new object")
	}
	if res2.Services[0] == res1.Services[0] {
		t.Error("a Service with a new resourceVersion is the old object")
	}
	if res2.Namespaces[0] != res1.Namespaces[0] {
		t.Error("a Namespace whose labels did not change is a new object")
	}
	now := metav1.Now()
	for name, edit := range map[string]func(*gwapiv1.Gateway){
		"generation":        func(g *gwapiv1.Gateway) { g.Generation = 2 },
		"label":             func(g *gwapiv1.Gateway) { g.Labels["a"] = "2" },
		"annotation":        func(g *gwapiv1.Gateway) { g.Annotations = map[string]string{"x": "y"} },
		"deletionTimestamp": func(g *gwapiv1.Gateway) { g.DeletionTimestamp = &now },
		"UID":               func(g *gwapiv1.Gateway) { g.UID = "u9" },
	} {
		x := newObjectIndex()
		h := x.handler(resources.GatewayKind)
		h.OnAdd(gw("1", nil), false)
		x.snapshot()
		h.OnUpdate(nil, gw("2", edit))
		if res := x.snapshot(); res.Gateways[0].ResourceVersion != "2" {
			t.Errorf("a Gateway with another %s is the old object", name)
		}
	}
}
