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

// The {SHA} hashes of "builder" and "wonderland" (htpasswd -s).
const (
	shaBuilder    = "9SMYoF5RilWWASry7TjeaKwmpGg="
	shaWonderland = "tiY7sUhYKUwI5L3866kDY+ENcrQ="
)

func secret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// securityPolicyOn is SecurityPolicy "sp" on Gateway web with spec's
// methods.
func securityPolicyOn(spec v1alpha1.SecurityPolicySpec) *v1alpha1.SecurityPolicy {
	spec.TargetRefs = []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
		Group: gwapiv1.GroupName, Kind: "Gateway", Name: "web"}}}
	return &v1alpha1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sp", Generation: 4}, Spec: spec}
}

func basic(users string, edit ...func(*v1alpha1.BasicAuth)) v1alpha1.SecurityPolicySpec {
	b := &v1alpha1.BasicAuth{Users: gwapiv1.SecretObjectReference{Name: gwapiv1.ObjectName(users)}}
	for _, e := range edit {
		e(b)
	}
	return v1alpha1.SecurityPolicySpec{BasicAuth: b}
}

func apiKeys(edit func(*v1alpha1.APIKeyAuth)) v1alpha1.SecurityPolicySpec {
	a := &v1alpha1.APIKeyAuth{
		CredentialRefs: []gwapiv1.SecretObjectReference{{Name: "keys"}},
		ExtractFrom:    []v1alpha1.APIKeySource{{Header: ptr(gwapiv1.HTTPHeaderName("X-API-Key"))}},
	}
	if edit != nil {
		edit(a)
	}
	return v1alpha1.SecurityPolicySpec{APIKeyAuth: a}
}

