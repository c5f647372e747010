package gatewayapi

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// withAuthz adds the Service authz (port 9000, no appProtocol, clusterIP
// ip) to res.
func withAuthz(res *resources.Resources, ip string) *resources.Resources {
	res.Services = append(res.Services, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "authz"},
		Spec:       corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Name: "grpc", Port: 9000}}},
	})
	return res
}

func extAuthF(a gwapiv1.HTTPExternalAuthFilter) gwapiv1.HTTPRouteFilter {
	return gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterExternalAuth, ExternalAuth: &a}
}

func authzRef(name string, port int32) gwapiv1.BackendObjectReference {
	return gwapiv1.BackendObjectReference{Name: gwapiv1.ObjectName(name), Port: ptr(gwapiv1.PortNumber(port))}
}

// TestExtAuthIR shows what ExternalAuth filters become: a GRPC check on
// an HTTP/1.1 port reaches it with h2c, on a cluster of its own; an HTTP
// check keeps its path prefix, headers and body size; a listener's
// filters are the IR listener's, in order, and no route's.
func TestExtAuthIR(t *testing.T) {
	res := withAuthz(fixture(), "10.96.0.5")
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app",
		gwapiv1.HTTPRouteRule{Matches: pathPrefix("/grpc"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}, Filters: []gwapiv1.HTTPRouteFilter{
			extAuthF(gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthGRPCProtocol, BackendRef: authzRef("authz", 9000),
				GRPCAuthConfig: &gwapiv1.GRPCAuthConfig{AllowedRequestHeaders: []string{"authorization"}}}),
		}},
		gwapiv1.HTTPRouteRule{Matches: pathPrefix("/http"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}, Filters: []gwapiv1.HTTPRouteFilter{
			extAuthF(gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthHTTPProtocol, BackendRef: authzRef("authz", 9000),
				HTTPAuthConfig: &gwapiv1.HTTPAuthConfig{Path: "/check", AllowedRequestHeaders: []string{"x-a"}, AllowedResponseHeaders: []string{"x-user"}},
				ForwardBody:    &gwapiv1.ForwardBodyConfig{MaxSize: 100}}),
		}},
	)}
	res.Gateways[0].Spec.Listeners[0].Filters = &gwapiv1.ListenerFilters{Requests: []gwapiv1.ListenerFilter{
		{Type: gwapiv1.ListenerFilterExternalAuth, ExternalAuth: &gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthHTTPProtocol, BackendRef: authzRef("authz", 9000)}},
		{Type: gwapiv1.ListenerFilterExternalAuth, ExternalAuth: &gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthGRPCProtocol, BackendRef: authzRef("authz", 9000)}},
	}}
	r := Translate(res, Options{})
	mustValid(t, r)
	if _, err := xdstranslator.Translate(r.IR); err != nil {
		t.Fatal(err)
	}
	l := r.IR.Gateways[0].Listeners[0]
	got := map[string]*ir.ExtAuth{}
	for _, rt := range l.HTTPRoutes {
		if rt.Backends == nil {
			t.Fatalf("route %s does not forward: %+v", rt.Name, rt)
		}
		got[rt.Match.Path.Value] = rt.Filters.ExtAuth
	}
	ep := []ir.Endpoint{{Address: "10.96.0.5", Port: 9000}}
	h2c := &ir.Backend{Name: "service/default/authz/9000/h2c", Protocol: ir.AppProtocolH2C, Endpoints: ep}
	plain := &ir.Backend{Name: "service/default/authz/9000", Protocol: ir.AppProtocolHTTP1, Endpoints: ep}
	if want := (&ir.ExtAuth{Protocol: ir.ExtAuthGRPC, Backend: h2c, AllowedRequestHeaders: []string{"authorization"}}); !reflect.DeepEqual(got["/grpc"], want) {
		t.Errorf("/grpc: %+v, want %+v", got["/grpc"], want)
	}
	if want := (&ir.ExtAuth{Protocol: ir.ExtAuthHTTP, Backend: plain, PathPrefix: "/check", AllowedRequestHeaders: []string{"x-a"},
		AllowedResponseHeaders: []string{"x-user"}, MaxBodyBytes: 100}); !reflect.DeepEqual(got["/http"], want) {
		t.Errorf("/http: %+v, want %+v", got["/http"], want)
	}
	want := []*ir.ExtAuth{{Protocol: ir.ExtAuthHTTP, Backend: plain}, {Protocol: ir.ExtAuthGRPC, Backend: h2c}}
	if !reflect.DeepEqual(l.ExtAuth, want) {
		t.Errorf("listener checks %+v, want %+v", l.ExtAuth, want)
	}
	wantCond(t, r.Status.Gateways[nn("default", "web")].Listeners[0].Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
}

