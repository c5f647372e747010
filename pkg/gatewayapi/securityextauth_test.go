package gatewayapi

import (
	"cmp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// extAuthSpec is a policy spec with an extAuth check on Service name port
// 80 in ns ("" : the policy's), edited by edit.
func extAuthSpec(ns, name string, edit func(*gwapiv1.HTTPExternalAuthFilter)) v1alpha1.SecurityPolicySpec {
	f := &gwapiv1.HTTPExternalAuthFilter{
		ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthHTTPProtocol,
		BackendRef:           gwapiv1.BackendObjectReference{Name: gwapiv1.ObjectName(name), Port: ptr(gwapiv1.PortNumber(80))},
		HTTPAuthConfig:       &gwapiv1.HTTPAuthConfig{Path: "/check", AllowedResponseHeaders: []string{"x-user"}},
	}
	if ns != "" {
		f.BackendRef.Namespace = ptr(gwapiv1.Namespace(ns))
	}
	if edit != nil {
		edit(f)
	}
	return v1alpha1.SecurityPolicySpec{ExtAuth: f}
}

// TestSecurityPolicyExtAuth: spec.extAuth on Gateway web is resolved as
// the ExternalAuth filter is, with the policy standing for the route
// (ReferenceGrants from SecurityPolicy), and lands in SecurityExtAuth of
// the route; what cannot be honoured is Accepted=False and the route
// answers 500 (fail closed).
func TestSecurityPolicyExtAuth(t *testing.T) {
	authz := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "auth", Name: "authz"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.9", Ports: []corev1.ServicePort{{Name: "grpc", Port: 80}}}}
	for _, tc := range []struct {
		name        string
		spec        v1alpha1.SecurityPolicySpec
		grant       bool
		accepted    string // reason; "" for Accepted
		acceptedMsg string
		refs        string // reason; "" for ResolvedRefs
		want        *ir.ExtAuth
	}{
		{name: "http", spec: extAuthSpec("", "app", nil), want: &ir.ExtAuth{Protocol: ir.ExtAuthHTTP, PathPrefix: "/check", AllowedResponseHeaders: []string{"x-user"}}},
		{name: "grpc in another namespace, granted", grant: true, spec: extAuthSpec("auth", "authz", func(f *gwapiv1.HTTPExternalAuthFilter) {
			f.ExternalAuthProtocol, f.HTTPAuthConfig, f.GRPCAuthConfig = gwapiv1.HTTPRouteExternalAuthGRPCProtocol, nil, &gwapiv1.GRPCAuthConfig{}
		}), want: &ir.ExtAuth{Protocol: ir.ExtAuthGRPC}},
		{name: "another namespace, no grant", spec: extAuthSpec("auth", "authz", nil),
			accepted: "Invalid", acceptedMsg: "no ReferenceGrant in namespace auth", refs: "RefNotPermitted"},
		{name: "missing Service", spec: extAuthSpec("", "nowhere", nil),
			accepted: "Invalid", acceptedMsg: "Service default/nowhere not found; the routes it covers answer 500", refs: "BackendNotFound"},
		{name: "body too big", spec: extAuthSpec("", "app", func(f *gwapiv1.HTTPExternalAuthFilter) {
			f.ForwardBody = &gwapiv1.ForwardBodyConfig{MaxSize: MaxExtAuthBody + 1}
		}), accepted: "Invalid", acceptedMsg: "extAuth: forwardBody.maxSize"},
		{name: "grpc config on HTTP", spec: extAuthSpec("", "app", func(f *gwapiv1.HTTPExternalAuthFilter) { f.GRPCAuthConfig = &gwapiv1.GRPCAuthConfig{} }),
			accepted: "Invalid", acceptedMsg: "grpc is set but protocol is HTTP"},
		{name: "HTTP without http (the type's CEL rule)", spec: extAuthSpec("", "app", func(f *gwapiv1.HTTPExternalAuthFilter) { f.HTTPAuthConfig = nil }),
			accepted: "Invalid", acceptedMsg: "http must be specified when protocol is HTTP"},
		{name: "GRPC without grpc (the type's CEL rule)", spec: extAuthSpec("", "app", func(f *gwapiv1.HTTPExternalAuthFilter) {
			f.ExternalAuthProtocol, f.HTTPAuthConfig = gwapiv1.HTTPRouteExternalAuthGRPCProtocol, nil
		}), accepted: "Invalid", acceptedMsg: "grpc must be specified when protocol is GRPC"},
		{name: "with basic auth, both", spec: func() v1alpha1.SecurityPolicySpec {
			s := extAuthSpec("", "app", nil)
			s.BasicAuth = basic("users").BasicAuth
			return s
		}(), want: &ir.ExtAuth{Protocol: ir.ExtAuthHTTP, PathPrefix: "/check", AllowedResponseHeaders: []string{"x-user"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := fixture()
			res.Services = append(res.Services, authz)
			res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("r", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
			res.Secrets = []*corev1.Secret{secret("default", "users", map[string]string{"auth": "bob:{SHA}" + shaBuilder})}
			res.SecurityPolicies = []*v1alpha1.SecurityPolicy{securityPolicyOn(tc.spec)}
			if tc.grant {
				res.ReferenceGrants = []*gwapiv1.ReferenceGrant{{ObjectMeta: metav1.ObjectMeta{Namespace: "auth", Name: "g"},
					Spec: gwapiv1beta1.ReferenceGrantSpec{From: []gwapiv1.ReferenceGrantFrom{{Group: "gateway.xds-controller.dev", Kind: "SecurityPolicy", Namespace: "default"}},
						To: []gwapiv1.ReferenceGrantTo{{Kind: "Service"}}}}}
			}
			res.Sort()
			r := Translate(res, Options{})
			mustValid(t, r)
			st := r.Status.Policies[PolicyKey{Kind: KindSecurityPolicy, Namespace: "default", Name: "sp"}]
			if st == nil || len(st.Ancestors) != 1 {
				t.Fatalf("status %+v, want one ancestor", st)
			}
			cs := st.Ancestors[0].Conditions
			acc := cond(t, cs, string(gwapiv1.PolicyConditionAccepted))
			if want := cmp.Or(tc.accepted, "Accepted"); acc.Reason != want || !strings.Contains(acc.Message, tc.acceptedMsg) {
				t.Errorf("Accepted: %s %q, want reason %s with %q", acc.Reason, acc.Message, want, tc.acceptedMsg)
			}
			wantCond(t, cs, "ResolvedRefs", map[bool]metav1.ConditionStatus{true: "True", false: "False"}[tc.refs == ""], cmp.Or(tc.refs, "ResolvedRefs"))
			rt := r.IR.Gateways[0].Listeners[0].HTTPRoutes[0]
			if tc.want == nil {
				if rt.DirectResponse == nil || rt.DirectResponse.StatusCode != 500 || rt.Backends != nil || rt.Filters.SecurityExtAuth != nil {
					t.Fatalf("route %+v, want a 500 answer and no backends (fail closed)", rt)
				}
				return
			}
			got := rt.Filters.SecurityExtAuth
			if got == nil || got.Backend == nil || rt.DirectResponse != nil {
				t.Fatalf("route %+v, want it forwarded after the policy's check", rt)
			}
			if tc.want.Protocol == ir.ExtAuthGRPC && got.Backend.Protocol != ir.AppProtocolH2C {
				t.Errorf("GRPC check backend %+v, want h2c", got.Backend)
			}
			got = got.DeepCopy()
			got.Backend = nil
			if g, w := yamlOf(t, got), yamlOf(t, tc.want); g != w {
				t.Errorf("check:\n%s\nwant:\n%s", g, w)
			}
			if tc.spec.BasicAuth != nil && rt.Filters.BasicAuth == nil {
				t.Errorf("basic auth lost beside extAuth")
			}
		})
	}
}

// TestSecurityPolicyExtAuthBesideRuleFilter: a rule with its own
// ExternalAuth filter under a Gateway policy's extAuth keeps both checks
// (ExtAuth the rule's, SecurityExtAuth the policy's): a request must pass
// both. A rule policy replaces the Gateway's (precedence), never the
// rule's own filter.
func TestSecurityPolicyExtAuthBesideRuleFilter(t *testing.T) {
	res := fixture()
	own := gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterExternalAuth, ExternalAuth: &gwapiv1.HTTPExternalAuthFilter{
		ExternalAuthProtocol: gwapiv1.HTTPRouteExternalAuthHTTPProtocol,
		BackendRef:           gwapiv1.BackendObjectReference{Name: "app", Port: ptr(gwapiv1.PortNumber(80))},
		HTTPAuthConfig:       &gwapiv1.HTTPAuthConfig{Path: "/rule"},
	}}
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("r",
		gwapiv1.HTTPRouteRule{Name: ptr(gwapiv1.SectionName("a")), Matches: pathPrefix("/a"), Filters: []gwapiv1.HTTPRouteFilter{own}, BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}},
		gwapiv1.HTTPRouteRule{Name: ptr(gwapiv1.SectionName("b")), Matches: pathPrefix("/b"), Filters: []gwapiv1.HTTPRouteFilter{own}, BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
	gw := securityPolicyOn(extAuthSpec("", "app", func(f *gwapiv1.HTTPExternalAuthFilter) { f.HTTPAuthConfig.Path = "/gateway" }))
	rule := securityPolicyOn(extAuthSpec("", "app", func(f *gwapiv1.HTTPExternalAuthFilter) { f.HTTPAuthConfig.Path = "/policy-rule" }))
	rule.Name = "rule"
	rule.Spec.TargetRefs = []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
		Group: gwapiv1.GroupName, Kind: "HTTPRoute", Name: "r"}, SectionName: ptr(gwapiv1.SectionName("b"))}}
	res.SecurityPolicies = []*v1alpha1.SecurityPolicy{gw, rule}
	res.Sort()
	r := Translate(res, Options{})
	mustValid(t, r)
	got := map[string]string{}
	for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
		f := rt.Filters
		if f.ExtAuth == nil || f.SecurityExtAuth == nil {
			t.Fatalf("route %s: filters %+v, want both checks", rt.Name, f)
		}
		got[rt.Match.Path.Value] = f.SecurityExtAuth.PathPrefix + " " + f.ExtAuth.PathPrefix
	}
	want := map[string]string{"/a": "/gateway /rule", "/b": "/policy-rule /rule"}
	if yamlOf(t, got) != yamlOf(t, want) {
		t.Errorf("policy and rule checks by path %v, want %v", got, want)
	}
}

