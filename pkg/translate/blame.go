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
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
	"github.com/xds-controller/xds-controller/pkg/xdsvalidate"
)

// ruleRef is one rule of a route, parsed from an Envoy route name
// "<kind>/<ns>/<name>/rule/<i>/match/<j>" (gatewayapi.ParseRouteMatchName).
type ruleRef struct {
	route gatewayapi.RouteKey
	rule  int
	// prefix is "<kind>/<ns>/<name>/rule/<i>/match/".
	prefix string
}

func parseRouteName(n string) (ruleRef, bool) {
	key, rule, ok := gatewayapi.ParseRouteMatchName(n)
	if !ok {
		return ruleRef{}, false
	}
	return ruleRef{route: key, rule: rule, prefix: n[:strings.LastIndex(n, "/")+1]}, true
}

// blame traces the pre-validation problems found (xdsvalidate.Check, by
// scope) inside the routes of HTTPRoutes and GRPCRoutes back to their
// rules: in res.IR, a rule with a problem outside its matches answers its
// failure status (xdstranslator.FailureStatus: 500, or 503 for gRPC; a
// direct response, no filters, no backends), and a match with a problem
// is dropped; the route's parents of ours get PartiallyInvalid=True
// reason UnsupportedValue with the problem. It reports whether it changed
// the IR (whose xDS must then be rendered and checked again).
//
// What it changes it copies first: the IR routes, the listeners' route
// lists, the route statuses and their map in res may be shared with
// earlier results (translate.Cache); only res.IR's listeners are res's
// own.
func blame(res *gatewayapi.Result, found map[string][]xdsvalidate.Problem) bool {
	type verdict struct {
		msgs    []string
		dropped map[string]bool // IR route names whose match is dropped
		whole   bool            // a problem outside the matches
	}
	rules := map[string]*verdict{} // rule prefix -> verdict
	routes := map[string]gatewayapi.RouteKey{}
	var order []string
	for _, scope := range slices.Sorted(maps.Keys(found)) {
		for _, p := range found[scope] {
			ref, ok := parseRouteName(p.Route)
			if !ok {
				continue
			}
			v := rules[ref.prefix]
			if v == nil {
				v = &verdict{dropped: map[string]bool{}}
				rules[ref.prefix] = v
				routes[ref.prefix] = ref.route
				order = append(order, ref.prefix)
			}
			if p.InMatch {
				v.dropped[p.Route] = true
			} else {
				v.whole = true
			}
			msg := fmt.Sprintf("rule %d: %s", ref.rule, p.Message)
			if p.InMatch {
				msg = fmt.Sprintf("rule %d match %s: %s; Envoy would refuse it, so the match is not served", ref.rule, p.Route[len(ref.prefix):], p.Message)
			} else {
				msg += fmt.Sprintf("; Envoy would refuse it, so the rule answers %d", xdstranslator.FailureStatus(&ir.HTTPRoute{GRPC: ref.route.Kind == gatewayapi.KindGRPCRoute}))
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
				v := rules[ref.prefix]
				switch {
				case !ok || v == nil:
				case v.dropped[r.Name]:
					touched = true
					continue
				case v.whole:
					// A problem outside the matches: the rule answers 500.
					cp := *r
					cp.Backends, cp.Filters, cp.Timeouts, cp.Retry = nil, ir.HTTPFilters{}, nil, nil
					cp.DirectResponse = &ir.DirectResponse{StatusCode: xdstranslator.FailureStatus(r)}
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
	for _, prefix := range order {
		st := res.Status.Routes[routes[prefix]]
		if st == nil {
			continue
		}
		st = st.DeepCopy()
		res.Status.Routes[routes[prefix]] = st
		for i := range st.Parents {
			conds := &st.Parents[i].Conditions
			gen := int64(0)
			if a := meta.FindStatusCondition(*conds, string(gwapiv1.RouteConditionAccepted)); a != nil {
				gen = a.ObservedGeneration
			}
			msg := strings.Join(rules[prefix].msgs, "; ")
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
