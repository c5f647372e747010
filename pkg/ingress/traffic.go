package ingress

// Traffic annotations (ingress-nginx's limit-*, proxy-body-size,
// affinity and session-cookie-*, upstream-hash-by, load-balance,
// permanent-redirect, temporal-redirect, app-root, ssl-passthrough,
// enable-access-log), mapped onto the IR
// fields the policy kinds fill, so that one renderer serves both:
//   - limit-rps, limit-rpm (and limit-burst-multiplier): ir.Traffic
//     LocalRateLimit, a bucket per client address (TrafficPolicy's
//     rateLimit.local with clientIP);
//   - proxy-body-size: ir.Traffic MaxRequestBodyBytes (TrafficPolicy's
//     requestBodySize);
//   - affinity: cookie: the route's ir.SessionPersistence (an HTTPRoute
//     rule's sessionPersistence);
//   - upstream-hash-by and load-balance: the backend's
//     ir.BackendPolicy LoadBalancer and Hash (BackendPolicy's
//     loadBalancer), its cluster named apart;
//   - permanent-redirect, temporal-redirect and app-root: an ir.Redirect
//     made and validated as an HTTPRoute RequestRedirect filter;
//   - limit-whitelist: the rate limit's ExemptRanges;
//   - ssl-passthrough: a TLS passthrough listener per host
//     (passthrough.go);
//   - enable-access-log: the class listener's NoAccessLog, from the
//     class's defaultAnnotations only.
//
// A value that cannot be honoured is reported (InvalidAnnotation) and
// ignored, as for every annotation but the auth-* ones.

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// trafficSettings are what the traffic annotations of an Ingress ask for.
type trafficSettings struct {
	// traffic holds the rate limits and the body limit of every route.
	traffic *ir.Traffic
	// session is every route's session persistence (affinity: cookie).
	session *ir.SessionPersistence
	// lb and hash replace the load balancer and hash key of every
	// backend ("" and nil: the BackendPolicy's, else round robin).
	lb   ir.LoadBalancerType
	hash *ir.HashKey
	// redirect, when set, is what every path answers instead of its
	// backend (permanent-redirect, temporal-redirect).
	redirect *ir.Redirect
	// appRoot, when set, is the redirect "/" of each host of the Ingress
	// answers (app-root).
	appRoot *ir.Redirect
	// passthrough is the key of a true ssl-passthrough annotation, ""
	// without (passthrough.go).
	passthrough string
}

// Defaults of ingress-nginx's traffic annotations.
const (
	// defaultBurstMultiplier is limit-burst-multiplier's default.
	defaultBurstMultiplier = 5
	// defaultAffinityCookie is session-cookie-name's default.
	defaultAffinityCookie = "INGRESSCOOKIE"
)

// readTraffic reads every traffic annotation into s.
func (t *translator) readTraffic(a *annotationReader, s *settings) {
	a.rateLimits(s)
	a.bodySize(s)
	a.affinity(s)
	a.loadBalancing(s)
	t.redirects(a, s)
	if a.boolean("ssl-passthrough", "ssl-passthrough") {
		_, s.passthrough, _ = a.get("ssl-passthrough", "ssl-passthrough")
	}
	a.accessLog()
}

// accessLog reads enable-access-log. Envoy's access log is a setting of
// the listener, which every Ingress of the class shares: "false" in the
// class's defaultAnnotations turns it off for the class
// (classNoAccessLog, as IngressClassParameters accessLog: Off); an
// Ingress's own value that differs from the class's cannot be honoured.
func (a *annotationReader) accessLog() {
	v, key, ok := a.get("enable-access-log", "enable-access-log")
	if !ok {
		return
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		a.invalid(key, "%q is not true or false", v)
		return
	}
	if _, own := a.is.obj.Annotations[key]; own && on != !a.classNoLog {
		a.invalid(key, "the access log is the class's listener's, on or off for all its Ingresses: set enable-access-log in the IngressClassParameters' defaultAnnotations (or its accessLog)")
	}
}

// classNoAccessLog says whether c's IngressClassParameters turn the
// access log off: accessLog Off, or enable-access-log "false" (ours or
// ingress-nginx's) in its defaultAnnotations.
func classNoAccessLog(c *Class) bool {
	if c.Params == nil {
		return false
	}
	if l := c.Params.Spec.AccessLog; l != nil && *l == v1alpha1.AccessLogOff {
		return true
	}
	d := c.Params.Spec.DefaultAnnotations
	v, ok := d[Prefix+"enable-access-log"]
	if !ok {
		v = d[NginxPrefix+"enable-access-log"]
	}
	off, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && !off
}