// TestSecurityPolicyValidation is the validation table of SecurityPolicy:
// each spec gives the Accepted and ResolvedRefs conditions on Gateway web
// (reason, and a part of the message) and what the route of web
// renders: its basic or API key auth, or (fail closed) a 500 answer.
func TestSecurityPolicyValidation(t *testing.T) {
	secrets := []*corev1.Secret{
		secret("default", "users", map[string]string{"auth": "bob:{SHA}" + shaBuilder + "\r\nalice:{SHA}" + shaWonderland + "\r\n"}),
		secret("default", "eg-users", map[string]string{".htpasswd": "bob:{SHA}" + shaBuilder}),
		secret("default", "bcrypt", map[string]string{"auth": "bob:$2y$05$abcdefghijklmnopqrstuuW0tF7S2pAd1ZtbW0WUb3Kp8U5Gq5G0e"}),
		secret("default", "apr1", map[string]string{"auth": "bob:$apr1$salt$hash"}),
		secret("default", "plain", map[string]string{"auth": "bob:builder"}),
		secret("default", "short-sha", map[string]string{"auth": "bob:{SHA}abcd"}),
		secret("default", "twice", map[string]string{"auth": "bob:{SHA}" + shaBuilder + "\nbob:{SHA}" + shaWonderland}),
		secret("default", "no-colon", map[string]string{"auth": "bob"}),
		secret("default", "empty", map[string]string{"auth": "\n\n"}),
		secret("default", "other-key", map[string]string{"users": "bob:{SHA}" + shaBuilder}),
		secret("default", "keys", map[string]string{"acme": "k1", "globex": "k2"}),
		secret("default", "dup-keys", map[string]string{"acme": "k1", "globex": "k1"}),
		secret("default", "newline-key", map[string]string{"acme": "k1\n"}),
		secret("default", "no-keys", nil),
		secret("other", "users", map[string]string{"auth": "carol:{SHA}" + shaBuilder}),
		func() *corev1.Secret {
			s := secret("default", "sa-token", map[string]string{"auth": "bob:{SHA}" + shaBuilder})
			s.Type = corev1.SecretTypeServiceAccountToken
			return s
		}(),
	}
	bob := []ir.BasicAuthUser{{Name: "alice", SHA: shaWonderland}, {Name: "bob", SHA: shaBuilder}}
	for _, tc := range []struct {
		name        string
		spec        v1alpha1.SecurityPolicySpec
		grant       bool
		accepted    string // reason; "" for Accepted
		acceptedMsg string
		refs        string // reason; "" for ResolvedRefs
		basic       *ir.BasicAuth
		apiKey      *ir.APIKeyAuth
	}{
		{name: "basic, defaults", spec: basic("users"), basic: &ir.BasicAuth{Users: bob, Realm: "default/sp"}},
		{name: "basic, realm and header", spec: basic("users", func(b *v1alpha1.BasicAuth) {
			b.Realm, b.ForwardUsernameHeader = ptr("staff"), ptr(gwapiv1.HTTPHeaderName("X-User"))
		}), basic: &ir.BasicAuth{Users: bob, Realm: "staff", ForwardUsernameHeader: "x-user"}},
		{name: "basic, Envoy Gateway's key", spec: basic("eg-users"), basic: &ir.BasicAuth{Users: bob[1:], Realm: "default/sp"}},
		{name: "basic, bcrypt", spec: basic("bcrypt"), accepted: "Invalid", acceptedMsg: "bcrypt; Envoy checks SHA-1 hashes only", refs: "InvalidSecret"},
		{name: "basic, apr1", spec: basic("apr1"), accepted: "Invalid", acceptedMsg: "MD5 (apr1)", refs: "InvalidSecret"},
		{name: "basic, plain", spec: basic("plain"), accepted: "Invalid", acceptedMsg: "plain text", refs: "InvalidSecret"},
		{name: "basic, short hash", spec: basic("short-sha"), accepted: "Invalid", acceptedMsg: "not the base64 of a SHA-1", refs: "InvalidSecret"},
		{name: "basic, user twice", spec: basic("twice"), accepted: "Invalid", acceptedMsg: `user "bob" is given twice`, refs: "InvalidSecret"},
		{name: "basic, no colon", spec: basic("no-colon"), accepted: "Invalid", acceptedMsg: "line 1 is not user:hash", refs: "InvalidSecret"},
		{name: "basic, no users", spec: basic("empty"), accepted: "Invalid", acceptedMsg: "no users", refs: "InvalidSecret"},
		{name: "basic, no auth key", spec: basic("other-key"), accepted: "Invalid", acceptedMsg: "no key auth or .htpasswd", refs: "InvalidSecret"},
		{name: "basic, not Opaque", spec: basic("sa-token"), accepted: "Invalid", acceptedMsg: `Secret type is "kubernetes.io/service-account-token", not "Opaque"`, refs: "InvalidSecret"},
		{name: "basic, missing Secret", spec: basic("nowhere"), accepted: "Invalid", acceptedMsg: "Secret not found; the routes it covers answer 500", refs: "SecretNotFound"},
		{name: "basic, another namespace", spec: basic("users", func(b *v1alpha1.BasicAuth) { b.Users.Namespace = ptr(gwapiv1.Namespace("other")) }),
			accepted: "Invalid", acceptedMsg: "no ReferenceGrant", refs: "RefNotPermitted"},
		{name: "basic, another namespace, granted", grant: true, spec: basic("users", func(b *v1alpha1.BasicAuth) { b.Users.Namespace = ptr(gwapiv1.Namespace("other")) }),
			basic: &ir.BasicAuth{Users: []ir.BasicAuthUser{{Name: "carol", SHA: shaBuilder}}, Realm: "default/sp"}},
		{name: "basic, not a Secret", spec: basic("users", func(b *v1alpha1.BasicAuth) { b.Users.Kind = ptr(gwapiv1.Kind("ConfigMap")) }),
			accepted: "Invalid", acceptedMsg: "core/ConfigMap is not a core Secret", refs: "InvalidKind"},
		{name: "basic, realm with a quote", spec: basic("users", func(b *v1alpha1.BasicAuth) { b.Realm = ptr(`a"b`) }), accepted: "Invalid", acceptedMsg: "basicAuth.realm"},
		{name: "basic, bad header", spec: basic("users", func(b *v1alpha1.BasicAuth) { b.ForwardUsernameHeader = ptr(gwapiv1.HTTPHeaderName("x user")) }),
			accepted: "Invalid", acceptedMsg: "forwardUsernameHeader"},
		{name: "api keys", spec: apiKeys(func(a *v1alpha1.APIKeyAuth) {
			a.ExtractFrom = append(a.ExtractFrom, v1alpha1.APIKeySource{QueryParameter: ptr("api_key")}, v1alpha1.APIKeySource{Cookie: ptr("k")})
			a.ForwardClientIDHeader = ptr(gwapiv1.HTTPHeaderName("X-Client"))
		}), apiKey: &ir.APIKeyAuth{
			Credentials:           []ir.APIKeyCredential{{Client: "acme", Key: "k1"}, {Client: "globex", Key: "k2"}},
			Sources:               []ir.APIKeySource{{Header: "x-api-key"}, {Query: "api_key"}, {Cookie: "k"}},
			ForwardClientIDHeader: "x-client",
		}},
		{name: "api keys, a key twice", spec: apiKeys(func(a *v1alpha1.APIKeyAuth) { a.CredentialRefs[0].Name = "dup-keys" }),
			accepted: "Invalid", acceptedMsg: "keys must be distinct", refs: "InvalidSecret"},
		{name: "api keys, a trailing newline", spec: apiKeys(func(a *v1alpha1.APIKeyAuth) { a.CredentialRefs[0].Name = "newline-key" }),
			accepted: "Invalid", acceptedMsg: "a trailing newline?", refs: "InvalidSecret"},
		{name: "api keys, empty Secret", spec: apiKeys(func(a *v1alpha1.APIKeyAuth) { a.CredentialRefs[0].Name = "no-keys" }),
			accepted: "Invalid", acceptedMsg: "holds no keys", refs: "InvalidSecret"},
		{name: "api keys, two sources in one", spec: apiKeys(func(a *v1alpha1.APIKeyAuth) { a.ExtractFrom[0].Cookie = ptr("c") }),
			accepted: "Invalid", acceptedMsg: "exactly one of header, queryParameter and cookie"},
		{name: "api keys, no source", spec: apiKeys(func(a *v1alpha1.APIKeyAuth) { a.ExtractFrom = nil }), accepted: "Invalid", acceptedMsg: "extractFrom: 0 entries"},
		{name: "api keys, no Secret", spec: apiKeys(func(a *v1alpha1.APIKeyAuth) { a.CredentialRefs = nil }), accepted: "Invalid", acceptedMsg: "credentialRefs: 0 entries"},
		{name: "nothing", spec: v1alpha1.SecurityPolicySpec{}, accepted: "Invalid", acceptedMsg: "at least one of"},
		{name: "jwt without providers", spec: v1alpha1.SecurityPolicySpec{JWT: &v1alpha1.JWT{}, BasicAuth: basic("users").BasicAuth},
			accepted: "Invalid", acceptedMsg: "jwt.providers: 0 entries"},
		{name: "extAuth without a protocol", spec: v1alpha1.SecurityPolicySpec{ExtAuth: &gwapiv1.HTTPExternalAuthFilter{}},
			accepted: "Invalid", acceptedMsg: "extAuth: protocol"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := fixture()
			res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("r", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
			res.Secrets = secrets
			res.SecurityPolicies = []*v1alpha1.SecurityPolicy{securityPolicyOn(tc.spec)}
			if tc.grant {
				res.ReferenceGrants = []*gwapiv1.ReferenceGrant{{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "g"},
					Spec: gwapiv1beta1.ReferenceGrantSpec{From: []gwapiv1.ReferenceGrantFrom{{Group: "gateway.xds-controller.dev", Kind: "SecurityPolicy", Namespace: "default"}},
						To: []gwapiv1.ReferenceGrantTo{{Kind: "Secret"}}}}}
			}
			res.Sort()
			r := Translate(res, Options{})
			mustValid(t, r)
			st := r.Status.Policies[PolicyKey{Kind: KindSecurityPolicy, Namespace: "default", Name: "sp"}]
			if st == nil || len(st.Ancestors) != 1 || st.Ancestors[0].AncestorRef.Name != "web" {
				t.Fatalf("status %+v, want one ancestor, Gateway web", st)
			}
			cs := st.Ancestors[0].Conditions
			acc := cond(t, cs, string(gwapiv1.PolicyConditionAccepted))
			if want := cmp.Or(tc.accepted, "Accepted"); acc.Reason != want || !strings.Contains(acc.Message, tc.acceptedMsg) || acc.ObservedGeneration != 4 {
				t.Errorf("Accepted: %s %q (generation %d), want reason %s with %q", acc.Reason, acc.Message, acc.ObservedGeneration, want, tc.acceptedMsg)
			}
			wantCond(t, cs, "ResolvedRefs", map[bool]metav1.ConditionStatus{true: "True", false: "False"}[tc.refs == ""], cmp.Or(tc.refs, "ResolvedRefs"))
			routes := r.IR.Gateways[0].Listeners[0].HTTPRoutes
			if len(routes) != 1 {
				t.Fatalf("%d routes", len(routes))
			}
			rt := routes[0]
			if tc.basic == nil && tc.apiKey == nil {
				// Fail closed.
				if rt.DirectResponse == nil || rt.DirectResponse.StatusCode != 500 || rt.Backends != nil {
					t.Fatalf("route %+v, want a 500 answer and no backends", rt)
				}
				return
			}
			if rt.DirectResponse != nil || rt.Backends == nil {
				t.Fatalf("route %+v, want it forwarded", rt)
			}
			if g, w := yamlOf(t, rt.Filters.BasicAuth), yamlOf(t, tc.basic); g != w {
				t.Errorf("basic auth:\n%s\nwant:\n%s", g, w)
			}
			if g, w := yamlOf(t, rt.Filters.APIKeyAuth), yamlOf(t, tc.apiKey); g != w {
				t.Errorf("API key auth:\n%s\nwant:\n%s", g, w)
			}
		})
	}
}

