package xdstranslator

// The HTTP filters of an HTTP connection manager, in one place: this is
// where a new policy's HTTP filter is added. A filter joins a filter
// chain only when a route of the chain uses it (filterUse, reported by
// route in route.go, which puts the route's own configuration of the
// filter in typed_per_filter_config under the filter's name), so chains
// whose routes do not use it are unchanged. To add one: its name below, a
// field of filterUse (and its line in add), the route's per-filter
// configuration in route.go, and its place in hcmFilter.
//
// The order rule: filters that refuse a request run first (access
// control: RBAC answers 403 before any other filter works for the
// client), then those that answer or change it (CORS), then those that
// only steer the request to an upstream host (stateful session: a
// request CORS answers itself gets no session cookie), and the router,
// Envoy's terminal filter, always last. External authorization
// (extauth.go) is access control in two places: a listener's checks run
// before everything (pre-routing: Gateway listener filters), a route's
// right after CORS, so that CORS answers preflight requests, which carry
// no credentials, and adds its headers to a denial too. Authentication
// (oauth2.go: the OIDC login; jwt.go: jwt_authn; authn.go: basic_auth,
// api_key_auth) sits between CORS and a route's external checks, for the
// same reason. A route's external checks are a SecurityPolicy's, then the
// rule's own (both must allow); custom_response (signin.go) sits right
// before them, so that it sees their 401 replies and turns them into
// sign-in redirects. A SecurityPolicy's authorization (securityrbac.go: a
// second RBAC filter) comes after every check that authenticates, whose
// results (jwt_authn's metadata) it reads. The whole order: a listener's
// ext_authz checks, RBAC (source ranges), CORS, oauth2, jwt_authn,
// basic_auth, api_key_auth, custom_response (sign-in redirects), a route's
// ext_authz checks (a SecurityPolicy's, then the rule's own), the
// SecurityPolicy's RBAC, stateful session, router.
//
// A TrafficPolicy's filters (traffic.go) come after every check: the
// local rate limit first, so that a client refused by access control or
// authentication never spends the tokens of an allowed one, and a bucket
// per header value reads the headers authentication set (a JWT claim
// copied into a header); then the buffer filter (the body limit), so that
// only a request that is let through has its body held; the compressors
// last before the router, so that they compress what the backend sends
// (a response runs through the filters in reverse) and never a reply of
// a filter before them (401, 403, 429, 413). The whole order: a
// listener's ext_authz checks, RBAC, CORS, oauth2, jwt_authn, basic_auth,
// api_key_auth, custom_response, a route's ext_authz checks, the
// SecurityPolicy's RBAC, local_ratelimit, the global ratelimit filters
// (fail-closed, fail-open: ratelimit.go; after the local limits, so that
// a request they refuse costs the rate-limit service no call and no
// count), buffer, stateful session, the compressors (in each route's
// order of preference), router.

