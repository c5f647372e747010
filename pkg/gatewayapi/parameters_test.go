package gatewayapi

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestInvalidParameters: refused parametersRefs become Accepted=False
// reason InvalidParameters on the class and the Gateway, and a refused
// Gateway is not served; the others are untouched.
func TestInvalidParameters(t *testing.T) {
	res := fixture()
	res.Gateways = append(res.Gateways, gateway("other", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 8080}))
	res.Sort()

	plain := Translate(res, Options{})
	if c := meta.FindStatusCondition(plain.Status.GatewayClasses["xds"].Conditions, "Accepted"); c == nil || c.Status != "True" {
		t.Fatalf("without refusals the class is not accepted: %+v", c)
	}

	out := Translate(res, Options{InvalidParameters: &InvalidParameters{
		GatewayClasses: map[string]string{"xds": "GatewayParameters default/missing not found"},
		Gateways:       map[types.NamespacedName]string{{Namespace: "default", Name: "web"}: "bad podTemplate"},
	}})
	gc := meta.FindStatusCondition(out.Status.GatewayClasses["xds"].Conditions, "Accepted")
	if gc == nil || gc.Status != "False" || gc.Reason != string(gwapiv1.GatewayClassReasonInvalidParameters) || gc.Message != "GatewayParameters default/missing not found" {
		t.Errorf("class Accepted %+v", gc)
	}
	web := out.Status.Gateways[types.NamespacedName{Namespace: "default", Name: "web"}]
	acc := meta.FindStatusCondition(web.Conditions, "Accepted")
	if acc == nil || acc.Status != "False" || acc.Reason != string(gwapiv1.GatewayReasonInvalidParameters) || acc.Message != "bad podTemplate" {
		t.Errorf("Gateway web Accepted %+v", acc)
	}
	if p := meta.FindStatusCondition(web.Conditions, "Programmed"); p == nil || p.Status != "False" {
		t.Errorf("Gateway web Programmed %+v", p)
	}
	other := out.Status.Gateways[types.NamespacedName{Namespace: "default", Name: "other"}]
	if acc := meta.FindStatusCondition(other.Conditions, "Accepted"); acc == nil || acc.Status != "True" {
		t.Errorf("Gateway other (not listed) Accepted %+v", acc)
	}
	for _, g := range out.IR.Gateways {
		if g.Name == "web" {
			t.Errorf("the refused Gateway is in the IR: %+v", g)
		}
	}
}

// A Gateway none of whose listeners is accepted is Accepted=False and
// Programmed=False, but it keeps its scope in the IR (without listeners):
// the fleet provisioned for it is one of ours, gets its SVID and becomes
// ready serving nothing (conformance setup waits for every pod of its
// namespace, Dedicated mode included). A Gateway refused as a whole stays
// out (TestInvalidParameters).
func TestGatewayWithoutAcceptedListenersKeepsItsScope(t *testing.T) {
	res := fixture()
	res.Gateways = append(res.Gateways, gateway("unsupported", gwapiv1.Listener{Name: "sctp", Protocol: "SCTP", Port: 8053}))
	res.Sort()
	out := Translate(res, Options{Scope: func(gw *gwapiv1.Gateway) string { return "gateway/" + gw.Namespace + "/" + gw.Name }})
	st := out.Status.Gateways[types.NamespacedName{Namespace: "default", Name: "unsupported"}]
	if c := meta.FindStatusCondition(st.Conditions, "Accepted"); c == nil || c.Status != "False" {
		t.Errorf("Accepted %+v, want False", c)
	}
	if c := meta.FindStatusCondition(st.Conditions, "Programmed"); c == nil || c.Status != "False" {
		t.Errorf("Programmed %+v, want False", c)
	}
	found := false
	for _, g := range out.IR.Gateways {
		if g.Name == "unsupported" {
			found = true
			if g.Scope != "gateway/default/unsupported" || len(g.Listeners) != 0 {
				t.Errorf("IR Gateway %+v: want its own scope and no listeners", g)
			}
		}
	}
	if !found {
		t.Error("the Gateway without accepted listeners is not in the IR: its fleet gets no SVID")
	}
	if err := out.IR.Validate(); err != nil {
		t.Errorf("IR: %v", err)
	}
}
