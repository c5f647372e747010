package status

// Ingress status: the Ingress API has no conditions; the controller of an
// Ingress's class owns its status.loadBalancer, which says where the
// Ingress is served. The translation of an Ingress (pkg/ingress, an
// ingress.Status) reaches the Writer by UpdateIngresses, apart from the
// Gateway API objects' (Update). We write it with a JSON merge patch of
// status.loadBalancer (the list is replaced whole, which is right: it is
// ours alone), computed from the live object and guarded by its
// resourceVersion like routes' parents. Standalone mode prints
// IngressSummary instead.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/resources"
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

// UpdateIngresses replaces the desired status of the Ingresses with st
// (by namespace/name; nil: none): the status.loadBalancer of each (the
// translation's Status, its LoadBalancer filled by the caller). Ingresses
// absent from st are left alone; st is not modified and must not be
// modified afterwards. Only the Ingresses whose desired status changed are
// queued, as in Update.
func (w *Writer) UpdateIngresses(st map[types.NamespacedName]*ingress.Status) {
	w.mu.Lock()
	changed := w.updateGroup(&w.ingresses, func(desired map[Key]any) []Key {
		keys := make([]Key, 0, len(st))
		for nn, s := range st {
			k := Key{Kind: resources.IngressKind.Name(), Namespace: nn.Namespace, Name: nn.Name}
			desired[k] = s
			keys = append(keys, k)
		}
		return keys
	})
	w.mu.Unlock()
	w.enqueue(changed)
}

// ingress writes d's LoadBalancer as the Ingress's status.loadBalancer
// when it differs from the live one.
func (w *Writer) ingress(ctx context.Context, r client.Reader, k Key, d *ingress.Status) error {
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

// IngressSummary renders st as one line per Ingress, keyed "Ingress
// <namespace>/<name>" (Summary's lines for the Gateway API objects): its
// class, where it is served, its address and its problems ("class=web on
// http 0.0.0.0:10080, https 0.0.0.0:10443; 1 problem(s): BackendNotFound:
// ...").
func IngressSummary(st map[types.NamespacedName]*ingress.Status) map[string]string {
	out := make(map[string]string, len(st))
	for nn, s := range st {
		line := "class=" + s.Class
		if len(s.Listeners) > 0 {
			line += " on " + strings.Join(s.Listeners, ", ")
		} else {
			line += " not served"
		}
		if len(s.LoadBalancer.Ingress) > 0 {
			var addrs []string
			for _, a := range s.LoadBalancer.Ingress {
				addrs = append(addrs, cmp.Or(a.IP, a.Hostname))
			}
			line += " address=" + strings.Join(addrs, ",")
		}
		if n := len(s.Problems); n > 0 {
			var ps []string
			for _, p := range s.Problems {
				ps = append(ps, p.Reason+": "+p.Message)
			}
			line += fmt.Sprintf("; %d problem(s): %s", n, strings.Join(ps, "; "))
		}
		out["Ingress "+nn.String()] = line
	}
	return out
}
