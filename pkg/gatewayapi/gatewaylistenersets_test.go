package gatewayapi

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestGatewayAcceptedThroughListenerSet: a Gateway whose own listeners are
// all not accepted is still Accepted when a ListenerSet it admits has an
// accepted listener (its listeners count: gatewayState.accepted), and so
// is the set.
func TestGatewayAcceptedThroughListenerSet(t *testing.T) {
	res := fixture()
	gw := res.Gateways[0]
	for i := range gw.Spec.Listeners {
		gw.Spec.Listeners[i].Protocol = "FOO"
	}
	gw.Spec.AllowedListeners = &gwapiv1.AllowedListeners{Namespaces: &gwapiv1.ListenerNamespaces{From: ptr(gwapiv1.NamespacesFromSame)}}
	ls := &gwapiv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: "set"}}
	ls.Spec.ParentRef = gwapiv1.ParentGatewayReference{Name: gwapiv1.ObjectName(gw.Name)}
	ls.Spec.Listeners = []gwapiv1.ListenerEntry{{Name: "a", Protocol: gwapiv1.HTTPProtocolType, Port: 9001}}
	res.ListenerSets = []*gwapiv1.ListenerSet{ls}
	out := Translate(res, Options{})
	st := out.Status.Gateways[nn(gw.Namespace, gw.Name)]
	if st == nil || !meta.IsStatusConditionTrue(st.Conditions, "Accepted") {
		t.Fatalf("Gateway status %+v, want Accepted=True", st)
	}
	if s := out.Status.ListenerSets[nn(ls.Namespace, ls.Name)]; s == nil || !meta.IsStatusConditionTrue(s.Conditions, "Accepted") {
		t.Errorf("ListenerSet status %+v, want Accepted=True", s)
	}
}
