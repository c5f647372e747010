package gatewayapi

// A policy kind added the way policy.go's recipe says, in this one file:
// its type (testPolicy), its validation, what it renders (a response
// header on the routes and backends it applies to) and its registration.
// The tests read its effect in the IR and its status, through the same
// mechanism BackendTLSPolicy uses.

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// 1. Its types.

// testPolicy is the test-only policy kind: a value that routes and
// backends show in a response header.
type testPolicy struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Spec struct {
		TargetRefs []gwapiv1.LocalPolicyTargetReferenceWithSectionName
		// Value is what the policy renders; "" is invalid.
		Value string
	}
	Status gwapiv1.PolicyStatus
}

func (p *testPolicy) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec.TargetRefs = slices.Clone(p.Spec.TargetRefs)
	p.Status.DeepCopyInto(&out.Status)
	return &out
}

// testPolicies are the test policies of each snapshot: the kind is not a
// field of resources.Resources (the recipe's step 2), so they ride beside
// it.
var testPolicies = map[*resources.Resources][]*testPolicy{}

// testPolicySource is the kind's policySource (a resources.TypedKind for
// a kind of the snapshot).
type testPolicySource struct{}

func (testPolicySource) Name() string                              { return "TestPolicy" }
func (testPolicySource) New() resources.Object                     { return &testPolicy{} }
func (testPolicySource) List(r *resources.Resources) []*testPolicy { return testPolicies[r] }
func withTestPolicies(r *resources.Resources, ps ...*testPolicy) *resources.Resources {
	testPolicies[r] = ps
	return r
}

// 2. Its validation, 3. what it renders, 4. its registration.

const testPolicyHeader = "x-test-policy"

var testPolicyKind = registerPolicyKind(testPolicySource{}, policyKindSpec[*testPolicy]{
	targets:    []targetKind{targetGateway, targetListenerSet, targetHTTPRoute, targetGRPCRoute, targetService},
	targetRefs: func(p *testPolicy) []gwapiv1.LocalPolicyTargetReferenceWithSectionName { return p.Spec.TargetRefs },
	status:     func(p *testPolicy) *gwapiv1.PolicyStatus { return &p.Status },
	validate: func(_ *translator, p *testPolicy, st *policyState) {
		if p.Spec.Value == "" {
			st.notAccepted = &problem{string(gwapiv1.PolicyReasonInvalid), "spec.value is empty"}
			return
		}
		st.effect = p.Spec.Value
	},
	route: func(st *policyState, r *ir.HTTPRoute) {
		r.Filters.ResponseHeaders = withHeader(r.Filters.ResponseHeaders, testPolicyValue(st))
	},
	backendRoutes: []string{KindHTTPRoute},
	backend: func(st *policyState, _ string, b *ir.Backend) *ir.Backend {
		b.ResponseHeaders = withHeader(b.ResponseHeaders, testPolicyValue(st))
		return b
	},
})

// testPolicyValue is what a policy renders: its value, or "invalid".
func testPolicyValue(st *policyState) string {
	if v, ok := st.effect.(string); ok {
		return v
	}
	return "invalid"
}

// withHeader returns a copy of m (nil: none) that sets the test header.
func withHeader(m *ir.HeaderModifier, v string) *ir.HeaderModifier {
	out := &ir.HeaderModifier{}
	if m != nil {
		*out = *m
	}
	out.Set = append(slices.Clip(out.Set), ir.Header{Name: testPolicyHeader, Value: v})
	return out
}

// The fixtures.

var policyT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testPolicyOn is a policy named name, created age hours after policyT0,
// that targets kind/target (section: sectionName, "" for none) with value.
func testPolicyOn(name string, age int, value, kind, target, section string) *testPolicy {
	p := &testPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 1, CreationTimestamp: metav1.NewTime(policyT0.Add(time.Duration(age) * time.Hour))}}
	p.Spec.Value = value
	p.Spec.TargetRefs = []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
		Group: gwapiv1.Group(targetGroup(kind)), Kind: gwapiv1.Kind(kind), Name: gwapiv1.ObjectName(target)}}}
	if section != "" {
		p.Spec.TargetRefs[0].SectionName = ptr(gwapiv1.SectionName(section))
	}
	return p
}

