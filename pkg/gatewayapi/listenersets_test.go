package gatewayapi

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

func allowedGateway(from gwapiv1.FromNamespaces, sel *metav1.LabelSelector) *gwapiv1.Gateway {
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "infra", Name: "gw"}}
	gw.Spec.Listeners = []gwapiv1.Listener{{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80}}
	if from != "" {
		gw.Spec.AllowedListeners = &gwapiv1.AllowedListeners{Namespaces: &gwapiv1.ListenerNamespaces{From: &from, Selector: sel}}
	}
	return gw
}

func TestAdmitsListenerSet(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	for _, c := range []struct {
		name  string
		gw    *gwapiv1.Gateway
		ns    string
		nsLbl labels.Set
		want  bool
	}{
		{"no allowedListeners admits none", allowedGateway("", nil), "infra", nil, false},
		{"None admits none", allowedGateway(gwapiv1.NamespacesFromNone, nil), "infra", nil, false},
		{"Same admits the Gateway's namespace", allowedGateway(gwapiv1.NamespacesFromSame, nil), "infra", nil, true},
		{"Same refuses another namespace", allowedGateway(gwapiv1.NamespacesFromSame, nil), "apps", nil, false},
		{"All admits any namespace", allowedGateway(gwapiv1.NamespacesFromAll, nil), "apps", nil, true},
		{"Selector admits matching labels", allowedGateway(gwapiv1.NamespacesFromSelector, sel), "apps", labels.Set{"team": "a"}, true},
		{"Selector refuses other labels", allowedGateway(gwapiv1.NamespacesFromSelector, sel), "apps", labels.Set{"team": "b"}, false},
		{"Selector refuses a namespace without labels", allowedGateway(gwapiv1.NamespacesFromSelector, sel), "apps", nil, false},
	} {
		why := AdmitsListenerSet(c.gw, c.ns, c.nsLbl)
		if (why == "") != c.want {
			t.Errorf("%s: AdmitsListenerSet = %q, want admitted %v", c.name, why, c.want)
		}
	}
}

func TestMergeListenerSets(t *testing.T) {
	gw := allowedGateway(gwapiv1.NamespacesFromAll, nil)
	closed := allowedGateway("", nil)
	closed.Name = "closed"
	set := func(ns, name string, created time.Time, parent string, ports ...gwapiv1.PortNumber) *gwapiv1.ListenerSet {
		ls := &gwapiv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)}}
		pns := gwapiv1.Namespace("infra")
		ls.Spec.ParentRef = gwapiv1.ParentGatewayReference{Name: gwapiv1.ObjectName(parent), Namespace: &pns}
		for _, p := range ports {
			ls.Spec.Listeners = append(ls.Spec.Listeners, gwapiv1.ListenerEntry{Name: "l", Protocol: gwapiv1.HTTPProtocolType, Port: p})
		}
		return ls
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := &resources.Resources{
		ListenerSets: []*gwapiv1.ListenerSet{
			set("apps", "b-newer", t0.Add(time.Hour), "gw", 9002),
			set("apps", "a-older", t0, "gw", 9001, 9003),
			set("apps", "knocks", t0, "closed", 9100),
		},
		Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}},
	}
	out := MergeListenerSets([]*gwapiv1.Gateway{gw, closed}, res)
	var ports []gwapiv1.PortNumber
	for _, l := range out[0].Spec.Listeners {
		ports = append(ports, l.Port)
	}
	want := []gwapiv1.PortNumber{80, 9001, 9003, 9002} // own, then oldest set first
	if len(ports) != len(want) {
		t.Fatalf("merged ports %v, want %v", ports, want)
	}
	for i := range want {
		if ports[i] != want[i] {
			t.Fatalf("merged ports %v, want %v", ports, want)
		}
	}
	if len(gw.Spec.Listeners) != 1 {
		t.Errorf("the input Gateway was modified: %d listeners", len(gw.Spec.Listeners))
	}
	if out[1] != closed {
		t.Errorf("a Gateway that admits no ListenerSet should be returned as it is")
	}
}

// TestListenerSetSpecRefused: a ListenerSet that breaks the CRD's schema
// rules (standalone mode has no API server to refuse it) is not accepted,
// and none of its listeners is served.
func TestListenerSetSpecRefused(t *testing.T) {
	res := fixture()
	gw := res.Gateways[0]
	gw.Spec.AllowedListeners = &gwapiv1.AllowedListeners{Namespaces: &gwapiv1.ListenerNamespaces{From: ptr(gwapiv1.NamespacesFromSame)}}
	ls := &gwapiv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: gw.Namespace, Name: "bad", Generation: 3}}
	ls.Spec.ParentRef = gwapiv1.ParentGatewayReference{Name: gwapiv1.ObjectName(gw.Name)}
	ls.Spec.Listeners = []gwapiv1.ListenerEntry{
		{Name: "a", Protocol: gwapiv1.HTTPProtocolType, Port: 9001},
		{Name: "a", Protocol: gwapiv1.HTTPProtocolType, Port: 9002},
	}
	res.ListenerSets = []*gwapiv1.ListenerSet{ls}
	out := Translate(res, Options{})
	st := out.Status.ListenerSets[nn(ls.Namespace, ls.Name)]
	if st == nil {
		t.Fatal("no status for the ListenerSet")
	}
	c := st.Conditions[0]
	if c.Type != "Accepted" || c.Status != metav1.ConditionFalse || c.Reason != "ListenersNotValid" || c.ObservedGeneration != 3 {
		t.Errorf("Accepted = %+v, want False ListenersNotValid at generation 3", c)
	}
	for _, g := range out.IR.Gateways {
		for _, l := range g.Listeners {
			if l.ListenerSet != "" {
				t.Errorf("listener %s of the refused ListenerSet is served", l.Name)
			}
		}
	}
}
