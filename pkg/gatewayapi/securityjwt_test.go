package gatewayapi

import (
	"cmp"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/internal/testservers/jwt"
	"github.com/xds-controller/xds-controller/internal/xdstest"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// jwtSpec is a policy with one provider "p" (issuer https://issuer.test)
// whose JWKS is the Secret jwks's "jwks.json", edited by edit.
func jwtSpec(edit func(*v1alpha1.SecurityPolicySpec, *v1alpha1.JWTProvider)) v1alpha1.SecurityPolicySpec {
	s := v1alpha1.SecurityPolicySpec{JWT: &v1alpha1.JWT{Providers: []v1alpha1.JWTProvider{{
		Name: "p", Issuer: "https://issuer.test", LocalJWKS: &v1alpha1.LocalJWKS{Kind: "Secret", Name: "jwks"},
	}}}}
	if edit != nil {
		edit(&s, &s.JWT.Providers[0])
	}
	return s
}

// TestSecurityPolicyJWTAndAuthorization is the validation table of
// spec.jwt and spec.authorization: the conditions on Gateway web, and
// the IR of the route (its JWT and authorization, or a 500 answer).
func TestSecurityPolicyJWTAndAuthorization(t *testing.T) {
	key := jwt.NewEC(t, "k1")
	set := jwt.NewKeySet(key)
	// The JWKS as go-jose encodes it, which the IR holds.
	var parsed jose.JSONWebKeySet
	if err := json.Unmarshal(set.JWKS(), &parsed); err != nil {
		t.Fatal(err)
	}
	norm, _ := json.Marshal(parsed)
	private, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Private, KeyID: "k1", Algorithm: "ES256"}}})
	symmetric, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "h", Algorithm: "HS256"}}})
	ca, _ := xdstest.Cert("jwks.test")
	secrets := []*corev1.Secret{
		secret("default", "jwks", map[string]string{"jwks.json": string(set.JWKS())}),
		secret("default", "other-key", map[string]string{"keys": string(set.JWKS())}),
		secret("default", "garbage", map[string]string{"jwks.json": "{not json"}),
		secret("default", "no-keys", map[string]string{"jwks.json": `{"keys": []}`}),
		secret("default", "private", map[string]string{"jwks.json": string(private)}),
		secret("default", "symmetric", map[string]string{"jwks.json": string(symmetric)}),
	}
	configMaps := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "jwks-cm"}, Data: map[string]string{"keys": string(set.JWKS())}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ca"}, Data: map[string]string{"ca.crt": string(ca)}},
	}
	local := func(name, key string) func(*v1alpha1.SecurityPolicySpec, *v1alpha1.JWTProvider) {
		return func(_ *v1alpha1.SecurityPolicySpec, p *v1alpha1.JWTProvider) {
			p.LocalJWKS.Name, p.LocalJWKS.Key = gwapiv1.ObjectName(name), key
		}
	}
	remote := func(uri string, edit func(*v1alpha1.RemoteJWKS)) func(*v1alpha1.SecurityPolicySpec, *v1alpha1.JWTProvider) {
		return func(_ *v1alpha1.SecurityPolicySpec, p *v1alpha1.JWTProvider) {
			p.LocalJWKS, p.RemoteJWKS = nil, &v1alpha1.RemoteJWKS{URI: uri}
			if edit != nil {
				edit(p.RemoteJWKS)
			}
		}
	}
	defaults := ir.JWTProvider{Name: "p", Issuer: "https://issuer.test", LocalJWKS: string(norm), ClockSkewSeconds: 60}
	for _, tc := range []struct {
		name                string
		spec                v1alpha1.SecurityPolicySpec
		accepted, msg, refs string
		jwt                 *ir.JWT
		authz               *ir.Authorization
	}{
		{name: "local Secret, defaults", spec: jwtSpec(nil), jwt: &ir.JWT{Name: "default/sp", Providers: []ir.JWTProvider{defaults}}},
		{name: "no issuer", spec: jwtSpec(func(_ *v1alpha1.SecurityPolicySpec, p *v1alpha1.JWTProvider) { p.Issuer = "" }),
			jwt: &ir.JWT{Name: "default/sp", Providers: []ir.JWTProvider{{Name: "p", LocalJWKS: string(norm), ClockSkewSeconds: 60}}}},
		{name: "header without prefix", spec: jwtSpec(func(_ *v1alpha1.SecurityPolicySpec, p *v1alpha1.JWTProvider) {
			p.ExtractFrom = &v1alpha1.JWTExtractFrom{Headers: []v1alpha1.JWTHeader{{Name: "x-jwt"}}}
		}), jwt: &ir.JWT{Name: "default/sp", Providers: []ir.JWTProvider{{Name: "p", Issuer: "https://issuer.test", LocalJWKS: string(norm), ClockSkewSeconds: 60,
			Headers: []ir.JWTHeader{{Name: "x-jwt"}}}}}},
		{name: "local ConfigMap, every field", spec: jwtSpec(func(_ *v1alpha1.SecurityPolicySpec, p *v1alpha1.JWTProvider) {
			p.LocalJWKS = &v1alpha1.LocalJWKS{Kind: "ConfigMap", Name: "jwks-cm", Key: "keys"}
			p.Audiences = []string{"api", "web", "api"}
			p.ExtractFrom = &v1alpha1.JWTExtractFrom{Headers: []v1alpha1.JWTHeader{{Name: "X-Token", ValuePrefix: "Token "}}, QueryParameters: []string{"tok"}, Cookies: []string{"session"}}
			p.ClaimToHeaders = []v1alpha1.ClaimToHeader{{Header: "X-Sub", Claim: "sub"}, {Header: "x-team", Claim: "org.team"}}
			p.ClockSkewSeconds, p.ForwardToken = ptr(int32(5)), true
		}), jwt: &ir.JWT{Name: "default/sp", Providers: []ir.JWTProvider{{Name: "p", Issuer: "https://issuer.test", Audiences: []string{"api", "web"}, LocalJWKS: string(norm),
			Headers: []ir.JWTHeader{{Name: "x-token", ValuePrefix: "Token "}}, QueryParams: []string{"tok"}, Cookies: []string{"session"},
			ClaimToHeaders: []ir.ClaimToHeader{{Header: "x-sub", Claim: "sub"}, {Header: "x-team", Claim: "org.team"}}, ClockSkewSeconds: 5, Forward: true}}}},
		{name: "remote, system CAs", spec: jwtSpec(remote("https://jwks.test/keys", func(r *v1alpha1.RemoteJWKS) { r.CacheDuration = ptr(gwapiv1.Duration("30s")) })),
			jwt: &ir.JWT{Name: "default/sp", Providers: []ir.JWTProvider{{Name: "p", Issuer: "https://issuer.test", ClockSkewSeconds: 60,
				RemoteJWKS: &ir.RemoteJWKS{URI: "https://jwks.test:443/keys", CacheDuration: 30 * time.Second}}}}},
		{name: "remote, CA ConfigMap", spec: jwtSpec(remote("https://jwks.test/keys", func(r *v1alpha1.RemoteJWKS) {
			r.CACertificateRefs = []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "ca"}}
		})), jwt: &ir.JWT{Name: "default/sp", Providers: []ir.JWTProvider{{Name: "p", Issuer: "https://issuer.test", ClockSkewSeconds: 60,
			RemoteJWKS: &ir.RemoteJWKS{URI: "https://jwks.test:443/keys", CacheDuration: 5 * time.Minute}}}}},
		{name: "remote, bad duration", spec: jwtSpec(remote("https://jwks.test/keys", func(r *v1alpha1.RemoteJWKS) { r.CacheDuration = ptr(gwapiv1.Duration("10ms")) })),
			accepted: "Invalid", msg: "shorter than 1s"},
		{name: "remote, http", spec: jwtSpec(remote("http://jwks.test/keys", nil)), accepted: "Invalid", msg: "is not an https:// URL"},
		{name: "remote, IP address", spec: jwtSpec(remote("https://10.0.0.1/keys", nil)), accepted: "Invalid", msg: "https needs a host name"},
		{name: "remote, CA missing", spec: jwtSpec(remote("https://jwks.test/keys", func(r *v1alpha1.RemoteJWKS) {
			r.CACertificateRefs = []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "nowhere"}}
		})), accepted: "Invalid", msg: "nowhere", refs: "NoValidCACertificate"},
		{name: "remote, both JWKS", spec: jwtSpec(func(s *v1alpha1.SecurityPolicySpec, p *v1alpha1.JWTProvider) {
			p.RemoteJWKS = &v1alpha1.RemoteJWKS{URI: "https://jwks.test/"}
		}),
			accepted: "Invalid", msg: "exactly one of remoteJWKS and localJWKS"},
		{name: "provider twice", spec: jwtSpec(func(s *v1alpha1.SecurityPolicySpec, _ *v1alpha1.JWTProvider) {
			s.JWT.Providers = append(s.JWT.Providers, s.JWT.Providers[0])
		}), accepted: "Invalid", msg: `name "p" is given twice`},
		{name: "provider name", spec: jwtSpec(func(_ *v1alpha1.SecurityPolicySpec, p *v1alpha1.JWTProvider) { p.Name = "P_1" }), accepted: "Invalid", msg: "is not a DNS label"},
		{name: "Secret missing", spec: jwtSpec(local("nowhere", "")), accepted: "Invalid", msg: "Secret not found", refs: "SecretNotFound"},
		{name: "ConfigMap missing", spec: jwtSpec(func(_ *v1alpha1.SecurityPolicySpec, p *v1alpha1.JWTProvider) { p.LocalJWKS.Kind = "ConfigMap" }),
			accepted: "Invalid", msg: "ConfigMap not found", refs: "ConfigMapNotFound"},
		{name: "key missing", spec: jwtSpec(local("other-key", "")), accepted: "Invalid", msg: `no key "jwks.json"`, refs: "InvalidJWKS"},
		{name: "key given", spec: jwtSpec(local("other-key", "keys")), jwt: &ir.JWT{Name: "default/sp", Providers: []ir.JWTProvider{defaults}}},
		{name: "not JSON", spec: jwtSpec(local("garbage", "")), accepted: "Invalid", msg: "not a JWK Set", refs: "InvalidJWKS"},
		{name: "no keys", spec: jwtSpec(local("no-keys", "")), accepted: "Invalid", msg: "has 0 keys", refs: "InvalidJWKS"},
		{name: "a private key", spec: jwtSpec(local("private", "")), accepted: "Invalid", msg: "not a valid public key", refs: "InvalidJWKS"},
		{name: "a symmetric key", spec: jwtSpec(local("symmetric", "")), accepted: "Invalid", msg: "not a valid public key", refs: "InvalidJWKS"},
		{name: "claim header", spec: jwtSpec(func(_ *v1alpha1.SecurityPolicySpec, p *v1alpha1.JWTProvider) {
			p.ClaimToHeaders = []v1alpha1.ClaimToHeader{{Header: "x-a", Claim: "a..b"}}
		}), accepted: "Invalid", msg: "claimToHeaders.claim"},
		{name: "required claims and scopes", spec: jwtSpec(func(_ *v1alpha1.SecurityPolicySpec, p *v1alpha1.JWTProvider) {
			p.RequiredClaims = []v1alpha1.JWTClaim{{Name: "org.team", Values: []string{"a", "b"}}}
			p.RequiredScopes = []string{"read"}
		}), jwt: &ir.JWT{Name: "default/sp", Providers: []ir.JWTProvider{{Name: "p", Issuer: "https://issuer.test", LocalJWKS: string(norm), ClockSkewSeconds: 60,
			RequiredClaims: []ir.Claim{{Name: "org.team", Values: []string{"a", "b"}}}, RequiredScopes: []string{"read"}}}},
			authz: &ir.Authorization{DefaultAllow: true, RequireJWT: []ir.JWTMatch{{Provider: "p", Claims: []ir.Claim{{Name: "org.team", Values: []string{"a", "b"}}}, Scopes: []string{"read"}}}}},
		{name: "required scope with a space", spec: jwtSpec(func(_ *v1alpha1.SecurityPolicySpec, p *v1alpha1.JWTProvider) { p.RequiredScopes = []string{"a b"} }),
			accepted: "Invalid", msg: "requiredScopes"},
		{name: "authorization alone", spec: v1alpha1.SecurityPolicySpec{Authorization: &v1alpha1.Authorization{}}, authz: &ir.Authorization{}},
		{name: "authorization, every condition", spec: jwtSpec(func(s *v1alpha1.SecurityPolicySpec, _ *v1alpha1.JWTProvider) {
			s.Authorization = &v1alpha1.Authorization{DefaultAction: ptr(v1alpha1.AuthorizationAllow), Rules: []v1alpha1.AuthorizationRule{
				{Name: "office", Action: v1alpha1.AuthorizationDeny, ClientCIDRs: []string{"10.1.2.3/8", "192.168.1.1", "2001:db8::1/32", "10.0.0.0/8"}},
				{Action: v1alpha1.AuthorizationAllow, JWT: &v1alpha1.JWTPrincipal{Provider: "p", Claims: []v1alpha1.JWTClaim{{Name: "role", Values: []string{"admin"}}}, Scopes: []string{"write"}},
					Headers: []gwapiv1.HTTPHeaderMatch{{Name: "X-Env", Value: "prod"}, {Name: "x-ver", Type: ptr(gwapiv1.HeaderMatchRegularExpression), Value: "v[0-9]+"}},
					Methods: []gwapiv1.HTTPMethod{"GET", "POST", "GET"},
					Paths:   []gwapiv1.HTTPPathMatch{{Value: ptr("/api")}, {Type: ptr(gwapiv1.PathMatchExact), Value: ptr("/x")}, {Type: ptr(gwapiv1.PathMatchRegularExpression), Value: ptr("/v[0-9]/.*")}}},
			}}
		}), jwt: &ir.JWT{Name: "default/sp", Providers: []ir.JWTProvider{defaults}}, authz: &ir.Authorization{DefaultAllow: true, Rules: []ir.AuthorizationRule{
			{Name: "office", ClientCIDRs: []string{"10.0.0.0/8", "192.168.1.1/32", "2001:db8::/32"}},
			{Allow: true, JWT: &ir.JWTMatch{Provider: "p", Claims: []ir.Claim{{Name: "role", Values: []string{"admin"}}}, Scopes: []string{"write"}},
				Headers: []ir.StringMatch{{Name: "x-env", Type: ir.MatchExact, Value: "prod"}, {Name: "x-ver", Type: ir.MatchRegex, Value: "v[0-9]+"}},
				Methods: []string{"GET", "POST"},
				Paths:   []ir.StringMatch{{Type: ir.MatchPathPrefix, Value: "/api"}, {Type: ir.MatchExact, Value: "/x"}, {Type: ir.MatchRegex, Value: "/v[0-9]/.*"}}},
		}}},
		{name: "authorization, unknown provider", spec: jwtSpec(func(s *v1alpha1.SecurityPolicySpec, _ *v1alpha1.JWTProvider) {
			s.Authorization = &v1alpha1.Authorization{Rules: []v1alpha1.AuthorizationRule{{Action: v1alpha1.AuthorizationAllow, JWT: &v1alpha1.JWTPrincipal{Provider: "q"}}}}
		}), accepted: "Invalid", msg: `rules[0].jwt.provider "q" is not a provider of spec.jwt`},
		{name: "authorization, jwt without spec.jwt", spec: v1alpha1.SecurityPolicySpec{Authorization: &v1alpha1.Authorization{Rules: []v1alpha1.AuthorizationRule{
			{Action: v1alpha1.AuthorizationAllow, JWT: &v1alpha1.JWTPrincipal{Provider: "p"}}}}}, accepted: "Invalid", msg: "is not a provider of spec.jwt"},
		{name: "authorization, bad CIDR", spec: v1alpha1.SecurityPolicySpec{Authorization: &v1alpha1.Authorization{Rules: []v1alpha1.AuthorizationRule{
			{Action: v1alpha1.AuthorizationAllow, ClientCIDRs: []string{"10.0.0.0/33"}}}}}, accepted: "Invalid", msg: "is not a CIDR"},
		{name: "authorization, bad regex", spec: v1alpha1.SecurityPolicySpec{Authorization: &v1alpha1.Authorization{Rules: []v1alpha1.AuthorizationRule{
			{Action: v1alpha1.AuthorizationAllow, Headers: []gwapiv1.HTTPHeaderMatch{{Name: "x", Type: ptr(gwapiv1.HeaderMatchRegularExpression), Value: "(a"}}}}}},
			accepted: "Invalid", msg: "rules[0].headers x: regular expression"},
		{name: "authorization, bad action", spec: v1alpha1.SecurityPolicySpec{Authorization: &v1alpha1.Authorization{Rules: []v1alpha1.AuthorizationRule{{Action: "Maybe"}}}},
			accepted: "Invalid", msg: `action "Maybe"`},
		{name: "authorization, bad path", spec: v1alpha1.SecurityPolicySpec{Authorization: &v1alpha1.Authorization{Rules: []v1alpha1.AuthorizationRule{
			{Action: v1alpha1.AuthorizationDeny, Paths: []gwapiv1.HTTPPathMatch{{Value: ptr("no-slash")}}}}}}, accepted: "Invalid", msg: "must be an absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := fixture()
			res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("r", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
			res.Secrets = secrets
			res.ConfigMaps = configMaps
			res.SecurityPolicies = []*v1alpha1.SecurityPolicy{securityPolicyOn(tc.spec)}
			res.Sort()
			r := Translate(res, Options{})
			mustValid(t, r)
			st := r.Status.Policies[PolicyKey{Kind: KindSecurityPolicy, Namespace: "default", Name: "sp"}]
			if st == nil || len(st.Ancestors) != 1 {
				t.Fatalf("status %+v, want one ancestor", st)
			}
			cs := st.Ancestors[0].Conditions
			acc := cond(t, cs, string(gwapiv1.PolicyConditionAccepted))
			if want := cmp.Or(tc.accepted, "Accepted"); acc.Reason != want || !strings.Contains(acc.Message, tc.msg) {
				t.Errorf("Accepted: %s %q, want reason %s with %q", acc.Reason, acc.Message, want, tc.msg)
			}
			wantCond(t, cs, "ResolvedRefs", map[bool]metav1.ConditionStatus{true: "True", false: "False"}[tc.refs == ""], cmp.Or(tc.refs, "ResolvedRefs"))
			rt := r.IR.Gateways[0].Listeners[0].HTTPRoutes[0]
			if tc.jwt == nil && tc.authz == nil {
				if rt.DirectResponse == nil || rt.DirectResponse.StatusCode != 500 || rt.Backends != nil || rt.Filters.JWT != nil || rt.Filters.Authorization != nil {
					t.Fatalf("route %+v, want a 500 answer, no backends, no filters (fail closed)", rt)
				}
				return
			}
			if rt.DirectResponse != nil || rt.Backends == nil {
				t.Fatalf("route %+v, want it forwarded", rt)
			}
			if j := rt.Filters.JWT; j != nil {
				for i := range j.Providers {
					if r := j.Providers[i].RemoteJWKS; r != nil {
						if r.Backend == nil || !strings.HasPrefix(r.Backend.Name, "url/https/jwks.test/443") || r.Backend.TLS == nil {
							t.Errorf("remote JWKS backend %+v, want url/https/jwks.test/443 with TLS", r.Backend)
						}
						r.Backend = nil
					}
				}
			}
			if g, w := yamlOf(t, rt.Filters.JWT), yamlOf(t, tc.jwt); g != w {
				t.Errorf("JWT:\n%s\nwant:\n%s", g, w)
			}
			if g, w := yamlOf(t, rt.Filters.Authorization), yamlOf(t, tc.authz); g != w {
				t.Errorf("authorization:\n%s\nwant:\n%s", g, w)
			}
		})
	}
}
