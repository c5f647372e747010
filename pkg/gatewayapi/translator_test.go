package gatewayapi

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// fixture builds a small snapshot: class "xds" of ours, Gateway default/web
// with one HTTP listener on 80, Service default/app port 80 -> 8080 with one
// ready and one not-ready endpoint.
func fixture() *resources.Resources {
	return &resources.Resources{
		GatewayClasses: []*gwapiv1.GatewayClass{{
			ObjectMeta: metav1.ObjectMeta{Name: "xds", Generation: 2},
			Spec:       gwapiv1.GatewayClassSpec{ControllerName: ControllerName},
		}},
		Gateways: []*gwapiv1.Gateway{gateway("web", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80})},
		Services: []*corev1.Service{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{
				Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080),
			}}},
		}},
		EndpointSlices: []*discoveryv1.EndpointSlice{{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "app-1", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.2"}},
				{Addresses: []string{"10.0.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(false)}},
				{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}},
			},
		}},
	}
}

func gateway(name string, ls ...gwapiv1.Listener) *gwapiv1.Gateway {
	return &gwapiv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 5},
		Spec:       gwapiv1.GatewaySpec{GatewayClassName: "xds", Listeners: ls},
	}
}

func httpRoute(name string, rules ...gwapiv1.HTTPRouteRule) *gwapiv1.HTTPRoute {
	return &gwapiv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 3},
		Spec: gwapiv1.HTTPRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "web"}}},
			Rules:           rules,
		},
	}
}

func toApp(port int32) gwapiv1.HTTPBackendRef {
	return gwapiv1.HTTPBackendRef{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "app", Port: ptr(port)}}}
}

func mustValid(t *testing.T, r *Result) {
	t.Helper()
	if err := r.IR.Validate(); err != nil {
		t.Fatalf("invalid IR: %v", err)
	}
}

func cond(t *testing.T, cs []metav1.Condition, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(cs, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, cs)
	}
	return *c
}