// TestExtAuthInvalidRule: an ExternalAuth filter that cannot be served
// makes its rule answer 500 (never forward unchecked), with the condition
// the Gateway API gives the problem; the other rule serves.
func TestExtAuthInvalidRule(t *testing.T) {
	grpcF := func(mod func(f *gwapiv1.HTTPExternalAuthFilter)) gwapiv1.HTTPRouteFilter {
		f := gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthGRPCProtocol, BackendRef: authzRef("authz", 9000)}
		mod(&f)
		return extAuthF(f)
	}
	for _, tc := range []struct {
		name           string
		filter         gwapiv1.HTTPRouteFilter
		cond, reason   string
		want           string
		conditionValue metav1.ConditionStatus
	}{
		{"service missing", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) { f.BackendRef.Name = "nowhere" }), "ResolvedRefs", "BackendNotFound", "Service default/nowhere not found", metav1.ConditionFalse},
		{"port missing", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) { f.BackendRef.Port = ptr(gwapiv1.PortNumber(1)) }), "ResolvedRefs", "BackendNotFound", "has no TCP port 1", metav1.ConditionFalse},
		{"other namespace", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) { f.BackendRef.Namespace = ptr(gwapiv1.Namespace("auth")) }), "ResolvedRefs", "RefNotPermitted", "no ReferenceGrant", metav1.ConditionFalse},
		{"other kind", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) { f.BackendRef.Kind = ptr(gwapiv1.Kind("Auth")) }), "ResolvedRefs", "InvalidKind", "is not a core Service", metav1.ConditionFalse},
		{"no externalAuth", gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterExternalAuth}, "PartiallyInvalid", "UnsupportedValue", "needs its externalAuth field", metav1.ConditionTrue},
		{"protocol", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) { f.ExternalAuthProtocol = "SOAP" }), "PartiallyInvalid", "UnsupportedValue", `protocol "SOAP" is not supported`, metav1.ConditionTrue},
		{"http with GRPC", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) { f.HTTPAuthConfig = &gwapiv1.HTTPAuthConfig{} }), "PartiallyInvalid", "UnsupportedValue", "http is set but protocol is GRPC", metav1.ConditionTrue},
		{"relative path", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) {
			f.ExternalAuthProtocol, f.HTTPAuthConfig = gwapiv1.HTTPRouteExternalAuthHTTPProtocol, &gwapiv1.HTTPAuthConfig{Path: "check"}
		}), "PartiallyInvalid", "UnsupportedValue", `http.path "check" is not a path`, metav1.ConditionTrue},
		{"path with a space", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) {
			f.ExternalAuthProtocol, f.HTTPAuthConfig = gwapiv1.HTTPRouteExternalAuthHTTPProtocol, &gwapiv1.HTTPAuthConfig{Path: "/a b"}
		}), "PartiallyInvalid", "UnsupportedValue", "is not a path", metav1.ConditionTrue},
		{"header name", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) {
			f.GRPCAuthConfig = &gwapiv1.GRPCAuthConfig{AllowedRequestHeaders: []string{"a:b"}}
		}), "PartiallyInvalid", "UnsupportedValue", `grpc.allowedHeaders entry "a:b"`, metav1.ConditionTrue},
		{"too many headers", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) {
			f.GRPCAuthConfig = &gwapiv1.GRPCAuthConfig{AllowedRequestHeaders: make([]string, 65)}
			for i := range f.GRPCAuthConfig.AllowedRequestHeaders {
				f.GRPCAuthConfig.AllowedRequestHeaders[i] = "x" + strings.Repeat("a", i)
			}
		}), "PartiallyInvalid", "UnsupportedValue", "65 entries; at most 64", metav1.ConditionTrue},
		{"body too large", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) {
			f.ForwardBody = &gwapiv1.ForwardBodyConfig{MaxSize: MaxExtAuthBody + 1}
		}), "PartiallyInvalid", "UnsupportedValue", "forwardBody.maxSize 1048577 is outside 0-1048576", metav1.ConditionTrue},
		{"negative body", grpcF(func(f *gwapiv1.HTTPExternalAuthFilter) { f.ForwardBody = &gwapiv1.ForwardBodyConfig{MaxSize: -1} }), "PartiallyInvalid", "UnsupportedValue", "forwardBody.maxSize -1", metav1.ConditionTrue},
		{"twice", extAuthF(gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthGRPCProtocol, BackendRef: authzRef("authz", 9000)}), "PartiallyInvalid", "UnsupportedValue", "ExternalAuth may appear once per rule", metav1.ConditionTrue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := withAuthz(fixture(), "10.96.0.5")
			fs := []gwapiv1.HTTPRouteFilter{tc.filter}
			if tc.name == "twice" {
				fs = append(fs, tc.filter)
			}
			res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app",
				gwapiv1.HTTPRouteRule{Matches: pathPrefix("/bad"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}, Filters: fs},
				gwapiv1.HTTPRouteRule{Matches: pathPrefix("/good"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}},
			)}
			r := Translate(res, Options{})
			mustValid(t, r)
			if _, err := xdstranslator.Translate(r.IR); err != nil {
				t.Fatal(err)
			}
			c := cond(t, routeParent(t, r, "app", 0).Conditions, tc.cond)
			if c.Status != tc.conditionValue || c.Reason != tc.reason || !strings.Contains(c.Message, tc.want) {
				t.Errorf("%s = %s/%s %q, want %s/%s with %q", tc.cond, c.Status, c.Reason, c.Message, tc.conditionValue, tc.reason, tc.want)
			}
			seen := map[string]bool{}
			for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
				seen[rt.Match.Path.Value] = true
				switch rt.Match.Path.Value {
				case "/bad":
					if rt.DirectResponse == nil || rt.DirectResponse.StatusCode != 500 || rt.Backends != nil {
						t.Errorf("/bad: %+v, want a direct 500", rt)
					}
				case "/good":
					if rt.Backends == nil || rt.Filters.ExtAuth != nil {
						t.Errorf("/good: %+v, want it served unchecked", rt)
					}
				}
			}
			if !seen["/bad"] || !seen["/good"] {
				t.Errorf("IR routes %v, want /bad and /good", seen)
			}
		})
	}
}

