package gatewayapi

import (
	"regexp"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

func btp(name string, spec gwapixv1a1.BackendTrafficPolicySpec) *gwapixv1a1.XBackendTrafficPolicy {
	if spec.TargetRefs == nil {
		spec.TargetRefs = []gwapixv1a1.LocalPolicyTargetReference{{Group: "", Kind: "Service", Name: "app"}}
	}
	return &gwapixv1a1.XBackendTrafficPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 1}, Spec: spec}
}

// TestBackendTrafficPolicyValidation is the table of what an
// XBackendTrafficPolicy's fields become: the retry budget with the API's
// defaults and its bounds, sessionPersistence checked as a route rule's
// (a generated cookie name of the policy's own), and every problem making
// the policy Accepted=False reason Invalid with nothing rendered.
func TestBackendTrafficPolicyValidation(t *testing.T) {
	d := func(s string) *gwapiv1.Duration { v := gwapiv1.Duration(s); return &v }
	n := ptr[int]
	for _, tc := range []struct {
		name   string
		spec   gwapixv1a1.BackendTrafficPolicySpec
		budget *ir.RetryBudget
		// session, when set, is compared; cookie, when set, is a regexp
		// the generated cookie name matches.
		session *ir.SessionPersistence
		cookie  string
		// invalid is a regexp of the Accepted=False message; "" accepted.
		invalid string
	}{
		{name: "empty retryConstraint: the API's defaults",
			spec:   gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{}},
			budget: &ir.RetryBudget{Percent: 20, MinConcurrency: 10}},
		{name: "percent and count",
			spec: gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{
				Budget:       &gwapixv1a1.BudgetDetails{Percent: n(35), Interval: d("1m")},
				MinRetryRate: &gwapixv1a1.RequestRate{Count: n(4), Interval: d("5s")}}},
			budget: &ir.RetryBudget{Percent: 35, MinConcurrency: 4}},
		{name: "edges: percent 0 and 100, count 1 and 1000000, intervals 1s and 1h",
			spec: gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{
				Budget: &gwapixv1a1.BudgetDetails{Percent: n(0), Interval: d("1s")}, MinRetryRate: &gwapixv1a1.RequestRate{Count: n(1), Interval: d("1h")}}},
			budget: &ir.RetryBudget{Percent: 0, MinConcurrency: 1}},
		{name: "budget percent 100, count 1000000",
			spec: gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{
				Budget: &gwapixv1a1.BudgetDetails{Percent: n(100), Interval: d("1h")}, MinRetryRate: &gwapixv1a1.RequestRate{Count: n(1000000), Interval: d("100ms")}}},
			budget: &ir.RetryBudget{Percent: 100, MinConcurrency: 1000000}},
		{name: "percent over 100",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{Budget: &gwapixv1a1.BudgetDetails{Percent: n(101)}}},
			invalid: `^retryConstraint\.budget\.percent 101 is not between 0 and 100$`},
		{name: "negative percent",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{Budget: &gwapixv1a1.BudgetDetails{Percent: n(-1)}}},
			invalid: `percent -1 is not between 0 and 100`},
		{name: "budget interval under 1s",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{Budget: &gwapixv1a1.BudgetDetails{Interval: d("500ms")}}},
			invalid: `budget\.interval 500ms is not between 1s and 1h`},
		{name: "budget interval over 1h",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{Budget: &gwapixv1a1.BudgetDetails{Interval: d("61m")}}},
			invalid: `budget\.interval 61m is not between 1s and 1h`},
		{name: "budget interval not a duration",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{Budget: &gwapixv1a1.BudgetDetails{Interval: d("ten seconds")}}},
			invalid: `budget\.interval "ten seconds" `},
		{name: "count 0",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{MinRetryRate: &gwapixv1a1.RequestRate{Count: n(0)}}},
			invalid: `minRetryRate\.count 0 is not between 1 and 1000000`},
		{name: "minRetryRate interval 0s",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{MinRetryRate: &gwapixv1a1.RequestRate{Interval: d("0s")}}},
			invalid: `minRetryRate\.interval 0s is not above 0s and at most 1h`},
		{name: "every problem in the message",
			spec: gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{
				Budget: &gwapixv1a1.BudgetDetails{Percent: n(200)}, MinRetryRate: &gwapixv1a1.RequestRate{Count: n(2000000)}}},
			invalid: `percent 200 .*; .*count 2000000`},
		{name: "no targetRefs",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{TargetRefs: []gwapixv1a1.LocalPolicyTargetReference{}, RetryConstraint: &gwapixv1a1.RetryConstraint{}},
			invalid: `^0 targetRefs; 1 to 16 are allowed$`},
		{name: "session cookie: the policy's generated name, path /",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{SessionPersistence: &gwapiv1.SessionPersistence{}},
			session: &ir.SessionPersistence{Type: ir.SessionCookie, CookiePath: "/"}, cookie: `^session-[0-9a-f]{16}$`},
		{name: "session permanent cookie",
			spec: gwapixv1a1.BackendTrafficPolicySpec{SessionPersistence: &gwapiv1.SessionPersistence{AbsoluteTimeout: d("2h"),
				Cookie: &gwapiv1.CookieConfig{Name: ptr(gwapiv1.CookieName("sticky")), Path: ptr("/shop"), LifetimeType: ptr(gwapiv1.PermanentCookieLifetimeType)}}},
			session: &ir.SessionPersistence{Type: ir.SessionCookie, Name: "sticky", CookiePath: "/shop", CookieMaxAge: ir.NewDuration(7200e9)}},
		{name: "session header and a budget",
			spec: gwapixv1a1.BackendTrafficPolicySpec{RetryConstraint: &gwapixv1a1.RetryConstraint{},
				SessionPersistence: &gwapiv1.SessionPersistence{Type: ptr(gwapiv1.HeaderBasedSessionPersistence), Header: &gwapiv1.HeaderConfig{Name: "x-s"}}},
			budget: &ir.RetryBudget{Percent: 20, MinConcurrency: 10}, session: &ir.SessionPersistence{Type: ir.SessionHeader, Name: "x-s"}},
		{name: "session header without a name",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{SessionPersistence: &gwapiv1.SessionPersistence{Type: ptr(gwapiv1.HeaderBasedSessionPersistence)}},
			invalid: `^sessionPersistence: header is required with type Header$`},
		{name: "session absoluteTimeout with a Session cookie (Envoy cannot expire it)",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{SessionPersistence: &gwapiv1.SessionPersistence{AbsoluteTimeout: d("1h")}},
			invalid: `absoluteTimeout with cookie lifetimeType Session is not supported`},
		{name: "session absoluteTimeout with a header",
			spec: gwapixv1a1.BackendTrafficPolicySpec{SessionPersistence: &gwapiv1.SessionPersistence{AbsoluteTimeout: d("1h"),
				Type: ptr(gwapiv1.HeaderBasedSessionPersistence), Header: &gwapiv1.HeaderConfig{Name: "x-s"}}},
			invalid: `absoluteTimeout is not supported with type Header`},
		{name: "session cookie name not a token",
			spec:    gwapixv1a1.BackendTrafficPolicySpec{SessionPersistence: &gwapiv1.SessionPersistence{Cookie: &gwapiv1.CookieConfig{Name: ptr(gwapiv1.CookieName("a b"))}}},
			invalid: `^sessionPersistence: cookie name "a b" `},
		{name: "nothing asked: accepted, renders nothing",
			spec: gwapixv1a1.BackendTrafficPolicySpec{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &policyState{}
			backendTrafficPolicy(btp("p", tc.spec), st)
			if tc.invalid != "" {
				if st.notAccepted == nil || st.notAccepted.reason != string(gwapiv1.PolicyReasonInvalid) || !regexp.MustCompile(tc.invalid).MatchString(st.notAccepted.msg) {
					t.Fatalf("got %+v, want Accepted=False reason Invalid matching %q", st.notAccepted, tc.invalid)
				}
				if st.effect != nil {
					t.Errorf("an invalid policy renders %+v", st.effect)
				}
				return
			}
			if st.notAccepted != nil {
				t.Fatalf("not accepted: %+v", st.notAccepted)
			}
			e, _ := st.effect.(*backendTraffic)
			if tc.budget == nil && tc.session == nil {
				if st.effect != nil {
					t.Fatalf("renders %+v, want nothing", st.effect)
				}
				return
			}
			if e == nil {
				t.Fatal("no effect")
			}
			if (e.budget == nil) != (tc.budget == nil) || e.budget != nil && *e.budget != *tc.budget {
				t.Errorf("budget %+v, want %+v", e.budget, tc.budget)
			}
			if tc.session == nil {
				if e.session != nil {
					t.Errorf("session %+v, want none", e.session)
				}
				return
			}
			if e.session == nil {
				t.Fatal("no session")
			}
			got := *e.session
			if tc.cookie != "" {
				if !regexp.MustCompile(tc.cookie).MatchString(got.Name) {
					t.Errorf("cookie name %q does not match %s", got.Name, tc.cookie)
				}
				got.Name = ""
			}
			if got.Type != tc.session.Type || got.Name != tc.session.Name || got.CookiePath != tc.session.CookiePath ||
				(got.CookieMaxAge == nil) != (tc.session.CookieMaxAge == nil) || got.CookieMaxAge != nil && *got.CookieMaxAge != *tc.session.CookieMaxAge {
				t.Errorf("session %+v, want %+v", got, *tc.session)
			}
		})
	}
}

