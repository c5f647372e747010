package gatewayapi

import (
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The routability values the experimental CRD's CEL rule accepts
// (GatewayAddressRoutabilityType), and what each mode makes of them:
// Kubernetes asks the Gateway's Service (any valid value is accepted; the
// status says which were assigned), standalone binds the address itself
// and refuses all but the default.
func TestRoutability(t *testing.T) {
	for _, tc := range []struct {
		r          gwapiv1.GatewayAddressRoutabilityType
		valid      bool
		standalone string // reason of the refusal in standalone mode
	}{
		{"", true, ""},
		{"Cluster", true, "UnsupportedAddress"},
		{"testing.x-k8s.io/sentinel", true, ""},
		{"example.com/CorpWan", true, "UnsupportedAddress"},
		{"testing.x-k8s.io/other", true, "UnsupportedAddress"},
		{"Public", false, "Invalid"},
		{"cluster", false, "Invalid"},
		{"k8s.io/value", false, "Invalid"},
		{"example.k8s.io/value", false, "Invalid"},
		{"gateway.networking.k8s.io/value", false, "Invalid"},
		{"example.com/", false, "Invalid"},
		{"Example.com/x", false, "Invalid"},
		{"/x", false, "Invalid"},
	} {
		if got := routabilityProblem(tc.r) == ""; got != tc.valid {
			t.Errorf("%q: valid %v, want %v (%s)", tc.r, got, tc.valid, routabilityProblem(tc.r))
		}
		addrs := []gwapiv1.GatewaySpecAddress{{Routability: tc.r}}
		_, p := gatewayAddress(addrs, true)
		if tc.valid != (p == nil) {
			t.Errorf("%q on Kubernetes: %+v", tc.r, p)
		}
		_, p = gatewayAddress(addrs, false)
		switch {
		case tc.standalone == "" && p != nil:
			t.Errorf("%q standalone: %+v, want accepted", tc.r, p)
		case tc.standalone != "" && (p == nil || p.reason != tc.standalone):
			t.Errorf("%q standalone: %+v, want %s", tc.r, p, tc.standalone)
		}
	}
	// Cluster values are not asked of a load balancer; a Gateway whose
	// every address is Cluster has a ClusterIP Service.
	gw := &gwapiv1.Gateway{Spec: gwapiv1.GatewaySpec{Addresses: []gwapiv1.GatewaySpecAddress{
		{Value: "10.96.0.9", Routability: "Cluster"}, {Value: "192.0.2.1"}, {Value: "192.0.2.2", Routability: RoutabilitySentinel}}}}
	if got := RequestedIPs(gw); len(got) != 2 || got[0] != "192.0.2.1" || got[1] != "192.0.2.2" {
		t.Errorf("RequestedIPs %v, want the default and sentinel values", got)
	}
	if ClusterOnly(gw) {
		t.Error("ClusterOnly with a default address")
	}
	gw.Spec.Addresses = gw.Spec.Addresses[:1]
	if !ClusterOnly(gw) || RequestedIPs(gw) != nil {
		t.Errorf("Cluster only: ClusterOnly %v, RequestedIPs %v", ClusterOnly(gw), RequestedIPs(gw))
	}
}

// An unspecified address (0.0.0.0, ::) asks for no address in particular:
// its request has no value, so status takes whatever the Service has
// (status.RoutableAddresses) and the Service is asked for none
// (RequestedIPs).
func TestAddressRequestsUnspecified(t *testing.T) {
	gw := &gwapiv1.Gateway{Spec: gwapiv1.GatewaySpec{Addresses: []gwapiv1.GatewaySpecAddress{
		{Type: ptr(gwapiv1.IPAddressType), Value: "0.0.0.0"},
		{Type: ptr(gwapiv1.IPAddressType), Value: "::"},
		{Type: ptr(gwapiv1.IPAddressType), Value: "192.0.2.1"},
	}}}
	reqs := AddressRequests(gw)
	if len(reqs) != 3 || reqs[0].Value != "" || reqs[1].Value != "" || reqs[2].Value != "192.0.2.1" {
		t.Fatalf("AddressRequests %+v, want empty values for 0.0.0.0 and ::, then 192.0.2.1", reqs)
	}
	if got := RequestedIPs(gw); len(got) != 1 || got[0] != "192.0.2.1" {
		t.Errorf("RequestedIPs %v, want [192.0.2.1]", got)
	}
}
