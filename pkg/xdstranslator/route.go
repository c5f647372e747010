package xdstranslator

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// routeConfig renders the HTTP routes of the listeners ls (that share one
// HTTP connection manager) as the route configuration name, plus a virtual
// host answering 421 for each domain of misdirected (misdirectedHosts)
// that no route's virtual host has. Each virtual host is named after the
// listener whose routes it holds and its hostname (virtualHostName). It
// reports which optional filters the routes use (CORS, RBAC), so that they
// join the chain.
//
// A listener's routes come grouped by hostname (pkg/gatewayapi sorts them
// so): each run of routes with one hostname is a virtual host, rendered
// once and then found in the scope's cache (virtualHost) while its routes
// are the same objects. Virtual hosts are ordered most specific first by
// their domain (compareHostSpecificity).
func (s *scopeBuilder) routeConfig(name string, ls []*ir.Listener, misdirected []string, altSvc string) (*routev3.RouteConfiguration, filterUse, error) {
	s.configs[name] = true
	// A request for host H is served by the most specific listener whose
	// hostname covers H: only that listener's routes go into H's virtual
	// host.
	bySpecificity := ls
	if len(ls) > 1 {
		bySpecificity = slices.Clone(ls)
		slices.SortStableFunc(bySpecificity, func(a, b *ir.Listener) int { return compareHostSpecificity(a.Hostname, b.Hostname) })
	}
	// A listener's own hostname is the most specific one that covers
	// it; only "" and "*." wildcards cover other hosts. (A scan of every
	// listener per host was quadratic: 2,500 ListenerSets on one port.)
	named := make(map[string]*ir.Listener, len(ls))
	var wide []*ir.Listener
	for _, l := range bySpecificity {
		if _, ok := named[l.Hostname]; !ok {
			named[l.Hostname] = l
		}
		if l.Hostname == "" || strings.HasPrefix(l.Hostname, "*.") {
			wide = append(wide, l)
		}
	}
	owner := func(host string) *ir.Listener {
		if l := named[host]; l != nil {
			return l
		}
		for _, l := range wide {
			if covers(l.Hostname, host) {
				return l
			}
		}
		return nil
	}
	n := 0
	for _, l := range ls {
		n += len(l.HTTPRoutes)
	}
	runs := make([]hostRoutes, 0, n)
	var empty []*routev3.VirtualHost
	for _, l := range ls {
		own := strings.ToLower(l.Hostname)
		if own != "" && owner(own) != l {
			own = ""
		}
		for i := 0; i < len(l.HTTPRoutes); {
			// Hostnames that differ in case only make runs of their own,
			// merged into one virtual host below (mergeVirtualHosts).
			first := l.HTTPRoutes[i].Hostname
			j := i + 1
			for j < len(l.HTTPRoutes) && l.HTTPRoutes[j].Hostname == first {
				j++
			}
			run := hostRoutes{l, int32(i), int32(j)}
			i = j
			if len(ls) > 1 && owner(run.host()) != l {
				continue
			}
			runs = append(runs, run)
			if own != "" && run.host() == own {
				own = ""
			}
		}
		if own != "" {
			// The listener's hostname gets a virtual host, empty if need
			// be, so that its requests never reach a less specific one.
			empty = append(empty, &routev3.VirtualHost{Name: virtualHostName(l, own), Domains: []string{own}})
		}
	}
	var used filterUse
	memos, err := s.virtualHosts(name, runs)
	if err != nil {
		return nil, used, err
	}
	vhosts := make([]*routev3.VirtualHost, 0, len(memos)+len(empty))
	for _, m := range memos {
		used.add(m.use)
		vhosts = append(vhosts, m.vhost)
	}
	vhosts = append(vhosts, empty...)
	vhosts = sortVirtualHosts(vhosts)
	for _, h := range misdirected {
		i, found := slices.BinarySearchFunc(vhosts, h, func(v *routev3.VirtualHost, h string) int { return compareHostSpecificity(v.Domains[0], h) })
		if found {
			continue
		}
		vhosts = slices.Insert(vhosts, i, &routev3.VirtualHost{
			Name:    virtualHostName(ls[0], h),
			Domains: []string{h},
			Routes: []*routev3.Route{{
				Name:   "misdirected/" + h,
				Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: directResponse(&ir.DirectResponse{StatusCode: 421}),
			}},
		})
	}
	m := s.cache.configs[name]
	m.memos = memos
	if m.config != nil && m.altSvc == altSvc && slices.Equal(m.vhosts, vhosts) {
		return m.config, m.use, nil
	}
	m.vhosts, m.use, m.altSvc = vhosts, used, altSvc
	m.config = &routev3.RouteConfiguration{
		Name:                     name,
		IgnorePortInHostMatching: true,
		VirtualHosts:             vhosts,
		ResponseHeadersToAdd:     altSvcHeader(altSvc), // http3.go
	}
	return m.config, used, nil
}

