package status

// Ingress status: the Ingress API has no conditions; the controller of an
// Ingress's class owns its status.loadBalancer, which says where the
// Ingress is served. We write it with a JSON merge patch of
// status.loadBalancer (the list is replaced whole, which is right: it is
// ours alone), computed from the live object and guarded by its
// resourceVersion like routes' parents.

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
)

// IngressLoadBalancer is the status.loadBalancer of an Ingress served
// through svc, the Service of its class's Gateway (nil while it does not
// exist): the Service's addresses as a Gateway's status.addresses reads
// them (GatewayAddresses: the load balancer's ingress IPs and hostnames,
// else the Service's external or cluster IPs), each an IP or a hostname.
func IngressLoadBalancer(svc *corev1.Service) networkingv1.IngressLoadBalancerStatus {
	var out networkingv1.IngressLoadBalancerStatus
	addrs, _ := GatewayAddresses(nil, svc, false)
	for _, a := range addrs {
		if a.Type != nil && *a.Type == gwapiv1.HostnameAddressType {
			out.Ingress = append(out.Ingress, networkingv1.IngressLoadBalancerIngress{Hostname: a.Value})
			continue
		}
		out.Ingress = append(out.Ingress, networkingv1.IngressLoadBalancerIngress{IP: a.Value})
	}
	return out
}

// EqualIngressLoadBalancer compares two status.loadBalancer, ignoring the
// order of their entries.
func EqualIngressLoadBalancer(a, b networkingv1.IngressLoadBalancerStatus) bool {
	key := func(i networkingv1.IngressLoadBalancerIngress) string { return i.IP + "\x00" + i.Hostname }
	sorted := func(s networkingv1.IngressLoadBalancerStatus) []networkingv1.IngressLoadBalancerIngress {
		out := slices.Clone(s.Ingress)
		slices.SortFunc(out, func(x, y networkingv1.IngressLoadBalancerIngress) int {
			switch kx, ky := key(x), key(y); {
			case kx < ky:
				return -1
			case kx > ky:
				return 1
			}
			return 0
		})
		return out
	}
	return equality.Semantic.DeepEqual(sorted(a), sorted(b))
}

// ingress writes d's LoadBalancer as the Ingress's status.loadBalancer
// when it differs from the live one.
func (w *Writer) ingress(ctx context.Context, r client.Reader, k Key, d *gatewayapi.IngressStatus) error {
	var live networkingv1.Ingress
	if err := r.Get(ctx, k.nn(), &live); err != nil {
		return err
	}
	if EqualIngressLoadBalancer(d.LoadBalancer, live.Status.LoadBalancer) {
		return nil
	}
	hash := hashOf(d.LoadBalancer)
	if w.staleCache(k, hash, live.GetResourceVersion()) {
		return nil
	}
	if err := w.beforeWrite(ctx); err != nil {
		return err
	}
	modified := live.DeepCopy()
	modified.Status.LoadBalancer = *d.LoadBalancer.DeepCopy()
	patch := client.MergeFromWithOptions(&live, client.MergeFromWithOptimisticLock{})
	if err := w.c.Status().Patch(ctx, modified, patch, client.FieldOwner(FieldManager)); err != nil {
		return err
	}
	w.wrote(k, hash, modified.GetResourceVersion())
	return nil
}
