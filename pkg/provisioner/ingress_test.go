package provisioner

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// TestResolveIngressClasses: the Gateway standing for an IngressClass is
// resolved like a Gateway of the Ingress GatewayClass: in Shared mode it
// gets bind ports for 80 and 443 apart from the other Gateways of the
// class's fleet and a Service of its own; GatewayParameters named by its
// IngressClassParameters make it Dedicated; missing ones refuse it; the
// plan provisions it, and prunes the Service of a class Gateway that no
// longer stands for a class.
func TestResolveIngressClasses(t *testing.T) {
	ic := func(name string, params *networkingv1.IngressClassParametersReference) *networkingv1.IngressClass {
		return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-ic-" + name)},
			Spec: networkingv1.IngressClassSpec{Controller: ingress.ControllerName, Parameters: params}}
	}
	ref := func(ns, name string) *networkingv1.IngressClassParametersReference {
		return &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(v1alpha1.GroupVersion.Group), Kind: v1alpha1.IngressClassParametersKind,
			Name: name, Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace), Namespace: ptr.To(ns)}
	}
	icp := func(ns, name, gwParams string) *v1alpha1.IngressClassParameters {
		return &v1alpha1.IngressClassParameters{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.IngressClassParametersSpec{GatewayParametersRef: &v1alpha1.LocalObjectReference{Name: gwParams}}}
	}
	res := &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{class("xds-controller", nil)},
		Gateways:       []*gwapiv1.Gateway{gw("apps", "web", "xds-controller", 0, nil)},
		IngressClasses: []*networkingv1.IngressClass{
			ic("shared", nil), ic("own", ref("edge", "own")), ic("broken", ref("edge", "broken")),
		},
		IngressClassParameters: []*v1alpha1.IngressClassParameters{icp("edge", "own", "dedicated"), icp("edge", "broken", "absent")},
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "old-ns", Name: "ingress-gone-xds-controller",
			Labels:          map[string]string{infra.LabelManagedBy: infra.ManagedByValue},
			Annotations:     map[string]string{infra.AnnotationGatewayName: "ingress-gone"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "IngressClass", Name: "gone"}}}}},
	}
	ps := []*v1alpha1.GatewayParameters{params("edge", "dedicated", v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)})}
	cgs := ingress.ClassGateways(res, ingress.Config{Namespace: sys, GatewayClass: "xds-controller"})
	r := Resolve(res, ps, gatewayapi.ControllerName, cgs...)
	byName := map[string]*gwapiv1.Gateway{}
	for _, g := range cgs {
		byName[g.Name] = g
	}
	shared, own, broken := byName["ingress-shared"], byName["ingress-own"], byName["ingress-broken"]
	if shared == nil || own == nil || broken == nil || shared.Namespace != sys || own.Namespace != "edge" {
		t.Fatalf("class Gateways %v", cgs)
	}
	if r.ScopeFor(shared) != "gatewayclass/xds-controller" || r.ScopeFor(own) != "gateway/edge/ingress-own" {
		t.Errorf("scopes %s, %s", r.ScopeFor(shared), r.ScopeFor(own))
	}
	web := res.Gateways[0]
	p80, p443, pweb := r.BindPortFor(shared, 80), r.BindPortFor(shared, 443), r.BindPortFor(web, 80)
	if p80 == pweb || p443 == pweb || p80 == p443 || p80 < infra.SharedPortMin || p443 < infra.SharedPortMin {
		t.Errorf("shared-fleet bind ports: ingress 80->%d 443->%d, Gateway web 80->%d; want distinct ports of the shared range", p80, p443, pweb)
	}
	if r.BindPortFor(own, 80) != 10080 || r.BindPortFor(own, 443) != 10443 {
		t.Errorf("dedicated bind ports %d %d", r.BindPortFor(own, 80), r.BindPortFor(own, 443))
	}
	if r.ServiceFor(shared) != nn(sys, "ingress-shared-xds-controller") {
		t.Errorf("Service %s", r.ServiceFor(shared))
	}
	if msg := r.InvalidParameters().Gateways[nn("edge", "ingress-broken")]; !strings.Contains(msg, "absent not found") {
		t.Errorf("refusal of the broken class's Gateway: %q", msg)
	}
	p := makePlan(res, r)
	names := func(gws []*gwapiv1.Gateway) (out []string) {
		for _, g := range gws {
			out = append(out, g.Namespace+"/"+g.Name)
		}
		return out
	}
	if got := strings.Join(names(p.shared), ","); got != "apps/web,xds-system/ingress-shared" {
		t.Errorf("shared %s", got)
	}
	if got := strings.Join(names(p.dedicated), ","); got != "edge/ingress-own" {
		t.Errorf("dedicated %s", got)
	}
	if got := strings.Join(names(p.departed), ","); got != "old-ns/ingress-gone" {
		t.Errorf("departed %s, want the Service of a class Gateway that stands for nothing now", got)
	}
}

// TestClassGatewayOwner: what is rendered for a class Gateway is owned by
// its IngressClass, not by a Gateway that does not exist.
func TestClassGatewayOwner(t *testing.T) {
	ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web"}, Spec: networkingv1.IngressClassSpec{Controller: ingress.ControllerName}}
	g := ingress.ClassGateway(ic, nil, ingress.Config{Namespace: sys})
	objs, err := (&infra.Renderer{Namespace: sys}).SharedGateway(infra.SharedGatewayInput{Gateway: g, BindPort: func(*gwapiv1.Gateway, gwapiv1.PortNumber) uint32 { return 20000 }})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		own := o.GetOwnerReferences()
		if len(own) != 1 || own[0].Kind != "IngressClass" || own[0].Name != "web" || own[0].UID != "uid-web" || own[0].APIVersion != "networking.k8s.io/v1" {
			t.Errorf("%T %s owned by %+v, want IngressClass web", o, o.GetName(), own)
		}
	}
	svc := objs[0].(*corev1.Service)
	if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[1].Port != 443 {
		t.Errorf("Service ports %+v, want 80 and 443", svc.Spec.Ports)
	}
}
