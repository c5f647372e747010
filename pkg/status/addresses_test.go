package status

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestGatewayAddressesWithoutRequest(t *testing.T) {
	if got, p := GatewayAddresses(nil, nil, false); got != nil || p != nil {
		t.Errorf("a missing Service gives %+v, %+v", got, p)
	}
	svc := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"}}}
	got, p := GatewayAddresses(nil, svc, false)
	if p != nil || len(got) != 1 || got[0].Value != "10.96.0.20" || *got[0].Type != gwapiv1.IPAddressType {
		t.Errorf("cluster IP: %+v, %+v", got, p)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.244.1.10"}, {Hostname: "lb.example.com"}}
	got, p = GatewayAddresses(nil, svc, false)
	if p != nil || len(got) != 2 || got[0].Value != "10.244.1.10" || *got[1].Type != gwapiv1.HostnameAddressType {
		t.Errorf("load balancer: %+v, %+v", got, p)
	}
	headless := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}
	if got, _ := GatewayAddresses(nil, headless, false); len(got) != 0 {
		t.Errorf("a headless Service gives %+v", got)
	}
}

func TestGatewayAddressesRequested(t *testing.T) {
	lb := func(ingress ...string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-xds"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.7"}}
		for _, ip := range ingress {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		return s
	}
	refused := func(s *corev1.Service, st metav1.ConditionStatus) *corev1.Service {
		s.Status.Conditions = []metav1.Condition{{Type: ServiceConditionAddressesRefused, Status: st,
			Reason: "NotInPool", Message: "10.244.2.1 is outside the pool 10.244.1.10-10.244.1.250"}}
		return s
	}
	clusterIP := func(external ...string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-xds"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.7", ExternalIPs: external}}
	}
	one, two := []string{"10.244.1.50"}, []string{"10.244.2.1", "10.244.1.50"}
	for _, tc := range []struct {
		name      string
		requested []string
		svc       *corev1.Service
		addresses []string
		reason    gwapiv1.GatewayConditionReason
		message   string
	}{
		{"no Service yet", one, nil, nil, gwapiv1.GatewayReasonAddressNotAssigned, "address 10.244.1.50 not assigned yet: the Gateway's Service does not exist yet"},
		{"load balancer still pending", one, lb(), nil, gwapiv1.GatewayReasonAddressNotAssigned, "waiting for the load balancer to assign address 10.244.1.50"},
		{"load balancer assigned it", one, lb("10.244.1.50"), []string{"10.244.1.50"}, "", ""},
		{"load balancer assigned another", one, lb("10.244.1.11"), []string{"10.244.1.11"}, gwapiv1.GatewayReasonAddressNotUsable, "assigned 10.244.1.11 to Service ns/web-xds but not the requested address 10.244.1.50"},
		{"load balancer refused it", one, refused(lb(), metav1.ConditionTrue), nil, gwapiv1.GatewayReasonAddressNotUsable,
			"cannot assign address 10.244.1.50 (10.244.2.1 is outside the pool"},
		{"several, all assigned", two, lb("10.244.1.50", "10.244.2.1"), []string{"10.244.1.50", "10.244.2.1"}, "", ""},
		{"several, one pending", two, lb(), nil, gwapiv1.GatewayReasonAddressNotAssigned, "assign addresses 10.244.2.1, 10.244.1.50 to"},
		{"several, one refused", two, refused(lb("10.244.1.50"), metav1.ConditionTrue), []string{"10.244.1.50"}, gwapiv1.GatewayReasonAddressNotUsable,
			"the load balancer of Service ns/web-xds cannot assign address 10.244.2.1 (10.244.2.1 is outside the pool 10.244.1.10-10.244.1.250); request other addresses"},
		// A refusal that no longer holds (condition False) is not one.
		{"refusal withdrawn", two, refused(lb(), metav1.ConditionFalse), nil, gwapiv1.GatewayReasonAddressNotAssigned, "waiting"},
		// A stale refusal of an address no longer requested changes nothing.
		{"refusal of another address", one, refused(lb("10.244.1.50"), metav1.ConditionTrue), []string{"10.244.1.50"}, "", ""},
		{"external IP taken", one, clusterIP("10.244.1.50"), []string{"10.244.1.50"}, "", ""},
		{"external IPs taken", two, clusterIP("10.244.1.50", "10.244.2.1"), two, "", ""},
		{"external IP missing", two, clusterIP("10.244.1.50"), nil, gwapiv1.GatewayReasonAddressNotAssigned, "address 10.244.2.1 not an external IP of Service ns/web-xds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, p := GatewayAddresses(tc.requested, tc.svc, true)
			var values []string
			for _, a := range got {
				values = append(values, a.Value)
				if *a.Type != gwapiv1.IPAddressType {
					t.Errorf("address %s has type %s", a.Value, *a.Type)
				}
			}
			if strings.Join(values, ",") != strings.Join(tc.addresses, ",") {
				t.Errorf("addresses %v, want %v", values, tc.addresses)
			}
			switch {
			case tc.reason == "" && p != nil:
				t.Errorf("unexpected problem %+v", p)
			case tc.reason != "" && (p == nil || p.Reason != tc.reason || !strings.Contains(p.Message, tc.message)):
				t.Errorf("problem %+v, want reason %s with %q", p, tc.reason, tc.message)
			}
		})
	}
}

