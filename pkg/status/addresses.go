package status

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// AddressProblem is why a Gateway's requested address (spec.addresses) is
// not its own yet. Reason is one of the Gateway API's reasons for
// Programmed=False: AddressNotAssigned (not assigned yet, or not at all) or
// AddressNotUsable (something else was assigned).
type AddressProblem struct {
	Reason  gwapiv1.GatewayConditionReason
	Message string
}

// ServiceConditionAddressesRefused is the type of the Service condition by
// which a load balancer says that it refused addresses the Service asked
// for (spec.loadBalancerIP or the metallb.io/loadBalancerIPs annotation):
// status True, the message naming each refused address and why (outside
// the pool, in use by another Service). The local cluster's lb-allocator
// sets it; with it a requested address that the load balancer did not
// assign is AddressNotUsable rather than still pending (AddressNotAssigned).
// Load balancers that do not set it (cloud providers report failures as
// Events) leave such an address AddressNotAssigned.
const ServiceConditionAddressesRefused = "xds-controller.dev/AddressesRefused"

// GatewayAddresses is a Gateway's status.addresses, read from the Service
// that exposes it (nil when it does not exist yet), and, when the Gateway
// requests IP addresses (requested: gatewayapi.RequestedIPs, canonical
// form; none for no request), whether the Service got every one of them
// (Gateway API GatewaySpec.Addresses: an address that cannot be assigned is
// reported in the Gateway's conditions).
//
// The addresses are the load balancer's ingress IPs and hostnames when it
// has any, else the requested addresses when they are the Service's
// external IPs, else its cluster IPs: always what the Service really has.
// A requested address is assigned when a LoadBalancer Service's ingress
// includes it, or when any other Service lists it in spec.externalIPs
// (infra.Renderer asks for it there). When one is not, the problem says
// which and why, with the Gateway API's reasons: AddressNotUsable when the
// load balancer refused it (ServiceConditionAddressesRefused) or assigned
// other addresses instead, AddressNotAssigned while it is pending.
//
// externalIPs says whether the Gateway's class allows its addresses as
// external IPs (GatewayParameters spec.gatewayPolicy.allow ExternalIPs;
// infra.Renderer asks for none otherwise): when it does not, a request on
// a Service of another type than LoadBalancer is AddressNotUsable, and the
// addresses are the Service's cluster IPs.
func GatewayAddresses(requested []string, svc *corev1.Service, externalIPs bool) ([]gwapiv1.GatewayStatusAddress, *AddressProblem) {
	if svc == nil {
		if len(requested) == 0 {
			return nil, nil
		}
		return nil, &AddressProblem{gwapiv1.GatewayReasonAddressNotAssigned,
			fmt.Sprintf("%s not assigned yet: the Gateway's Service does not exist yet", addressList(requested))}
	}
	ipType, hostType := gwapiv1.IPAddressType, gwapiv1.HostnameAddressType
	var ingress []gwapiv1.GatewayStatusAddress
	var ingressIPs []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		switch {
		case in.IP != "":
			ingress = append(ingress, gwapiv1.GatewayStatusAddress{Type: &ipType, Value: in.IP})
			ingressIPs = append(ingressIPs, canonicalIP(in.IP))
		case in.Hostname != "":
			ingress = append(ingress, gwapiv1.GatewayStatusAddress{Type: &hostType, Value: in.Hostname})
		}
	}
	name := svc.Namespace + "/" + svc.Name
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		missing := slices.DeleteFunc(slices.Clone(requested), func(ip string) bool { return slices.Contains(ingressIPs, ip) })
		refused := meta.FindStatusCondition(svc.Status.Conditions, ServiceConditionAddressesRefused)
		switch {
		case len(missing) == 0:
		case refused != nil && refused.Status == metav1.ConditionTrue:
			return ingress, &AddressProblem{gwapiv1.GatewayReasonAddressNotUsable,
				fmt.Sprintf("the load balancer of Service %s cannot assign %s (%s); request other addresses in spec.addresses", name, addressList(missing), refused.Message)}
		case len(ingress) > 0:
			got := make([]string, 0, len(ingress))
			for _, a := range ingress {
				got = append(got, a.Value)
			}
			return ingress, &AddressProblem{gwapiv1.GatewayReasonAddressNotUsable,
				fmt.Sprintf("the load balancer assigned %s to Service %s but not the requested %s (outside its pool, or taken?)", strings.Join(got, ", "), name, addressList(missing))}
		default:
			return nil, &AddressProblem{gwapiv1.GatewayReasonAddressNotAssigned,
				fmt.Sprintf("waiting for the load balancer to assign %s to Service %s", addressList(missing), name)}
		}
	} else if len(requested) > 0 && !externalIPs {
		return clusterIPs(svc), &AddressProblem{gwapiv1.GatewayReasonAddressNotUsable,
			fmt.Sprintf("%s not usable: Service %s is of type %s, which would take them as spec.externalIPs, and the GatewayClass's parameters do not allow external IPs (they capture the cluster's traffic to those addresses, CVE-2020-8554); use a LoadBalancer Service (GatewayParameters spec.service.type), or have the class's GatewayParameters allow them (spec.gatewayPolicy.allow: [ExternalIPs])",
				addressList(requested), name, cmp.Or(svc.Spec.Type, corev1.ServiceTypeClusterIP))}
	} else if len(requested) > 0 {
		missing := slices.DeleteFunc(slices.Clone(requested), func(ip string) bool { return slices.Contains(svc.Spec.ExternalIPs, ip) })
		if len(missing) > 0 {
			return nil, &AddressProblem{gwapiv1.GatewayReasonAddressNotAssigned,
				fmt.Sprintf("%s not an external IP of Service %s yet", addressList(missing), name)}
		}
		out := make([]gwapiv1.GatewayStatusAddress, 0, len(requested))
		for _, ip := range requested {
			out = append(out, gwapiv1.GatewayStatusAddress{Type: &ipType, Value: ip})
		}
		return out, nil
	}
	if len(ingress) > 0 {
		return ingress, nil
	}
	return clusterIPs(svc), nil
}

// clusterIPs are svc's cluster IPs as Gateway addresses.
func clusterIPs(svc *corev1.Service) []gwapiv1.GatewayStatusAddress {
	ipType := gwapiv1.IPAddressType
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []gwapiv1.GatewayStatusAddress
	for _, ip := range ips {
		if ip != "" && ip != corev1.ClusterIPNone {
			out = append(out, gwapiv1.GatewayStatusAddress{Type: &ipType, Value: ip})
		}
	}
	return out
}

// addressList is "address 192.0.2.1" or "addresses 192.0.2.1, 192.0.2.2".
func addressList(ips []string) string {
	if len(ips) == 1 {
		return "address " + ips[0]
	}
	return "addresses " + strings.Join(ips, ", ")
}

// canonicalIP is s in netip.Addr.String form when it is an IP address,
// else s.
func canonicalIP(s string) string {
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip.String()
	}
	return s
}

// Apply turns a Programmed=True condition of st into Programmed=False with
// p's reason and message (Gateway API: a Gateway whose requested address is
// not assigned is not programmed). A Gateway that is not programmed for
// another reason keeps that reason. A nil p changes nothing.
func (p *AddressProblem) Apply(st *gwapiv1.GatewayStatus) {
	if p == nil || st == nil {
		return
	}
	c := meta.FindStatusCondition(st.Conditions, string(gwapiv1.GatewayConditionProgrammed))
	if c == nil || c.Status != metav1.ConditionTrue {
		return
	}
	c.Status, c.Reason, c.Message = metav1.ConditionFalse, string(p.Reason), p.Message
}