func targetGroup(kind string) string {
	if kind == "Service" {
		return ""
	}
	return gwapiv1.GroupName
}

// policyWorld: Gateway default/web with listeners a (80) and b (81) that
// admits ListenerSets of its namespace, ListenerSet default/set with
// listeners c (82) and d (83), Service default/app with ports http (80) and
// admin (8080), and routes: "plain" (one unnamed rule) attached to the
// Gateway and the ListenerSet, "named" (rules "one" and "two") attached
// to the Gateway.
func policyWorld() *resources.Resources {
	res := fixture()
	gw := res.Gateways[0]
	gw.Spec.Listeners = []gwapiv1.Listener{
		{Name: "a", Protocol: gwapiv1.HTTPProtocolType, Port: 80},
		{Name: "b", Protocol: gwapiv1.HTTPProtocolType, Port: 81},
	}
	same := gwapiv1.NamespacesFromSame
	gw.Spec.AllowedListeners = &gwapiv1.AllowedListeners{Namespaces: &gwapiv1.ListenerNamespaces{From: &same}}
	set := &gwapiv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "set"}}
	set.Spec.ParentRef = gwapiv1.ParentGatewayReference{Name: "web"}
	set.Spec.Listeners = []gwapiv1.ListenerEntry{
		{Name: "c", Protocol: gwapiv1.HTTPProtocolType, Port: 82},
		{Name: "d", Protocol: gwapiv1.HTTPProtocolType, Port: 83},
	}
	res.ListenerSets = []*gwapiv1.ListenerSet{set}
	res.Services[0].Spec.Ports = append(res.Services[0].Spec.Ports, corev1.ServicePort{Name: "admin", Port: 8080, TargetPort: intstr.FromInt32(8080)})
	res.Namespaces = []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "default"}}}
	plain := httpRoute("plain", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
	plain.Spec.ParentRefs = append(plain.Spec.ParentRefs, gwapiv1.ParentReference{Kind: ptr(gwapiv1.Kind(KindListenerSet)), Name: "set"})
	named := httpRoute("named",
		gwapiv1.HTTPRouteRule{Name: ptr(gwapiv1.SectionName("one")), Matches: []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Value: ptr("/one")}}}, BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}},
		gwapiv1.HTTPRouteRule{Name: ptr(gwapiv1.SectionName("two")), Matches: []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Value: ptr("/two")}}}, BackendRefs: []gwapiv1.HTTPBackendRef{toApp(8080)}})
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{named, plain}
	return res
}

// rendered is the test header of every IR route by "<listener> <route
// name>", and of every backend by "<listener> <route name> <backend>".
func rendered(r *Result) map[string]string {
	out := map[string]string{}
	value := func(m *ir.HeaderModifier) string {
		if m == nil {
			return ""
		}
		for _, h := range m.Set {
			if h.Name == testPolicyHeader {
				return h.Value
			}
		}
		return ""
	}
	for _, g := range r.IR.Gateways {
		for _, l := range g.Listeners {
			for _, hr := range l.HTTPRoutes {
				k := l.Name + " " + hr.Name
				out[k] = value(hr.Filters.ResponseHeaders)
				if hr.Backends != nil {
					for _, b := range hr.Backends.Backends {
						out[k+" "+b.Name] = value(b.ResponseHeaders)
					}
				}
			}
		}
	}
	return out
}

func checkRendered(t *testing.T, r *Result, want map[string]string) {
	t.Helper()
	got := rendered(r)
	for k, v := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("no IR route or backend %q; have %v", k, got)
		} else if g != v {
			t.Errorf("%s: policy %q applies, want %q", k, g, v)
		}
	}
}