// TestListenerFiltersInvalid: a listener filter that cannot be served
// keeps its listener from being served (never served unchecked), with the
// condition that says why; the other listener serves. A ListenerSet's
// listener filter resolves as its ListenerSet's reference.
func TestListenerFiltersInvalid(t *testing.T) {
	ext := func(ref gwapiv1.BackendObjectReference) gwapiv1.ListenerFilter {
		return gwapiv1.ListenerFilter{Type: gwapiv1.ListenerFilterExternalAuth, ExternalAuth: &gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthGRPCProtocol, BackendRef: ref}}
	}
	other := authzRef("authz", 9000)
	other.Namespace = ptr(gwapiv1.Namespace("auth"))
	for _, tc := range []struct {
		name                 string
		filters              []gwapiv1.ListenerFilter
		protocol             gwapiv1.ProtocolType
		cond, status, reason string
		want                 string
	}{
		{"extension", []gwapiv1.ListenerFilter{{Type: gwapiv1.ListenerFilterExtensionRef, ExtensionRef: &gwapiv1.LocalObjectReference{Group: "example.com", Kind: "Auth", Name: "a"}}},
			gwapiv1.HTTPProtocolType, "Accepted", "False", "UnsupportedValue", "ExtensionRef example.com/Auth a is not a filter kind"},
		{"second is an extension", []gwapiv1.ListenerFilter{ext(authzRef("authz", 9000)), {Type: gwapiv1.ListenerFilterExtensionRef, ExtensionRef: &gwapiv1.LocalObjectReference{Kind: "Auth", Name: "a"}}},
			gwapiv1.HTTPProtocolType, "Accepted", "False", "UnsupportedValue", "filter 1: ExtensionRef"},
		{"no externalAuth", []gwapiv1.ListenerFilter{{Type: gwapiv1.ListenerFilterExternalAuth}},
			gwapiv1.HTTPProtocolType, "Accepted", "False", "UnsupportedValue", "lacks its field"},
		{"TCP listener", []gwapiv1.ListenerFilter{ext(authzRef("authz", 9000))},
			gwapiv1.TCPProtocolType, "Accepted", "False", "UnsupportedValue", "only to HTTP and HTTPS listeners"},
		{"bad value", []gwapiv1.ListenerFilter{{Type: gwapiv1.ListenerFilterExternalAuth, ExternalAuth: &gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: "SOAP", BackendRef: authzRef("authz", 9000)}}},
			gwapiv1.HTTPProtocolType, "Accepted", "False", "UnsupportedValue", `protocol "SOAP"`},
		{"service missing", []gwapiv1.ListenerFilter{ext(authzRef("nowhere", 9000))},
			gwapiv1.HTTPProtocolType, "ResolvedRefs", "False", "BackendNotFound", "Service default/nowhere not found"},
		{"not granted", []gwapiv1.ListenerFilter{ext(other)},
			gwapiv1.HTTPProtocolType, "ResolvedRefs", "False", "RefNotPermitted", "no ReferenceGrant in namespace auth allows Gateways"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := withAuthz(fixture(), "10.96.0.5")
			res.Gateways[0].Spec.Listeners = append(res.Gateways[0].Spec.Listeners,
				gwapiv1.Listener{Name: "checked", Protocol: tc.protocol, Port: 81, Filters: &gwapiv1.ListenerFilters{Requests: tc.filters}})
			r := Translate(res, Options{})
			mustValid(t, r)
			ls := r.Status.Gateways[nn("default", "web")].Listeners
			c := cond(t, ls[1].Conditions, tc.cond)
			if string(c.Status) != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.want) {
				t.Errorf("%s = %s/%s %q, want %s/%s with %q", tc.cond, c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.want)
			}
			wantCond(t, ls[1].Conditions, "Programmed", metav1.ConditionFalse, "Invalid")
			wantCond(t, ls[0].Conditions, "Programmed", metav1.ConditionTrue, "Programmed")
			if n := len(r.IR.Gateways[0].Listeners); n != 1 || r.IR.Gateways[0].Listeners[0].Name != "default/web/http" {
				t.Errorf("IR listeners %+v, want only default/web/http", r.IR.Gateways[0].Listeners)
			}
		})
	}
}

