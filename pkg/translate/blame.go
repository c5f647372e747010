package translate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
	"github.com/xds-controller/xds-controller/pkg/xdsvalidate"
)

// ruleRef is what a problem in one Envoy route takes down, read from the
// route's origin (ir.Origin, which xdsvalidate.Problem carries): one rule
// of an HTTPRoute or a GRPCRoute, or one path (or the default backend) of
// an Ingress.
type ruleRef struct {
	// route is the object; Kind gatewayapi.KindIngress for an Ingress.
	route gatewayapi.RouteKey
	// unit is the origin of the part a problem outside the match answers
	// the failure status for: the rule (Match 0), or the Ingress path.
	unit ir.Origin
	// label names the unit in messages ("rule 0", "rule/0/path/1"), and
	// match the route's own match ("rule 0 match 1", or label again).
	label, match string
	// noun is what the unit is: "rule" or "path".
	noun string
}

// refOf is what a problem in a route made for o takes down.
func refOf(o ir.Origin) ruleRef {
	ref := ruleRef{route: o.Object, unit: unitOf(o)}
	if ref.route.Kind == gatewayapi.KindIngress {
		ref.label, ref.noun = ingress.PathName(o), "path"
		ref.match = ref.label
		return ref
	}
	ref.label, ref.noun = fmt.Sprintf("rule %d", o.Rule), "rule"
	ref.match = fmt.Sprintf("%s match %d", ref.label, o.Match)
	return ref
}

// unitOf is the unit of what a problem in a route made for o takes down:
// o's rule (Match 0), or for an Ingress o itself (its path).
func unitOf(o ir.Origin) ir.Origin {
	if o.Object.Kind != gatewayapi.KindIngress {
		o.Match = 0
	}
	return o
}

// failureStatus is what a route of ref answers when Envoy would refuse
// it: the route kind's (xdstranslator.FailureStatus), or an Ingress's
// (ingress.FailureStatus).
func (ref ruleRef) failureStatus() uint32 {
	if ref.route.Kind == gatewayapi.KindIngress {
		return ingress.FailureStatus
	}
	return xdstranslator.FailureStatus(&ir.HTTPRoute{GRPC: ref.route.Kind == gatewayapi.KindGRPCRoute})
}

// blame traces the pre-validation problems found (xdsvalidate.Check, by
// scope) inside the routes of HTTPRoutes, GRPCRoutes and Ingresses back
// to their rules (an Ingress: its paths), by the origins of the problems'
// routes and of the IR routes (ir.HTTPRoute.Origin): in res.IR, a rule
// with a problem outside its matches answers its failure status (500, or
// 503 for gRPC and Ingresses; a direct response, no filters, no
// backends), and a match with a problem is dropped; the route's parents
// of ours get PartiallyInvalid=True reason UnsupportedValue with the
// problem (an Ingress: a problem of reason InvalidConfiguration). It
// reports whether it changed the IR (whose xDS must then be rendered and
// checked again).
//
// What it changes it copies first: the IR routes, the listeners' route
// lists, the route statuses and their map, the Ingresses' statuses in res
// may be shared with earlier results (translate.Cache); only res.IR's
// listeners and the map of the Ingresses' statuses are res's own.
func blame(res *Result, found map[string][]xdsvalidate.Problem) bool {
	type verdict struct {
		ref     ruleRef
		msgs    []string
		dropped map[ir.Origin]bool // the matches dropped
		whole   bool               // a problem outside the matches
	}
	rules := map[ir.Origin]*verdict{} // unit -> verdict
	var order []ir.Origin
	for _, scope := range slices.Sorted(maps.Keys(found)) {
		for _, p := range found[scope] {
			if p.Origin == (ir.Origin{}) {
				continue
			}
			ref := refOf(p.Origin)
			v := rules[ref.unit]
			if v == nil {
				v = &verdict{ref: ref, dropped: map[ir.Origin]bool{}}
				rules[ref.unit] = v
				order = append(order, ref.unit)
			}
			if p.InMatch {
				v.dropped[p.Origin] = true
			} else {
				v.whole = true
			}
			msg := fmt.Sprintf("%s: %s; Envoy would refuse it, so the %s answers %d", ref.label, p.Message, ref.noun, ref.failureStatus())
			if p.InMatch {
				msg = fmt.Sprintf("%s: %s; Envoy would refuse it, so the match is not served", ref.match, p.Message)
			}
			if !slices.Contains(v.msgs, msg) {
				v.msgs = append(v.msgs, msg)
			}
		}
	}
	if len(rules) == 0 {
		return false
	}
	for _, g := range res.IR.Gateways {
		for _, l := range g.Listeners {
			var kept []*ir.HTTPRoute
			touched := false
			for _, r := range l.HTTPRoutes {
				v := rules[unitOf(r.Origin)]
				switch {
				case v == nil:
				case v.dropped[r.Origin]:
					touched = true
					continue
				case v.whole:
					// A problem outside the matches: the rule answers its
					// failure status.
					cp := *r
					cp.Backends, cp.Filters, cp.Timeouts, cp.Retry = nil, ir.HTTPFilters{}, nil, nil
					cp.DirectResponse = &ir.DirectResponse{StatusCode: v.ref.failureStatus()}
					r, touched = &cp, true
				}
				kept = append(kept, r)
			}
			if touched {
				l.HTTPRoutes = kept
			}
		}
	}
	res.Status.Routes = maps.Clone(res.Status.Routes)
	for _, unit := range order {
		v := rules[unit]
		if v.ref.route.Kind == gatewayapi.KindIngress {
			if st := res.Ingresses[v.ref.route.NamespacedName()]; st != nil {
				cp := *st // shared with earlier results (ingress.Cache)
				cp.Problems = slices.Clip(cp.Problems)
				for _, m := range v.msgs {
					cp.Problems = append(cp.Problems, ingress.Problem{Reason: ingress.ReasonInvalidConfiguration, Message: m})
				}
				res.Ingresses[v.ref.route.NamespacedName()] = &cp
			}
			continue
		}
		st := res.Status.Routes[v.ref.route]
		if st == nil {
			continue
		}
		st = st.DeepCopy()
		res.Status.Routes[v.ref.route] = st
		for i := range st.Parents {
			conds := &st.Parents[i].Conditions
			gen := int64(0)
			if a := meta.FindStatusCondition(*conds, string(gwapiv1.RouteConditionAccepted)); a != nil {
				gen = a.ObservedGeneration
			}
			msg := strings.Join(v.msgs, "; ")
			if c := meta.FindStatusCondition(*conds, string(gwapiv1.RouteConditionPartiallyInvalid)); c != nil && c.Status == metav1.ConditionTrue {
				c.Message += "; " + msg
				continue
			}
			// Appended, not meta.SetStatusCondition: translation is pure,
			// lastTransitionTime stays zero for the status writer to fill.
			*conds = append(*conds, metav1.Condition{Type: string(gwapiv1.RouteConditionPartiallyInvalid), Status: metav1.ConditionTrue,
				Reason: string(gwapiv1.RouteReasonUnsupportedValue), Message: msg, ObservedGeneration: gen})
		}
	}
	return true
}
