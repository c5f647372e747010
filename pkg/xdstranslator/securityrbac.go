package xdstranslator

// SecurityPolicy authorization (ir.Authorization: the rules of
// spec.authorization and the claims spec.jwt requires) as a second
// instance of Envoy's RBAC HTTP filter, after every authentication
// filter (it reads jwt_authn's dynamic metadata), enabled on a route by
// its RBACPerRoute. The chain's filter has no rules: a route without an
// authorization lets everyone in.
//
// Ordered rules, the first match deciding, are rendered as ONE ALLOW
// policy whose principal is a boolean expression (and_ids, or_ids,
// not_id over remote_ip, header, url_path and sourced_metadata
// principals), rather than Envoy's matcher-based RBAC: the principals
// are the matchers the source ranges and the jwt_authn tests already
// prove, and one expression holds the JWT requirements too. For rules
// m1..mn and a default action, a request is allowed when
//
//	OR over Allow rules i of (m_i AND NOT m_j for every Deny rule j < i)
//	OR, when the default is Allow, (NOT m_j for every Deny rule j)
//
// which is "the first rule that matches allows, or none matches and the
// default allows" (an Allow rule before i that matched already allowed,
// so only the earlier Deny rules need to be ruled out). The expression's
// depth is constant; its size grows with (Allow rules) x (Deny rules
// before them), at most 32 x 32 for 64 rules.

import (
	"strings"

	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// filterSecurityRBAC is the RBAC filter of SecurityPolicy authorization,
// a second RBAC instance (filterRBAC is the source ranges').
const filterSecurityRBAC = "envoy.filters.http.rbac/security"

// securityRBACFilter is the chain's authorization RBAC filter: no rules.
func securityRBACFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name:       filterSecurityRBAC,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&rbacv3.RBAC{})},
	}
}

// securityRBAC is the RBACPerRoute of a: one ALLOW policy "authorization"
// whose principal is (one of RequireJWT holds, when set) AND (the rules'
// decision, see the file comment). A denied request gets 403.
func securityRBAC(a *ir.Authorization) (*rbacv3.RBACPerRoute, error) {
	var allowed, denies []*rbacconfigv3.Principal
	for _, r := range a.Rules {
		m, err := rulePrincipal(&r)
		if err != nil {
			return nil, err
		}
		if r.Allow {
			allowed = append(allowed, allOf(append([]*rbacconfigv3.Principal{m}, denies...)...))
		} else {
			denies = append(denies, negate(m))
		}
	}
	if a.DefaultAllow {
		allowed = append(allowed, allOf(denies...))
	}
	decision := anyOf(allowed...)
	if len(a.RequireJWT) > 0 {
		var reqs []*rbacconfigv3.Principal
		for _, m := range a.RequireJWT {
			reqs = append(reqs, jwtPrincipal(&m))
		}
		if _, all := decision.Identifier.(*rbacconfigv3.Principal_Any); all {
			decision = anyOf(reqs...)
		} else {
			decision = allOf(anyOf(reqs...), decision)
		}
	}
	return &rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{
		Action: rbacconfigv3.RBAC_ALLOW,
		Policies: map[string]*rbacconfigv3.Policy{"authorization": {
			Permissions: []*rbacconfigv3.Permission{{Rule: &rbacconfigv3.Permission_Any{Any: true}}},
			Principals:  []*rbacconfigv3.Principal{decision},
		}},
	}}}, nil
}

// rulePrincipal is what a rule matches: every condition set (a client
// CIDR of the list, the JWT match, every header, a method of the list, a
// path of the list); an empty rule matches everything.
func rulePrincipal(r *ir.AuthorizationRule) (*rbacconfigv3.Principal, error) {
	var all []*rbacconfigv3.Principal
	if len(r.ClientCIDRs) > 0 {
		var alts []*rbacconfigv3.Principal
		for _, c := range r.ClientCIDRs {
			cr, err := cidrRange(c)
			if err != nil {
				return nil, err
			}
			alts = append(alts, &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_RemoteIp{RemoteIp: cr}})
		}
		all = append(all, anyOf(alts...))
	}
	if m := r.JWT; m != nil {
		all = append(all, jwtPrincipal(m))
	}
	for _, h := range r.Headers {
		all = append(all, &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Header{Header: headerMatcher(h)}})
	}
	if len(r.Methods) > 0 {
		var alts []*rbacconfigv3.Principal
		for _, m := range r.Methods {
			alts = append(alts, &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Header{
				Header: headerMatcher(ir.StringMatch{Name: ":method", Type: ir.MatchExact, Value: m}),
			}})
		}
		all = append(all, anyOf(alts...))
	}
	if len(r.Paths) > 0 {
		var alts []*rbacconfigv3.Principal
		for _, p := range r.Paths {
			alts = append(alts, pathPrincipals(p)...)
		}
		all = append(all, anyOf(alts...))
	}
	return allOf(all...), nil
}

