package status

import (
	"fmt"
	"strings"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// Programmed reasons of ours (the Gateway API allows implementation-specific
// reasons; Pending is the spec's own).
const (
	// ReasonRejected: an Envoy proxy of the Gateway's scope rejected (NACKed)
	// the latest configuration; the message carries Envoy's error.
	ReasonRejected = "Rejected"
)

// maxEnvoyDetail bounds the part of a condition message that quotes
// Envoy's error_detail.
const maxEnvoyDetail = 2048

// WithDataPlane returns st with the Programmed conditions of Gateways and
// their listeners decided by the data plane (DESIGN.md, "Honest status"):
// the translator's Programmed=True only says that the configuration can be
// built. in and x are the IR and the xDS of the same translation as st,
// views the xDS server's View. st is not modified; the Gateways whose
// status changes are copies.
//
// For every Gateway (and listener) the translator programmed:
//   - a proxy of its scope NACKed the latest published snapshot:
//     Programmed=False reason Rejected, with Envoy's message;
//   - no proxy of its scope is connected: Programmed=False reason Pending;
//   - otherwise a proxy serves the Gateway when it ACKed, for Listener and
//     for RouteConfiguration, a generation no older than the first one of
//     the unbroken run of published generations that contain the
//     Gateway's Envoy listeners and route configurations (Since); names
//     that were never published count as not served. Programmed=True
//     reason Programmed when at least one proxy does ("2/3 Envoy proxies
//     serve generation 7 or newer ..."), else False reason Pending.
//
// A listener follows the same rule with its own resources only, and a
// ListenerSet (and each of its listeners, matched by IR Listener.ListenerSet)
// with the resources of its listeners.
func WithDataPlane(st *gatewayapi.Status, in *ir.IR, x map[string]*xdstranslator.Resources, views map[string]xdsserver.ScopeView) *gatewayapi.Status {
	if st == nil || in == nil {
		return st
	}
	out := *st
	out.Gateways = make(map[k8stypes.NamespacedName]*gwapiv1.GatewayStatus, len(st.Gateways))
	for k, v := range st.Gateways {
		out.Gateways[k] = v
	}
	out.ListenerSets = make(map[k8stypes.NamespacedName]*gwapiv1.ListenerSetStatus, len(st.ListenerSets))
	for k, v := range st.ListenerSets {
		out.ListenerSets[k] = v
	}
	names := map[string]resourceNames{}
	for _, g := range in.Gateways {
		key := k8stypes.NamespacedName{Namespace: g.Namespace, Name: g.Name}
		gs := st.Gateways[key]
		if gs == nil {
			continue
		}
		if _, ok := names[g.Scope]; !ok {
			names[g.Scope] = namesOf(x[g.Scope])
		}
		view := views[g.Scope]
		gs = gs.DeepCopy()
		var all need
		sets := map[k8stypes.NamespacedName]need{}
		for _, l := range g.Listeners {
			n := names[g.Scope].need(view, l)
			all = all.max(n)
			section := l.Name[strings.LastIndex(l.Name, "/")+1:]
			if l.ListenerSet != "" {
				// A ListenerSet's listener: its status is the set's.
				ns, name, _ := strings.Cut(l.ListenerSet, "/")
				k := k8stypes.NamespacedName{Namespace: ns, Name: name}
				ls := out.ListenerSets[k]
				if ls == nil {
					continue
				}
				if _, copied := sets[k]; !copied {
					ls = ls.DeepCopy()
					out.ListenerSets[k] = ls
				}
				sets[k] = sets[k].max(n)
				for i := range ls.Listeners {
					if string(ls.Listeners[i].Name) == section {
						decide(&ls.Listeners[i].Conditions, string(gwapiv1.ListenerConditionProgrammed), g.Scope, view, n, "this listener")
					}
				}
				continue
			}
			for i := range gs.Listeners {
				if string(gs.Listeners[i].Name) == section {
					decide(&gs.Listeners[i].Conditions, string(gwapiv1.ListenerConditionProgrammed), g.Scope, view, n, "this listener")
				}
			}
		}
		decide(&gs.Conditions, string(gwapiv1.GatewayConditionProgrammed), g.Scope, view, all, "all listeners of this Gateway")
		for k, n := range sets {
			decide(&out.ListenerSets[k].Conditions, string(gwapiv1.ListenerSetConditionProgrammed), g.Scope, view, n, "all listeners of this ListenerSet")
		}
		out.Gateways[key] = gs
	}
	return &out
}

// need is the generation a proxy must have ACKed per type URL;
// unpublished marks a resource the server has not published.
type need struct {
	listener, route uint64
	unpublished     bool
}

func (n need) max(o need) need {
	return need{listener: max(n.listener, o.listener), route: max(n.route, o.route), unpublished: n.unpublished || o.unpublished}
}

func (n need) generation() uint64 { return max(n.listener, n.route) }

func (n need) servedBy(p xdsserver.ProxyView) bool {
	return !n.unpublished && p.Acked[resource.ListenerType] >= n.listener && p.Acked[resource.RouteType] >= n.route
}

// resourceNames are the Listener and RouteConfiguration names of one
// scope's xDS.
type resourceNames struct{ listeners, routes map[string]bool }

func namesOf(r *xdstranslator.Resources) resourceNames {
	n := resourceNames{listeners: map[string]bool{}, routes: map[string]bool{}}
	if r == nil {
		return n
	}
	for _, set := range []struct {
		m    map[string]bool
		list []types.Resource
	}{{n.listeners, r.Listeners}, {n.routes, r.Routes}} {
		for _, res := range set.list {
			set.m[cachev3.GetResourceName(res)] = true
		}
	}
	return n
}

// need is what serving IR listener l takes: its Envoy listener and, for
// HTTP and HTTPS, its route configuration (xdstranslator's names), when the
// translation produced them (a TCP listener without routes has none).
func (n resourceNames) need(view xdsserver.ScopeView, l *ir.Listener) need {
	var out need
	lds := xdstranslator.ListenerName(l.Address, l.Port, l.Protocol == ir.ProtocolUDP)
	if n.listeners[lds] {
		g, ok := view.Since[resource.ListenerType][lds]
		out.listener, out.unpublished = g, !ok
	}
	rds := ""
	switch l.Protocol {
	case ir.ProtocolHTTP:
		rds = lds
	case ir.ProtocolHTTPS:
		rds = xdstranslator.HTTPSRouteConfigName(lds, l.Name)
	}
	if rds != "" && n.routes[rds] {
		g, ok := view.Since[resource.RouteType][rds]
		out.route, out.unpublished = g, out.unpublished || !ok
	}
	return out
}

// decide replaces a Programmed=True condition in conds with the data
// plane's verdict; other states are the translator's and stay.
func decide(conds *[]metav1.Condition, typ, scope string, view xdsserver.ScopeView, n need, what string) {
	c := meta.FindStatusCondition(*conds, typ)
	if c == nil || c.Status != metav1.ConditionTrue {
		return
	}
	served := 0
	for _, p := range view.Proxies {
		if n.servedBy(p) {
			served++
		}
	}
	total := len(view.Proxies)
	switch {
	case view.Rejected != nil:
		r := view.Rejected
		detail := r.Detail
		if len(detail) > maxEnvoyDetail {
			detail = detail[:maxEnvoyDetail] + "..."
		}
		c.Status, c.Reason = metav1.ConditionFalse, ReasonRejected
		c.Message = fmt.Sprintf("Envoy proxy %s rejected generation %d of scope %s (%s): %s; proxies keep serving the last configuration they accepted",
			r.NodeID, r.Generation, scope, shortType(r.TypeURL), detail)
	case total == 0:
		c.Status, c.Reason = metav1.ConditionFalse, string(gwapiv1.GatewayReasonPending)
		c.Message = fmt.Sprintf("no Envoy proxy of scope %s is connected", scope)
	case n.unpublished:
		c.Status, c.Reason = metav1.ConditionFalse, string(gwapiv1.GatewayReasonPending)
		c.Message = fmt.Sprintf("the configuration of scope %s is not published yet", scope)
	case served == 0:
		c.Status, c.Reason = metav1.ConditionFalse, string(gwapiv1.GatewayReasonPending)
		c.Message = fmt.Sprintf("0/%d Envoy proxies serve generation %d yet, which has %s", total, n.generation(), what)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, string(gwapiv1.GatewayReasonProgrammed)
		c.Message = fmt.Sprintf("%d/%d Envoy proxies serve generation %d or newer, which has %s", served, total, n.generation(), what)
	}
}

func shortType(typeURL string) string {
	return typeURL[strings.LastIndexAny(typeURL, "./")+1:]
}
