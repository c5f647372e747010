package provisioner

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// TestResolveHoldsGatewaysToTheirClassPolicy: a Gateway's own parameters
// that set what its class does not allow (a privileged overlay, an image)
// are refused with the fields named, get no effective parameters, and
// their fleet is neither synced nor pruned (plan: the previous one stays);
// the same parameters under a class that allows them are accepted, as are
// the same fields in the class's own parameters (the cluster admin's).
// ExternalIPsAllowed follows the class's policy, never the Gateway's.
func TestResolveHoldsGatewaysToTheirClassPolicy(t *testing.T) {
	privileged := v1alpha1.GatewayParametersSpec{
		Mode:        ptr.To(v1alpha1.ModeDedicated),
		Envoy:       &v1alpha1.EnvoySpec{Image: ptr.To("evil.example/envoy")},
		PodTemplate: &runtime.RawExtension{Raw: []byte(`{"spec":{"hostNetwork":true,"containers":[{"name":"envoy","securityContext":{"privileged":true}}]}}`)},
	}
	trusting := v1alpha1.GatewayParametersSpec{GatewayPolicy: &v1alpha1.GatewayPolicy{Allow: []v1alpha1.GatewayPermission{
		v1alpha1.PermissionEnvoyImage, v1alpha1.PermissionPodTemplate, v1alpha1.PermissionExternalIPs}}}
	selfWidening := v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated), GatewayPolicy: trusting.GatewayPolicy}
	res := &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{
			class("default", nil),
			class("bounded", classRef("bounded")),
			class("trusting", classRef("trusting")),
			class("admin-privileged", classRef("privileged")),
		},
		Gateways: []*gwapiv1.Gateway{
			gw("apps", "refused", "default", 0, gwRef("privileged")),
			gw("apps", "refused-bounded", "bounded", 0, gwRef("privileged")),
			gw("apps", "self-widening", "default", 0, gwRef("self-widening")),
			gw("apps", "trusted", "trusting", 0, gwRef("privileged")),
			gw("apps", "plain", "default", 0, gwRef("plain")),
			gw("apps", "of-admin", "admin-privileged", 0, nil),
			gw("apps", "bounded-plain", "bounded", 0, nil),
		},
	}
	ps := []*v1alpha1.GatewayParameters{
		params(sys, "bounded", v1alpha1.GatewayParametersSpec{GatewayPolicy: &v1alpha1.GatewayPolicy{Allow: []v1alpha1.GatewayPermission{v1alpha1.PermissionExternalIPs}}}),
		params(sys, "trusting", trusting),
		params(sys, "privileged", privileged),
		params("apps", "privileged", privileged),
		params("apps", "self-widening", selfWidening),
		params("apps", "plain", v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated), Replicas: ptr.To[int32](3)}),
	}
	r := Resolve(res, ps, gatewayapi.ControllerName)
	inv := r.InvalidParameters()
	if inv == nil {
		t.Fatal("nothing refused")
	}
	const fields = "GatewayParameters apps/privileged: a Gateway's own GatewayParameters may not set spec.envoy.image, spec.podTemplate.spec.containers[envoy].securityContext, spec.podTemplate.spec.hostNetwork unless the GatewayClass's GatewayParameters allow it (spec.gatewayPolicy.allow: EnvoyImage, PodTemplate)"
	want := map[string]string{
		"refused":         fields,
		"refused-bounded": fields,
		"self-widening":   "GatewayParameters apps/self-widening: a Gateway's own GatewayParameters may not set spec.gatewayPolicy",
	}
	for name, msg := range want {
		if got := inv.Gateways[nn("apps", name)]; got != msg {
			t.Errorf("Gateway %s: %q, want %q", name, got, msg)
		}
	}
	if len(inv.Gateways) != len(want) || len(inv.GatewayClasses) != 0 {
		t.Errorf("refused %v %v", inv.GatewayClasses, inv.Gateways)
	}
	byName := map[string]*gwapiv1.Gateway{}
	for _, g := range res.Gateways {
		byName[g.Name] = g
		_, ok := r.Effective(g)
		if _, refused := want[g.Name]; ok == refused {
			t.Errorf("Gateway %s: effective parameters %v, refused %v", g.Name, ok, refused)
		}
	}
	if p, _ := r.Effective(byName["trusted"]); *p.Envoy.Image != "evil.example/envoy" || r.Mode(byName["trusted"]) != v1alpha1.ModeDedicated {
		t.Errorf("trusted: %+v", p)
	}
	// External IPs: the class's word, never the Gateway's own.
	for name, allowed := range map[string]bool{"trusted": true, "plain": false, "of-admin": false, "self-widening": false, "refused-bounded": false, "bounded-plain": true} {
		if got := r.ExternalIPsAllowed(byName[name]); got != allowed {
			t.Errorf("ExternalIPsAllowed(%s) = %v", name, got)
		}
	}
	// A refused Gateway's fleet is left as it is: neither synced nor
	// pruned.
	p := makePlan(res, r)
	for _, g := range append(append(p.shared, p.dedicated...), p.departed...) {
		if _, refused := want[g.Name]; refused {
			t.Errorf("plan syncs refused Gateway %s", g.Name)
		}
	}
}