// pathPrincipals match the request's path (without the query) as p
// says: Exact, RegularExpression (the whole path), or PathPrefix as the
// Gateway API reads it ("/a" matches "/a" and "/a/b", not "/ab").
func pathPrincipals(p ir.StringMatch) []*rbacconfigv3.Principal {
	path := func(s *matcherv3.StringMatcher) *rbacconfigv3.Principal {
		return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_UrlPath{UrlPath: &matcherv3.PathMatcher{
			Rule: &matcherv3.PathMatcher_Path{Path: s},
		}}}
	}
	prefix := func(v string) *matcherv3.StringMatcher {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: v}}
	}
	switch v := strings.TrimRight(p.Value, "/"); {
	case p.Type != ir.MatchPathPrefix:
		return []*rbacconfigv3.Principal{path(stringMatcher(p))}
	case v == "":
		return []*rbacconfigv3.Principal{path(prefix("/"))}
	default:
		return []*rbacconfigv3.Principal{path(stringMatcher(ir.StringMatch{Type: ir.MatchExact, Value: v})), path(prefix(v + "/"))}
	}
}

// jwtPrincipal matches the payload m.Provider validated (jwt_authn's
// dynamic metadata under the provider's name): present, each claim one of
// its values, each scope in the scope list (or in scp). It is the one
// claim matcher of both requiredClaims/requiredScopes and authorization
// rules.
func jwtPrincipal(m *ir.JWTMatch) *rbacconfigv3.Principal {
	all := []*rbacconfigv3.Principal{payloadMatch([]string{m.Provider}, &matcherv3.ValueMatcher{
		MatchPattern: &matcherv3.ValueMatcher_PresentMatch{PresentMatch: true},
	})}
	for _, c := range m.Claims {
		var values []*matcherv3.ValueMatcher
		for _, v := range c.Values {
			values = append(values, exactValue(v), oneOf(v))
		}
		all = append(all, payloadMatch(append([]string{m.Provider}, strings.Split(c.Name, ".")...), &matcherv3.ValueMatcher{
			MatchPattern: &matcherv3.ValueMatcher_OrMatch{OrMatch: &matcherv3.OrMatcher{ValueMatchers: values}},
		}))
	}
	for _, s := range m.Scopes {
		all = append(all, anyOf(payloadMatch([]string{m.Provider, "scope"}, oneOf(s)), payloadMatch([]string{m.Provider, "scp"}, oneOf(s))))
	}
	return allOf(all...)
}

// payloadMatch matches the jwt_authn dynamic metadata value at path.
func payloadMatch(path []string, v *matcherv3.ValueMatcher) *rbacconfigv3.Principal {
	mm := &matcherv3.MetadataMatcher{Filter: filterJWTAuthn, Value: v}
	for _, k := range path {
		mm.Path = append(mm.Path, &matcherv3.MetadataMatcher_PathSegment{Segment: &matcherv3.MetadataMatcher_PathSegment_Key{Key: k}})
	}
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_SourcedMetadata{SourcedMetadata: &rbacconfigv3.SourcedMetadata{
		MetadataMatcher: mm, MetadataSource: rbacconfigv3.MetadataSource_DYNAMIC,
	}}}
}

// exactValue matches a string equal to v; oneOf a list holding it.
func exactValue(v string) *matcherv3.ValueMatcher {
	return &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_StringMatch{
		StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: v}},
	}}
}

func oneOf(v string) *matcherv3.ValueMatcher {
	return &matcherv3.ValueMatcher{MatchPattern: &matcherv3.ValueMatcher_ListMatch{ListMatch: &matcherv3.ListMatcher{
		MatchPattern: &matcherv3.ListMatcher_OneOf{OneOf: exactValue(v)},
	}}}
}

// allOf, anyOf and negate combine principals (and_ids, or_ids, not_id):
// allOf none is any (true), anyOf none is not any (false);
// of one, it is itself.
func allOf(ps ...*rbacconfigv3.Principal) *rbacconfigv3.Principal {
	switch len(ps) {
	case 0:
		return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Any{Any: true}}
	case 1:
		return ps[0]
	}
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_AndIds{AndIds: &rbacconfigv3.Principal_Set{Ids: ps}}}
}

func anyOf(ps ...*rbacconfigv3.Principal) *rbacconfigv3.Principal {
	switch len(ps) {
	case 0:
		return negate(allOf())
	case 1:
		return ps[0]
	}
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_OrIds{OrIds: &rbacconfigv3.Principal_Set{Ids: ps}}}
}

func negate(p *rbacconfigv3.Principal) *rbacconfigv3.Principal {
	return &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_NotId{NotId: p}}
}