// ancestorsOf returns the ancestor Gateways of test policy name, with the
// conditions of each as "Type=Status(Reason)".
func ancestorsOf(r *Result, name string) map[string][]string {
	st := r.Status.Policies[PolicyKey{Kind: "TestPolicy", Namespace: "default", Name: name}]
	if st == nil {
		return nil
	}
	out := map[string][]string{}
	for _, a := range st.Ancestors {
		var cs []string
		for _, c := range a.Conditions {
			cs = append(cs, c.Type+"="+string(c.Status)+"("+c.Reason+")")
		}
		out[string(*a.AncestorRef.Namespace)+"/"+string(a.AncestorRef.Name)] = cs
	}
	return out
}

const (
	lA = "default/web/a"
	lB = "default/web/b"
	lC = "default/web/default/set/c"
	lD = "default/web/default/set/d"

	plainRule = "httproute/default/plain/rule/0/match/0"
	namedOne  = "httproute/default/named/rule/0/match/0"
	namedTwo  = "httproute/default/named/rule/1/match/0"

	port80   = "service/default/app/80"
	port8080 = "service/default/app/8080"
)

// TestPolicyPrecedence: the more specific attachment wins, at every level:
// rule over route over listener over ListenerSet over Gateway, and
// Service port over Service.
func TestPolicyPrecedence(t *testing.T) {
	res := withTestPolicies(policyWorld(),
		testPolicyOn("gateway", 0, "gateway", "Gateway", "web", ""),
		testPolicyOn("listener-a", 0, "listener-a", "Gateway", "web", "a"),
		testPolicyOn("set", 0, "set", KindListenerSet, "set", ""),
		testPolicyOn("set-c", 0, "set-c", KindListenerSet, "set", "c"),
		testPolicyOn("route", 0, "route", KindHTTPRoute, "named", ""),
		testPolicyOn("rule-one", 0, "rule-one", KindHTTPRoute, "named", "one"),
		testPolicyOn("service", 0, "service", "Service", "app", ""),
		testPolicyOn("port-admin", 0, "port-admin", "Service", "app", "admin"),
	)
	r := Translate(res, Options{})
	mustValid(t, r)
	checkRendered(t, r, map[string]string{
		// "plain" has no policy of its own: its listeners decide.
		lA + " " + plainRule: "listener-a", // listener over Gateway
		lB + " " + plainRule: "gateway",
		lC + " " + plainRule: "set-c", // a ListenerSet's listener over the ListenerSet
		lD + " " + plainRule: "set",   // the ListenerSet over the Gateway
		// "named": its rule one has a policy, its rule two the route's.
		lA + " " + namedOne: "rule-one", // rule over route over listener
		lA + " " + namedTwo: "route",
		lB + " " + namedOne: "rule-one",
		lB + " " + namedTwo: "route",
		// Backends: the port over the Service.
		lA + " " + plainRule + " " + port80:  "service",
		lA + " " + namedTwo + " " + port8080: "port-admin",
	})
	for _, name := range []string{"gateway", "listener-a", "set", "set-c", "route", "rule-one", "service", "port-admin"} {
		want := map[string][]string{"default/web": {"Accepted=True(Accepted)"}}
		if got := ancestorsOf(r, name); !equalAncestors(got, want) {
			t.Errorf("policy %s: ancestors %v, want %v (Accepted only: the kind reports no ResolvedRefs)", name, got, want)
		}
	}
}