// TestListenerFilterServiceChange: the Service of a listener filter is
// Gateway-level state; when it changes, the incremental translation
// gives what a full one does (the new endpoints; then, gone, the listener
// not programmed).
func TestListenerFilterServiceChange(t *testing.T) {
	build := func(ip string) *resources.Resources {
		res := fixture()
		if ip != "" {
			res = withAuthz(res, ip)
		}
		res.Gateways[0].Spec.Listeners[0].Filters = &gwapiv1.ListenerFilters{Requests: []gwapiv1.ListenerFilter{{Type: gwapiv1.ListenerFilterExternalAuth,
			ExternalAuth: &gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthGRPCProtocol, BackendRef: authzRef("authz", 9000)}}}}
		res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
		res.Sort()
		return res
	}
	first := build("10.96.0.5")
	var c Cache
	c.Translate(first, Options{})
	next := &resources.Resources{}
	*next = *first
	next.Services = build("10.96.0.6").Services // a new Service object: the same Gateways, routes
	got := c.Translate(next, Options{})
	full := Translate(next, Options{})
	mustValid(t, got)
	if !reflect.DeepEqual(got.IR, full.IR) {
		t.Fatalf("incremental IR differs from a full translation:\n%+v\n%+v", got.IR.Gateways[0].Listeners[0].ExtAuth[0].Backend, full.IR.Gateways[0].Listeners[0].ExtAuth[0].Backend)
	}
	if ep := got.IR.Gateways[0].Listeners[0].ExtAuth[0].Backend.Endpoints; len(ep) != 1 || ep[0].Address != "10.96.0.6" {
		t.Errorf("listener check endpoints %+v, want 10.96.0.6", ep)
	}
	gone := &resources.Resources{}
	*gone = *first
	gone.Services = build("").Services
	got = c.Translate(gone, Options{})
	mustValid(t, got)
	if full := Translate(gone, Options{}); !reflect.DeepEqual(got.IR, full.IR) {
		t.Fatalf("incremental IR without the Service differs from a full translation")
	}
	if len(got.IR.Gateways[0].Listeners) != 0 {
		t.Errorf("listener served without its check's Service: %+v", got.IR.Gateways[0].Listeners)
	}
	wantCond(t, got.Status.Gateways[nn("default", "web")].Listeners[0].Conditions, "ResolvedRefs", metav1.ConditionFalse, "BackendNotFound")
}