// sortVirtualHosts orders vhosts most specific first
// by domain (compareHostSpecificity; they mostly come so) and merges those
// of one domain: routes of one hostname that did not come together (in another
// case, or in an IR made by hand) share one virtual host, in order.
func sortVirtualHosts(vhosts []*routev3.VirtualHost) []*routev3.VirtualHost {
	sorted, unique := true, true
	for i := 1; i < len(vhosts) && sorted; i++ {
		switch c := compareHostSpecificity(vhosts[i-1].Domains[0], vhosts[i].Domains[0]); {
		case c > 0:
			sorted = false
		case c == 0:
			unique = false
		}
	}
	if !sorted {
		slices.SortStableFunc(vhosts, func(a, b *routev3.VirtualHost) int { return compareHostSpecificity(a.Domains[0], b.Domains[0]) })
	}
	if sorted && unique {
		return vhosts
	}
	for i := 1; i < len(vhosts); i++ {
		if vhosts[i].Domains[0] != vhosts[i-1].Domains[0] {
			continue
		}
		// Both come from the listener that owns the domain: its checks
		// (TypedPerFilterConfig) are the same.
		merged := &routev3.VirtualHost{Name: vhosts[i].Name, Domains: vhosts[i].Domains,
			Routes:               append(slices.Clone(vhosts[i-1].Routes), vhosts[i].Routes...),
			TypedPerFilterConfig: vhosts[i].TypedPerFilterConfig}
		vhosts = slices.Replace(vhosts, i-1, i+1, merged)
		i--
	}
	return vhosts
}

// covers says whether a listener with hostname listener accepts requests
// for host (a name, a "*." wildcard or "*").
func covers(listener, host string) bool {
	switch {
	case listener == "" || listener == host:
		return true
	case strings.HasPrefix(listener, "*."):
		return len(host) > len(listener)-1 && strings.HasSuffix(host, listener[1:])
	}
	return false
}

