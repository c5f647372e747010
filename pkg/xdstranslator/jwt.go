package xdstranslator

// JWT authentication (SecurityPolicy jwt) as Envoy's jwt_authn HTTP
// filter: one filter per chain, disabled by default, whose configuration
// holds the providers and requirements of every JWT of the chain's
// routes; a route enables it with a JwtPerRoute naming its requirement.
//
// Provider names are "<namespace>/<policy>/<provider>" (unique in the
// listener, whatever the policies), requirement names "<namespace>/<policy>"
// (ir.JWT Name). Every provider puts its payload in the dynamic metadata
// of namespace envoy.filters.http.jwt_authn under its name in the policy
// (payload_in_metadata), the space-delimited scope claim split into a
// list, for the route's authorization (securityrbac.go), which runs
// later.
//
// The filter's name never changes, so a route that moves from one
// policy to another, or a policy whose JWKS changes, never meets a chain
// without it; and a route whose requirement is not (or no longer) in the
// filter's configuration gets 403 from jwt_authn ("Wrong requirement_name"),
// never a pass. A local JWKS is in the filter's configuration (LDS): a
// rotated Secret changes the listener's filter chain.

import (
	"slices"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	jwtauthnv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/jwt_authn/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

const (
	// filterJWTAuthn is Envoy's jwt_authn filter, one per chain; also the
	// dynamic metadata namespace of the payloads it validated.
	filterJWTAuthn = "envoy.filters.http.jwt_authn"
	// jwksFetchTimeout bounds a fetch of a remote JWKS.
	jwksFetchTimeout = 5 * time.Second
)

// jwtRequirement is one ir.JWT's part of its chain's jwt_authn filter:
// its requirement, named name, and its providers by Envoy name.
type jwtRequirement struct {
	name        string
	requirement *jwtauthnv3.JwtRequirement
	providers   map[string]*jwtauthnv3.JwtProvider
}

// jwtAuthn renders j as its requirement in the chain's jwt_authn filter,
// its providers, and the per-route configuration that enables the filter
// on a route with that requirement (JwtPerRoute requirement_name).
//
// Each provider: issuer, audiences, the JWKS inline (local_jwks) or
// fetched through the JWKS URL's cluster (remote_jwks: http_uri with the
// backend's cluster, cache_duration, async_fetch with fast_listener: the
// JWKS is fetched when the configuration arrives and refetched when the
// cache expires, the listener never waits for it; while the JWKS server
// cannot be reached Envoy keeps the JWKS it fetched last, and a provider
// whose JWKS was never fetched fails its tokens with 401 "Jwks remote
// fetch is failed", the fetch retried every second: test/e2e
// securityjwt_test.go shows both);
// the token from the headers, query parameters and cookies given, else
// from "Authorization: Bearer"; claim_to_headers (Envoy removes the
// header a client sent before it sets the claim); forward; clock skew;
// the payload in the dynamic metadata (payload_in_metadata, the scope
// claim split into a list). A token of any provider of j is enough
// (requires_any).
func jwtAuthn(j *ir.JWT) (jwtRequirement, *anypb.Any) {
	out := jwtRequirement{name: j.Name, providers: map[string]*jwtauthnv3.JwtProvider{}}
	var alts []*jwtauthnv3.JwtRequirement
	for _, p := range j.Providers {
		name := j.Name + "/" + p.Name
		ep := &jwtauthnv3.JwtProvider{
			Issuer:                     p.Issuer,
			Audiences:                  p.Audiences,
			Forward:                    p.Forward,
			FromParams:                 p.QueryParams,
			FromCookies:                p.Cookies,
			PayloadInMetadata:          p.Name,
			NormalizePayloadInMetadata: &jwtauthnv3.JwtProvider_NormalizePayload{SpaceDelimitedClaims: []string{"scope"}},
			ClockSkewSeconds:           p.ClockSkewSeconds,
		}
		for _, h := range p.Headers {
			ep.FromHeaders = append(ep.FromHeaders, &jwtauthnv3.JwtHeader{Name: h.Name, ValuePrefix: h.ValuePrefix})
		}
		if len(p.Headers)+len(p.QueryParams)+len(p.Cookies) == 0 {
			// Envoy's default would also read the access_token query
			// parameter: the API says the Authorization header only.
			ep.FromHeaders = []*jwtauthnv3.JwtHeader{{Name: "authorization", ValuePrefix: "Bearer "}}
		}
		for _, c := range p.ClaimToHeaders {
			ep.ClaimToHeaders = append(ep.ClaimToHeaders, &jwtauthnv3.JwtClaimToHeader{HeaderName: c.Header, ClaimName: c.Claim})
		}
		if r := p.RemoteJWKS; r != nil {
			ep.JwksSourceSpecifier = &jwtauthnv3.JwtProvider_RemoteJwks{RemoteJwks: &jwtauthnv3.RemoteJwks{
				HttpUri: &corev3.HttpUri{
					Uri:              r.URI,
					HttpUpstreamType: &corev3.HttpUri_Cluster{Cluster: clusterOf(r.Backend)},
					Timeout:          durationpb.New(jwksFetchTimeout),
				},
				CacheDuration: durationpb.New(r.CacheDuration),
				AsyncFetch:    &jwtauthnv3.JwksAsyncFetch{FastListener: true},
			}}
		} else {
			ep.JwksSourceSpecifier = &jwtauthnv3.JwtProvider_LocalJwks{LocalJwks: &corev3.DataSource{
				Specifier: &corev3.DataSource_InlineString{InlineString: p.LocalJWKS},
			}}
		}
		out.providers[name] = ep
		alts = append(alts, &jwtauthnv3.JwtRequirement{RequiresType: &jwtauthnv3.JwtRequirement_ProviderName{ProviderName: name}})
	}
	out.requirement = alts[0]
	if len(alts) > 1 {
		out.requirement = &jwtauthnv3.JwtRequirement{RequiresType: &jwtauthnv3.JwtRequirement_RequiresAny{
			RequiresAny: &jwtauthnv3.JwtRequirementOrList{Requirements: alts},
		}}
	}
	return out, toAny(&jwtauthnv3.PerRouteConfig{RequirementSpecifier: &jwtauthnv3.PerRouteConfig_RequirementName{RequirementName: j.Name}})
}

// jwtAuthnFilter is a chain's jwt_authn filter: the providers and
// requirements of reqs (sorted by name; of two with one name, the first),
// no rules (a route without a JwtPerRoute requires nothing, and the
// filter is disabled there anyway).
func jwtAuthnFilter(reqs []jwtRequirement) *hcmv3.HttpFilter {
	c := &jwtauthnv3.JwtAuthentication{
		Providers:      map[string]*jwtauthnv3.JwtProvider{},
		RequirementMap: map[string]*jwtauthnv3.JwtRequirement{},
	}
	for _, r := range reqs {
		if _, dup := c.RequirementMap[r.name]; dup {
			continue
		}
		c.RequirementMap[r.name] = r.requirement
		for n, p := range r.providers {
			c.Providers[n] = p
		}
	}
	return &hcmv3.HttpFilter{
		Name:       filterJWTAuthn,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(c)},
		Disabled:   true,
	}
}

// addJWT adds r to rs, sorted by name, once per name, and returns rs.
// The slice may be shared with a memo: an insertion copies it.
func addJWT(rs []jwtRequirement, r jwtRequirement) []jwtRequirement {
	i, found := slices.BinarySearchFunc(rs, r.name, func(a jwtRequirement, n string) int { return strings.Compare(a.name, n) })
	if !found {
		rs = slices.Insert(slices.Clip(rs), i, r)
	}
	return rs
}