// rateLimits reads limit-rps and limit-rpm (requests per second and per
// minute from one client address, ingress-nginx's limit_req per
// $binary_remote_addr) with limit-burst-multiplier (the bucket holds
// multiplier x rate requests, default 5): one ir.RateLimitRule per rate,
// keyed by the client address. Unlike nginx (503), a refused request gets
// 429 with Retry-After and the X-RateLimit-* headers, as a TrafficPolicy's
// does; limit-whitelist exempts client ranges (limitWhitelist).
// limit-connections (concurrent connections per client address) has no
// Envoy mechanism per client and is refused.
func (a *annotationReader) rateLimits(s *settings) {
	mult := uint64(defaultBurstMultiplier)
	if v, key, ok := a.get("limit-burst-multiplier", "limit-burst-multiplier"); ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n < 1 {
			a.invalid(key, "%q is not a whole number of at least 1", v)
		} else {
			mult = n
		}
	}
	var rules []ir.RateLimitRule
	for _, r := range []struct {
		name   string
		period time.Duration
	}{{"limit-rps", time.Second}, {"limit-rpm", time.Minute}} {
		v, key, ok := a.get(r.name, r.name)
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n < 1 {
			a.invalid(key, "%q is not a whole number of requests of at least 1", v)
			continue
		}
		burst := min(n*mult, math.MaxUint32)
		rules = append(rules, ir.RateLimitRule{Requests: uint32(n), Period: r.period, Burst: uint32(burst), Key: ir.RateLimitClientIP})
	}
	if v, key, ok := a.get("limit-connections", "limit-connections"); ok {
		a.invalid(key, "%q: Envoy has no limit of concurrent connections per client address (use limit-rps or limit-rpm)", v)
	}
	exempt := a.limitWhitelist(len(rules) > 0)
	if len(rules) > 0 {
		s.traffic = withTraffic(s.traffic)
		s.traffic.LocalRateLimit = &ir.LocalRateLimit{Rules: rules, ExemptRanges: exempt}
	}
}