// route renders one IR HTTP route of a listener whose Gateway port is
// listenerPort. It reports which optional filters the route uses, and the
// valid backends it sends requests to (and mirrors), whose clusters it
// needs.
func (s *scopeBuilder) route(r *ir.HTTPRoute, listenerPort uint32) (out *routev3.Route, use filterUse, used []*ir.Backend, err error) {
	out = &routev3.Route{Name: r.Name, Match: routeMatch(&r.Match, r.GRPC)}
	f := &r.Filters
	if h := f.RequestHeaders; h != nil {
		out.RequestHeadersToAdd, out.RequestHeadersToRemove = headerMods(h)
	}
	if h := f.ResponseHeaders; h != nil {
		out.ResponseHeadersToAdd, out.ResponseHeadersToRemove = headerMods(h)
	}
	switch {
	case r.DirectResponse != nil:
		out.Action = directResponse(r.DirectResponse)
	case f.Redirect != nil:
		rd, err := redirect(f.Redirect, r.Match.Path, listenerPort)
		if err != nil {
			return nil, use, nil, err
		}
		out.Action = &routev3.Route_Redirect{Redirect: rd}
	case r.Backends != nil:
		ra, direct, u, err := routeAction(r)
		if err != nil {
			return nil, use, nil, err
		}
		used = u
		if direct != nil {
			out.Action = directResponse(direct)
			break
		}
		out.Action = &routev3.Route_Route{Route: ra}
		if r.StatName != "" {
			// Route statistics count upstream requests: only a route
			// that forwards gets them.
			out.StatPrefix = routeStatName(r)
		}
		if f.CORS != nil {
			setPerFilter(out, filterCORS, toAny(corsPolicy(f.CORS)))
			use.cors = true
		}
		if sp := r.SessionPersistence; sp != nil {
			setPerFilter(out, filterStatefulSession, toAny(statefulSession(sp)))
			use.session = true
		}
	default:
		return nil, use, nil, fmt.Errorf("the route has no action")
	}
	if r.DirectResponse == nil {
		// The route's checks (extauth.go): a SecurityPolicy's, then the
		// rule's own; a request must pass both.
		for _, a := range routeChecks(f) {
			af, enable := extAuthz(a, -1)
			if a == f.SecurityExtAuth {
				af = policyCheck(af)
			}
			setPerFilter(out, af.name, enable)
			use.addAuthz(af)
			used = append(used, a.Backend)
			if l := bodyBufferLimit(a); l.GetValue() > out.RequestBodyBufferLimit.GetValue() {
				out.RequestBodyBufferLimit = l
			}
			if a.SignIn != nil {
				setPerFilter(out, filterCustomResponse, signInRedirect(a.SignIn))
				use.signIn = true
			}
		}
		// Authentication (authn.go, oauth2.go, jwt.go) and authorization
		// (securityrbac.go) of a SecurityPolicy.
		if a := f.BasicAuth; a != nil {
			bf, per := basicAuth(a)
			setPerFilter(out, bf.name, per)
			use.basicAuth = addNamed(use.basicAuth, bf)
		}
		if o := f.OIDC; o != nil {
			of, enable := oauth2(o)
			setPerFilter(out, of.name, enable)
			use.oauth2 = addNamed(use.oauth2, of)
			used = append(used, o.TokenBackend)
		}
		if a := f.APIKeyAuth; a != nil {
			setPerFilter(out, filterAPIKeyAuth, apiKeyAuth(a))
			use.apiKey = true
		}
		if j := f.JWT; j != nil {
			req, per := jwtAuthn(j)
			setPerFilter(out, filterJWTAuthn, per)
			use.jwt = addJWT(use.jwt, req)
			for _, p := range j.Providers {
				if p.RemoteJWKS != nil {
					used = append(used, p.RemoteJWKS.Backend)
				}
			}
		}
		if a := f.Authorization; a != nil {
			p, err := securityRBAC(a)
			if err != nil {
				return nil, use, nil, err
			}
			setPerFilter(out, filterSecurityRBAC, toAny(p))
			use.securityRBAC = true
		}
	}
	traffic(out, r, &use) // a TrafficPolicy's (traffic.go), then its global limits (ratelimit.go)
	rls, err := globalRateLimit(out, r, s.domain, &use)
	if err != nil {
		return nil, use, nil, err
	}
	if rls != nil {
		used = append(used, rls)
	}
	if exempt := exemptRanges(r); len(f.AllowedSourceRanges) > 0 || len(exempt) > 0 {
		p, err := sourceRangesRBAC(f.AllowedSourceRanges, exempt)
		if err != nil {
			return nil, use, nil, err
		}
		setPerFilter(out, filterRBAC, toAny(p))
		use.rbac = true
	}
	return out, use, used, nil
}

