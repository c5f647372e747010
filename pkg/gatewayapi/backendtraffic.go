package gatewayapi

// XBackendTrafficPolicy (gateway.networking.x-k8s.io/v1alpha1, the
// experimental channel of v1.7.0): session persistence (GEP-1619) and a
// retry budget (retryConstraint, GEP-3388) for the Services it targets.
// Its attachment, precedence, conflicts and status.ancestors (one entry
// per Gateway of ours whose routes reach a targeted Service) are every
// policy kind's (policy.go); here are its validation, what it renders and
// its registration.
//
// What it renders:
//   - sessionPersistence: the IR backend's SessionPersistence, which
//     becomes the session of the routes of a rule that has none of its
//     own when every backend the rule sends requests to has the same one
//     (ruleSession); the route rule's own sessionPersistence wins over
//     the policy's. Envoy's stateful session is per route, so a rule
//     whose backends differ (one with the policy's session, one without,
//     or two policies') gets none.
//   - retryConstraint: the IR backend's RetryBudget, which Envoy applies
//     to the Service port's cluster (circuit_breakers retry_budget), so
//     to every route that sends requests there.

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// backendTrafficPolicyKind registers XBackendTrafficPolicy (policy.go):
// it targets Services (targetRefs have no sectionName: "a TargetRef
// cannot be scoped to a specific port"), and renders the backends of
// HTTPRoutes, GRPCRoutes and Ingresses, the kinds whose requests share a
// Service port's HTTP cluster (a TLSRoute's or TCPRoute's cluster relays
// bytes: no retries, no sessions). Its effect is a *backendTraffic.
var backendTrafficPolicyKind = registerPolicyKind(resources.XBackendTrafficPolicyKind, policyKindSpec[*gwapixv1a1.XBackendTrafficPolicy]{
	targets:       []targetKind{targetService},
	targetRefs:    backendTrafficTargets,
	status:        func(p *gwapixv1a1.XBackendTrafficPolicy) *gwapiv1.PolicyStatus { return &p.Status },
	validate:      func(_ *translator, p *gwapixv1a1.XBackendTrafficPolicy, st *policyState) { backendTrafficPolicy(p, st) },
	backendRoutes: []string{KindHTTPRoute, KindGRPCRoute, KindIngress},
	backend:       applyBackendTraffic,
})

// backendTraffic is what a valid XBackendTrafficPolicy renders on the
// backends of the Services it targets; nil fields render nothing.
type backendTraffic struct {
	session *ir.SessionPersistence
	budget  *ir.RetryBudget
}

// The defaults of RetryConstraint (its kubebuilder defaults, for objects
// that skipped the API server: standalone files) and the bounds of its
// durations (its CEL rules).
const (
	defaultBudgetPercent     = 20
	defaultMinRetryCount     = 10
	maxRetryConstraintPeriod = time.Hour
	maxMinRetryCount         = 1000000
)

// backendTrafficTargets are a policy's targetRefs as the attachment
// mechanism reads them (without sectionName).
func backendTrafficTargets(p *gwapixv1a1.XBackendTrafficPolicy) []gwapiv1.LocalPolicyTargetReferenceWithSectionName {
	out := make([]gwapiv1.LocalPolicyTargetReferenceWithSectionName, 0, len(p.Spec.TargetRefs))
	for _, r := range p.Spec.TargetRefs {
		out = append(out, gwapiv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: r})
	}
	return out
}

// applyBackendTraffic renders the policy of a Service on b: its session
// persistence and retry budget (shared, never modified). A policy that is
// not accepted renders nothing: the backend is served as without it.
func applyBackendTraffic(st *policyState, _ string, b *ir.Backend) *ir.Backend {
	if e, _ := st.effect.(*backendTraffic); e != nil {
		b.SessionPersistence, b.RetryBudget = e.session, e.budget
	}
	return b
}

// ruleSession is the session persistence of the routes of a rule that
// forwards to g: the rule's own (rule, when set: it is more specific than
// a policy of a Service), else that of its backends when every backend
// that gets requests (valid, weight above 0) has the same one, else none.
func ruleSession(rule *ir.SessionPersistence, g *ir.BackendGroup) *ir.SessionPersistence {
	if rule != nil || g == nil {
		return rule
	}
	var out *ir.SessionPersistence
	for _, b := range g.Backends {
		if b.Invalid || b.Weight == 0 {
			continue
		}
		if b.SessionPersistence == nil || out != nil && !reflect.DeepEqual(out, b.SessionPersistence) {
			return nil
		}
		out = b.SessionPersistence
	}
	return out
}

