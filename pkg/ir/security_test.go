package ir

import (
	"strings"
	"testing"
	"time"
)

// TestValidateJWTAndAuthorization: what Envoy's jwt_authn and RBAC
// filters would refuse, or the translator must never send, is refused by
// Validate; a well-formed JWT and authorization pass.
func TestValidateJWTAndAuthorization(t *testing.T) {
	jwt := func() *JWT {
		return &JWT{Name: "default/p", Providers: []JWTProvider{{Name: "idp", LocalJWKS: `{"keys":[]}`, ClockSkewSeconds: 60,
			ClaimToHeaders: []ClaimToHeader{{Header: "x-sub", Claim: "sub"}}, RequiredClaims: []Claim{{Name: "org.team", Values: []string{"a"}}}}}}
	}
	authz := func() *Authorization {
		return &Authorization{RequireJWT: []JWTMatch{{Provider: "idp"}}, Rules: []AuthorizationRule{{
			ClientCIDRs: []string{"10.0.0.0/8"}, JWT: &JWTMatch{Provider: "idp", Claims: []Claim{{Name: "roles", Values: []string{"admin"}}}},
			Headers: []StringMatch{{Name: "x-env", Type: MatchRegex, Value: "p.*"}}, Methods: []string{"GET"},
			Paths: []StringMatch{{Type: MatchPathPrefix, Value: "/a"}, {Type: MatchRegex, Value: "/v[0-9]"}},
		}}}
	}
	ok := valid()
	ok.Gateways[0].Listeners[0].HTTPRoutes[0].Filters.JWT = jwt()
	ok.Gateways[0].Listeners[0].HTTPRoutes[0].Filters.Authorization = authz()
	if err := ok.Validate(); err != nil {
		t.Fatalf("a valid JWT and authorization: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(j *JWT, a *Authorization)
		want string
	}{
		{"no name", func(j *JWT, _ *Authorization) { j.Name = "" }, "needs a name"},
		{"no provider", func(j *JWT, a *Authorization) { j.Providers = nil; a.RequireJWT, a.Rules = nil, nil }, "at least one provider"},
		{"provider twice", func(j *JWT, _ *Authorization) { j.Providers = append(j.Providers, j.Providers[0]) }, "given twice"},
		{"both JWKS", func(j *JWT, _ *Authorization) {
			j.Providers[0].RemoteJWKS = &RemoteJWKS{URI: "https://a/", Backend: &Backend{Name: "b"}, CacheDuration: time.Second}
		}, "exactly one of a local and a remote JWKS"},
		{"remote over http", func(j *JWT, _ *Authorization) {
			j.Providers[0].LocalJWKS, j.Providers[0].RemoteJWKS = "", &RemoteJWKS{URI: "http://a/", Backend: &Backend{Name: "b"}, CacheDuration: time.Second}
		}, "https URI"},
		{"remote without backend", func(j *JWT, _ *Authorization) {
			j.Providers[0].LocalJWKS, j.Providers[0].RemoteJWKS = "", &RemoteJWKS{URI: "https://a/", CacheDuration: time.Second}
		}, "valid backend"},
		{"claim header not a token", func(j *JWT, _ *Authorization) { j.Providers[0].ClaimToHeaders[0].Header = "x y" }, "token header name"},
		{"claim with an empty segment", func(j *JWT, _ *Authorization) { j.Providers[0].RequiredClaims[0].Name = "org..team" }, "dot-separated"},
		{"requirement of another provider", func(_ *JWT, a *Authorization) { a.RequireJWT[0].Provider = "other" }, `requires JWT provider "other"`},
		{"rule of another provider", func(_ *JWT, a *Authorization) { a.Rules[0].JWT.Provider = "other" }, `JWT provider "other" is not one`},
		{"CIDR not canonical", func(_ *JWT, a *Authorization) { a.Rules[0].ClientCIDRs = []string{"10.1.0.0/8"} }, "not a canonical prefix"},
		{"bad header regex", func(_ *JWT, a *Authorization) { a.Rules[0].Headers[0].Value = "(a" }, `header "x-env"`},
		{"relative path", func(_ *JWT, a *Authorization) { a.Rules[0].Paths[0].Value = "a" }, "does not start with /"},
		{"claim without values", func(_ *JWT, a *Authorization) { a.Rules[0].JWT.Claims[0].Values = nil }, "at least one value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := valid()
			r := x.Gateways[0].Listeners[0].HTTPRoutes[0]
			r.Filters.JWT, r.Filters.Authorization = jwt(), authz()
			c.edit(r.Filters.JWT, r.Filters.Authorization)
			err := x.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
	// Authorization without JWT may not name a provider.
	x := valid()
	x.Gateways[0].Listeners[0].HTTPRoutes[0].Filters.Authorization = authz()
	if err := x.Validate(); err == nil || !strings.Contains(err.Error(), "does not have") {
		t.Errorf("authorization naming a provider without JWT: err = %v", err)
	}
}
