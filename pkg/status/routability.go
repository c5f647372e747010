package status

// Address routability and assignment (GEP-5093): which address of a
// Gateway's Service satisfies each entry of its spec.addresses, the
// routability every status address reports, and the AddressesAssigned
// condition.

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
)

// RoutableAddresses is a Gateway's status.addresses, read from its Service
// svc (nil while it does not exist) for the entries reqs of its
// spec.addresses (gatewayapi.AddressRequests), with the problem that keeps
// it from being Programmed (GatewayAddresses, for the addresses of the
// default routability with a value) and its AddressesAssigned condition
// (nil while svc does not exist: the assignment is not reconciled yet).
//
// Every address reports its routability: a cluster IP of svc is Cluster
// (it is in the ServiceCIDR and reachable from the cluster), any other
// address (a load balancer's ingress, an external IP) the empty default.
// Without entries the addresses are GatewayAddresses', and
// AddressesAssigned is True once there is one. With entries, each is
// satisfied by one distinct address of svc, and only those are listed:
//   - Cluster: a cluster IP (the value's, when it has one);
//   - the default (empty) or the sentinel: its value when it has one,
//     else an address of the default routability, or a cluster IP when
//     svc is not a LoadBalancer (it then has nothing else); the sentinel
//     reports itself;
//   - any other routability: never (unsupported).
//
// AddressesAssigned is True (reason AddressesAssigned) when every entry is
// satisfied, False PartiallyAssigned when some are, False NotAssigned when
// none is; in that last case the Gateway is not Programmed either (reason
// AddressNotAssigned, unless GatewayAddresses gave a reason of its own).
// The condition's observedGeneration is gen.
func RoutableAddresses(reqs []gatewayapi.AddressRequest, svc *corev1.Service, externalIPs bool, gen int64) ([]gwapiv1.GatewayStatusAddress, *AddressProblem, *metav1.Condition) {
	var values []string
	for _, r := range reqs {
		if r.Default() && r.Value != "" && !slices.Contains(values, r.Value) {
			values = append(values, r.Value)
		}
	}
	got, problem := GatewayAddresses(values, svc, externalIPs)
	if svc == nil {
		return got, problem, nil
	}
	cluster := clusterIPs(svc)
	isCluster := func(a gwapiv1.GatewayStatusAddress) bool {
		return slices.ContainsFunc(cluster, func(c gwapiv1.GatewayStatusAddress) bool { return c.Value == a.Value })
	}
	withRoutability := func(a gwapiv1.GatewayStatusAddress, r gwapiv1.GatewayAddressRoutabilityType) gwapiv1.GatewayStatusAddress {
		a.Routability = &r
		return a
	}
	routability := func(a gwapiv1.GatewayStatusAddress) gwapiv1.GatewayAddressRoutabilityType {
		if isCluster(a) {
			return gwapiv1.GatewayAddressRoutabilityCluster
		}
		return ""
	}
	if len(reqs) == 0 {
		out := make([]gwapiv1.GatewayStatusAddress, 0, len(got))
		for _, a := range got {
			out = append(out, withRoutability(a, routability(a)))
		}
		if len(out) == 0 {
			return nil, problem, assigned(metav1.ConditionFalse, gwapiv1.GatewayReasonAddressesNotAssigned, "the Gateway's Service has no address yet", gen)
		}
		return out, problem, assigned(metav1.ConditionTrue, gwapiv1.GatewayReasonAddressesAssigned, "the Gateway's addresses are assigned", gen)
	}
	// The addresses that may satisfy an entry: what GatewayAddresses
	// found, then the cluster IPs it did not list.
	pool := slices.Clone(got)
	for _, c := range cluster {
		if !slices.ContainsFunc(pool, func(a gwapiv1.GatewayStatusAddress) bool { return a.Value == c.Value }) {
			pool = append(pool, c)
		}
	}
	used := make([]bool, len(pool))
	take := func(ok func(gwapiv1.GatewayStatusAddress) bool) (gwapiv1.GatewayStatusAddress, bool) {
		for i, a := range pool {
			if !used[i] && ok(a) {
				used[i] = true
				return a, true
			}
		}
		return gwapiv1.GatewayStatusAddress{}, false
	}
	ipOnly := func(a gwapiv1.GatewayStatusAddress) bool { return a.Type == nil || *a.Type == gwapiv1.IPAddressType }
	results := make([]*gwapiv1.GatewayStatusAddress, len(reqs))
	var unsatisfied []string
	// Cluster entries first, then those with a value, then the rest: an
	// entry that can take any address never takes the one a stricter
	// entry needs.
	pass := func(r gatewayapi.AddressRequest) int {
		switch {
		case r.Routability == gwapiv1.GatewayAddressRoutabilityCluster:
			return 0
		case r.Value != "":
			return 1
		}
		return 2
	}
	for p := range 3 {
		for i, r := range reqs {
			if pass(r) != p {
				continue
			}
			var a gwapiv1.GatewayStatusAddress
			ok := false
			switch {
			case !gatewayapi.SupportedRoutability(r.Routability):
			case r.Routability == gwapiv1.GatewayAddressRoutabilityCluster:
				a, ok = take(func(a gwapiv1.GatewayStatusAddress) bool {
					return isCluster(a) && (r.Value == "" || a.Value == r.Value)
				})
			case r.Value != "":
				a, ok = take(func(a gwapiv1.GatewayStatusAddress) bool { return ipOnly(a) && a.Value == r.Value })
			default:
				a, ok = take(func(a gwapiv1.GatewayStatusAddress) bool { return ipOnly(a) && !isCluster(a) })
				if !ok && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
					a, ok = take(func(a gwapiv1.GatewayStatusAddress) bool { return ipOnly(a) })
				}
			}
			if !ok {
				unsatisfied = append(unsatisfied, describeRequest(i, r, svc))
				continue
			}
			rt := routability(a)
			if r.Routability != "" {
				rt = r.Routability
			}
			a = withRoutability(a, rt)
			results[i] = &a
		}
	}
	var out []gwapiv1.GatewayStatusAddress
	for _, a := range results {
		if a != nil {
			out = append(out, *a)
		}
	}
	switch {
	case len(unsatisfied) == 0:
		return out, problem, assigned(metav1.ConditionTrue, gwapiv1.GatewayReasonAddressesAssigned, "every address of spec.addresses is assigned", gen)
	case len(out) > 0:
		return out, problem, assigned(metav1.ConditionFalse, gwapiv1.GatewayReasonAddressesPartiallyAssigned, "not assigned: "+strings.Join(unsatisfied, "; "), gen)
	}
	msg := "not assigned: " + strings.Join(unsatisfied, "; ")
	if problem == nil {
		problem = &AddressProblem{gwapiv1.GatewayReasonAddressNotAssigned, "no address of spec.addresses can be assigned: " + strings.Join(unsatisfied, "; ")}
	}
	return out, problem, assigned(metav1.ConditionFalse, gwapiv1.GatewayReasonAddressesNotAssigned, msg, gen)
}

