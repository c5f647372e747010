package status

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
)

// RoutableAddresses: every status address reports its routability, each
// entry of spec.addresses is satisfied by one distinct address of the
// right scope (GEP-5093), and AddressesAssigned says how many were.
func TestRoutableAddresses(t *testing.T) {
	lb := func(ingress ...string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-xds"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.7", ClusterIPs: []string{"10.96.0.7"}}}
		for _, ip := range ingress {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		return s
	}
	clusterIP := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-xds"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.8", ClusterIPs: []string{"10.96.0.8"}}}
	const cluster, sentinel = gwapiv1.GatewayAddressRoutabilityCluster, gatewayapi.RoutabilitySentinel
	req := func(value string, r gwapiv1.GatewayAddressRoutabilityType) gatewayapi.AddressRequest {
		return gatewayapi.AddressRequest{Value: value, Routability: r}
	}
	for _, tc := range []struct {
		name     string
		reqs     []gatewayapi.AddressRequest
		svc      *corev1.Service
		want     []string // value=routability
		assigned string   // status/reason
		message  string
		problem  gwapiv1.GatewayConditionReason
	}{
		{"no entries, load balancer", nil, lb("192.0.2.10"), []string{"192.0.2.10="}, "True/AddressesAssigned", "", ""},
		{"no entries, ClusterIP Service", nil, clusterIP, []string{"10.96.0.8=Cluster"}, "True/AddressesAssigned", "", ""},
		{"Cluster", []gatewayapi.AddressRequest{req("", cluster)}, clusterIP, []string{"10.96.0.8=Cluster"}, "True/AddressesAssigned", "", ""},
		{"Cluster with the cluster IP's value", []gatewayapi.AddressRequest{req("10.96.0.8", cluster)}, clusterIP, []string{"10.96.0.8=Cluster"}, "True/AddressesAssigned", "", ""},
		{"Cluster with another value", []gatewayapi.AddressRequest{req("10.96.0.99", cluster)}, clusterIP, nil, "False/NotAssigned", "not a cluster IP of Service ns/web-xds", gwapiv1.GatewayReasonAddressNotAssigned},
		// One default and one Cluster entry on a load balancer: one
		// address each, in either order.
		{"default and Cluster", []gatewayapi.AddressRequest{req("", ""), req("", cluster)}, lb("192.0.2.10"), []string{"192.0.2.10=", "10.96.0.7=Cluster"}, "True/AddressesAssigned", "", ""},
		{"Cluster and default", []gatewayapi.AddressRequest{req("", cluster), req("", "")}, lb("192.0.2.10"), []string{"10.96.0.7=Cluster", "192.0.2.10="}, "True/AddressesAssigned", "", ""},
		// While the load balancer is pending, the default entry waits;
		// the Cluster entry is served.
		{"default pending", []gatewayapi.AddressRequest{req("", ""), req("", cluster)}, lb(), []string{"10.96.0.7=Cluster"}, "False/PartiallyAssigned", "spec.addresses[0]: Service ns/web-xds has no such address (yet)", ""},
		// On a ClusterIP Service a default entry takes the cluster IP and
		// reports Cluster (it has that guarantee).
		{"default on a ClusterIP Service", []gatewayapi.AddressRequest{req("", "")}, clusterIP, []string{"10.96.0.8=Cluster"}, "True/AddressesAssigned", "", ""},
		{"sentinel", []gatewayapi.AddressRequest{req("", sentinel)}, lb("192.0.2.10"), []string{"192.0.2.10=testing.x-k8s.io/sentinel"}, "True/AddressesAssigned", "", ""},
		{"sentinel with a value", []gatewayapi.AddressRequest{req("192.0.2.10", sentinel)}, lb("192.0.2.10"), []string{"192.0.2.10=testing.x-k8s.io/sentinel"}, "True/AddressesAssigned", "", ""},
		{"unsupported scope", []gatewayapi.AddressRequest{req("", "example.com/CorpWan")}, lb("192.0.2.10"), nil, "False/NotAssigned", `routability "example.com/CorpWan" is not supported`, gwapiv1.GatewayReasonAddressNotAssigned},
		{"other testing value", []gatewayapi.AddressRequest{req("", "testing.x-k8s.io/other"), req("", "")}, lb("192.0.2.10"), []string{"192.0.2.10="}, "False/PartiallyAssigned", `spec.addresses[0]: routability "testing.x-k8s.io/other" is not supported`, ""},
		// Two Cluster entries, one cluster IP: one is left unsatisfied.
		{"two Cluster entries", []gatewayapi.AddressRequest{req("", cluster), req("", cluster)}, clusterIP, []string{"10.96.0.8=Cluster"}, "False/PartiallyAssigned", "no cluster IP left", ""},
		// A requested default address that the load balancer refused keeps
		// GatewayAddresses' reason.
		{"default value not assigned", []gatewayapi.AddressRequest{req("192.0.2.50", "")}, lb("192.0.2.10"), nil, "False/NotAssigned", "spec.addresses[0] 192.0.2.50", gwapiv1.GatewayReasonAddressNotUsable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, p, c := RoutableAddresses(tc.reqs, tc.svc, false, 3)
			var values []string
			for _, a := range got {
				if a.Routability == nil {
					t.Errorf("address %s without routability", a.Value)
					continue
				}
				values = append(values, a.Value+"="+string(*a.Routability))
			}
			if strings.Join(values, " ") != strings.Join(tc.want, " ") {
				t.Errorf("addresses %q, want %q", values, tc.want)
			}
			if c == nil || c.Type != string(gwapiv1.GatewayConditionAddressesAssigned) || string(c.Status)+"/"+c.Reason != tc.assigned ||
				!strings.Contains(c.Message, tc.message) || c.ObservedGeneration != 3 {
				t.Errorf("AddressesAssigned %+v, want %s with %q", c, tc.assigned, tc.message)
			}
			switch {
			case tc.problem == "" && p != nil:
				t.Errorf("problem %+v, want none", p)
			case tc.problem != "" && (p == nil || p.Reason != tc.problem):
				t.Errorf("problem %+v, want reason %s", p, tc.problem)
			}
		})
	}
	// No Service yet: no condition (not reconciled).
	if _, _, c := RoutableAddresses([]gatewayapi.AddressRequest{req("", cluster)}, nil, false, 1); c != nil {
		t.Errorf("without a Service: %+v, want no condition", c)
	}
}

// An empty routability equals an unset one (a standard-channel CRD prunes
// the field): no write for it alone; Cluster is a change.
func TestEqualGatewayStatusRoutability(t *testing.T) {
	empty, cluster := gwapiv1.GatewayAddressRoutabilityType(""), gwapiv1.GatewayAddressRoutabilityCluster
	desired := &gwapiv1.GatewayStatus{Addresses: []gwapiv1.GatewayStatusAddress{{Value: "192.0.2.1", Routability: &empty}}}
	live := &gwapiv1.GatewayStatus{Addresses: []gwapiv1.GatewayStatusAddress{{Value: "192.0.2.1"}}}
	if !EqualGatewayStatus(desired, live) {
		t.Error("empty and unset routability differ")
	}
	desired.Addresses[0].Routability = &cluster
	if EqualGatewayStatus(desired, live) {
		t.Error("Cluster and unset routability are equal")
	}
	if *desired.Addresses[0].Routability != cluster {
		t.Error("EqualGatewayStatus changed its argument")
	}
}