func wantCond(t *testing.T, cs []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := cond(t, cs, typ)
	if c.Status != status || c.Reason != reason {
		t.Errorf("%s = %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
}

func routeParent(t *testing.T, r *Result, name string, i int) gwapiv1.RouteParentStatus {
	t.Helper()
	st := r.Status.Routes[RouteKey{Kind: KindHTTPRoute, Namespace: "default", Name: name}]
	if st == nil || len(st.Parents) <= i {
		t.Fatalf("route %s has no parent status %d: %+v", name, i, st)
	}
	return st.Parents[i]
}

func TestBasicRouteEndpointsAndStatus(t *testing.T) {
	res := fixture()
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
	r := Translate(res, Options{})
	mustValid(t, r)

	gc := r.Status.GatewayClasses["xds"]
	wantCond(t, gc.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
	if gc.Conditions[0].ObservedGeneration != 2 || !gc.Conditions[0].LastTransitionTime.IsZero() {
		t.Errorf("class condition = %+v, want generation 2 and zero time", gc.Conditions[0])
	}
	gs := r.Status.Gateways[nn("default", "web")]
	wantCond(t, gs.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
	wantCond(t, gs.Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
	l := gs.Listeners[0]
	if l.AttachedRoutes != 1 || len(l.SupportedKinds) != 2 || l.SupportedKinds[0].Kind != "HTTPRoute" || l.SupportedKinds[1].Kind != "GRPCRoute" {
		t.Errorf("listener status = %+v", l)
	}
	wantCond(t, l.Conditions, "Conflicted", metav1.ConditionFalse, "NoConflicts")
	for _, c := range l.Conditions {
		if c.ObservedGeneration != 5 {
			t.Errorf("listener condition %s has observedGeneration %d, want 5", c.Type, c.ObservedGeneration)
		}
	}
	p := routeParent(t, r, "app", 0)
	if p.ControllerName != ControllerName {
		t.Errorf("controllerName = %q", p.ControllerName)
	}
	wantCond(t, p.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
	wantCond(t, p.Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")

	lis := r.IR.Gateways[0].Listeners[0]
	if lis.Name != "default/web/http" || lis.Address != "0.0.0.0" || lis.Port != 80 || r.IR.Gateways[0].Scope != "gatewayclass/xds" {
		t.Errorf("listener = %+v scope %s", lis, r.IR.Gateways[0].Scope)
	}
	route := lis.HTTPRoutes[0]
	if route.Name != "httproute/default/app/rule/0/match/0" || route.Hostname != "*" ||
		route.Match.Path.Type != ir.MatchPathPrefix || route.Match.Path.Value != "/" {
		t.Errorf("route = %+v", route)
	}
	b := route.Backends.Backends[0]
	want := []ir.Endpoint{{Address: "10.0.0.1", Port: 8080}, {Address: "10.0.0.2", Port: 8080}}
	if b.Name != "service/default/app/80" || b.Weight != 1 || len(b.Endpoints) != 2 || b.Endpoints[0] != want[0] || b.Endpoints[1] != want[1] {
		t.Errorf("backend = %+v", b)
	}
}

func TestClusterIPFallbackWithoutSlices(t *testing.T) {
	res := fixture()
	res.EndpointSlices = nil
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
	r := Translate(res, Options{})
	eps := r.IR.Gateways[0].Listeners[0].HTTPRoutes[0].Backends.Backends[0].Endpoints
	if len(eps) != 1 || eps[0] != (ir.Endpoint{Address: "10.96.0.1", Port: 80}) {
		t.Errorf("endpoints = %+v, want the clusterIP at the Service port", eps)
	}
}

func TestBackendProblems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ref    gwapiv1.HTTPBackendRef
		reason string
	}{
		{"missing service", gwapiv1.HTTPBackendRef{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "ghost", Port: ptr(int32(80))}}}, "BackendNotFound"},
		{"port not on service", toApp(81), "BackendNotFound"},
		{"no port", gwapiv1.HTTPBackendRef{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "app"}}}, "BackendNotFound"},
		{"wrong kind", gwapiv1.HTTPBackendRef{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "app", Kind: ptr(gwapiv1.Kind("Pod")), Port: ptr(int32(80))}}}, "InvalidKind"},
		{"cross namespace", gwapiv1.HTTPBackendRef{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "app", Namespace: ptr(gwapiv1.Namespace("other")), Port: ptr(int32(80))}}}, "RefNotPermitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := fixture()
			res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app",
				gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{tc.ref}},
				gwapiv1.HTTPRouteRule{
					Matches:     []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Value: ptr("/half")}}},
					BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80), tc.ref},
				})}
			r := Translate(res, Options{})
			mustValid(t, r)
			p := routeParent(t, r, "app", 0)
			wantCond(t, p.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
			wantCond(t, p.Conditions, "ResolvedRefs", metav1.ConditionFalse, tc.reason)
			routes := r.IR.Gateways[0].Listeners[0].HTTPRoutes
			// /half sorts first (longer prefix): one valid, one invalid backend.
			half, all := routes[0], routes[1]
			if g := half.Backends; g == nil || len(g.Backends) != 2 || g.Backends[0].Invalid || !g.Backends[1].Invalid || g.Backends[1].Weight != 1 {
				t.Errorf("partially invalid rule = %+v", half)
			}
			if all.DirectResponse == nil || all.DirectResponse.StatusCode != 500 || all.Backends != nil {
				t.Errorf("all-invalid rule = %+v, want a direct 500", all)
			}
		})
	}
}

func TestCrossNamespaceBackendWithGrant(t *testing.T) {
	res := fixture()
	svc := res.Services[0].DeepCopy()
	svc.Namespace = "other"
	res.Services = append(res.Services, svc)
	res.ReferenceGrants = []*gwapiv1.ReferenceGrant{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "g"},
		Spec: gwapiv1.ReferenceGrantSpec{
			From: []gwapiv1.ReferenceGrantFrom{{Group: gwapiv1.GroupName, Kind: "HTTPRoute", Namespace: "default"}},
			To:   []gwapiv1.ReferenceGrantTo{{Group: "", Kind: "Service"}},
		},
	}}
	ref := gwapiv1.HTTPBackendRef{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{Name: "app", Namespace: ptr(gwapiv1.Namespace("other")), Port: ptr(int32(80))}}}
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{ref}})}
	r := Translate(res, Options{})
	mustValid(t, r)
	wantCond(t, routeParent(t, r, "app", 0).Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")
	if b := r.IR.Gateways[0].Listeners[0].HTTPRoutes[0].Backends.Backends[0]; b.Name != "service/other/app/80" || b.Invalid {
		t.Errorf("backend = %+v", b)
	}
}

