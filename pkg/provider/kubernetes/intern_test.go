package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// TestInternerKeepsUnchangedObjects: listed again with the same UID and
// resourceVersion, an object (a copy, as a List returns) is replaced by
// the one of the last snapshot; a new resourceVersion, or none, keeps the
// copy.
func TestInternerKeepsUnchangedObjects(t *testing.T) {
	route := func(rv string) *gwapiv1.HTTPRoute {
		return &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "r", UID: "u1", ResourceVersion: rv}}
	}
	svc := func(rv string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s", UID: "u2", ResourceVersion: rv}}
	}
	var in interner
	first := &resources.Resources{HTTPRoutes: []*gwapiv1.HTTPRoute{route("1")}, Services: []*corev1.Service{svc("")}}
	in.intern(first)
	second := &resources.Resources{HTTPRoutes: []*gwapiv1.HTTPRoute{route("1")}, Services: []*corev1.Service{svc("")}}
	in.intern(second)
	if second.HTTPRoutes[0] != first.HTTPRoutes[0] {
		t.Error("an HTTPRoute listed again unchanged is a new object")
	}
	if second.Services[0] == first.Services[0] {
		t.Error("an object without resourceVersion was taken for the last one")
	}
	third := &resources.Resources{HTTPRoutes: []*gwapiv1.HTTPRoute{route("2")}}
	in.intern(third)
	if third.HTTPRoutes[0] == first.HTTPRoutes[0] || third.HTTPRoutes[0].ResourceVersion != "2" {
		t.Error("an HTTPRoute with a new resourceVersion is the old object")
	}
}

// TestInternerIgnoresOurStatusWrites: a Gateway or route listed again
// with a new resourceVersion but the same generation, labels, annotations
// and deletionTimestamp (a status write) is the object of the last
// snapshot; a new generation, label, annotation or deletionTimestamp makes
// it a new one. A Service (whose status the translation may read) is new
// at every resourceVersion.
func TestInternerIgnoresOurStatusWrites(t *testing.T) {
	gw := func(rv string, gen int64, edit func(*gwapiv1.Gateway)) *gwapiv1.Gateway {
		g := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "g", UID: "u1", ResourceVersion: rv, Generation: gen,
			Labels: map[string]string{"a": "1"}}}
		if edit != nil {
			edit(g)
		}
		return g
	}
	svc := func(rv string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s", UID: "u2", ResourceVersion: rv, Generation: 1}}
	}
	var in interner
	first := &resources.Resources{Gateways: []*gwapiv1.Gateway{gw("1", 1, nil)}, Services: []*corev1.Service{svc("1")}}
	in.intern(first)
	statusOnly := &resources.Resources{
		Gateways: []*gwapiv1.Gateway{gw("2", 1, func(g *gwapiv1.Gateway) {
			g.Status.Listeners = []gwapiv1.ListenerStatus{{Name: "http", AttachedRoutes: 3}}
		})},
		Services: []*corev1.Service{svc("2")},
	}
	in.intern(statusOnly)
	if statusOnly.Gateways[0] != first.Gateways[0] {
		t.Error("a Gateway whose status alone changed is a new object")
	}
	if statusOnly.Services[0] == first.Services[0] {
		t.Error("a Service with a new resourceVersion is the old object")
	}
	now := metav1.Now()
	for name, edit := range map[string]func(*gwapiv1.Gateway){
		"generation":        func(g *gwapiv1.Gateway) { g.Generation = 2 },
		"label":             func(g *gwapiv1.Gateway) { g.Labels["a"] = "2" },
		"annotation":        func(g *gwapiv1.Gateway) { g.Annotations = map[string]string{"x": "y"} },
		"deletionTimestamp": func(g *gwapiv1.Gateway) { g.DeletionTimestamp = &now },
		"UID":               func(g *gwapiv1.Gateway) { g.UID = "u3" },
	} {
		var in interner
		in.intern(&resources.Resources{Gateways: []*gwapiv1.Gateway{gw("1", 1, nil)}})
		next := &resources.Resources{Gateways: []*gwapiv1.Gateway{gw("2", 1, edit)}}
		in.intern(next)
		if next.Gateways[0].ResourceVersion != "2" {
			t.Errorf("a Gateway with another %s is the old object", name)
		}
	}
}