// TestListenerFilterXBackendChange: a listener filter's backendRef may be
// an XBackend; it is Gateway-level state too (translator gatewayReads),
// so an edit of the XBackend gives, incrementally, what a full
// translation does (the new host name).
func TestListenerFilterXBackendChange(t *testing.T) {
	build := func(host string) *resources.Resources {
		res := fixture()
		res.XBackends = []*gwapixv1alpha1.XBackend{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "authz"},
			Spec: gwapixv1alpha1.BackendSpec{Type: gwapixv1alpha1.BackendTypeExternalHostname, Port: gwapixv1alpha1.BackendPort{Number: 9000},
				ExternalHostname: &gwapixv1alpha1.ExternalHostnameBackend{Hostname: gwapiv1.PreciseHostname(host)}},
		}}
		ref := gwapiv1.BackendObjectReference{Group: ptr(gwapiv1.Group(XBackendGroup)), Kind: ptr(gwapiv1.Kind("XBackend")), Name: "authz"}
		res.Gateways[0].Spec.Listeners[0].Filters = &gwapiv1.ListenerFilters{Requests: []gwapiv1.ListenerFilter{{Type: gwapiv1.ListenerFilterExternalAuth,
			ExternalAuth: &gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthGRPCProtocol, BackendRef: ref}}}}
		res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
		res.Sort()
		return res
	}
	first := build("authz-a.example.com")
	var c Cache
	mustValid(t, c.Translate(first, Options{}))
	next := &resources.Resources{}
	*next = *first
	next.XBackends = build("authz-b.example.com").XBackends // the same Gateways, routes
	got := c.Translate(next, Options{})
	full := Translate(next, Options{})
	mustValid(t, got)
	if !reflect.DeepEqual(got.IR, full.IR) {
		t.Fatalf("incremental IR differs from a full translation:\n%+v\n%+v", got.IR.Gateways[0].Listeners[0].ExtAuth[0].Backend, full.IR.Gateways[0].Listeners[0].ExtAuth[0].Backend)
	}
	if ep := got.IR.Gateways[0].Listeners[0].ExtAuth[0].Backend.Endpoints; len(ep) != 1 || ep[0].Address != "authz-b.example.com" {
		t.Errorf("listener check endpoints %+v, want authz-b.example.com", ep)
	}
}

// TestExtAuthBackendTLS: a BackendTLSPolicy on the auth service's port
// makes Envoy reach it over TLS, with the Gateway's backend client
// certificate, for a route's check and a listener's alike.
func TestExtAuthBackendTLS(t *testing.T) {
	res := backendCertFixture(gwapiv1.SecretObjectReference{Name: "client"})
	check := gwapiv1.HTTPExternalAuthFilter{ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthHTTPProtocol, BackendRef: authzRef("app", 80)}
	res.HTTPRoutes[0].Spec.Rules[0].Filters = []gwapiv1.HTTPRouteFilter{extAuthF(check)}
	res.Gateways[0].Spec.Listeners[0].Filters = &gwapiv1.ListenerFilters{Requests: []gwapiv1.ListenerFilter{{Type: gwapiv1.ListenerFilterExternalAuth, ExternalAuth: &check}}}
	r := Translate(res.Resources, Options{})
	mustValid(t, r)
	if _, err := xdstranslator.Translate(r.IR); err != nil {
		t.Fatal(err)
	}
	l := r.IR.Gateways[0].Listeners[0]
	var checks []*ir.ExtAuth
	checks = append(checks, l.ExtAuth...)
	for _, rt := range l.HTTPRoutes {
		if rt.Filters.ExtAuth != nil {
			checks = append(checks, rt.Filters.ExtAuth)
		}
	}
	if len(checks) != 2 {
		t.Fatalf("%d checks, want the listener's and the route's", len(checks))
	}
	for _, a := range checks {
		b := a.Backend
		if b.TLS == nil || b.TLS.SNI != "app.example" || b.TLS.ClientCertificate == nil || !strings.Contains(b.Name, ClientCertificateSegment) {
			t.Errorf("check backend %s TLS %+v, want TLS to app.example with the Gateway's client certificate", b.Name, b.TLS)
		}
	}
}
