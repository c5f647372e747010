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