// TestGatewayAddressesExternalIPsRefused: when the class does not allow
// external IPs (CVE-2020-8554), addresses requested of a Service that is
// not a LoadBalancer are AddressNotUsable, whatever the Service lists, and
// the Gateway's address is its cluster IP; a load balancer's addresses are
// still fine.
func TestGatewayAddressesExternalIPsRefused(t *testing.T) {
	clusterIP := func(external ...string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-xds"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.7", ExternalIPs: external}}
	}
	lb := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.7"},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.244.1.50"}}}}}
	for _, tc := range []struct {
		name      string
		requested []string
		svc       *corev1.Service
		address   string
		message   string
	}{
		{"none listed", []string{"10.244.2.1", "10.244.1.50"}, clusterIP(), "10.96.0.7",
			"addresses 10.244.2.1, 10.244.1.50 not usable: Service ns/web-xds is of type NodePort, which would take them as spec.externalIPs, and the GatewayClass's parameters do not allow external IPs"},
		{"stale ones listed", []string{"10.244.1.50"}, clusterIP("10.244.1.50"), "10.96.0.7", "(spec.gatewayPolicy.allow: [ExternalIPs])"},
		{"load balancer", []string{"10.244.1.50"}, lb, "10.244.1.50", ""},
	} {
		got, p := GatewayAddresses(tc.requested, tc.svc, false)
		if len(got) != 1 || got[0].Value != tc.address {
			t.Errorf("%s: addresses %+v, want %s", tc.name, got, tc.address)
		}
		switch {
		case tc.message == "" && p != nil:
			t.Errorf("%s: unexpected problem %+v", tc.name, p)
		case tc.message != "" && (p == nil || p.Reason != gwapiv1.GatewayReasonAddressNotUsable || !strings.Contains(p.Message, tc.message)):
			t.Errorf("%s: problem %+v, want AddressNotUsable with %q", tc.name, p, tc.message)
		}
	}
}

func TestAddressProblemApply(t *testing.T) {
	st := &gwapiv1.GatewayStatus{Conditions: []metav1.Condition{
		{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted"},
		{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", ObservedGeneration: 3},
	}}
	p := &AddressProblem{gwapiv1.GatewayReasonAddressNotAssigned, "waiting"}
	p.Apply(st)
	c := st.Conditions[1]
	if c.Status != metav1.ConditionFalse || c.Reason != "AddressNotAssigned" || c.Message != "waiting" || c.ObservedGeneration != 3 {
		t.Errorf("Programmed after Apply: %+v", c)
	}
	if st.Conditions[0].Status != metav1.ConditionTrue {
		t.Error("Apply changed Accepted")
	}
	// A Gateway not programmed for another reason keeps that reason.
	st.Conditions[1] = metav1.Condition{Type: "Programmed", Status: metav1.ConditionFalse, Reason: "Invalid", Message: "bad listener"}
	p.Apply(st)
	if st.Conditions[1].Reason != "Invalid" {
		t.Errorf("Apply replaced another reason: %+v", st.Conditions[1])
	}
	st.Conditions[1] = metav1.Condition{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed"}
	(*AddressProblem)(nil).Apply(st)
	if st.Conditions[1].Status != metav1.ConditionTrue {
		t.Errorf("a nil problem changed Programmed: %+v", st.Conditions[1])
	}
}