import (
	"slices"
	"strings"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// HTTP filter names (free-form labels; the typed config's type URL
// selects the extension), in the order hcmFilter adds them.
const (
	// filterRBAC is Envoy's RBAC HTTP filter: it answers 403 to the
	// clients outside a route's AllowedSourceRanges (rbac.go).
	filterRBAC = "envoy.filters.http.rbac"
	// filterCORS is Envoy's CORS filter: it applies a route's CORS policy
	// (corsPolicy), preflight requests included.
	filterCORS = "envoy.filters.http.cors"
	// filterStatefulSession is Envoy's stateful session filter: it sends a
	// route's requests to the upstream host their session cookie or
	// header names (session.go).
	filterStatefulSession = "envoy.filters.http.stateful_session"
	// filterRouter forwards the request as its route says.
	filterRouter = "envoy.filters.http.router"
)

// filterUse says which optional HTTP filters the routes of a filter chain
// use; only those join its HTTP connection manager.
type filterUse struct {
	cors, rbac, session bool
	// authz are the ext_authz filters (extauth.go), one per name, sorted
	// by name: a listener's (in their order) before the routes'.
	authz []authzFilter
	// basicAuth are the basic_auth filters (authn.go), one per name,
	// sorted by name; apiKey is the api_key_auth filter.
	basicAuth []authzFilter
	apiKey    bool
	// jwt are the requirements of the chain's jwt_authn filter (jwt.go),
	// sorted by name; securityRBAC says whether a route has an
	// authorization (securityrbac.go).
	jwt          []jwtRequirement
	securityRBAC bool
	// oauth2 are the OAuth2 filters (oauth2.go), one per name, sorted by
	// name, with the SDS secrets each reads.
	oauth2 []authzFilter
	// signIn: a route's check turns 401 into a sign-in redirect
	// (signin.go: the custom_response filter).
	signIn bool
	// localRateLimit, buffer: a route has local rate limits, a body
	// limit; compressors are the compressor filters, one per name, sorted
	// by name (traffic.go).
	localRateLimit, buffer bool
	compressors            []authzFilter
	// rateLimits are the global ratelimit filters (ratelimit.go), one per
	// failure mode, sorted by name (fail-closed, then fail-open).
	rateLimits []authzFilter
}

func (u *filterUse) add(o filterUse) {
	u.cors = u.cors || o.cors
	u.rbac = u.rbac || o.rbac
	u.session = u.session || o.session
	u.apiKey = u.apiKey || o.apiKey
	u.signIn = u.signIn || o.signIn
	for _, f := range o.authz {
		u.addAuthz(f)
	}
	for _, f := range o.basicAuth {
		u.basicAuth = addNamed(u.basicAuth, f)
	}
	for _, r := range o.jwt {
		u.jwt = addJWT(u.jwt, r)
	}
	u.securityRBAC = u.securityRBAC || o.securityRBAC
	for _, f := range o.oauth2 {
		u.oauth2 = addNamed(u.oauth2, f)
	}
	u.localRateLimit = u.localRateLimit || o.localRateLimit
	u.buffer = u.buffer || o.buffer
	for _, f := range o.compressors {
		u.compressors = addNamed(u.compressors, f)
	}
	for _, f := range o.rateLimits {
		u.rateLimits = addNamed(u.rateLimits, f)
	}
}

// addAuthz adds an ext_authz filter, once per name.
func (u *filterUse) addAuthz(f authzFilter) { u.authz = addNamed(u.authz, f) }

// addNamed adds f to fs, sorted by name, once per name, and returns fs.
// The slice may be shared with a memo: an insertion copies it.
func addNamed(fs []authzFilter, f authzFilter) []authzFilter {
	i, found := slices.BinarySearchFunc(fs, f.name, func(a authzFilter, n string) int { return strings.Compare(a.name, n) })
	if !found {
		fs = slices.Insert(slices.Clip(fs), i, f)
	}
	return fs
}

// hcmFilter is the HTTP connection manager of a filter chain, with the
// optional filters its routes use (a listener's ext_authz checks first,
// then RBAC, CORS, oauth2, jwt_authn, basic_auth, api_key_auth,
// custom_response (sign-in redirects), a route's ext_authz checks (a
// SecurityPolicy's, then the rule's own), the SecurityPolicy's RBAC,
// local_ratelimit, the global ratelimit filters, buffer, stateful
// session, the compressors; the router last), Envoy's stdout access log
// when log is set, the limits on its clients of edge (applyEdge), the
// tracing of tr (tracing.go; nil traces nothing), and c's client
// address, HTTP/1 and access log format (client.go applyClient).
func (s *scopeBuilder) hcmFilter(stat, routeConfig string, use filterUse, log bool, edge ir.HTTPEdge, tr *ir.Tracing, c ir.ClientSettings) *listenerv3.Filter {
	var filters []*hcmv3.HttpFilter
	routeAuthz := len(use.authz)
	for i, f := range use.authz {
		if !strings.HasPrefix(f.name, filterExtAuthz+"/listener/") {
			routeAuthz = i
			break
		}
		filters = append(filters, f.filter) // a listener's, pre-routing
	}
	if use.rbac {
		// No rules: routes without a per-route policy let everyone in.
		filters = append(filters, &hcmv3.HttpFilter{
			Name:       filterRBAC,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&rbacv3.RBAC{})},
		})
	}
	if use.cors {
		filters = append(filters, &hcmv3.HttpFilter{
			Name:       filterCORS,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&corsv3.Cors{})},
		})
	}
	// Authentication (oauth2.go, jwt.go, authn.go) after CORS, whose
	// preflight requests carry no credentials, and before a route's
	// external checks: first the OIDC login, whose session cookies and
	// their SDS secrets the chain then needs.
	for _, f := range use.oauth2 {
		filters = append(filters, f.filter)
		for _, sec := range f.secrets {
			s.generic[sec.Name] = sec
		}
	}
	if len(use.jwt) > 0 {
		filters = append(filters, jwtAuthnFilter(use.jwt))
	}
	for _, f := range use.basicAuth {
		filters = append(filters, f.filter)
	}
	if use.apiKey {
		filters = append(filters, apiKeyAuthFilter())
	}
	if use.signIn {
		// Before the route's checks: their 401 replies pass through it.
		filters = append(filters, customResponseFilter())
	}
	for _, f := range use.authz[routeAuthz:] {
		filters = append(filters, f.filter)
	}
	if use.securityRBAC {
		// After every authentication: it reads jwt_authn's metadata.
		filters = append(filters, securityRBACFilter())
	}
	if use.localRateLimit {
		filters = append(filters, localRateLimitFilter())
	}
	for _, f := range use.rateLimits {
		filters = append(filters, f.filter) // after the local limits: a request they refuse spends no global count
	}
	if use.buffer {
		filters = append(filters, bufferFilter())
	}
	if use.session {
		// No session state: routes without a per-route one have no
		// session persistence.
		filters = append(filters, &hcmv3.HttpFilter{
			Name:       filterStatefulSession,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&statefulsessionv3.StatefulSession{})},
		})
	}
	for _, f := range use.compressors {
		filters = append(filters, f.filter)
	}
	filters = append(filters, &hcmv3.HttpFilter{
		Name:       filterRouter,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&routerv3.Router{})},
	})
	h := &hcmv3.HttpConnectionManager{
		CodecType:  hcmv3.HttpConnectionManager_AUTO,
		StatPrefix: stat,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: routeConfig,
		}},
		HttpFilters:                  filters,
		UseRemoteAddress:             wrapperspb.Bool(true),
		NormalizePath:                wrapperspb.Bool(true),
		MergeSlashes:                 true,
		PathWithEscapedSlashesAction: hcmv3.HttpConnectionManager_UNESCAPE_AND_REDIRECT,
		// WebSocket (HTTP/1.1 Upgrade) is forwarded to every backend: a
		// Service port with appProtocol kubernetes.io/ws (GEP-1911) needs
		// it, any other backend answers the upgrade as it sees fit.
		UpgradeConfigs: []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: "websocket", Filters: upgradeFilters(filters)}},
	}
	applyEdge(h, edge)
	h.Tracing = s.tracing(tr)
	if log {
		h.AccessLog = []*accesslogv3.AccessLog{stdoutAccessLog(nil)}
	}
	applyClient(h, c) // client.go
	return &listenerv3.Filter{Name: filterHCM, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(h)}}
}

// upgradeFilters is the filter chain of an upgraded (WebSocket) request:
// nil, the chain's own, unless it holds the buffer filter (traffic.go),
// which waits for the end of a request's body, and an upgraded request's
// never ends: then the chain without it.
func upgradeFilters(filters []*hcmv3.HttpFilter) []*hcmv3.HttpFilter {
	if !slices.ContainsFunc(filters, func(f *hcmv3.HttpFilter) bool { return f.Name == filterBuffer }) {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(filters), func(f *hcmv3.HttpFilter) bool { return f.Name == filterBuffer })
}