// TestSecurityPolicyPrecedence: a rule's policy over its route's over the
// listener's over the Gateway's, each route rule taking the most
// specific; a rule no policy covers at any level is left as it is.
func TestSecurityPolicyPrecedence(t *testing.T) {
	res := fixture()
	res.Gateways = append(res.Gateways, gateway("plain", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 81}))
	r1 := httpRoute("r", gwapiv1.HTTPRouteRule{Name: ptr(gwapiv1.SectionName("a")), Matches: pathPrefix("/a"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}},
		gwapiv1.HTTPRouteRule{Name: ptr(gwapiv1.SectionName("b")), Matches: pathPrefix("/b"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
	r2 := httpRoute("s", gwapiv1.HTTPRouteRule{Matches: pathPrefix("/s"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
	r3 := httpRoute("t", gwapiv1.HTTPRouteRule{Matches: pathPrefix("/t"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
	r3.Spec.ParentRefs = []gwapiv1.ParentReference{{Name: "plain"}}
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{r1, r2, r3}
	res.Secrets = []*corev1.Secret{secret("default", "users", map[string]string{"auth": "bob:{SHA}" + shaBuilder})}
	on := func(name, kind, target, section, realm string) *v1alpha1.SecurityPolicy {
		ref := gwapiv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
			Group: gwapiv1.GroupName, Kind: gwapiv1.Kind(kind), Name: gwapiv1.ObjectName(target)}}
		if section != "" {
			ref.SectionName = ptr(gwapiv1.SectionName(section))
		}
		spec := basic("users", func(b *v1alpha1.BasicAuth) { b.Realm = ptr(realm) })
		spec.TargetRefs = []gwapiv1.LocalPolicyTargetReferenceWithSectionName{ref}
		return &v1alpha1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: spec}
	}
	res.SecurityPolicies = []*v1alpha1.SecurityPolicy{
		on("gw", "Gateway", "web", "", "gateway"),
		on("listener", "Gateway", "web", "http", "listener"),
		on("route", "HTTPRoute", "r", "", "route"),
		on("rule", "HTTPRoute", "r", "b", "rule"),
	}
	res.Sort()
	r := Translate(res, Options{})
	mustValid(t, r)
	got := map[string]string{}
	for _, g := range r.IR.Gateways {
		for _, l := range g.Listeners {
			for _, rt := range l.HTTPRoutes {
				realm := "none"
				if b := rt.Filters.BasicAuth; b != nil {
					realm = b.Realm
				}
				got[rt.Match.Path.Value] = realm
			}
		}
	}
	want := map[string]string{"/a": "route", "/b": "rule", "/s": "listener", "/t": "none"}
	if yamlOf(t, got) != yamlOf(t, want) {
		t.Errorf("realms by path %v, want %v", got, want)
	}
}

// TestSecurityPolicyGRPCRoute: a policy on a GRPCRoute renders its gRPC
// routes like an HTTPRoute's, and the Gateway's other route (an
// HTTPRoute of another host) is left alone.
func TestSecurityPolicyGRPCRoute(t *testing.T) {
	res := fixture()
	res.GRPCRoutes = []*gwapiv1.GRPCRoute{grpcRoute("g", gwapiv1.GRPCRouteRule{BackendRefs: []gwapiv1.GRPCBackendRef{{BackendRef: gwapiv1.BackendRef{
		BackendObjectReference: gwapiv1.BackendObjectReference{Name: "app", Port: ptr(gwapiv1.PortNumber(80))}}}}})}
	res.GRPCRoutes[0].Spec.Hostnames = []gwapiv1.Hostname{"g.example.com"}
	h := httpRoute("h", gwapiv1.HTTPRouteRule{Matches: pathPrefix("/h"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
	h.Spec.Hostnames = []gwapiv1.Hostname{"h.example.com"}
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{h}
	res.Secrets = []*corev1.Secret{secret("default", "keys", map[string]string{"acme": "k1"})}
	p := securityPolicyOn(apiKeys(nil))
	p.Spec.TargetRefs[0].Kind, p.Spec.TargetRefs[0].Name = "GRPCRoute", "g"
	res.SecurityPolicies = []*v1alpha1.SecurityPolicy{p}
	res.Sort()
	r := Translate(res, Options{})
	mustValid(t, r)
	var grpc, plain int
	for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
		switch {
		case rt.GRPC && rt.Filters.APIKeyAuth != nil && rt.Filters.APIKeyAuth.Credentials[0].Client == "acme":
			grpc++
		case !rt.GRPC && rt.Filters.APIKeyAuth == nil:
			plain++
		default:
			t.Errorf("route %s: grpc %t, API keys %+v", rt.Name, rt.GRPC, rt.Filters.APIKeyAuth)
		}
	}
	if grpc == 0 || plain != 1 {
		t.Errorf("%d gRPC routes with the keys, %d HTTP routes without; want some and 1", grpc, plain)
	}
}
