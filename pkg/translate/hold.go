package translate

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// ReasonRejected is the reason of a held route's Accepted=False condition
// (and of a held Ingress's problem): Envoy refused the route configuration
// that served it (an implementation-specific reason, which the Gateway
// API allows).
const ReasonRejected = "Rejected"

// Hold keeps one route object (an HTTPRoute, a GRPCRoute or an Ingress,
// whose rules become Envoy routes) out of one scope's xDS: the objects
// behind a route configuration that Envoy refused (NACK), found by
// pkg/quarantine. The hold is an input of translation, so that the
// translators stay pure.
type Hold struct {
	// Generation is the object's metadata.generation the hold applies to:
	// another generation (the object changed) is translated as usual, so
	// that a fixed object is tried again.
	Generation int64
	// Culprit marks an object known to be refused; the others are
	// suspects, held while pkg/quarantine tells them apart (their status
	// is left as it is).
	Culprit bool
	// Message is why, with Envoy's message: the held object's condition
	// (Accepted=False reason Rejected on each of its parents in the
	// scope) or Ingress problem carries it.
	Message string
}

// Holds are the holds of each scope: scope -> route (gatewayapi.RouteKey,
// Kind gatewayapi.KindIngress for an Ingress) -> Hold.
type Holds map[string]map[gatewayapi.RouteKey]Hold

// WithHolds leaves the routes that h holds out of the xDS of their scope
// (default: none).
func WithHolds(h Holds) Option {
	return func(c *runConfig) { c.holds = h }
}

// hold applies holds to out (the translation of res): every IR route of a
// held object (by its Origin), at the generation the hold names, leaves the listeners of
// the held scope's Gateways; a culprit's parents in that scope (Gateways,
// or ListenerSets of its Gateways) get Accepted=False reason Rejected
// with the hold's message, a culprit Ingress a problem of that reason.
// Like blame, it copies what it changes that earlier results may share
// (route statuses and their map, Ingress statuses); listeners and the map
// of Ingress statuses are out's own.
func hold(res *resources.Resources, out *Result, holds Holds) {
	if len(holds) == 0 {
		return
	}
	// The holds that apply: the object exists at the hold's generation.
	live := Holds{}
	for scope, hs := range holds {
		for key, h := range hs {
			if g, ok := Generation(res, key); ok && g == h.Generation {
				if live[scope] == nil {
					live[scope] = map[gatewayapi.RouteKey]Hold{}
				}
				live[scope][key] = h
			}
		}
	}
	if len(live) == 0 {
		return
	}
	// parents: the Gateways and ListenerSets of each scope, for status.
	parents := map[string]map[types.NamespacedName]bool{}
	for _, g := range out.IR.Gateways {
		hs := live[g.Scope]
		if hs == nil {
			continue
		}
		if parents[g.Scope] == nil {
			parents[g.Scope] = map[types.NamespacedName]bool{}
		}
		parents[g.Scope][types.NamespacedName{Namespace: g.Namespace, Name: g.Name}] = true
		for _, l := range g.Listeners {
			if l.ListenerSet != "" {
				ns, name, _ := strings.Cut(l.ListenerSet, "/")
				parents[g.Scope][types.NamespacedName{Namespace: ns, Name: name}] = true
			}
			touched := false
			kept := make([]*ir.HTTPRoute, 0, len(l.HTTPRoutes))
			for _, r := range l.HTTPRoutes {
				if _, held := hs[r.Origin.Object]; held {
					touched = true
					continue
				}
				kept = append(kept, r)
			}
			if touched {
				l.HTTPRoutes = kept
			}
		}
	}
	copied := false
	for _, scope := range slices.Sorted(maps.Keys(live)) {
		hs := live[scope]
		for _, key := range slices.SortedFunc(maps.Keys(hs), compareRouteKeys) {
			h := hs[key]
			if !h.Culprit {
				continue
			}
			if key.Kind == gatewayapi.KindIngress {
				if st := out.Ingresses[key.NamespacedName()]; st != nil {
					cp := *st // shared with earlier results (ingress.Cache)
					cp.Problems = append(slices.Clip(cp.Problems), ingress.Problem{Reason: ReasonRejected, Message: h.Message})
					out.Ingresses[key.NamespacedName()] = &cp
				}
				continue
			}
			st := out.Status.Routes[key]
			if st == nil {
				continue
			}
			if !copied {
				out.Status.Routes, copied = maps.Clone(out.Status.Routes), true
			}
			st = st.DeepCopy()
			out.Status.Routes[key] = st
			for i := range st.Parents {
				ref := st.Parents[i].ParentRef
				ns := key.Namespace
				if ref.Namespace != nil {
					ns = string(*ref.Namespace)
				}
				if !parents[scope][types.NamespacedName{Namespace: ns, Name: string(ref.Name)}] {
					continue
				}
				c := meta.FindStatusCondition(st.Parents[i].Conditions, string(gwapiv1.RouteConditionAccepted))
				if c == nil || c.Status != metav1.ConditionTrue {
					continue
				}
				c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonRejected, h.Message
			}
		}
	}
}

// Generation returns the metadata.generation of the object key in res
// (sorted), and whether res has it; key.Kind is a kind of the snapshot's
// registry (resources.KindNamed: a route kind, Ingress).
func Generation(res *resources.Resources, key gatewayapi.RouteKey) (int64, bool) {
	k := resources.KindNamed(key.Kind)
	if k == nil {
		return 0, false
	}
	o, ok := k.Get(res, key.Namespace, key.Name)
	if !ok {
		return 0, false
	}
	return o.GetGeneration(), true
}

func compareRouteKeys(a, b gatewayapi.RouteKey) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