// limitWhitelist reads limit-whitelist: client address ranges (CIDRs or
// addresses, comma-separated) that the rate limits do not count. Without
// a limit it is unused; reported when it is the Ingress's own.
func (a *annotationReader) limitWhitelist(limited bool) []string {
	v, key, ok := a.get("limit-whitelist", "limit-whitelist", "limit-allowlist")
	if !ok {
		return nil
	}
	if !limited {
		if _, own := a.is.obj.Annotations[key]; own {
			a.invalid(key, "it needs limit-rps or limit-rpm")
		}
		return nil
	}
	var out []string
	for _, r := range strings.Split(v, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		c, msg := gatewayapi.ClientCIDR(r)
		if msg != "" {
			a.invalid(key, "%s", msg)
			return nil
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func withTraffic(t *ir.Traffic) *ir.Traffic {
	if t == nil {
		return &ir.Traffic{}
	}
	return t
}

// bodySize reads proxy-body-size (ingress-nginx's client_max_body_size):
// bytes, or a number with the unit k, m or g (1024, 1024², 1024³; either
// case), "0" for no limit. A larger request body gets 413. At most 64m
// (ir.MaxRequestBodyLimit: Envoy holds the body until it has all of it).
func (a *annotationReader) bodySize(s *settings) {
	v, key, ok := a.get("proxy-body-size", "proxy-body-size")
	if !ok {
		return
	}
	n, ok := nginxSize(v)
	switch {
	case !ok:
		a.invalid(key, "%q is not a size (bytes, or a number with k, m or g)", v)
	case n > ir.MaxRequestBodyLimit:
		a.invalid(key, "%q is over 64m, the largest body Envoy holds to check its size", v)
	case n > 0:
		s.traffic = withTraffic(s.traffic)
		s.traffic.MaxRequestBodyBytes = uint32(n)
	}
}

// nginxSize parses an nginx size: digits, then an optional unit k, m or
// g in either case.
func nginxSize(v string) (uint64, bool) {
	mult := uint64(1)
	if v != "" {
		switch v[len(v)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult > 1 {
			v = v[:len(v)-1]
		}
	}
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return n * mult, true
}

// affinity reads affinity: cookie with session-cookie-name (default
// INGRESSCOOKIE), session-cookie-path (default "/") and
// session-cookie-max-age, else session-cookie-expires (seconds: the
// cookie's Max-Age; neither: a session cookie), validated as an HTTPRoute
// rule's cookie sessionPersistence (gatewayapi.Refs.SessionCookie). The
// cookie names the endpoint that served the client (Envoy's stateful
// session), where ingress-nginx's names a hash of it. The session-cookie-*
// annotations of an Ingress without affinity are reported; those of its
// class's defaultAnnotations are defaults for the Ingresses that set
// affinity.
func (a *annotationReader) affinity(s *settings) {
	v, key, ok := a.get("affinity", "affinity")
	names := []string{"session-cookie-name", "session-cookie-path", "session-cookie-max-age", "session-cookie-expires"}
	if !ok {
		for _, n := range names {
			if _, k, ok := a.get(n, n); ok {
				if _, own := a.is.obj.Annotations[k]; own {
					a.invalid(k, "it needs affinity: cookie")
				}
			}
		}
		return
	}
	if v != "cookie" {
		a.invalid(key, "%q: only cookie is supported", v)
		return
	}
	name, _, _ := a.get(names[0], names[0])
	path, _, _ := a.get(names[1], names[1])
	sp := &gwapiv1.SessionPersistence{Cookie: &gwapiv1.CookieConfig{
		Name: ptrTo(gwapiv1.CookieName(cmp.Or(name, defaultAffinityCookie))), Path: ptrTo(cmp.Or(path, "/"))}}
	for _, n := range names[2:] {
		v, k, ok := a.get(n, n)
		if !ok || sp.AbsoluteTimeout != nil {
			continue
		}
		secs, err := strconv.ParseUint(v, 10, 31)
		if err != nil || secs < 1 {
			a.invalid(k, "%q is not a whole number of seconds of at least 1", v)
			return
		}
		sp.AbsoluteTimeout = ptrTo(gwapiv1.Duration(strconv.FormatUint(secs, 10) + "s"))
		sp.Cookie.LifetimeType = ptrTo(gwapiv1.PermanentCookieLifetimeType)
	}
	out, msg := gatewayapi.SessionCookie(sp)
	if msg != "" {
		a.invalid(key, "%s", msg)
		return
	}
	s.session = out
}

// hashVariables are the nginx variables upstream-hash-by may be, and the
// request header Envoy hashes for each ("" : the client's address).
var hashVariables = map[string]string{
	"$remote_addr":        "",
	"$binary_remote_addr": "",
	"$request_uri":        ":path",
	"$host":               ":authority",
	"$http_host":          ":authority",
}

// loadBalancing reads upstream-hash-by (a consistent hash, Envoy's ring
// hash, on one nginx variable: $remote_addr, $binary_remote_addr, $host,
// $http_host, $request_uri (the path and query), $http_<name> (a request
// header, '_' read as '-') or $cookie_<name> (hashed when the request has
// it; Envoy never sets it)) and load-balance
// (round_robin; ewma, which Envoy does not have, becomes least request,
// the closest: both prefer the less busy endpoints). upstream-hash-by
// wins over load-balance, as in ingress-nginx.
func (a *annotationReader) loadBalancing(s *settings) {
	lbValue, lbKey, hasLB := a.get("load-balance", "load-balance")
	if v, key, ok := a.get("upstream-hash-by", "upstream-hash-by"); ok {
		h := hashKey(v)
		if h == nil {
			a.invalid(key, "%q is not one of $remote_addr, $binary_remote_addr, $host, $http_host, $request_uri, $http_<name>, $cookie_<name>", v)
		} else {
			s.lb, s.hash = ir.LoadBalancerRingHash, h
			return
		}
	}
	if !hasLB {
		return
	}
	switch lbValue {
	case "round_robin":
		s.lb = ir.LoadBalancerRoundRobin
	case "ewma", "least_conn":
		s.lb = ir.LoadBalancerLeastRequest
	default:
		a.invalid(lbKey, "%q is not round_robin or ewma", lbValue)
	}
}

// hashKey is the hash key of one nginx variable v, nil when it has none.
func hashKey(v string) *ir.HashKey {
	if h, ok := hashVariables[v]; ok {
		if h == "" {
			return &ir.HashKey{Type: ir.HashClientIP}
		}
		return &ir.HashKey{Type: ir.HashHeader, Name: h}
	}
	if n, ok := strings.CutPrefix(v, "$http_"); ok && n != "" && gatewayapi.ValidHeaderName(n) == "" {
		return &ir.HashKey{Type: ir.HashHeader, Name: strings.ReplaceAll(strings.ToLower(n), "_", "-")}
	}
	if n, ok := strings.CutPrefix(v, "$cookie_"); ok && n != "" && gatewayapi.ValidHeaderName(n) == "" {
		return &ir.HashKey{Type: ir.HashCookie, Name: n, CookieNotSet: true}
	}
	return nil
}

// redirects reads permanent-redirect (with permanent-redirect-code,
// default 301) and temporal-redirect (with temporal-redirect-code, default
// 302): an absolute http or https URL every path answers with instead of
// its backend; permanent-redirect wins, as in ingress-nginx. And app-root:
// a path "/" of each host of the Ingress answers with 302 to. Each is made
// and validated as an HTTPRoute RequestRedirect filter (codes 301, 302,
// 303, 307, 308; a path without '?' or '#').
func (t *translator) redirects(a *annotationReader, s *settings) {
	for _, kind := range []struct {
		name string
		code uint64
	}{{"permanent-redirect", 301}, {"temporal-redirect", 302}} {
		v, key, ok := a.get(kind.name, kind.name)
		c, ckey, cok := a.get(kind.name+"-code", kind.name+"-code")
		if !ok {
			if cok {
				if _, own := a.is.obj.Annotations[ckey]; own {
					a.invalid(ckey, "it needs %s", kind.name)
				}
			}
			continue
		}
		if s.redirect != nil {
			a.invalid(key, "permanent-redirect is set; it wins")
			continue
		}
		code := kind.code
		if cok {
			n, err := strconv.ParseUint(c, 10, 16)
			if err != nil {
				a.invalid(ckey, "%q is not a status code", c)
				continue
			}
			code = n
		}
		f, msg := redirectFilter(v, code)
		if msg == "" {
			s.redirect, msg = t.redirect(a, f)
		}
		if msg != "" {
			a.invalid(key, "%s", msg)
		}
	}
	if v, key, ok := a.get("app-root", "app-root"); ok {
		f := &gwapiv1.HTTPRequestRedirectFilter{StatusCode: ptrTo(302),
			Path: &gwapiv1.HTTPPathModifier{Type: gwapiv1.FullPathHTTPPathModifier, ReplaceFullPath: ptrTo(v)}}
		r, msg := t.redirect(a, f)
		if msg != "" {
			a.invalid(key, "%s", msg)
		} else if v != "/" {
			s.appRoot = r
		}
	}
}

// redirectFilter is the RequestRedirect filter of a redirect URL raw with
// status code: its scheme, host, port, and path ("/" when it has none).
func redirectFilter(raw string, code uint64) (*gwapiv1.HTTPRequestRedirectFilter, string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Opaque != "":
		return nil, fmt.Sprintf("%q is not an absolute http or https URL", raw)
	case u.RawQuery != "" || u.Fragment != "" || strings.Contains(raw, "?") || strings.Contains(raw, "#"):
		return nil, fmt.Sprintf("%q has a query or a fragment (Envoy keeps the request's query)", raw)
	case code > 999:
		return nil, fmt.Sprintf("status %d is not 301, 302, 303, 307 or 308", code)
	}
	f := &gwapiv1.HTTPRequestRedirectFilter{
		Scheme:     ptrTo(u.Scheme),
		Hostname:   ptrTo(gwapiv1.PreciseHostname(u.Hostname())),
		StatusCode: ptrTo(int(code)),
		Path:       &gwapiv1.HTTPPathModifier{Type: gwapiv1.FullPathHTTPPathModifier, ReplaceFullPath: ptrTo(cmp.Or(u.EscapedPath(), "/"))},
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return nil, fmt.Sprintf("%q has an invalid port", raw)
		}
		f.Port = ptrTo(gwapiv1.PortNumber(n))
	}
	return f, ""
}

// redirect validates f as an HTTPRoute RequestRedirect filter and returns
// its IR redirect, or why it cannot be used.
func (t *translator) redirect(a *annotationReader, f *gwapiv1.HTTPRequestRedirectFilter) (*ir.Redirect, string) {
	if c := *f.StatusCode; c != 301 && c != 302 && c != 303 && c != 307 && c != 308 {
		return nil, fmt.Sprintf("status %d is not 301, 302, 303, 307 or 308 (Envoy's redirect codes)", c)
	}
	out, _, msgs := t.refs.Filters(gatewayapi.KindIngress, a.is.obj.Namespace, a.is.obj.Name, ir.HTTPMatch{},
		[]gwapiv1.HTTPRouteFilter{{Type: gwapiv1.HTTPRouteFilterRequestRedirect, RequestRedirect: f}}, nil)
	if len(msgs) > 0 {
		return nil, strings.Join(msgs, "; ")
	}
	return out.Redirect, ""
}

// applyTraffic gives a route that forwards to backends the traffic
// settings: the rate limits and body limit, the session persistence, the
// load balancer of its backends, or the redirect that replaces them.
func (s *settings) applyTraffic(r *ir.HTTPRoute) {
	r.Traffic = s.traffic.DeepCopy()
	if s.redirect != nil {
		r.Backends, r.Timeouts = nil, nil
		r.Filters = ir.HTTPFilters{Redirect: s.redirect.DeepCopy(), AllowedSourceRanges: r.Filters.AllowedSourceRanges}
		return
	}
	r.SessionPersistence = s.session.DeepCopy()
}

// applyLoadBalancer gives backend b the load balancer and hash key of
// upstream-hash-by or load-balance, over those of its BackendPolicy (the
// other fields stay). The backend is a cluster of its own:
// "/lb/<type>" is appended to its name, and for a hash key
// "/<key type>[/<name>]" (the IR wants one definition per backend name,
// and the key is part of it).
func (s *settings) applyLoadBalancer(b *ir.Backend) {
	if s.lb == "" || b.Invalid {
		return
	}
	p := &ir.BackendPolicy{}
	if b.Policy != nil {
		p = b.Policy.DeepCopy()
	}
	p.LoadBalancer, p.Hash = &ir.LoadBalancer{Type: s.lb}, s.hash.DeepCopy()
	b.Policy = p
	b.Name += "/lb/" + strings.ToLower(string(s.lb))
	if h := s.hash; h != nil {
		b.Name += "/" + strings.ToLower(string(h.Type))
		if h.Name != "" {
			b.Name += "/" + h.Name
		}
	}
}

// appRootRoute is the route of app-root for a host: "/" answers the
// redirect (its source ranges and rate limits kept), or FailureStatus
// when an authentication annotation cannot be honoured.
func (s *settings) appRootRoute() *ir.HTTPRoute {
	r := &ir.HTTPRoute{Traffic: s.traffic.DeepCopy()}
	if s.authFailed {
		r.DirectResponse = &ir.DirectResponse{StatusCode: FailureStatus}
		return r
	}
	r.Filters = ir.HTTPFilters{Redirect: s.appRoot.DeepCopy(), AllowedSourceRanges: s.filters.AllowedSourceRanges}
	return r
}

// appRoots serves the app-root redirect of is: for the host of each of its
// rules (once per host), an Exact "/" path that answers it, claimed before
// the Ingress's paths (ingress-nginx checks app-root before its
// locations), so an older Ingress's Exact "/" of the host wins and the
// redirect is reported.
func (t *translator) appRoots(cs *classState, is *ingressState, set *settings) {
	if set.appRoot == nil {
		return
	}
	root := pathMatch{exact: true, value: "/"}
	for i, rule := range is.obj.Spec.Rules {
		host, err := readHost(rule.Host)
		if err != nil || rule.HTTP == nil {
			continue // reported with the paths
		}
		claim := host.vhost + " " + root.String()
		if other := cs.claims[claim]; other != nil {
			if other.owner != is {
				is.problemf(ReasonConflict, "spec.rules[%d]: host %s path %s is served by Ingress %s, which is older; the app-root redirect is not served", i, host.vhost, root, other.owner)
			}
			continue
		}
		e := &entry{owner: is, host: host, path: root, route: set.appRootRoute(), sslRedirect: set.redirectsToHTTPS(is.obj, rule.Host)}
		nameRoute(e.route, is.obj, i, appRootPath)
		cs.claims[claim] = e
		cs.hosts[host.vhost] = append(cs.hosts[host.vhost], e)
	}
}