// setPerFilter sets out's per-route configuration of the HTTP filter
// name (typed_per_filter_config).
func setPerFilter(out *routev3.Route, name string, cfg *anypb.Any) {
	if out.TypedPerFilterConfig == nil {
		out.TypedPerFilterConfig = map[string]*anypb.Any{}
	}
	out.TypedPerFilterConfig[name] = cfg
}

// routeMatch renders a route's match; a gRPC route matches only gRPC
// requests (RouteMatch.grpc: content-type application/grpc or
// application/grpc+...).
func routeMatch(m *ir.HTTPMatch, grpc bool) *routev3.RouteMatch {
	out := &routev3.RouteMatch{}
	if grpc {
		out.Grpc = &routev3.RouteMatch_GrpcRouteMatchOptions{}
	}
	switch p := m.Path; {
	case p == nil:
		out.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: "/"}
	case p.Type == ir.MatchExact:
		out.PathSpecifier = &routev3.RouteMatch_Path{Path: p.Value}
	case p.Type == ir.MatchRegex:
		out.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: p.Value}}
	default: // PathPrefix; a trailing slash is ignored.
		if v := strings.TrimRight(p.Value, "/"); v != "" {
			out.PathSpecifier = &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: v}
		} else {
			out.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: "/"}
		}
	}
	if m.Method != "" {
		out.Headers = append(out.Headers, headerMatcher(ir.StringMatch{Name: ":method", Type: ir.MatchExact, Value: m.Method}))
	}
	for _, h := range m.Headers {
		out.Headers = append(out.Headers, headerMatcher(h))
	}
	for _, q := range m.QueryParams {
		out.QueryParameters = append(out.QueryParameters, &routev3.QueryParameterMatcher{
			Name:                         q.Name,
			QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: stringMatcher(q)},
		})
	}
	return out
}

func headerMatcher(m ir.StringMatch) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{
		Name:                 strings.ToLower(m.Name),
		HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: stringMatcher(m)},
	}
}

func stringMatcher(m ir.StringMatch) *matcherv3.StringMatcher {
	if m.Type == ir.MatchRegex {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: m.Value}}}
	}
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: m.Value}}
}

// modifiable says whether Envoy lets a header modifier touch name, in a
// request or a response: not Host, not a pseudo-header (Envoy refuses the
// whole route configuration: ":-prefixed or host headers may not be
// modified"). It is a guard only: pkg/gatewayapi decides what such an edit
// means (a `set` of Host is a host rewrite, the rest is refused, see its
// headers.go) and ir.Validate makes sure none reaches this package, so that
// no route accepted by the Gateway API translator loses an edit here.
func modifiable(name string) bool {
	n := strings.ToLower(name)
	return n != "" && !strings.HasPrefix(n, ":") && n != "host"
}

// headerMods renders a request or response header modifier: Set
// overwrites, Add appends, Remove removes; edits of headers that are not
// modifiable are left out.
func headerMods(h *ir.HeaderModifier) ([]*corev3.HeaderValueOption, []string) {
	var add []*corev3.HeaderValueOption
	for _, kv := range h.Set {
		if !modifiable(kv.Name) {
			continue
		}
		add = append(add, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: kv.Name, Value: literal(kv.Value)},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	for _, kv := range h.Add {
		if !modifiable(kv.Name) {
			continue
		}
		add = append(add, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: kv.Name, Value: literal(kv.Value)},
			AppendAction: corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD,
		})
	}
	var remove []string
	for _, n := range h.Remove {
		if modifiable(n) {
			remove = append(remove, n)
		}
	}
	return add, remove
}

// literal escapes a header value for Envoy, which reads the values of
// request_headers_to_add and response_headers_to_add as format strings
// (HeaderValueOption, "%" starts a command operator): "%" becomes "%%", so
// the value is sent exactly as the Gateway API spec gave it.
func literal(v string) string { return strings.ReplaceAll(v, "%", "%%") }