// backendTrafficPolicy validates one policy: the schema of
// BackendTrafficPolicySpec (1 to 16 targetRefs, RetryConstraint's
// bounds) and sessionPersistence as a route rule's is checked
// (sessionPersistenceIR: what Envoy's stateful session cannot do is
// refused too), its cookie named after the policy when it names none.
// Any problem makes the policy Accepted=False reason Invalid (GEP-713),
// every problem in the message, and it renders nothing.
func backendTrafficPolicy(p *gwapixv1a1.XBackendTrafficPolicy, st *policyState) {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if n := len(p.Spec.TargetRefs); n == 0 || n > maxItems16 {
		bad("%d targetRefs; 1 to 16 are allowed", n)
	}
	out := &backendTraffic{budget: retryBudgetIR(p.Spec.RetryConstraint, bad)}
	if sp := p.Spec.SessionPersistence; sp != nil {
		out.session = sessionPersistenceIR(sp, sessionCookieName(resources.XBackendTrafficPolicyKind.Name(), p.Namespace, p.Name, ""),
			func(format string, a ...any) { bad("sessionPersistence: "+format, a...) })
	}
	if len(problems) > 0 {
		st.notAccepted = &problem{string(gwapiv1.PolicyReasonInvalid), strings.Join(problems, "; ")}
		return
	}
	if out.session != nil || out.budget != nil {
		st.effect = out
	}
}

// retryBudgetIR maps a RetryConstraint to Envoy's retry budget; nil stays
// nil. Envoy's budget counts requests in flight, not requests per
// interval:
//   - budget.percent (0-100, default 20) is budget_percent: a retry is
//     allowed while the retries in flight are fewer than percent of the
//     requests in flight to the Service port (active and pending), a
//     ratio that equals the API's retries over requests of an interval
//     whenever traffic is steady over it;
//   - budget.interval (1s-1h, default 10s) is checked and not rendered:
//     Envoy's ratio is that of the moment of each retry, never averaged
//     over a window, so a burst of failures meets the budget at once;
//   - minRetryRate.count (1-1000000, default 10) is
//     min_retry_concurrency: that many retries in flight are always
//     allowed. minRetryRate.interval (above 0s, at most 1h, default 1s)
//     is checked and not rendered: a floor of count retries in flight
//     allows at least count retries per interval when each retry ends
//     within the interval (the retries in flight then all started in
//     the last interval), and more when they end sooner.
//
// Values out of the API's bounds, or not GEP-2257 durations, are
// reported with bad.
func retryBudgetIR(rc *gwapixv1a1.RetryConstraint, bad func(string, ...any)) *ir.RetryBudget {
	if rc == nil {
		return nil
	}
	out := &ir.RetryBudget{Percent: defaultBudgetPercent, MinConcurrency: defaultMinRetryCount}
	if b := rc.Budget; b != nil {
		if b.Percent != nil {
			if *b.Percent < 0 || *b.Percent > 100 {
				bad("retryConstraint.budget.percent %d is not between 0 and 100", *b.Percent)
			} else {
				out.Percent = uint32(*b.Percent)
			}
		}
		if b.Interval != nil {
			checkPeriod("retryConstraint.budget.interval", *b.Interval, time.Second, bad)
		}
	}
	if r := rc.MinRetryRate; r != nil {
		if r.Count != nil {
			if *r.Count < 1 || *r.Count > maxMinRetryCount {
				bad("retryConstraint.minRetryRate.count %d is not between 1 and 1000000", *r.Count)
			} else {
				out.MinConcurrency = uint32(*r.Count)
			}
		}
		if r.Interval != nil {
			checkPeriod("retryConstraint.minRetryRate.interval", *r.Interval, time.Nanosecond, bad)
		}
	}
	return out
}

// checkPeriod reports an interval of field that is not a GEP-2257
// duration, or is below least or above one hour.
func checkPeriod(field string, v gwapiv1.Duration, least time.Duration, bad func(string, ...any)) {
	d, p := checkDuration(string(v))
	switch {
	case p != "":
		bad("%s %s %s", field, q(string(v)), p)
	case d < least || d > maxRetryConstraintPeriod:
		if least == time.Second {
			bad("%s %s is not between 1s and 1h", field, v)
		} else {
			bad("%s %s is not above 0s and at most 1h", field, v)
		}
	}
}