// TestSecurityPolicyExtAuthClientCert: a policy's check whose Service has
// a BackendTLSPolicy presents the Gateway's client certificate, as a
// rule's own check does; when the clientCertificateRef does not resolve,
// the route answers 500 (never a check without it, never no check).
func TestSecurityPolicyExtAuthClientCert(t *testing.T) {
	for _, tc := range []struct {
		name string
		ref  gwapiv1.SecretObjectReference
	}{{"resolved", gwapiv1.SecretObjectReference{Name: "client"}}, {"unresolved", gwapiv1.SecretObjectReference{Name: "nope"}}} {
		t.Run(tc.name, func(t *testing.T) {
			f := backendCertFixture(tc.ref)
			f.GRPCRoutes = nil
			f.SecurityPolicies = []*v1alpha1.SecurityPolicy{securityPolicyOn(extAuthSpec("", "app", nil))}
			f.Sort()
			r := Translate(f.Resources, Options{})
			mustValid(t, r)
			rt := r.IR.Gateways[0].Listeners[0].HTTPRoutes[0]
			if tc.name == "unresolved" {
				if rt.DirectResponse == nil || rt.DirectResponse.StatusCode != 500 || rt.Filters.SecurityExtAuth != nil {
					t.Fatalf("route %+v, want 500 (fail closed)", rt)
				}
				return
			}
			a := rt.Filters.SecurityExtAuth
			if a == nil || a.Backend.TLS == nil || a.Backend.TLS.ClientCertificate == nil || a.Backend.Name != "service/default/app/80/client-certificate/default/client" {
				t.Fatalf("check %+v, want its backend presenting default/client", a)
			}
			st := r.Status.Policies[PolicyKey{Kind: KindSecurityPolicy, Namespace: "default", Name: "sp"}]
			wantCond(t, st.Ancestors[0].Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
		})
	}
}