func directResponse(d *ir.DirectResponse) *routev3.Route_DirectResponse {
	a := &routev3.DirectResponseAction{Status: d.StatusCode}
	if d.Body != "" {
		a.Body = &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: d.Body}}
	}
	return &routev3.Route_DirectResponse{DirectResponse: a}
}

var redirectCodes = map[uint32]routev3.RedirectAction_RedirectResponseCode{
	301: routev3.RedirectAction_MOVED_PERMANENTLY,
	302: routev3.RedirectAction_FOUND,
	303: routev3.RedirectAction_SEE_OTHER,
	307: routev3.RedirectAction_TEMPORARY_REDIRECT,
	308: routev3.RedirectAction_PERMANENT_REDIRECT,
}

// redirect renders a RequestRedirect filter of a route served on the
// Gateway listener port listenerPort. Without a port, the port follows
// HTTPRequestRedirectFilter.port: a scheme redirects to its well-known port,
// and without a scheme the redirect keeps the Gateway listener's port (not
// the request's, which a Host header or a port mapping may change). Envoy
// leaves a scheme's default port out of Location.
func redirect(r *ir.Redirect, match *ir.StringMatch, listenerPort uint32) (*routev3.RedirectAction, error) {
	code, ok := redirectCodes[r.StatusCode]
	if !ok {
		return nil, fmt.Errorf("redirect status %d is not 301, 302, 303, 307 or 308", r.StatusCode)
	}
	a := &routev3.RedirectAction{ResponseCode: code, HostRedirect: r.Hostname}
	if r.Scheme != "" {
		a.SchemeRewriteSpecifier = &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: strings.ToLower(r.Scheme)}
	}
	switch {
	case r.Port != 0:
		a.PortRedirect = r.Port
	case strings.EqualFold(r.Scheme, "http"):
		a.PortRedirect = 80
	case strings.EqualFold(r.Scheme, "https"):
		a.PortRedirect = 443
	default:
		a.PortRedirect = listenerPort
	}
	if p := r.Path; p != nil {
		switch p.Type {
		case ir.ReplaceFullPath:
			a.PathRewriteSpecifier = &routev3.RedirectAction_PathRedirect{PathRedirect: p.Value}
		case ir.ReplacePrefixMatch:
			prefix, re, err := prefixReplacement(match, p.Value)
			if err != nil {
				return nil, err
			}
			switch {
			case re != nil:
				a.PathRewriteSpecifier = &routev3.RedirectAction_RegexRewrite{RegexRewrite: re}
			case prefix != "":
				a.PathRewriteSpecifier = &routev3.RedirectAction_PrefixRewrite{PrefixRewrite: prefix}
			}
		default:
			return nil, fmt.Errorf("unknown path modifier %q", p.Type)
		}
	}
	return a, nil
}

// prefixReplacement replaces the prefix that match matched with repl,
// keeping the path's remaining segments: with match "/foo", "/foo/x"
// becomes repl+"/x" and "/foo" becomes repl. Envoy's prefix_rewrite swaps
// the matched characters, which is right except when the prefix or the
// replacement is "/", where a regex avoids "//x" and "barx". It returns
// ("", nil) when nothing changes.
func prefixReplacement(match *ir.StringMatch, repl string) (string, *matcherv3.RegexMatchAndSubstitute, error) {
	if match == nil || match.Type != ir.MatchPathPrefix {
		return "", nil, fmt.Errorf("ReplacePrefixMatch needs a PathPrefix match")
	}
	p := strings.TrimRight(match.Value, "/")
	r := strings.TrimRight(repl, "/")
	switch {
	case p == "" && r == "":
		return "", nil, nil
	case p == "":
		return r + "/", nil, nil
	case r == "":
		return "", &matcherv3.RegexMatchAndSubstitute{
			Pattern:      &matcherv3.RegexMatcher{Regex: "^" + regexp.QuoteMeta(p) + "/*"},
			Substitution: "/",
		}, nil
	}
	return r, nil, nil
}