// TestBackendTrafficPolicyRendered shows a policy through a translation:
// its retry budget on the backends of the Service it targets, its session
// on the routes of a rule without one of its own (the rule's own wins),
// its generated cookie name the same at every translation and not the
// one a rule would get, and Accepted=True on the Gateway of the route.
func TestBackendTrafficPolicyRendered(t *testing.T) {
	res := fixture()
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app",
		gwapiv1.HTTPRouteRule{Matches: pathPrefix("/policy"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}},
		gwapiv1.HTTPRouteRule{Matches: pathPrefix("/own"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)},
			SessionPersistence: &gwapiv1.SessionPersistence{Type: ptr(gwapiv1.HeaderBasedSessionPersistence), Header: &gwapiv1.HeaderConfig{Name: "x-own"}}},
	)}
	res.XBackendTrafficPolicies = []*gwapixv1a1.XBackendTrafficPolicy{btp("app", gwapixv1a1.BackendTrafficPolicySpec{
		RetryConstraint:    &gwapixv1a1.RetryConstraint{Budget: &gwapixv1a1.BudgetDetails{Percent: ptr(30)}},
		SessionPersistence: &gwapiv1.SessionPersistence{},
	})}
	r := Translate(res, Options{})
	mustValid(t, r)
	sessions := map[string]*ir.SessionPersistence{}
	for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
		if rt.Backends == nil || len(rt.Backends.Backends) != 1 {
			t.Fatalf("route %s does not forward to one backend", rt.Name)
		}
		if b := rt.Backends.Backends[0]; b.RetryBudget == nil || *b.RetryBudget != (ir.RetryBudget{Percent: 30, MinConcurrency: 10}) {
			t.Errorf("route %s: backend retry budget %+v, want 30%% and 10", rt.Name, b.RetryBudget)
		}
		sessions[rt.Match.Path.Value] = rt.SessionPersistence
	}
	policy := sessions["/policy"]
	if policy == nil || policy.Type != ir.SessionCookie || policy.Name != sessionCookieName("XBackendTrafficPolicy", "default", "app", "") {
		t.Errorf("/policy: %+v, want the policy's cookie", policy)
	}
	if policy != nil && policy.Name == sessionCookieName(KindHTTPRoute, "default", "app", "/rule/0") {
		t.Errorf("the policy's cookie is named as the rule's would be")
	}
	if own := sessions["/own"]; own == nil || *own != (ir.SessionPersistence{Type: ir.SessionHeader, Name: "x-own"}) {
		t.Errorf("/own: %+v, want the rule's own header", own)
	}
	st := r.Status.Policies[PolicyKey{Kind: "XBackendTrafficPolicy", Namespace: "default", Name: "app"}]
	if st == nil || len(st.Ancestors) != 1 || st.Ancestors[0].AncestorRef.Name != "web" {
		t.Fatalf("status %+v, want one ancestor, Gateway web", st)
	}
	if c := cond(t, st.Ancestors[0].Conditions, string(gwapiv1.PolicyConditionAccepted)); c.Status != metav1.ConditionTrue {
		t.Errorf("Accepted %+v", c)
	}
}
