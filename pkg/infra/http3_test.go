package infra

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// HTTP3Ports: the Gateway ports of the IR listeners whose ListenerPolicy
// http3 the translation kept, each once, ascending.
func TestHTTP3Ports(t *testing.T) {
	h3 := &ir.ClientSettings{HTTP3: &ir.HTTP3{}}
	g := &ir.Gateway{Listeners: []*ir.Listener{
		{GatewayPort: 8443, Client: h3},
		{GatewayPort: 80},
		{GatewayPort: 443, Client: h3},
		{GatewayPort: 443, Client: h3}, // a second hostname on the port
		{GatewayPort: 9443, Client: &ir.ClientSettings{ProxyProtocol: &ir.ProxyProtocol{}}},
	}}
	if d := cmp.Diff([]gwapiv1.PortNumber{443, 8443}, HTTP3Ports(g)); d != "" {
		t.Error(d)
	}
	if HTTP3Ports(nil) != nil || HTTP3Ports(&ir.Gateway{}) != nil {
		t.Error("HTTP3Ports of no listener")
	}
}

// A Gateway with HTTP/3 on port 443 gets port 443 in UDP too, on the
// same bind port as its TCP side, in both modes; the Shared-mode
// EndpointSlices carry it; a UDP listener's port is not doubled, a port
// the Service does not have in TCP is not added; without
// HTTP/3 the Service is as before.
func TestServiceHTTP3Port(t *testing.T) {
	gw := gateway("apps", "web", 0, 80, 443, -53)
	h3 := []gwapiv1.PortNumber{443, 53, 9443} // 9443: no listener of the Gateway

	// Dedicated: 80 -> 10080, 443 -> 10443, 53 -> 10053.
	objs, err := testRenderer().Dedicated(DedicatedInput{Gateway: gw, Params: Effective(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}, nil),
		TrustBundle: testBundle, HTTP3Ports: h3})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]corev1.ServicePort{
		{Name: "udp-53", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(10053)},
		{Name: "http-80", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(10080)},
		{Name: "http-443", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(10443)},
		{Name: "http3-443", Protocol: corev1.ProtocolUDP, Port: 443, TargetPort: intstr.FromInt32(10443)},
	}, find[*corev1.Service](t, objs)[0].Spec.Ports); d != "" {
		t.Errorf("Dedicated: %s", d)
	}

	// Shared: the bind ports of the class's range, and the slices.
	bp := AssignBindPorts([]*gwapiv1.Gateway{gw}, shared, nil)
	objs, err = testRenderer().SharedGateway(SharedGatewayInput{Gateway: gw, Params: Effective(nil, nil), BindPort: bp.BindPort,
		Endpoints: EndpointsFromPods([]corev1.Pod{pod("envoy-xds-a", "10.0.0.1", true, false)}), HTTP3Ports: h3})
	if err != nil {
		t.Fatal(err)
	}
	b53, b80, b443 := int32(bp.BindPort(gw, 53)), int32(bp.BindPort(gw, 80)), int32(bp.BindPort(gw, 443))
	if d := cmp.Diff([]corev1.ServicePort{
		{Name: "udp-53", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(b53)},
		{Name: "http-80", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(b80)},
		{Name: "http-443", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(b443)},
		{Name: "http3-443", Protocol: corev1.ProtocolUDP, Port: 443, TargetPort: intstr.FromInt32(b443)},
	}, find[*corev1.Service](t, objs)[0].Spec.Ports); d != "" {
		t.Errorf("Shared: %s", d)
	}
	es := find[*discoveryv1.EndpointSlice](t, objs)[0]
	if d := cmp.Diff(discoveryv1.EndpointPort{Name: ptr.To("http3-443"), Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(b443)}, es.Ports[3]); d != "" {
		t.Errorf("Shared EndpointSlice: %s", d)
	}

	// Without HTTP/3: no UDP side for 443.
	objs, _ = testRenderer().SharedGateway(SharedGatewayInput{Gateway: gw, Params: Effective(nil, nil), BindPort: bp.BindPort})
	for _, p := range find[*corev1.Service](t, objs)[0].Spec.Ports {
		if p.Port == 443 && p.Protocol == corev1.ProtocolUDP {
			t.Errorf("a UDP port 443 without HTTP/3: %+v", p)
		}
	}
}