func TestListenerConflicts(t *testing.T) {
	res := fixture()
	// Two listeners with the same port, protocol and hostname break a CEL
	// rule of the Gateway spec (TestGatewaySpecRules), so HostnameConflict
	// cannot arise among the protocols we support.
	res.Gateways = []*gwapiv1.Gateway{gateway("web",
		gwapiv1.Listener{Name: "c", Protocol: gwapiv1.HTTPProtocolType, Port: 80},
		gwapiv1.Listener{Name: "d", Protocol: gwapiv1.HTTPProtocolType, Port: 443},
		gwapiv1.Listener{Name: "e", Protocol: gwapiv1.HTTPSProtocolType, Port: 443},
		gwapiv1.Listener{Name: "f", Protocol: "SCTP", Port: 80},
	)}
	r := Translate(res, Options{})
	mustValid(t, r)
	ls := r.Status.Gateways[nn("default", "web")].Listeners
	for i, want := range []struct{ accepted, conflicted string }{
		{"Accepted", "NoConflicts"},
		{"ProtocolConflict", "ProtocolConflict"}, {"ProtocolConflict", "ProtocolConflict"}, {"UnsupportedProtocol", "NoConflicts"},
	} {
		if a := cond(t, ls[i].Conditions, "Accepted"); a.Reason != want.accepted {
			t.Errorf("listener %s Accepted reason %s, want %s", ls[i].Name, a.Reason, want.accepted)
		}
		if c := cond(t, ls[i].Conditions, "Conflicted"); c.Reason != want.conflicted {
			t.Errorf("listener %s Conflicted reason %s, want %s", ls[i].Name, c.Reason, want.conflicted)
		}
	}
	if n := len(r.IR.Gateways[0].Listeners); n != 1 || r.IR.Gateways[0].Listeners[0].Name != "default/web/c" {
		t.Errorf("programmed listeners = %+v, want only c", r.IR.Gateways[0].Listeners)
	}
	wantCond(t, r.Status.Gateways[nn("default", "web")].Conditions, "Accepted", metav1.ConditionTrue, "ListenersNotValid")
}

func TestHTTPSCertificates(t *testing.T) {
	https := func(ref gwapiv1.SecretObjectReference) gwapiv1.Listener {
		return gwapiv1.Listener{Name: "https", Protocol: gwapiv1.HTTPSProtocolType, Port: 443,
			TLS: &gwapiv1.ListenerTLSConfig{CertificateRefs: []gwapiv1.SecretObjectReference{ref}}}
	}
	for _, tc := range []struct {
		name   string
		ref    gwapiv1.SecretObjectReference
		secret *corev1.Secret
		reason string
	}{
		{"missing", gwapiv1.SecretObjectReference{Name: "nope"}, nil, "InvalidCertificateRef"},
		{"wrong type", gwapiv1.SecretObjectReference{Name: "s"}, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s"}, Type: corev1.SecretTypeOpaque}, "InvalidCertificateRef"},
		{"malformed", gwapiv1.SecretObjectReference{Name: "s"}, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("junk"), "tls.key": []byte("junk")}}, "InvalidCertificateRef"},
		{"cross namespace", gwapiv1.SecretObjectReference{Name: "s", Namespace: ptr(gwapiv1.Namespace("certs"))}, nil, "RefNotPermitted"},
		{"wrong kind", gwapiv1.SecretObjectReference{Name: "s", Kind: ptr(gwapiv1.Kind("ConfigMap"))}, nil, "InvalidCertificateRef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := fixture()
			res.Gateways = []*gwapiv1.Gateway{gateway("web", https(tc.ref))}
			if tc.secret != nil {
				res.Secrets = []*corev1.Secret{tc.secret}
			}
			res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
			r := Translate(res, Options{})
			mustValid(t, r)
			l := r.Status.Gateways[nn("default", "web")].Listeners[0]
			wantCond(t, l.Conditions, "ResolvedRefs", metav1.ConditionFalse, tc.reason)
			wantCond(t, l.Conditions, "Programmed", metav1.ConditionFalse, "Invalid")
			if l.AttachedRoutes != 1 {
				t.Errorf("attachedRoutes = %d, want 1 (attachment ignores listener status)", l.AttachedRoutes)
			}
			if len(r.IR.Gateways) != 1 || len(r.IR.Gateways[0].Listeners) != 0 {
				t.Errorf("IR = %+v, want the Gateway without listeners", r.IR.Gateways)
			}
		})
	}
}

