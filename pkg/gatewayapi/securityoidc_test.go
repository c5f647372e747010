package gatewayapi

import (
	"bytes"
	"cmp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/internal/xdstest"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

const testIssuer = "https://id.example.com"

func oidcSpec(edit func(*v1alpha1.OIDC)) v1alpha1.SecurityPolicySpec {
	o := &v1alpha1.OIDC{Issuer: testIssuer, ClientID: "web", ClientSecret: gwapiv1.SecretObjectReference{Name: "client"}}
	if edit != nil {
		edit(o)
	}
	return v1alpha1.SecurityPolicySpec{OIDC: o}
}

// oidcTranslate translates policy sp (spec) on Gateway web with opts and
// returns its Accepted and ResolvedRefs conditions and the route.
func oidcTranslate(t *testing.T, spec v1alpha1.SecurityPolicySpec, opts Options, secrets ...*corev1.Secret) (acc, refs metav1.Condition, rt *ir.HTTPRoute) {
	t.Helper()
	res := fixture()
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("r", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
	res.Secrets = append(secrets, secret("default", "client", map[string]string{"client-secret": "s3cret"}))
	res.SecurityPolicies = []*v1alpha1.SecurityPolicy{securityPolicyOn(spec)}
	res.Sort()
	r := Translate(res, opts)
	mustValid(t, r)
	st := r.Status.Policies[PolicyKey{Kind: KindSecurityPolicy, Namespace: "default", Name: "sp"}]
	if st == nil || len(st.Ancestors) != 1 {
		t.Fatalf("status %+v, want one ancestor", st)
	}
	cs := st.Ancestors[0].Conditions
	return cond(t, cs, string(gwapiv1.PolicyConditionAccepted)), cond(t, cs, "ResolvedRefs"), r.IR.Gateways[0].Listeners[0].HTTPRoutes[0]
}

// TestSecurityPolicyOIDC is the validation table of spec.oidc: each case
// gives the Accepted and ResolvedRefs reasons (and a part of the
// message) and, when accepted, what the route's login is; a policy that
// is not accepted makes the route answer 500 (fail closed).
func TestSecurityPolicyOIDC(t *testing.T) {
	key := []byte("controller-key")
	discovered := map[string]OIDCProvider{
		OIDCDiscoveryKey(testIssuer, nil):                  {AuthorizationEndpoint: testIssuer + "/authorize", TokenEndpoint: testIssuer + "/token", EndSessionEndpoint: testIssuer + "/logout"},
		OIDCDiscoveryKey("https://down.example.com", nil):  {Error: "GET .../.well-known/openid-configuration: 503"},
		OIDCDiscoveryKey("https://slow.example.com", nil):  {Pending: true},
		OIDCDiscoveryKey("https://plain.example.com", nil): {AuthorizationEndpoint: "http://plain.example.com/authorize", TokenEndpoint: "http://plain.example.com/token"},
	}
	for _, tc := range []struct {
		name     string
		spec     v1alpha1.SecurityPolicySpec
		noKey    bool
		accepted string // reason; "" for Accepted
		msg      string
		refs     string
		check    func(t *testing.T, o *ir.OIDC)
	}{
		{name: "defaults, discovered", spec: oidcSpec(nil), check: func(t *testing.T, o *ir.OIDC) {
			if o.AuthorizationEndpoint != testIssuer+"/authorize" || o.TokenEndpoint != testIssuer+"/token" || o.EndSessionEndpoint != testIssuer+"/logout" ||
				o.RedirectPath != "/oauth2/callback" || o.LogoutPath != "/logout" || strings.Join(o.Scopes, " ") != "openid" || !o.RefreshToken ||
				o.ClientSecret != "s3cret" || o.Name != "default/sp" || len(o.HMACKey) != 32 || o.TokenBackend == nil || o.TokenBackend.Name != "url/https/id.example.com/443" {
				t.Errorf("login %+v", o)
			}
		}},
		{name: "explicit endpoints, no discovery needed", spec: oidcSpec(func(o *v1alpha1.OIDC) {
			o.Issuer = "https://nowhere.example.com"
			o.AuthorizationEndpoint, o.TokenEndpoint = ptr("https://a.example.com/auth"), ptr("https://t.example.com/token")
			o.Scopes, o.RefreshToken = []string{"email", "openid", "email"}, ptr(false)
			o.ForwardIDTokenHeader = ptr(gwapiv1.HTTPHeaderName("X-ID-Token"))
		}), check: func(t *testing.T, o *ir.OIDC) {
			if o.TokenEndpoint != "https://t.example.com/token" || o.EndSessionEndpoint != "" || strings.Join(o.Scopes, " ") != "openid email" || o.RefreshToken || o.ForwardIDTokenHeader != "x-id-token" {
				t.Errorf("login %+v", o)
			}
		}},
		{name: "no controller key", spec: oidcSpec(nil), noKey: true, accepted: "Invalid", msg: "no key to derive"},
		{name: "discovery failed", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.Issuer = "https://down.example.com" }), accepted: "Invalid", msg: "discovery failed: GET", refs: reasonDiscoveryFailed},
		{name: "discovery under way", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.Issuer = "https://slow.example.com" }), accepted: "Invalid", msg: "is being fetched", refs: reasonDiscoveryPending},
		{name: "not discovered", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.Issuer = "https://other.example.com" }), accepted: "Invalid", msg: "was not fetched", refs: reasonDiscoveryFailed},
		{name: "discovered endpoints not https", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.Issuer = "https://plain.example.com" }), accepted: "Invalid", msg: "not an absolute https URL", refs: reasonDiscoveryFailed},
		{name: "issuer http", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.Issuer = "http://id.example.com" }), accepted: "Invalid", msg: "oidc.issuer"},
		{name: "issuer with a query", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.Issuer = testIssuer + "?x=1" }), accepted: "Invalid", msg: "has a query"},
		{name: "token endpoint with user info", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.TokenEndpoint = ptr("https://u:p@id.example.com/token") }), accepted: "Invalid", msg: "user information"},
		{name: "token endpoint on an IP", spec: oidcSpec(func(o *v1alpha1.OIDC) {
			o.AuthorizationEndpoint, o.TokenEndpoint = ptr("https://id.example.com/a"), ptr("https://127.0.0.1/token")
		}), accepted: "Invalid", msg: "needs a host name to verify"},
		{name: "same paths", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.RedirectPath, o.LogoutPath = "/x", "/x" }), accepted: "Invalid", msg: "must differ"},
		{name: "bad cookie name", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.CookieNames = &v1alpha1.OIDCCookieNames{AccessToken: "a b"} }), accepted: "Invalid", msg: "cookieNames.accessToken"},
		{name: "bad cookie domain", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.CookieDomain = "exa mple.com" }), accepted: "Invalid", msg: "cookieDomain"},
		{name: "bad scope", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.Scopes = []string{"a b"} }), accepted: "Invalid", msg: "is not a scope"},
		{name: "client secret missing", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.ClientSecret.Name = "gone" }), accepted: "Invalid", msg: "Secret not found", refs: "SecretNotFound"},
		{name: "client secret with a newline", spec: oidcSpec(func(o *v1alpha1.OIDC) { o.ClientSecret.Name = "newline" }), accepted: "Invalid", msg: "a trailing newline?", refs: "InvalidSecret"},
		{name: "CA ConfigMap missing", spec: oidcSpec(func(o *v1alpha1.OIDC) {
			o.AuthorizationEndpoint, o.TokenEndpoint = ptr("https://id.example.com/a"), ptr("https://id.example.com/t")
			o.CACertificateRefs = []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "nope"}}
		}), accepted: "Invalid", msg: "oidc.caCertificateRefs", refs: "NoValidCACertificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{SecretKey: key, OIDCProviders: discovered}
			if tc.noKey {
				opts.SecretKey = nil
			}
			acc, refs, rt := oidcTranslate(t, tc.spec, opts, secret("default", "newline", map[string]string{"client-secret": "s3cret\n"}))
			if want := cmp.Or(tc.accepted, "Accepted"); acc.Reason != want || !strings.Contains(acc.Message, tc.msg) {
				t.Errorf("Accepted: %s %q, want %s with %q", acc.Reason, acc.Message, want, tc.msg)
			}
			if want := cmp.Or(tc.refs, "ResolvedRefs"); refs.Reason != want {
				t.Errorf("ResolvedRefs: %s %q, want %s", refs.Reason, refs.Message, want)
			}
			if tc.accepted != "" {
				if rt.DirectResponse == nil || rt.DirectResponse.StatusCode != 500 || rt.Filters.OIDC != nil {
					t.Fatalf("route %+v, want a 500 answer", rt)
				}
				return
			}
			if rt.Filters.OIDC == nil || rt.DirectResponse != nil {
				t.Fatalf("route %+v, want a login", rt)
			}
			tc.check(t, rt.Filters.OIDC)
		})
	}
}

