package xdstranslator

import (
	"testing"
	"time"

	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	jwtauthnv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// TestSecurityRBACFirstMatch: the principal of an authorization is
// "the first rule that matches decides, else the default": an Allow rule
// counts only when no earlier Deny rule matched; the default Allow only
// when no Deny rule matched; the JWT requirements are ANDed in front.
func TestSecurityRBACFirstMatch(t *testing.T) {
	del := ir.AuthorizationRule{Methods: []string{"DELETE"}}
	x := ir.AuthorizationRule{Allow: true, Paths: []ir.StringMatch{{Type: ir.MatchExact, Value: "/x"}}}
	mDel, _ := rulePrincipal(&del)
	mX, _ := rulePrincipal(&x)
	req := jwtPrincipal(&ir.JWTMatch{Provider: "idp", Scopes: []string{"read"}})
	for _, tc := range []struct {
		name string
		a    ir.Authorization
		want *rbacconfigv3.Principal
	}{
		{"deny then allow, default deny", ir.Authorization{Rules: []ir.AuthorizationRule{del, x}}, allOf(mX, negate(mDel))},
		{"allow then deny, default deny", ir.Authorization{Rules: []ir.AuthorizationRule{x, del}}, mX},
		{"deny then allow, default allow", ir.Authorization{Rules: []ir.AuthorizationRule{del, x}, DefaultAllow: true},
			anyOf(allOf(mX, negate(mDel)), negate(mDel))},
		{"no rules, default deny", ir.Authorization{}, negate(allOf())},
		{"no rules, default allow", ir.Authorization{DefaultAllow: true}, allOf()},
		{"requirements only", ir.Authorization{DefaultAllow: true, RequireJWT: []ir.JWTMatch{{Provider: "idp", Scopes: []string{"read"}}}}, req},
		{"requirements and rules", ir.Authorization{Rules: []ir.AuthorizationRule{x}, RequireJWT: []ir.JWTMatch{{Provider: "idp", Scopes: []string{"read"}}}}, allOf(req, mX)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			per, err := securityRBAC(&tc.a)
			if err != nil {
				t.Fatal(err)
			}
			p := per.Rbac.Rules.Policies["authorization"]
			if per.Rbac.Rules.Action != rbacconfigv3.RBAC_ALLOW || len(p.Principals) != 1 {
				t.Fatalf("got %v, want one ALLOW policy with one principal", per)
			}
			if !proto.Equal(p.Principals[0], tc.want) {
				t.Errorf("principal:\n%s\nwant:\n%s", prototext.Format(p.Principals[0]), prototext.Format(tc.want))
			}
		})
	}
	if _, err := securityRBAC(&ir.Authorization{Rules: []ir.AuthorizationRule{{ClientCIDRs: []string{"nope"}}}}); err == nil {
		t.Errorf("a CIDR that does not parse: no error")
	}
}

// TestPathPrincipals: PathPrefix as the Gateway API reads it.
func TestPathPrincipals(t *testing.T) {
	got := pathPrincipals(ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/a/"})
	if len(got) != 2 || got[0].GetUrlPath().GetPath().GetExact() != "/a" || got[1].GetUrlPath().GetPath().GetPrefix() != "/a/" {
		t.Errorf("PathPrefix /a/: %v, want exact /a or prefix /a/", got)
	}
	if got := pathPrincipals(ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/"}); len(got) != 1 || got[0].GetUrlPath().GetPath().GetPrefix() != "/" {
		t.Errorf("PathPrefix /: %v, want prefix /", got)
	}
}

// TestJWTAuthn: provider names unique per policy, requires_any for
// several providers, the Authorization header by default, the payload
// under the provider's own name, the JWKS inline or remote (async, its
// cluster); the chain's filter merges requirements and is disabled by
// default.
func TestJWTAuthn(t *testing.T) {
	b := &ir.Backend{Name: "url/https/jwks.test/443", Weight: 1}
	req, per := jwtAuthn(&ir.JWT{Name: "ns/pol", Providers: []ir.JWTProvider{
		{Name: "a", LocalJWKS: `{"keys":[]}`, ClockSkewSeconds: 60},
		{Name: "b", RemoteJWKS: &ir.RemoteJWKS{URI: "https://jwks.test:443/k", Backend: b, CacheDuration: time.Minute}, QueryParams: []string{"t"}},
	}})
	if req.name != "ns/pol" || len(req.requirement.GetRequiresAny().GetRequirements()) != 2 {
		t.Fatalf("requirement %s %v, want ns/pol requiring any of two", req.name, req.requirement)
	}
	a, bp := req.providers["ns/pol/a"], req.providers["ns/pol/b"]
	if a == nil || bp == nil {
		t.Fatalf("providers %v, want ns/pol/a and ns/pol/b", req.providers)
	}
	if h := a.FromHeaders; len(h) != 1 || h[0].Name != "authorization" || h[0].ValuePrefix != "Bearer " || a.PayloadInMetadata != "a" {
		t.Errorf("provider a: headers %v, metadata %q; want Authorization Bearer, a", h, a.PayloadInMetadata)
	}
	if len(bp.FromHeaders) != 0 || bp.FromParams[0] != "t" {
		t.Errorf("provider b reads %v %v, want the query parameter t only", bp.FromHeaders, bp.FromParams)
	}
	r := bp.GetRemoteJwks()
	if r.GetHttpUri().GetCluster() != b.Name || !r.GetAsyncFetch().GetFastListener() || r.GetCacheDuration().AsDuration() != time.Minute {
		t.Errorf("remote JWKS %v, want cluster %s, async fast listener, 1m", r, b.Name)
	}
	var pr jwtauthnv3.PerRouteConfig
	if err := per.UnmarshalTo(&pr); err != nil || pr.GetRequirementName() != "ns/pol" {
		t.Errorf("per-route %v (%v), want requirement_name ns/pol", &pr, err)
	}
	other, _ := jwtAuthn(&ir.JWT{Name: "ns/other", Providers: []ir.JWTProvider{{Name: "a", LocalJWKS: `{"keys":[]}`}}})
	f := jwtAuthnFilter(addJWT(addJWT(addJWT(nil, req), other), req))
	var c jwtauthnv3.JwtAuthentication
	if err := f.GetTypedConfig().UnmarshalTo(&c); err != nil {
		t.Fatal(err)
	}
	if !f.Disabled || len(c.Providers) != 3 || len(c.RequirementMap) != 2 || len(c.Rules) != 0 {
		t.Errorf("filter disabled=%t, %d providers, %d requirements, %d rules; want disabled, 3, 2, 0", f.Disabled, len(c.Providers), len(c.RequirementMap), len(c.Rules))
	}
}