// describeRequest says which entry of spec.addresses is not satisfied, and
// why when the routability is the reason.
func describeRequest(i int, r gatewayapi.AddressRequest, svc *corev1.Service) string {
	what := fmt.Sprintf("spec.addresses[%d]", i)
	if r.Value != "" {
		what += " " + r.Value
	}
	switch {
	case !gatewayapi.SupportedRoutability(r.Routability):
		return fmt.Sprintf("%s: routability %q is not supported (empty, Cluster and %s are)", what, r.Routability, gatewayapi.RoutabilitySentinel)
	case r.Routability == gwapiv1.GatewayAddressRoutabilityCluster && r.Value != "":
		return fmt.Sprintf("%s (Cluster): not a cluster IP of Service %s/%s (the API server picks it from the ServiceCIDR; request Cluster without a value)", what, svc.Namespace, svc.Name)
	case r.Routability == gwapiv1.GatewayAddressRoutabilityCluster:
		return fmt.Sprintf("%s (Cluster): Service %s/%s has no cluster IP left for it", what, svc.Namespace, svc.Name)
	}
	return fmt.Sprintf("%s: Service %s/%s has no such address (yet)", what, svc.Namespace, svc.Name)
}

// assigned is an AddressesAssigned condition.
func assigned(st metav1.ConditionStatus, reason gwapiv1.GatewayConditionReason, msg string, gen int64) *metav1.Condition {
	return &metav1.Condition{Type: string(gwapiv1.GatewayConditionAddressesAssigned), Status: st, Reason: string(reason), Message: msg, ObservedGeneration: gen}
}
