package status

import (
	"strings"
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// dataPlaneCase is Gateway default/gw with HTTP listeners "a" (port 80)
// and "b" (port 81) in scope s, both programmed by the translator.
func dataPlaneCase() (*gatewayapi.Status, *ir.IR, map[string]*xdstranslator.Resources) {
	programmed := func() []metav1.Condition {
		return []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", ObservedGeneration: 3}}
	}
	key := k8stypes.NamespacedName{Namespace: "default", Name: "gw"}
	st := &gatewayapi.Status{Gateways: map[k8stypes.NamespacedName]*gwapiv1.GatewayStatus{key: {
		Conditions: programmed(),
		Listeners:  []gwapiv1.ListenerStatus{{Name: "a", Conditions: programmed()}, {Name: "b", Conditions: programmed()}},
	}}}
	in := &ir.IR{Gateways: []*ir.Gateway{{Namespace: "default", Name: "gw", Scope: "s", Listeners: []*ir.Listener{
		{Name: "default/gw/a", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 80},
		{Name: "default/gw/b", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 81},
	}}}}
	x := map[string]*xdstranslator.Resources{"s": {
		Listeners: []types.Resource{&listenerv3.Listener{Name: "listener/0.0.0.0/80"}, &listenerv3.Listener{Name: "listener/0.0.0.0/81"}},
		Routes:    []types.Resource{&routev3.RouteConfiguration{Name: "listener/0.0.0.0/80"}, &routev3.RouteConfiguration{Name: "listener/0.0.0.0/81"}},
	}}
	return st, in, x
}

func since(l80, l81 uint64) map[string]map[string]uint64 {
	m := map[string]uint64{"listener/0.0.0.0/80": l80, "listener/0.0.0.0/81": l81}
	return map[string]map[string]uint64{resource.ListenerType: m, resource.RouteType: m}
}

func proxy(id string, lds, rds uint64) xdsserver.ProxyView {
	return xdsserver.ProxyView{NodeID: id, Acked: map[string]uint64{resource.ListenerType: lds, resource.RouteType: rds}}
}

func TestWithDataPlane(t *testing.T) {
	key := k8stypes.NamespacedName{Namespace: "default", Name: "gw"}
	for _, c := range []struct {
		name                  string
		view                  xdsserver.ScopeView
		gw, a, b              metav1.ConditionStatus
		gwReason, msgFragment string
	}{
		{"no proxy", xdsserver.ScopeView{Generation: 7, Served: 7, Since: since(1, 7)},
			"False", "False", "False", "Pending", "no Envoy proxy of scope s is connected"},
		{"two of three serve the generation with listener b", xdsserver.ScopeView{Generation: 9, Served: 9, Since: since(1, 7),
			Proxies: []xdsserver.ProxyView{proxy("e1", 9, 9), proxy("e2", 7, 8), proxy("e3", 6, 6)}},
			"True", "True", "True", "Programmed", "2/3 Envoy proxies serve generation 7 or newer"},
		{"listener b not served yet", xdsserver.ScopeView{Generation: 7, Served: 7, Since: since(1, 7),
			Proxies: []xdsserver.ProxyView{proxy("e1", 7, 6)}},
			"False", "True", "False", "Pending", "0/1 Envoy proxies serve generation 7 yet"},
		{"rejected", xdsserver.ScopeView{Generation: 8, Served: 7, Since: since(1, 7),
			Proxies:  []xdsserver.ProxyView{proxy("e1", 7, 7)},
			Rejected: &xdsserver.Nack{NodeID: "e1", TypeURL: resource.RouteType, Generation: 8, Detail: "Invalid regex '('"}},
			"False", "False", "False", "Rejected", "Envoy proxy e1 rejected generation 8 of scope s (RouteConfiguration): Invalid regex '('; proxies keep serving the last configuration they accepted"},
		{"never published", xdsserver.ScopeView{Proxies: []xdsserver.ProxyView{proxy("e1", 0, 0)}},
			"False", "False", "False", "Pending", "not published yet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, in, x := dataPlaneCase()
			got := WithDataPlane(st, in, x, map[string]xdsserver.ScopeView{"s": c.view}).Gateways[key]
			gc := meta.FindStatusCondition(got.Conditions, "Programmed")
			if gc.Status != c.gw || gc.Reason != c.gwReason || !strings.Contains(gc.Message, c.msgFragment) || gc.ObservedGeneration != 3 {
				t.Errorf("Gateway Programmed = %+v, want %s(%s) with %q", gc, c.gw, c.gwReason, c.msgFragment)
			}
			for i, want := range []metav1.ConditionStatus{c.a, c.b} {
				if lc := meta.FindStatusCondition(got.Listeners[i].Conditions, "Programmed"); lc.Status != want {
					t.Errorf("listener %s Programmed = %+v, want %s", got.Listeners[i].Name, lc, want)
				}
			}
			if meta.FindStatusCondition(st.Gateways[key].Conditions, "Programmed").Status != "True" {
				t.Error("the input status was modified")
			}
		})
	}
}