// TestOIDCHMACKey: the session cookies' HMAC key is the same for every
// translation with the same controller key and policy (every Envoy of a
// fleet, every controller replica, across restarts), and differs when
// the key (a rotated CA) or the policy (namespace, name, uid) does.
func TestOIDCHMACKey(t *testing.T) {
	p := &v1alpha1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sp", UID: "u1"}}
	a, b := oidcHMACKey([]byte("k"), p), oidcHMACKey([]byte("k"), p.DeepCopy())
	if !bytes.Equal(a, b) || len(a) != 32 {
		t.Fatalf("same key and policy: %x and %x, want the same 32 bytes", a, b)
	}
	q := p.DeepCopy()
	q.UID = "u2"
	r := p.DeepCopy()
	r.Name = "other"
	for name, k := range map[string][]byte{"rotated key": oidcHMACKey([]byte("k2"), p), "recreated policy": oidcHMACKey([]byte("k"), q), "other policy": oidcHMACKey([]byte("k"), r)} {
		if bytes.Equal(k, a) {
			t.Errorf("%s: the same HMAC key", name)
		}
	}
}

// TestOIDCDiscoveries lists the discovery documents a snapshot needs:
// once per issuer and CA, none for a policy with explicit endpoints,
// the CA read from the policy's ConfigMap.
func TestOIDCDiscoveries(t *testing.T) {
	pol := func(name string, edit func(*v1alpha1.OIDC)) *v1alpha1.SecurityPolicy {
		p := securityPolicyOn(oidcSpec(edit))
		p.Name = name
		return p
	}
	ca, _ := xdstest.Cert("id.example.com")
	res := &resources.Resources{
		ConfigMaps: []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ca"}, Data: map[string]string{"ca.crt": string(ca)}}},
		SecurityPolicies: []*v1alpha1.SecurityPolicy{
			pol("a", nil), pol("b", nil),
			pol("c", func(o *v1alpha1.OIDC) {
				o.CACertificateRefs = []gwapiv1.LocalObjectReference{{Kind: "ConfigMap", Name: "ca"}}
			}),
			pol("d", func(o *v1alpha1.OIDC) {
				o.Issuer = "https://explicit.example.com"
				o.AuthorizationEndpoint, o.TokenEndpoint = ptr("https://explicit.example.com/a"), ptr("https://explicit.example.com/t")
			}),
		},
	}
	got := OIDCDiscoveries(res)
	if len(got) != 2 || got[0].Issuer != testIssuer || got[0].CA != nil || got[1].Issuer != testIssuer || len(got[1].CA) == 0 {
		t.Fatalf("discoveries %+v, want %s without and with the CA", got, testIssuer)
	}
}