func equalAncestors(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestPolicyConflicted: of two policies on one target the older applies
// and the younger is Accepted=False reason Conflicted, its message naming
// the older; at the same age the first by namespace/name wins. An invalid
// policy wins its target all the same (its kind renders what an invalid
// policy does).
func TestPolicyConflicted(t *testing.T) {
	res := withTestPolicies(policyWorld(),
		testPolicyOn("younger", 2, "younger", "Gateway", "web", "a"),
		testPolicyOn("older", 1, "older", "Gateway", "web", "a"),
		testPolicyOn("b-same-age", 0, "b", "Gateway", "web", "b"),
		testPolicyOn("a-same-age", 0, "a", "Gateway", "web", "b"),
		testPolicyOn("z-invalid-older", 0, "", KindHTTPRoute, "named", ""),
		testPolicyOn("valid-younger", 1, "valid", KindHTTPRoute, "named", ""),
	)
	r := Translate(res, Options{})
	mustValid(t, r)
	checkRendered(t, r, map[string]string{
		lA + " " + plainRule: "older",
		lB + " " + plainRule: "a",
		lA + " " + namedTwo:  "invalid",
	})
	for name, want := range map[string]string{
		"older":           "Accepted=True(Accepted)",
		"younger":         "Accepted=False(Conflicted)",
		"a-same-age":      "Accepted=True(Accepted)",
		"b-same-age":      "Accepted=False(Conflicted)",
		"z-invalid-older": "Accepted=False(Invalid)",
		"valid-younger":   "Accepted=False(Conflicted)",
	} {
		if got := ancestorsOf(r, name)["default/web"]; !slices.Equal(got, []string{want}) {
			t.Errorf("policy %s on Gateway default/web: %v, want %s", name, got, want)
		}
	}
	st := r.Status.Policies[PolicyKey{Kind: "TestPolicy", Namespace: "default", Name: "younger"}]
	if st == nil || len(st.Ancestors) == 0 {
		t.Fatal("policy younger has no ancestor")
	}
	if msg := st.Ancestors[0].Conditions[0].Message; msg != "TestPolicy default/older, older, already targets Gateway default/web listener a" {
		t.Errorf("Conflicted message %q", msg)
	}
	st = r.Status.Policies[PolicyKey{Kind: "TestPolicy", Namespace: "default", Name: "valid-younger"}]
	if st == nil || len(st.Ancestors) == 0 {
		t.Fatal("policy valid-younger has no ancestor")
	}
	if msg := st.Ancestors[0].Conditions[0].Message; msg != "TestPolicy default/z-invalid-older, older, already targets HTTPRoute default/named" {
		t.Errorf("Conflicted message %q", msg)
	}
}

// TestPolicyAncestorsIncremental: a policy is reported on every Gateway
// its target reaches; a route that stops reaching the target takes its
// Gateway away, in an incremental run as in a full one.
func TestPolicyAncestorsIncremental(t *testing.T) {
	base := policyWorld()
	base.Gateways = append(base.Gateways, gateway("other", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 90}))
	// Every step shares base's objects but the routes: runs after the
	// first are incremental.
	world := func(plainParents []string, namedBackend int32) *resources.Resources {
		res := new(resources.Resources)
		*res = *base
		res.HTTPRoutes = slices.Clone(base.HTTPRoutes)
		plain := res.HTTPRoutes[1].DeepCopy()
		plain.Spec.ParentRefs = nil
		for _, p := range plainParents {
			plain.Spec.ParentRefs = append(plain.Spec.ParentRefs, gwapiv1.ParentReference{Name: gwapiv1.ObjectName(p)})
		}
		res.HTTPRoutes[1] = plain
		if plainParents == nil {
			res.HTTPRoutes = res.HTTPRoutes[:1]
		}
		named := res.HTTPRoutes[0].DeepCopy()
		named.Spec.ParentRefs = append(named.Spec.ParentRefs, gwapiv1.ParentReference{Name: "other"})
		named.Spec.Rules[1].BackendRefs = []gwapiv1.HTTPBackendRef{toApp(namedBackend)}
		res.HTTPRoutes[0] = named
		return res
	}
	policies := []*testPolicy{
		testPolicyOn("on-plain", 0, "p", KindHTTPRoute, "plain", ""),
		testPolicyOn("on-admin", 0, "s", "Service", "app", "admin"),
		testPolicyOn("on-other", 0, "g", "Gateway", "other", ""),
	}
	c := NewCache()
	steps := []struct {
		name       string
		res        *resources.Resources
		full       bool
		onPlain    []string
		onAdmin    []string
		onOtherGws []string
	}{
		{"plain on both Gateways, named uses port admin", world([]string{"web", "other"}, 8080), true,
			[]string{"default/other", "default/web"}, []string{"default/other", "default/web"}, []string{"default/other"}},
		{"plain leaves Gateway other", world([]string{"web"}, 8080), false,
			[]string{"default/web"}, []string{"default/other", "default/web"}, []string{"default/other"}},
		{"named stops using port admin", world([]string{"web"}, 80), false,
			[]string{"default/web"}, nil, []string{"default/other"}},
		{"plain is gone", world(nil, 80), false,
			nil, nil, []string{"default/other"}},
		{"both back", world([]string{"web", "other"}, 8080), false,
			[]string{"default/other", "default/web"}, []string{"default/other", "default/web"}, []string{"default/other"}},
	}
	for _, s := range steps {
		res := withTestPolicies(s.res, policies...)
		inc := c.Translate(res, Options{})
		if full, _ := c.LastRun(); full != s.full {
			t.Fatalf("%s: full run %v, want %v", s.name, full, s.full)
		}
		whole := Translate(withTestPolicies(s.res, policies...), Options{})
		for _, r := range []*Result{inc, whole} {
			for name, want := range map[string][]string{"on-plain": s.onPlain, "on-admin": s.onAdmin, "on-other": s.onOtherGws} {
				var got []string
				for g := range ancestorsOf(r, name) {
					got = append(got, g)
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("%s: policy %s has ancestors %v, want %v", s.name, name, got, want)
				}
			}
		}
	}
}

