package infra

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// A Gateway whose every address is of routability Cluster gets a
// ClusterIP Service in both modes, whatever type the parameters name, and
// asks no load balancer or external IP for anything; one default address
// among them keeps the parameters' type, its value asked of the load
// balancer and the Cluster entry's value not.
func TestServiceOfClusterRoutability(t *testing.T) {
	cluster := gwapiv1.GatewaySpecAddress{Routability: gwapiv1.GatewayAddressRoutabilityCluster}
	clusterValue := gwapiv1.GatewaySpecAddress{Value: "10.96.0.50", Routability: gwapiv1.GatewayAddressRoutabilityCluster}
	public := gwapiv1.GatewaySpecAddress{Value: "10.244.1.50"}
	sentinel := gwapiv1.GatewaySpecAddress{Value: "10.244.1.51", Routability: "testing.x-k8s.io/sentinel"}
	allowing := &v1alpha1.GatewayPolicy{Allow: []v1alpha1.GatewayPermission{v1alpha1.PermissionExternalIPs}}
	for _, tc := range []struct {
		name           string
		params         corev1.ServiceType
		addresses      []gwapiv1.GatewaySpecAddress
		want           corev1.ServiceType
		loadBalancerIP string
		externalIPs    int
	}{
		{"default", corev1.ServiceTypeLoadBalancer, nil, corev1.ServiceTypeLoadBalancer, "", 0},
		{"Cluster", corev1.ServiceTypeLoadBalancer, []gwapiv1.GatewaySpecAddress{cluster}, corev1.ServiceTypeClusterIP, "", 0},
		{"Cluster over NodePort parameters", corev1.ServiceTypeNodePort, []gwapiv1.GatewaySpecAddress{cluster, clusterValue}, corev1.ServiceTypeClusterIP, "", 0},
		{"Cluster and a default address", corev1.ServiceTypeLoadBalancer, []gwapiv1.GatewaySpecAddress{clusterValue, public}, corev1.ServiceTypeLoadBalancer, "10.244.1.50", 0},
		{"the sentinel is served as the default", corev1.ServiceTypeLoadBalancer, []gwapiv1.GatewaySpecAddress{sentinel}, corev1.ServiceTypeLoadBalancer, "10.244.1.51", 0},
		{"Cluster on ClusterIP parameters allowing external IPs", corev1.ServiceTypeClusterIP, []gwapiv1.GatewaySpecAddress{clusterValue}, corev1.ServiceTypeClusterIP, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := gateway("apps", "web", 0, 80)
			gw.Spec.Addresses = tc.addresses
			params := Effective(&v1alpha1.GatewayParametersSpec{GatewayPolicy: allowing, Service: &v1alpha1.ServiceSpec{Type: ptr.To(tc.params)}}, nil)
			sharedObjs, err := testRenderer().SharedGateway(SharedGatewayInput{Gateway: gw, Params: params, BindPort: AssignBindPorts([]*gwapiv1.Gateway{gw}, shared, nil).BindPort})
			if err != nil {
				t.Fatal(err)
			}
			params.Mode = ptr.To(v1alpha1.ModeDedicated)
			dedicated, err := testRenderer().Dedicated(DedicatedInput{Gateway: gw, Params: params, TrustBundle: testBundle})
			if err != nil {
				t.Fatal(err)
			}
			for mode, objs := range map[string][]any{"Shared": anys(sharedObjs), "Dedicated": anys(dedicated)} {
				var svc *corev1.Service
				for _, o := range objs {
					if s, ok := o.(*corev1.Service); ok {
						svc = s
					}
				}
				if svc == nil {
					t.Fatalf("%s: no Service", mode)
				}
				if svc.Spec.Type != tc.want || svc.Spec.LoadBalancerIP != tc.loadBalancerIP || len(svc.Spec.ExternalIPs) != tc.externalIPs || svc.Annotations[AnnotationLoadBalancerIPs] != "" {
					t.Errorf("%s: type %s loadBalancerIP %q externalIPs %v annotations %v; want type %s loadBalancerIP %q", mode, svc.Spec.Type, svc.Spec.LoadBalancerIP, svc.Spec.ExternalIPs, svc.Annotations, tc.want, tc.loadBalancerIP)
				}
			}
		})
	}
}

func anys[T any](l []T) []any {
	out := make([]any, len(l))
	for i, v := range l {
		out[i] = v
	}
	return out
}
