package gatewayapi

// Gateway address routability (GEP-5093, experimental channel):
// spec.addresses[].routability says where an address must be reachable
// from. On Kubernetes the addresses are the Gateway's own Service's (both
// modes: a Shared Gateway has a Service of its own too), so:
//   - empty (the default): whatever the Service gets, a load balancer's
//     ingress address when it is of type LoadBalancer (the default type);
//   - Cluster: the Service's cluster IP, in the ServiceCIDR. A Gateway
//     whose every address is Cluster gets a ClusterIP Service, with no
//     load balancer, node port or external IP (ClusterOnly);
//   - testing.x-k8s.io/sentinel (reserved for conformance): served as the
//     default, and reported as itself;
//   - any other prefixed value is not supported: the entry is left
//     unsatisfied (pkg/status reports AddressesAssigned).
// Standalone mode has no Service: it binds the one address itself, so only
// the default (and the sentinel) can be had there.

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// RoutabilitySentinel is the routability GEP-5093 reserves for
// conformance: it carries no guarantee, and an implementation claiming
// GatewayAddressRoutability supports and reports it.
const RoutabilitySentinel gwapiv1.GatewayAddressRoutabilityType = "testing.x-k8s.io/sentinel"

// AddressRequest is one IPAddress entry of a Gateway's spec.addresses:
// its value in canonical form ("" asks the implementation to pick one)
// and its routability.
type AddressRequest struct {
	Value       string
	Routability gwapiv1.GatewayAddressRoutabilityType
}

// Default says whether r asks for an address of the default routability:
// empty, or the conformance sentinel, which is served as the default.
func (r AddressRequest) Default() bool {
	return r.Routability == "" || r.Routability == RoutabilitySentinel
}

// SupportedRoutability says whether an address of routability r can be
// had: empty, Cluster or the sentinel. Other valid values (a prefix and a
// path) are implementation-specific and none is ours.
func SupportedRoutability(r gwapiv1.GatewayAddressRoutabilityType) bool {
	return r == "" || r == gwapiv1.GatewayAddressRoutabilityCluster || r == RoutabilitySentinel
}

// routabilityProblem is the message for a routability value that the
// experimental CRD's CEL rule refuses (GatewayAddressRoutabilityType:
// empty, Cluster, or "<DNS subdomain>/<non-empty path>" whose prefix is not
// k8s.io or a subdomain of it; at most 253 characters), "" when it is
// valid.
func routabilityProblem(r gwapiv1.GatewayAddressRoutabilityType) string {
	s := string(r)
	if s == "" || r == gwapiv1.GatewayAddressRoutabilityCluster {
		return ""
	}
	prefix, path, ok := strings.Cut(s, "/")
	switch {
	case len(s) > 253:
		return fmt.Sprintf("routability %s is longer than 253 characters", q(s))
	case !ok || path == "" || len(validation.IsDNS1123Subdomain(prefix)) > 0:
		return fmt.Sprintf("routability %s must be empty, Cluster, or an implementation-specific <DNS subdomain>/<name>", q(s))
	case prefix == "k8s.io" || strings.HasSuffix(prefix, ".k8s.io"):
		return fmt.Sprintf("routability %s: the k8s.io domain and its subdomains are reserved", q(s))
	}
	return ""
}

// AddressRequests are the IPAddress entries of gw's spec.addresses, in
// the order given, values canonical (empty for the unspecified 0.0.0.0
// and ::, which ask for no address in particular); nil when it has none
// or when they are
// refused (requestedIPs: a type other than IPAddress, an unparsable value
// or routability).
func AddressRequests(gw *gwapiv1.Gateway) []AddressRequest {
	if _, p := requestedIPs(gw.Spec.Addresses); p != nil {
		return nil
	}
	var out []AddressRequest
	for _, a := range gw.Spec.Addresses {
		r := AddressRequest{Routability: a.Routability}
		// The unspecified addresses 0.0.0.0 and :: ask for no address in
		// particular: a Service cannot be given them.
		if ip, err := netip.ParseAddr(a.Value); err == nil && !ip.IsUnspecified() {
			r.Value = ip.String()
		}
		out = append(out, r)
	}
	return out
}

// ClusterOnly says whether every address gw requests is of routability
// Cluster (and it requests at least one): its Service is then of type
// ClusterIP whatever the parameters say, so that it has no address
// reachable from outside the cluster (GEP-5093: an entry is never
// satisfied with another scope).
func ClusterOnly(gw *gwapiv1.Gateway) bool {
	reqs := AddressRequests(gw)
	for _, r := range reqs {
		if r.Routability != gwapiv1.GatewayAddressRoutabilityCluster {
			return false
		}
	}
	return len(reqs) > 0
}