// TestPolicyTargetMissingOrRefused: a target that does not exist (object
// or section), or of a kind the policy kind does not accept, gives the
// policy no ancestor and so no status entry, and no effect.
func TestPolicyTargetMissingOrRefused(t *testing.T) {
	res := policyWorld()
	res.TCPRoutes = []*gwapiv1.TCPRoute{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tcp"}}}
	res.TCPRoutes[0].Spec.ParentRefs = []gwapiv1.ParentReference{{Name: "web"}}
	res.BackendTLSPolicies = []*gwapiv1.BackendTLSPolicy{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "on-gateway"}}}
	res.BackendTLSPolicies[0].Spec.TargetRefs = testPolicyOn("", 0, "", "Gateway", "web", "").Spec.TargetRefs
	res.BackendTLSPolicies[0].Spec.Validation.WellKnownCACertificates = ptr(gwapiv1.WellKnownCACertificatesSystem)
	res.BackendTLSPolicies[0].Spec.Validation.Hostname = "app.example.com"
	missing := []*testPolicy{
		testPolicyOn("no-gateway", 0, "x", "Gateway", "nope", ""),
		testPolicyOn("no-listener", 0, "x", "Gateway", "web", "nope"),
		testPolicyOn("no-set-listener", 0, "x", KindListenerSet, "set", "nope"),
		testPolicyOn("no-route", 0, "x", KindHTTPRoute, "nope", ""),
		testPolicyOn("no-rule", 0, "x", KindHTTPRoute, "named", "nope"),
		testPolicyOn("no-service", 0, "x", "Service", "nope", ""),
		testPolicyOn("no-port", 0, "x", "Service", "app", "nope"),
		testPolicyOn("kind-not-accepted", 0, "x", KindTCPRoute, "tcp", ""),
		testPolicyOn("other-group", 0, "x", "Gateway", "web", ""),
	}
	missing[len(missing)-1].Spec.TargetRefs[0].Group = "example.com"
	r := Translate(withTestPolicies(res, missing...), Options{})
	mustValid(t, r)
	for _, p := range missing {
		if st, ok := r.Status.Policies[PolicyKey{Kind: "TestPolicy", Namespace: "default", Name: p.Name}]; ok {
			t.Errorf("policy %s has a status: %+v", p.Name, st)
		}
	}
	if st, ok := r.Status.Policies[PolicyKey{Kind: "BackendTLSPolicy", Namespace: "default", Name: "on-gateway"}]; ok {
		t.Errorf("a BackendTLSPolicy that targets a Gateway has a status: %+v", st)
	}
	for k, v := range rendered(r) {
		if v != "" {
			t.Errorf("%s: policy %q applies", k, v)
		}
	}
	if len(rendered(r)) == 0 {
		t.Fatal("no IR routes")
	}
}