func TestAttachmentRefusals(t *testing.T) {
	res := fixture()
	res.Gateways = []*gwapiv1.Gateway{gateway("web", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80,
		Hostname: ptr(gwapiv1.Hostname("*.example.com")),
		AllowedRoutes: &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{
			From:     ptr(gwapiv1.NamespacesFromSelector),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
		}}})}
	res.Namespaces = []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"team": "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"team": "b"}}},
	}
	rule := gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}}
	ok := httpRoute("ok", rule)
	ok.Spec.Hostnames = []gwapiv1.Hostname{"foo.example.com", "foo.example.net"}
	nohost := httpRoute("nohost", rule)
	nohost.Spec.Hostnames = []gwapiv1.Hostname{"example.com"}
	nosection := httpRoute("nosection", rule)
	nosection.Spec.ParentRefs[0].SectionName = ptr(gwapiv1.SectionName("https"))
	otherns := httpRoute("otherns", gwapiv1.HTTPRouteRule{})
	otherns.Namespace = "b"
	otherns.Spec.ParentRefs[0].Namespace = ptr(gwapiv1.Namespace("default"))
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{nohost, nosection, ok, otherns}
	r := Translate(res, Options{})
	mustValid(t, r)
	wantCond(t, routeParent(t, r, "ok", 0).Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
	wantCond(t, routeParent(t, r, "nohost", 0).Conditions, "Accepted", metav1.ConditionFalse, "NoMatchingListenerHostname")
	wantCond(t, routeParent(t, r, "nosection", 0).Conditions, "Accepted", metav1.ConditionFalse, "NoMatchingParent")
	b := r.Status.Routes[RouteKey{Kind: KindHTTPRoute, Namespace: "b", Name: "otherns"}].Parents[0]
	wantCond(t, b.Conditions, "Accepted", metav1.ConditionFalse, "NotAllowedByListeners")
	wantCond(t, b.Conditions, "ResolvedRefs", metav1.ConditionTrue, "ResolvedRefs")
	routes := r.IR.Gateways[0].Listeners[0].HTTPRoutes
	if len(routes) != 1 || routes[0].Hostname != "foo.example.com" {
		t.Errorf("routes = %+v, want only ok on foo.example.com", routes)
	}
	if n := r.Status.Gateways[nn("default", "web")].Listeners[0].AttachedRoutes; n != 1 {
		t.Errorf("attachedRoutes = %d", n)
	}
}