// routeAction forwards to the route's backends. It returns a direct
// response instead when no request can reach a valid backend, and the
// valid backends it uses (those with a weight, and mirrors).
func routeAction(r *ir.HTTPRoute) (*routev3.RouteAction, *ir.DirectResponse, []*ir.Backend, error) {
	ra := &routev3.RouteAction{}
	var live, used []*ir.Backend
	for _, b := range r.Backends.Backends {
		if b.Weight == 0 {
			continue
		}
		live = append(live, b)
		if !b.Invalid {
			used = append(used, b)
		}
	}
	if len(used) == 0 {
		return nil, &ir.DirectResponse{StatusCode: FailureStatus(r)}, nil, nil
	}
	if len(live) == 1 && live[0].RequestHeaders == nil && live[0].ResponseHeaders == nil && live[0].HostRewrite == "" {
		ra.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: live[0].Name}
	} else {
		wc := &routev3.WeightedCluster{}
		for _, b := range live {
			cw := &routev3.WeightedCluster_ClusterWeight{Name: clusterOf(b), Weight: wrapperspb.UInt32(b.Weight)}
			if b.Invalid {
				ra.ClusterNotFoundResponseCode = routev3.RouteAction_INTERNAL_SERVER_ERROR
				if r.GRPC {
					ra.ClusterNotFoundResponseCode = routev3.RouteAction_SERVICE_UNAVAILABLE
				}
			} else {
				if h := b.RequestHeaders; h != nil {
					cw.RequestHeadersToAdd, cw.RequestHeadersToRemove = headerMods(h)
				}
				if h := b.ResponseHeaders; h != nil {
					cw.ResponseHeadersToAdd, cw.ResponseHeadersToRemove = headerMods(h)
				}
				if b.HostRewrite != "" {
					// A backendRef's `set` of Host: only its share of
					// requests gets it (the route has no host rewrite then).
					cw.HostRewriteSpecifier = &routev3.WeightedCluster_ClusterWeight_HostRewriteLiteral{HostRewriteLiteral: b.HostRewrite}
				}
			}
			wc.Clusters = append(wc.Clusters, cw)
		}
		ra.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}
	}
	ra.HashPolicy = hashPolicy(live) // backendpolicy.go
	if u := r.Filters.URLRewrite; u != nil {
		if u.Hostname != "" {
			// A URLRewrite hostname, or a rule's `set` of Host.
			ra.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: u.Hostname}
		}
		if p := u.Path; p != nil {
			switch p.Type {
			case ir.ReplaceFullPath:
				ra.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{
					Pattern:      &matcherv3.RegexMatcher{Regex: "^/.*$"},
					Substitution: p.Value,
				}
			case ir.ReplacePrefixMatch:
				prefix, re, err := prefixReplacement(r.Match.Path, p.Value)
				if err != nil {
					return nil, nil, nil, err
				}
				ra.PrefixRewrite, ra.RegexRewrite = prefix, re
			case ir.RegexReplace:
				ra.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{
					Pattern:      &matcherv3.RegexMatcher{Regex: p.Pattern},
					Substitution: p.Value,
				}
			default:
				return nil, nil, nil, fmt.Errorf("unknown path modifier %q", p.Type)
			}
		}
	}
	for _, m := range r.Filters.Mirrors {
		if m.Backend == nil || m.Backend.Invalid || m.Percent <= 0 {
			continue
		}
		used = append(used, m.Backend)
		mp := &routev3.RouteAction_RequestMirrorPolicy{Cluster: m.Backend.Name}
		if m.Percent < 100 {
			mp.RuntimeFraction = &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{
				Numerator:   uint32(math.Round(m.Percent * 10000)),
				Denominator: typev3.FractionalPercent_MILLION,
			}}
		}
		ra.RequestMirrorPolicies = append(ra.RequestMirrorPolicies, mp)
	}
	timeoutsAndRetries(ra, r.Timeouts, r.Retry)
	if r.GRPC {
		// A gRPC call, a long-lived stream included, runs until the
		// deadline its client sends in grpc-timeout, if any, instead of
		// Envoy's 15s route timeout.
		ra.Timeout = durationpb.New(0)
		ra.MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: durationpb.New(0)}
	}
	return ra, nil, used, nil
}

