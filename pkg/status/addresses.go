package status

import (
	"fmt"
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

// GatewayAddresses is a Gateway's status.addresses, read from the Service
// that exposes it (nil when it does not exist yet), and, when the Gateway
// requests the IP address requested (gatewayapi.RequestedIP; "" for none),
// whether the Service got it.
//
// The addresses are the load balancer's ingress IPs and hostnames when it
// has any, else the requested address when it is one of the Service's
// external IPs, else its cluster IPs. A requested address is assigned when
// a LoadBalancer Service's ingress includes it, or when any other Service
// lists it in spec.externalIPs (infra.Renderer asks for it there); when it is
// not, the problem says why, with the Gateway API's reasons.
func GatewayAddresses(requested string, svc *corev1.Service) ([]gwapiv1.GatewayStatusAddress, *AddressProblem) {
	if svc == nil {
		if requested == "" {
			return nil, nil
		}
		return nil, &AddressProblem{gwapiv1.GatewayReasonAddressNotAssigned,
			fmt.Sprintf("address %s is not assigned yet: the Gateway's Service does not exist yet", requested)}
	}
	ipType, hostType := gwapiv1.IPAddressType, gwapiv1.HostnameAddressType
	var ingress []gwapiv1.GatewayStatusAddress
	var ingressIPs []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		switch {
		case in.IP != "":
			ingress = append(ingress, gwapiv1.GatewayStatusAddress{Type: &ipType, Value: in.IP})
			ingressIPs = append(ingressIPs, in.IP)
		case in.Hostname != "":
			ingress = append(ingress, gwapiv1.GatewayStatusAddress{Type: &hostType, Value: in.Hostname})
		}
	}
	name := svc.Namespace + "/" + svc.Name
	switch {
	case requested == "":
	case svc.Spec.Type == corev1.ServiceTypeLoadBalancer && slices.Contains(ingressIPs, requested):
	case svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(ingress) == 0:
		return nil, &AddressProblem{gwapiv1.GatewayReasonAddressNotAssigned,
			fmt.Sprintf("waiting for the load balancer to assign %s to Service %s", requested, name)}
	case svc.Spec.Type == corev1.ServiceTypeLoadBalancer:
		got := make([]string, 0, len(ingress))
		for _, a := range ingress {
			got = append(got, a.Value)
		}
		return ingress, &AddressProblem{gwapiv1.GatewayReasonAddressNotUsable,
			fmt.Sprintf("the load balancer assigned %s to Service %s instead of the requested %s (outside its pool, or taken?)", strings.Join(got, ", "), name, requested)}
	case slices.Contains(svc.Spec.ExternalIPs, requested):
		return []gwapiv1.GatewayStatusAddress{{Type: &ipType, Value: requested}}, nil
	default:
		return nil, &AddressProblem{gwapiv1.GatewayReasonAddressNotAssigned,
			fmt.Sprintf("address %s is not an external IP of Service %s yet", requested, name)}
	}
	if len(ingress) > 0 {
		return ingress, nil
	}
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
	return out, nil
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