func TestFiltersAndInvalidRules(t *testing.T) {
	res := fixture()
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app",
		gwapiv1.HTTPRouteRule{
			Matches: []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Value: ptr("/r")}}},
			Filters: []gwapiv1.HTTPRouteFilter{{Type: gwapiv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwapiv1.HTTPRequestRedirectFilter{
				Scheme: ptr("https"), Path: &gwapiv1.HTTPPathModifier{Type: gwapiv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr("/s")}}}},
		},
		gwapiv1.HTTPRouteRule{
			Matches:     []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Value: ptr("/ext")}}},
			Filters:     []gwapiv1.HTTPRouteFilter{{Type: gwapiv1.HTTPRouteFilterExtensionRef, ExtensionRef: &gwapiv1.LocalObjectReference{Group: "x.io", Kind: "F", Name: "f"}}},
			BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)},
		},
		gwapiv1.HTTPRouteRule{
			Matches:     []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Value: ptr("/bad")}}},
			Filters:     []gwapiv1.HTTPRouteFilter{{Type: "Teleport"}},
			BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)},
		},
	)}
	r := Translate(res, Options{})
	mustValid(t, r)
	p := routeParent(t, r, "app", 0)
	wantCond(t, p.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
	wantCond(t, p.Conditions, "ResolvedRefs", metav1.ConditionFalse, "InvalidKind")
	wantCond(t, p.Conditions, "PartiallyInvalid", metav1.ConditionTrue, "UnsupportedValue")
	byPath := map[string]*ir.HTTPRoute{}
	for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
		byPath[rt.Match.Path.Value] = rt
	}
	if rd := byPath["/r"].Filters.Redirect; rd == nil || rd.StatusCode != 302 || rd.Scheme != "https" || rd.Path.Type != ir.ReplacePrefixMatch {
		t.Errorf("redirect = %+v", rd)
	}
	for _, path := range []string{"/ext", "/bad"} {
		if d := byPath[path].DirectResponse; d == nil || d.StatusCode != 500 {
			t.Errorf("%s = %+v, want direct 500", path, byPath[path])
		}
	}

	// The same invalid filter in the only rule: Accepted=False.
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app", gwapiv1.HTTPRouteRule{Filters: []gwapiv1.HTTPRouteFilter{{Type: "Teleport"}}})}
	r = Translate(res, Options{})
	wantCond(t, routeParent(t, r, "app", 0).Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedValue")
	if n := len(r.IR.Gateways[0].Listeners[0].HTTPRoutes); n != 0 {
		t.Errorf("a route without accepted parent contributed %d IR routes", n)
	}
}

