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

// ruleRef is what a problem in one Envoy route takes down: one rule of a
// route, parsed from "<kind>/<ns>/<name>/rule/<i>/match/<j>"
// (gatewayapi.ParseRouteMatchName), or one path (or the default backend)
// of an Ingress, parsed from "ingress/<ns>/<name>/..."
// (ingress.ParseRouteName).
type ruleRef struct {
	// route is the object; Kind gatewayapi.KindIngress for an Ingress.
	route gatewayapi.RouteKey
	// unit names what a problem outside the match answers the failure
	// status for: the rule's "<kind>/<ns>/<name>/rule/<i>/match/", or the
	// Ingress path's route name.
	unit string
	// label names the unit in messages ("rule 0", "rule/0/path/1"), and
	// match the route's own match ("rule 0 match 1", or label again).
	label, match string
	// noun is what the unit is: "rule" or "path".
	noun string
}

func parseRouteName(n string) (ruleRef, bool) {
	if key, rule, ok := gatewayapi.ParseRouteMatchName(n); ok {
		unit := n[:strings.LastIndex(n, "/")+1]
		label := fmt.Sprintf("rule %d", rule)
		return ruleRef{route: key, unit: unit, label: label, match: label + " match " + n[len(unit):], noun: "rule"}, true
	}
	if ing, what, ok := ingress.ParseRouteName(n); ok {
		return ruleRef{route: gatewayapi.RouteKey{Kind: gatewayapi.KindIngress, Namespace: ing.Namespace, Name: ing.Name},
			unit: n, label: what, match: what, noun: "path"}, true
	}
	return ruleRef{}, false
}

// RouteOwner returns the route object that the Envoy (or IR) route name n
// was made for: "<kind>/<ns>/<name>/rule/<i>/match/<j>" of an HTTPRoute or
// a GRPCRoute (gatewayapi.ParseRouteMatchName), "ingress/<ns>/<name>/..."
// of an Ingress (ingress.ParseRouteName, Kind gatewayapi.KindIngress). ok
// is false for any other name.
func RouteOwner(n string) (key gatewayapi.RouteKey, ok bool) {
	ref, ok := parseRouteName(n)
	return ref.route, ok
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
// to their rules (an Ingress: its paths): in res.IR, a rule with a problem
// outside its matches answers its failure status (500, or 503 for gRPC and
// Ingresses; a direct response, no filters, no backends), and a match with
// a problem is dropped; the route's parents of ours get
// PartiallyInvalid=True reason UnsupportedValue with the problem (an
// Ingress: a problem of reason InvalidConfiguration). It reports whether
// it changed the IR (whose xDS must then be rendered and checked again).
//
// What it changes it copies first: the IR routes, the listeners' route
// lists, the route statuses and their map in res may be shared with
// earlier results (translate.Cache); only res.IR's listeners and the
// Ingresses' status (pkg/ingress translates them at every run) are res's
// own.
func blame(res *Result, found map[string][]xdsvalidate.Problem) bool {
	type verdict struct {
		ref     ruleRef
		msgs    []string
		dropped map[string]bool // IR route names whose match is dropped
		whole   bool            // a problem outside the matches
	}
	rules := map[string]*verdict{} // unit -> verdict
	var order []string
	for _, scope := range slices.Sorted(maps.Keys(found)) {
		for _, p := range found[scope] {
			ref, ok := parseRouteName(p.Route)
			if !ok {
				continue
			}
			v := rules[ref.unit]
			if v == nil {
				v = &verdict{ref: ref, dropped: map[string]bool{}}
				rules[ref.unit] = v
				order = append(order, ref.unit)
			}
			if p.InMatch {
				v.dropped[p.Route] = true
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
				ref, ok := parseRouteName(r.Name)
				v := rules[ref.unit]
				switch {
				case !ok || v == nil:
				case v.dropped[r.Name]:
					touched = true
					continue
				case v.whole:
					// A problem outside the matches: the rule answers its
					// failure status.
					cp := *r
					cp.Backends, cp.Filters, cp.Timeouts, cp.Retry = nil, ir.HTTPFilters{}, nil, nil
					cp.DirectResponse = &ir.DirectResponse{StatusCode: ref.failureStatus()}
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
				for _, m := range v.msgs {
					st.Problems = append(st.Problems, ingress.Problem{Reason: ingress.ReasonInvalidConfiguration, Message: m})
				}
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
