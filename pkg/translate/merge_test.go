package translate

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/internal/xdstest"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// mergeInput is a Gateway "default/gw" of ours listening on port 10080 and
// one Ingress "default/<class>" of each IngressClass of ours in classes,
// with a spec.tls whose Secret is valid when tls is set.
func mergeInput(tls bool, classes ...string) *resources.Resources {
	res := &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "xds"},
			Spec: gwapiv1.GatewayClassSpec{ControllerName: gatewayapi.ControllerName}}},
		Gateways: []*gwapiv1.Gateway{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gw"},
			Spec: gwapiv1.GatewaySpec{GatewayClassName: "xds", Listeners: []gwapiv1.Listener{{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 10080}}}}},
	}
	if tls {
		chain, key := xdstest.Cert("shop.example.com")
		res.Secrets = []*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: chain, corev1.TLSPrivateKeyKey: key}}}
	}
	for _, c := range classes {
		res.IngressClasses = append(res.IngressClasses, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: c},
			Spec: networkingv1.IngressClassSpec{Controller: ingress.ControllerName}})
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: c}, Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(c)}}
		if tls {
			ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop"}}
		}
		res.Ingresses = append(res.Ingresses, ing)
	}
	res.Sort()
	return res
}

// standalone puts every Gateway in one scope, as standalone mode does.
var standalone = gatewayapi.Options{Scope: func(*gwapiv1.Gateway) string { return "standalone" }}

func ingressStatus(t *testing.T, out *Output, name string) *ingress.Status {
	t.Helper()
	st := out.Result.Ingresses[types.NamespacedName{Namespace: "default", Name: name}]
	if st == nil {
		t.Fatalf("no status for Ingress default/%s: %v", name, out.Result.Ingresses)
	}
	return st
}

func gatewayNames(x *ir.IR) []string {
	var out []string
	for _, g := range x.Gateways {
		out = append(out, g.Namespace+"/"+g.Name)
	}
	return out
}

// TestMergeListenerPortTaken: in standalone mode everything shares one
// scope; an Ingress listener on a port a Gateway listener binds is not
// served, and every Ingress of the class says why; the Gateway keeps its
// port; the class Gateway joins the IR without the listener, in
// namespace/name order.
func TestMergeListenerPortTaken(t *testing.T) {
	out, err := Run(mergeInput(false, "xds"), standalone, WithIngress(ingress.Config{HTTPAddress: ":10080"}))
	if err != nil {
		t.Fatal(err)
	}
	st := ingressStatus(t, out, "xds")
	if len(st.Problems) != 1 || st.Problems[0].Reason != ingress.ReasonNotServed ||
		st.Problems[0].Message != "not served on HTTP: port 10080 on 0.0.0.0 is bound by listener default/gw/http of Gateway default/gw" || len(st.Listeners) != 0 {
		t.Fatalf("status %+v, want the taken port reported and no listener", st)
	}
	if got := gatewayNames(out.Result.IR); !slices.Equal(got, []string{"default/gw", "xds-system/ingress-xds"}) || len(out.Result.IR.Gateways[1].Listeners) != 0 ||
		len(out.Result.IR.Gateways[0].Listeners) != 1 {
		t.Errorf("IR %v, want the class Gateway without listeners beside the Gateway with its own", got)
	}
	// On another port it is served.
	out, err = Run(mergeInput(false, "xds"), standalone, WithIngress(ingress.Config{HTTPAddress: "127.0.0.1:10081"}))
	if err != nil {
		t.Fatal(err)
	}
	if st := ingressStatus(t, out, "xds"); len(st.Problems) != 0 || !slices.Equal(st.Listeners, []string{"http 127.0.0.1:10081"}) {
		t.Errorf("status %+v, want served on http 127.0.0.1:10081", st)
	}
}

// TestMergeClassOrder: the class Gateways claim their ports in the order
// of the classes' names, after the Gateway API's listeners: of two classes
// on one port, the first keeps it.
func TestMergeClassOrder(t *testing.T) {
	out, err := Run(mergeInput(false, "a", "b"), standalone, WithIngress(ingress.Config{HTTPAddress: "127.0.0.1:10081"}))
	if err != nil {
		t.Fatal(err)
	}
	if st := ingressStatus(t, out, "a"); len(st.Problems) != 0 || len(st.Listeners) != 1 {
		t.Errorf("class a: %+v, want served", st)
	}
	if st := ingressStatus(t, out, "b"); len(st.Problems) != 1 || !strings.HasSuffix(st.Problems[0].Message, "is bound by listener xds-system/ingress-a/http of Gateway xds-system/ingress-a") {
		t.Errorf("class b: %+v, want its port taken by class a", st)
	}
	if got := gatewayNames(out.Result.IR); !slices.Equal(got, []string{"default/gw", "xds-system/ingress-a", "xds-system/ingress-b"}) {
		t.Errorf("IR Gateways %v", got)
	}
}

// TestMergeProblemOrder: a class's listener problems keep the order of
// its listeners whether the listener could not be built (a bind port out
// of range) or lost its port in the merge: the HTTP listener's first.
func TestMergeProblemOrder(t *testing.T) {
	opts := standalone
	opts.BindPort = func(_ *gwapiv1.Gateway, p gwapiv1.PortNumber) uint32 {
		if p == 443 {
			return 70000 // cannot be bound
		}
		return uint32(p)
	}
	out, err := Run(mergeInput(true, "xds"), opts, WithIngress(ingress.Config{HTTPAddress: ":10080"}))
	if err != nil {
		t.Fatal(err)
	}
	st := ingressStatus(t, out, "xds")
	var got []string
	for _, p := range st.Problems {
		got = append(got, p.Reason+": "+p.Message)
	}
	want := []string{
		"NotServed: not served on HTTP: port 10080 on 0.0.0.0 is bound by listener default/gw/http of Gateway default/gw",
		"NotServed: not served on HTTPS: port 443 cannot be bound",
	}
	if !slices.Equal(got, want) || len(st.Listeners) != 0 {
		t.Errorf("problems %q, listeners %v; want %q and none", got, st.Listeners, want)
	}
}