func TestPrecedence(t *testing.T) {
	res := fixture()
	pm := func(typ gwapiv1.PathMatchType, v string) gwapiv1.HTTPRouteMatch {
		return gwapiv1.HTTPRouteMatch{Path: &gwapiv1.HTTPPathMatch{Type: ptr(typ), Value: ptr(v)}}
	}
	a := httpRoute("a", gwapiv1.HTTPRouteRule{Matches: []gwapiv1.HTTPRouteMatch{
		pm(gwapiv1.PathMatchPathPrefix, "/"), pm(gwapiv1.PathMatchPathPrefix, "/abc"), pm(gwapiv1.PathMatchExact, "/a"),
	}, BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
	b := httpRoute("b", gwapiv1.HTTPRouteRule{Matches: []gwapiv1.HTTPRouteMatch{pm(gwapiv1.PathMatchPathPrefix, "/abc")}, BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
	a.CreationTimestamp = metav1.Unix(2000, 0)
	b.CreationTimestamp = metav1.Unix(1000, 0)
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{a, b}
	r := Translate(res, Options{})
	mustValid(t, r)
	var got []string
	for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
		got = append(got, rt.Name)
	}
	want := []string{
		"httproute/default/a/rule/0/match/2", // Exact
		"httproute/default/b/rule/0/match/0", // /abc, older route
		"httproute/default/a/rule/0/match/1", // /abc
		"httproute/default/a/rule/0/match/0", // /
	}
	if len(got) != len(want) {
		t.Fatalf("routes = %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("route %d = %s, want %s (all: %v)", i, got[i], want[i], got)
		}
	}
}

func TestPortUnavailableAcrossGateways(t *testing.T) {
	res := fixture()
	young := gateway("a", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80})
	young.CreationTimestamp = metav1.Unix(2000, 0)
	old := gateway("b", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80})
	old.CreationTimestamp = metav1.Unix(1000, 0)
	res.Gateways = []*gwapiv1.Gateway{young, old}
	r := Translate(res, Options{})
	mustValid(t, r)
	wantCond(t, r.Status.Gateways[nn("default", "a")].Listeners[0].Conditions, "Accepted", metav1.ConditionFalse, "PortUnavailable")
	wantCond(t, r.Status.Gateways[nn("default", "b")].Listeners[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")

	// With a scope per Gateway the two do not compete.
	r = Translate(res, Options{Scope: func(gw *gwapiv1.Gateway) string { return "gateway/" + gw.Name }})
	mustValid(t, r)
	wantCond(t, r.Status.Gateways[nn("default", "a")].Listeners[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
}

func TestAddressesAndOptions(t *testing.T) {
	res := fixture()
	res.Gateways[0].Spec.Addresses = []gwapiv1.GatewaySpecAddress{{Value: "192.0.2.1"}}
	r := Translate(res, Options{BindPort: func(_ *gwapiv1.Gateway, p gwapiv1.PortNumber) uint32 { return uint32(p) + 10000 }})
	mustValid(t, r)
	l := r.IR.Gateways[0].Listeners[0]
	if l.Address != "192.0.2.1" || l.Port != 10080 || l.GatewayPort != 80 {
		t.Errorf("listener = %+v", l)
	}
	if got := RequestedIPs(res.Gateways[0]); !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Errorf("RequestedIPs = %q", got)
	}
	// In Kubernetes the Service carries the address; Envoy binds the
	// wildcard in its pod.
	r = Translate(res, Options{AddressesOnService: true})
	mustValid(t, r)
	if l := r.IR.Gateways[0].Listeners[0]; l.Address != "0.0.0.0" {
		t.Errorf("AddressesOnService: listener binds %q", l.Address)
	}
	wantCond(t, r.Status.Gateways[nn("default", "web")].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")

	res.Gateways[0].Spec.Addresses = []gwapiv1.GatewaySpecAddress{{Type: ptr(gwapiv1.HostnameAddressType), Value: "gw.example.com"}}
	if got := RequestedIPs(res.Gateways[0]); got != nil {
		t.Errorf("RequestedIPs of a refused address = %q", got)
	}
	r = Translate(res, Options{AddressesOnService: true})
	wantCond(t, r.Status.Gateways[nn("default", "web")].Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedAddress")
	r = Translate(res, Options{})
	wantCond(t, r.Status.Gateways[nn("default", "web")].Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedAddress")
	if len(r.IR.Gateways) != 0 {
		t.Errorf("a refused Gateway is in the IR")
	}
}

// Several IPAddress entries: on a Service (Kubernetes) all of them are
// requested; standalone binds one address and refuses a second. Hostname
// and other types are refused in both; empty values and wildcards are no
// request of a Service.
func TestSeveralAddresses(t *testing.T) {
	res := fixture()
	gw := res.Gateways[0]
	gw.Spec.Addresses = []gwapiv1.GatewaySpecAddress{{Value: "10.244.1.250"}, {Value: ""}, {Type: ptr(gwapiv1.IPAddressType), Value: "2001:db8::0:1"}, {Value: "10.244.1.250"}}
	if got := RequestedIPs(gw); !slices.Equal(got, []string{"10.244.1.250", "2001:db8::1"}) {
		t.Errorf("RequestedIPs = %q", got)
	}
	r := Translate(res, Options{AddressesOnService: true})
	mustValid(t, r)
	wantCond(t, r.Status.Gateways[nn("default", "web")].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
	if l := r.IR.Gateways[0].Listeners[0]; l.Address != "0.0.0.0" {
		t.Errorf("AddressesOnService: listener binds %q", l.Address)
	}
	r = Translate(res, Options{})
	wantCond(t, r.Status.Gateways[nn("default", "web")].Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedAddress")
	if c, want := cond(t, r.Status.Gateways[nn("default", "web")].Conditions, "Accepted"), "standalone mode binds one IP address per Gateway; 2 were requested (10.244.1.250, 2001:db8::1)"; c.Message != want {
		t.Errorf("message %q, want %q", c.Message, want)
	}

	gw.Spec.Addresses = []gwapiv1.GatewaySpecAddress{{Value: "0.0.0.0"}, {Value: ""}}
	if got := RequestedIPs(gw); got != nil {
		t.Errorf("RequestedIPs of a wildcard = %q", got)
	}

	for typ, msg := range map[gwapiv1.AddressType]string{
		gwapiv1.HostnameAddressType: `address "gw.example.com" of type Hostname is not supported: a Gateway's address is an IP address (its Service's, which cannot request a hostname from a load balancer, or in standalone mode the one Envoy binds); use type IPAddress`,
		gwapiv1.NamedAddressType:    `address type "NamedAddress" is not supported; only IPAddress is`,
		"test/fake-invalid-type":    `address type "test/fake-invalid-type" is not supported; only IPAddress is`,
	} {
		gw.Spec.Addresses = []gwapiv1.GatewaySpecAddress{{Value: "10.244.1.250"}, {Type: ptr(typ), Value: "gw.example.com"}}
		if got := RequestedIPs(gw); got != nil {
			t.Errorf("%s: RequestedIPs = %q", typ, got)
		}
		for _, onService := range []bool{true, false} {
			r := Translate(res, Options{AddressesOnService: onService})
			wantCond(t, r.Status.Gateways[nn("default", "web")].Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedAddress")
			if c := cond(t, r.Status.Gateways[nn("default", "web")].Conditions, "Accepted"); c.Message != msg {
				t.Errorf("%s: message %q, want %q", typ, c.Message, msg)
			}
		}
	}
}

func TestOtherControllerIgnored(t *testing.T) {
	res := fixture()
	res.GatewayClasses[0].Spec.ControllerName = "example.com/other"
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app")}
	r := Translate(res, Options{})
	if len(r.Status.GatewayClasses)+len(r.Status.Gateways)+len(r.Status.Routes)+len(r.IR.Gateways) != 0 {
		t.Errorf("result for another controller's class = %+v", r.Status)
	}
	r = Translate(res, Options{ControllerName: "example.com/other"})
	if len(r.IR.Gateways) != 1 {
		t.Errorf("Options.ControllerName not honoured")
	}
}

func TestHostnameIntersection(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"foo.example.com", "foo.example.com", "foo.example.com"},
		{"*.example.com", "foo.example.com", "foo.example.com"},
		{"*.example.com", "a.b.example.com", "a.b.example.com"},
		{"foo.example.com", "*.example.com", "foo.example.com"},
		{"*.example.com", "example.com", ""},
		{"*.example.com", "*.foo.example.com", "*.foo.example.com"},
		{"*.foo.example.com", "*.example.com", "*.foo.example.com"},
		{"*.example.com", "*.example.net", ""},
		{"foo.example.com", "bar.example.com", ""},
	} {
		if got := intersectHostname(tc.a, tc.b); got != tc.want {
			t.Errorf("intersect(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestGatewayClassSupportedFeatures(t *testing.T) {
	res := &resources.Resources{GatewayClasses: []*gwapiv1.GatewayClass{{
		ObjectMeta: metav1.ObjectMeta{Name: "ours", Generation: 1},
		Spec:       gwapiv1.GatewayClassSpec{ControllerName: ControllerName},
	}}}
	st := Translate(res, Options{}).Status.GatewayClasses["ours"]
	var got []string
	for _, f := range st.SupportedFeatures {
		got = append(got, string(f.Name))
	}
	var want []string
	for _, f := range SupportedFeatures {
		want = append(want, string(f))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("supportedFeatures = %v, want %v (sorted, exactly SupportedFeatures)", got, want)
	}
	for _, core := range []string{"Gateway", "HTTPRoute", "ReferenceGrant"} {
		if !slices.Contains(got, core) {
			t.Errorf("supportedFeatures lack GATEWAY-HTTP core feature %s", core)
		}
	}
	// Every claimed name is a feature of the Gateway API version in go.mod
	// (v1.7.0 removed HTTPRouteRetry and HTTPRouteRetryBackendTimeout).
	for _, f := range got {
		if !features.AllFeatures.Has(features.GetFeature(features.FeatureName(f))) {
			t.Errorf("supportedFeatures has %s, not a feature of this Gateway API version", f)
		}
	}
}