func TestWithDataPlaneKeepsTranslatorFalse(t *testing.T) {
	st, in, x := dataPlaneCase()
	key := k8stypes.NamespacedName{Namespace: "default", Name: "gw"}
	st.Gateways[key].Listeners[1].Conditions[0] = metav1.Condition{Type: "Programmed", Status: "False", Reason: "Invalid", Message: "bad cert"}
	in.Gateways[0].Listeners = in.Gateways[0].Listeners[:1]
	got := WithDataPlane(st, in, x, map[string]xdsserver.ScopeView{"s": {Generation: 1, Served: 1, Since: since(1, 1), Proxies: []xdsserver.ProxyView{proxy("e1", 1, 1)}}}).Gateways[key]
	if c := meta.FindStatusCondition(got.Listeners[1].Conditions, "Programmed"); c.Reason != "Invalid" || c.Message != "bad cert" {
		t.Errorf("a listener the translator did not program became %+v", c)
	}
	if c := meta.FindStatusCondition(got.Conditions, "Programmed"); c.Status != "True" {
		t.Errorf("Gateway Programmed = %+v, want True (its programmed listener is served)", c)
	}
}

// TestWithDataPlaneListenerSet: listener "b" (port 81) belongs to
// ListenerSet default/set and is named "a" there, like the Gateway's own
// listener "a": the data plane's verdict on it lands on the ListenerSet's
// listener and Programmed condition, never on the Gateway's listener "a".
func TestWithDataPlaneListenerSet(t *testing.T) {
	st, in, x := dataPlaneCase()
	key := k8stypes.NamespacedName{Namespace: "default", Name: "gw"}
	setKey := k8stypes.NamespacedName{Namespace: "default", Name: "set"}
	st.Gateways[key].Listeners = st.Gateways[key].Listeners[:1]
	st.ListenerSets = map[k8stypes.NamespacedName]*gwapiv1.ListenerSetStatus{setKey: {
		Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed"}},
		Listeners:  []gwapiv1.ListenerEntryStatus{{Name: "a", Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed"}}}},
	}}
	in.Gateways[0].Listeners[1].Name = "default/gw/default/set/a"
	in.Gateways[0].Listeners[1].ListenerSet = "default/set"
	// Port 80 (the Gateway's "a") is served, port 81 (the set's "a") not yet.
	view := xdsserver.ScopeView{Generation: 7, Served: 7, Since: since(1, 7), Proxies: []xdsserver.ProxyView{proxy("e1", 7, 6)}}
	out := WithDataPlane(st, in, x, map[string]xdsserver.ScopeView{"s": view})
	if c := meta.FindStatusCondition(out.Gateways[key].Listeners[0].Conditions, "Programmed"); c.Status != "True" {
		t.Errorf("the Gateway's listener a = %+v, want True", c)
	}
	ls := out.ListenerSets[setKey]
	if c := meta.FindStatusCondition(ls.Listeners[0].Conditions, "Programmed"); c.Status != "False" || c.Reason != "Pending" {
		t.Errorf("the ListenerSet's listener a = %+v, want False(Pending)", c)
	}
	if c := meta.FindStatusCondition(ls.Conditions, "Programmed"); c.Status != "False" || c.Reason != "Pending" {
		t.Errorf("the ListenerSet's Programmed = %+v, want False(Pending)", c)
	}
	if c := meta.FindStatusCondition(st.ListenerSets[setKey].Conditions, "Programmed"); c.Status != "True" {
		t.Error("the input status was modified")
	}
}
