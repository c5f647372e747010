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