// FailureStatus is the HTTP status of a route's requests that cannot reach
// a valid backend: 503 for gRPC routes (Envoy sends gRPC clients
// grpc-status 14 UNAVAILABLE), 500 otherwise.
func FailureStatus(r *ir.HTTPRoute) uint32 {
	if r.GRPC {
		return 503
	}
	return 500
}

func timeoutsAndRetries(ra *routev3.RouteAction, t *ir.Timeouts, retry *ir.Retry) {
	var perTry time.Duration
	if t != nil {
		if t.Request != nil {
			ra.Timeout = durationpb.New(t.Request.Duration)
		}
		if t.BackendRequest != nil {
			perTry = t.BackendRequest.Duration
		}
	}
	if retry == nil && perTry <= 0 {
		return
	}
	rp := &routev3.RetryPolicy{NumRetries: wrapperspb.UInt32(0)}
	if retry != nil {
		rp.NumRetries = wrapperspb.UInt32(retry.Attempts)
		rp.RetryOn = "connect-failure,refused-stream"
		if len(retry.Codes) > 0 {
			rp.RetryOn += ",retriable-status-codes"
			rp.RetriableStatusCodes = slices.Clone(retry.Codes)
		}
		if retry.Backoff != nil && retry.Backoff.Duration > 0 {
			rp.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(retry.Backoff.Duration)}
		}
	}
	if perTry > 0 {
		rp.PerTryTimeout = durationpb.New(perTry)
		if ra.Timeout == nil {
			ra.Timeout = durationpb.New(perTry * time.Duration(rp.NumRetries.GetValue()+1))
		}
	}
	ra.RetryPolicy = rp
}

// corsPolicy renders a CORS filter. The origin "*" matches every origin; a
// "*" inside an origin ("https://*.example.com") matches one or more
// characters other than "/".
func corsPolicy(c *ir.CORS) *corsv3.CorsPolicy {
	p := &corsv3.CorsPolicy{
		AllowMethods:  strings.Join(c.AllowMethods, ","),
		AllowHeaders:  strings.Join(c.AllowHeaders, ","),
		ExposeHeaders: strings.Join(c.ExposeHeaders, ","),
		// A preflight from an origin the filter does not allow is answered
		// by Envoy without CORS headers, never passed to the backend
		// (GEP-1767: the gateway handles preflights; conformance HTTPRouteCORS).
		ForwardNotMatchingPreflights: wrapperspb.Bool(false),
	}
	for _, o := range c.AllowOrigins {
		if !strings.Contains(o, "*") {
			p.AllowOriginStringMatch = append(p.AllowOriginStringMatch, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: o}})
			continue
		}
		re := ".*"
		if o != "*" {
			re = strings.ReplaceAll(regexp.QuoteMeta(o), `\*`, "[^/]+")
		}
		p.AllowOriginStringMatch = append(p.AllowOriginStringMatch, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}})
	}
	if c.AllowCredentials {
		p.AllowCredentials = wrapperspb.Bool(true)
	}
	if c.MaxAge != nil {
		p.MaxAge = strconv.FormatInt(int64(c.MaxAge.Duration/time.Second), 10)
	}
	return p
}

// typedExtension wraps m for an xDS matcher action.
func typedExtension(name string, m proto.Message) *xdscorev3.TypedExtensionConfig {
	return &xdscorev3.TypedExtensionConfig{Name: name, TypedConfig: toAny(m)}
}
