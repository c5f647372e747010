package gatewayapi

import (
	"fmt"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/re2"
)

// filters translates a rule's filters (HTTPRouteRule filters, or a
// GRPCRouteRule's as HTTPRouteFilters; types outside rc.filterTypes are
// UnsupportedValue). Supported: RequestHeaderModifier,
// ResponseHeaderModifier, RequestRedirect, URLRewrite (at most one of each),
// RequestMirror (any number), CORS, ExternalAuth (extauth.go). extRef
// says the rule must answer the failure status: an ExtensionRef filter
// (we support no extension kinds, so the reference cannot be resolved, and
// the rule must answer an error rather than skip it: HTTPRouteFilter
// type; GEP-1364: ResolvedRefs=False reason InvalidKind), or an
// ExternalAuth filter that cannot be served (never skipped: fail closed).
// Unknown or unsupported filter types, a filter without its
// configuration field and repeated single-use filters are UnsupportedValue;
// RequestRedirect with URLRewrite is IncompatibleFilters.
//
// A RequestHeaderModifier that sets Host rewrites the request's host
// (hostHeader): it becomes out.URLRewrite.Hostname, and rc.ruleHost says
// so for the rule's backendRefs (backendFilters).
func (rc *ruleContext) filters(fs []gwapiv1.HTTPRouteFilter, matches []ir.HTTPMatch) (ir.HTTPFilters, bool) {
	var out ir.HTTPFilters
	extRef := false
	host := ""
	if len(fs) > maxItems16 {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%d filters; at most %d are allowed", len(fs), maxItems16)
	}
	seen := map[gwapiv1.HTTPRouteFilterType]bool{}
	for k, f := range fs {
		if rc.filterTypes != nil && !rc.filterTypes[f.Type] {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: filter type %q is not supported on a %s", k, f.Type, rc.route.key.Kind)
			continue
		}
		if seen[f.Type] && f.Type != gwapiv1.HTTPRouteFilterRequestMirror && f.Type != gwapiv1.HTTPRouteFilterExtensionRef {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: %s may appear once per rule", k, f.Type)
			continue
		}
		seen[f.Type] = true
		missing := func() {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: type %s needs its %s field", k, f.Type, lowerFirst(string(f.Type)))
		}
		switch f.Type {
		case gwapiv1.HTTPRouteFilterRequestHeaderModifier:
			if f.RequestHeaderModifier == nil {
				missing()
				continue
			}
			out.RequestHeaders, host = rc.headerModifier(fmt.Sprintf("filter %d", k), f.RequestHeaderModifier, true)
		case gwapiv1.HTTPRouteFilterResponseHeaderModifier:
			if f.ResponseHeaderModifier == nil {
				missing()
				continue
			}
			out.ResponseHeaders, _ = rc.headerModifier(fmt.Sprintf("filter %d", k), f.ResponseHeaderModifier, false)
		case gwapiv1.HTTPRouteFilterRequestRedirect:
			if f.RequestRedirect == nil {
				missing()
				continue
			}
			out.Redirect = rc.redirect(k, f.RequestRedirect, matches)
		case gwapiv1.HTTPRouteFilterURLRewrite:
			if f.URLRewrite == nil {
				missing()
				continue
			}
			out.URLRewrite = &ir.URLRewrite{
				Hostname: rc.rewriteHostname(k, "urlRewrite", f.URLRewrite.Hostname),
				Path:     rc.pathModifier(k, "urlRewrite", f.URLRewrite.Path, matches),
			}
		case gwapiv1.HTTPRouteFilterRequestMirror:
			if f.RequestMirror == nil {
				missing()
				continue
			}
			if m := rc.mirror(k, f.RequestMirror); m != nil {
				out.Mirrors = append(out.Mirrors, m)
			}
		case gwapiv1.HTTPRouteFilterCORS:
			if f.CORS == nil {
				missing()
				continue
			}
			out.CORS = rc.corsFilter(k, f.CORS)
		case gwapiv1.HTTPRouteFilterExternalAuth:
			if f.ExternalAuth == nil {
				missing()
				continue
			}
			if out.ExtAuth = rc.routeExtAuth(k, f.ExternalAuth); out.ExtAuth == nil {
				extRef = true // fail closed: the rule answers the failure status
			}
		case gwapiv1.HTTPRouteFilterExtensionRef:
			extRef = true
			what := "an ExtensionRef without extensionRef"
			if e := f.ExtensionRef; e != nil {
				what = fmt.Sprintf("ExtensionRef %s %s", groupKind(e.Group, e.Kind), e.Name)
			}
			rc.refProblem(gwapiv1.RouteReasonInvalidKind, "filter %d: %s is not a filter kind xds-controller supports; the rule answers %d", k, what, rc.failure)
		default:
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: filter type %q is not supported", k, f.Type)
		}
	}
	if seen[gwapiv1.HTTPRouteFilterRequestRedirect] && seen[gwapiv1.HTTPRouteFilterURLRewrite] {
		rc.unsupportedf(gwapiv1.RouteReasonIncompatibleFilters, "RequestRedirect and URLRewrite cannot be combined in one rule")
	}
	rc.hostHeader(&out, fs, host)
	return out, extRef
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// headerModifier translates a RequestHeaderModifier (request) or a
// ResponseHeaderModifier found at where ("filter 2", "backendRef 1: filter
// 0"). Names must be HTTPHeaderNames, set and added values 1-4096
// characters without control characters (checkHeaderSetValue); at most 16
// of each list. Host and pseudo-headers follow editableHeader: a request's
// `set` of Host is not in the modifier returned but is the second result,
// the host rewrite the caller applies (hostHeader, backendFilters); every
// other edit of them makes the rule UnsupportedValue. A modifier left empty
// by that is nil.
func (rc *ruleContext) headerModifier(where string, h *gwapiv1.HTTPHeaderFilter, request bool) (*ir.HeaderModifier, string) {
	out := &ir.HeaderModifier{}
	host := ""
	checkName := func(name string) {
		if p := checkHeaderName(name); p != "" {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%s: header name %s %s", where, q(name), p)
		}
	}
	checkValue := func(name, value string) {
		if p := checkHeaderSetValue(value); p != "" {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%s: header %s: value %s %s", where, q(name), q(value), p)
		}
	}
	editable := func(action, name string) bool {
		if p := editableHeader(action, name, request); p != "" {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%s: %s %s %s: %s", where, modifierType(request), action, q(name), p)
			return false
		}
		return true
	}
	if len(h.Set) > maxItems16 || len(h.Add) > maxItems16 || len(h.Remove) > maxItems16 {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%s: set, add and remove take at most %d headers each", where, maxItems16)
	}
	for _, s := range h.Set {
		name := string(s.Name)
		if request && isHostHeader(name) {
			switch p := checkHostHeaderValue(s.Value); {
			case p != "":
				rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%s: %s set %s: value %s %s", where, modifierType(request), q(name), q(s.Value), p)
			case host != "":
				rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%s: %s sets Host twice (%s); a header may have one action per filter", where, modifierType(request), q(name))
			default:
				host = s.Value
			}
			continue
		}
		if !editable("set", name) {
			continue
		}
		checkName(name)
		checkValue(name, s.Value)
		out.Set = append(out.Set, ir.Header{Name: name, Value: s.Value})
	}
	for _, a := range h.Add {
		name := string(a.Name)
		if !editable("add", name) {
			continue
		}
		checkName(name)
		checkValue(name, a.Value)
		out.Add = append(out.Add, ir.Header{Name: name, Value: a.Value})
	}
	for _, r := range h.Remove {
		if !editable("remove", r) {
			continue
		}
		checkName(r)
		out.Remove = append(out.Remove, r)
	}
	if host != "" && len(out.Set)+len(out.Add)+len(out.Remove) == 0 {
		out = nil
	}
	return out, host
}

// redirect translates a RequestRedirect: scheme http or https, hostname a
// PreciseHostname, statusCode 301, 302 (the default), 303, 307 or 308, port
// 1-65535. An unset port stays 0: the xDS translator derives it from the
// scheme (HTTPRequestRedirect port).
func (rc *ruleContext) redirect(k int, r *gwapiv1.HTTPRequestRedirectFilter, matches []ir.HTTPMatch) *ir.Redirect {
	out := &ir.Redirect{
		Hostname:   rc.rewriteHostname(k, "redirect", r.Hostname),
		Path:       rc.pathModifier(k, "redirect", r.Path, matches),
		StatusCode: uint32(deref(r.StatusCode, 302)),
	}
	if r.Scheme != nil {
		switch s := *r.Scheme; s {
		case "http", "https":
			out.Scheme = s
		default:
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: redirect scheme %s is not supported", k, q(s))
		}
	}
	switch sc := deref(r.StatusCode, 302); sc {
	case 301, 302, 303, 307, 308:
	default:
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: redirect statusCode %d is not supported", k, sc)
		out.StatusCode = 302
	}
	if r.Port != nil {
		if *r.Port < 1 || *r.Port > 65535 {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: redirect port %d is outside 1-65535", k, *r.Port)
		} else {
			out.Port = uint32(*r.Port)
		}
	}
	return out
}

// rewriteHostname checks the hostname of a redirect or URL rewrite (a
// PreciseHostname: Envoy host_redirect, host_rewrite_literal).
func (rc *ruleContext) rewriteHostname(k int, what string, h *gwapiv1.PreciseHostname) string {
	if h == nil {
		return ""
	}
	if p := checkPreciseHostname(string(*h)); p != "" {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: %s hostname %s %s", k, what, q(string(*h)), p)
		return ""
	}
	return string(*h)
}

// pathModifier translates an HTTPPathModifier of a redirect or rewrite
// (what). The value must be a path (checkReplacePath). ReplacePrefixMatch
// needs the rule to have exactly one match, a PathPrefix one (HTTPRouteRule
// CEL rules; no matches defaults to PathPrefix "/").
func (rc *ruleContext) pathModifier(k int, what string, p *gwapiv1.HTTPPathModifier, matches []ir.HTTPMatch) *ir.PathModifier {
	if p == nil {
		return nil
	}
	switch p.Type {
	case gwapiv1.FullPathHTTPPathModifier:
		if p.ReplaceFullPath == nil || p.ReplacePrefixMatch != nil {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: %s path type ReplaceFullPath needs replaceFullPath, and only it", k, what)
			return nil
		}
		if e := checkReplacePath(*p.ReplaceFullPath, true); e != "" {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: %s replaceFullPath %s %s", k, what, q(*p.ReplaceFullPath), e)
			return nil
		}
		return &ir.PathModifier{Type: ir.ReplaceFullPath, Value: *p.ReplaceFullPath}
	case gwapiv1.PrefixMatchHTTPPathModifier:
		if p.ReplacePrefixMatch == nil || p.ReplaceFullPath != nil {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: %s path type ReplacePrefixMatch needs replacePrefixMatch, and only it", k, what)
			return nil
		}
		if e := checkReplacePath(*p.ReplacePrefixMatch, false); e != "" {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: %s replacePrefixMatch %s %s", k, what, q(*p.ReplacePrefixMatch), e)
			return nil
		}
		if len(matches) != 1 || matches[0].Path == nil || matches[0].Path.Type != ir.MatchPathPrefix {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: with path.replacePrefixMatch, exactly one PathPrefix match must be specified", k)
			return nil
		}
		// Removing the prefix takes the regular expression "^<prefix>/*"
		// (xdstranslator prefixReplacement), which Envoy accepts however
		// long the prefix: RE2 matches a literal after ^ apart (re2).
		return &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: *p.ReplacePrefixMatch}
	}
	rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: %s path modifier type %s is not supported", k, what, q(string(p.Type)))
	return nil
}

// mirror translates a RequestMirror. An unresolvable backendRef drops the
// mirror and sets ResolvedRefs=False (HTTPRequestMirrorFilter backendRef).
// Percent, or fraction numerator/denominator, sets the share mirrored;
// 100% by default.
func (rc *ruleContext) mirror(k int, m *gwapiv1.HTTPRequestMirrorFilter) *ir.Mirror {
	percent := 100.0
	switch {
	case m.Percent != nil && m.Fraction != nil:
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: only one of percent or fraction may be specified in a mirror", k)
		return nil
	case m.Percent != nil:
		percent = float64(*m.Percent)
	case m.Fraction != nil:
		den := deref(m.Fraction.Denominator, 100)
		if den <= 0 || m.Fraction.Numerator < 0 || m.Fraction.Numerator > den {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: mirror fraction %d/%d must have 0 <= numerator <= denominator and denominator >= 1", k, m.Fraction.Numerator, den)
			return nil
		}
		percent = 100 * float64(m.Fraction.Numerator) / float64(den)
	}
	if percent < 0 || percent > 100 {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: mirror percent %g is outside 0-100", k, percent)
		return nil
	}
	b, p := rc.resolve(m.BackendRef)
	if p != nil {
		rc.refProblem(gwapiv1.RouteConditionReason(p.reason), "filter %d: mirror %s; the mirror is dropped", k, p.msg)
		return nil
	}
	return &ir.Mirror{Backend: b, Percent: percent}
}

// corsFilter translates a CORS filter (GEP-1767). Origins must be
// CORSOrigins, methods HTTP methods or "*", headers HTTPHeaderNames; "*"
// stands alone in its list; at most 64 origins and headers (9 methods);
// maxAge at least 1 (unset, 0, means the default 5s). A wildcard origin
// becomes a regular expression, which must stay within Envoy's size limit.
func (rc *ruleContext) corsFilter(k int, c *gwapiv1.HTTPCORSFilter) *ir.CORS {
	bad := func(format string, a ...any) {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: cors: "+format, append([]any{k}, a...)...)
	}
	out := &ir.CORS{AllowCredentials: deref(c.AllowCredentials, false)}
	if len(c.AllowOrigins) > maxCORSItems || len(c.AllowHeaders) > maxCORSItems || len(c.ExposeHeaders) > maxCORSItems || len(c.AllowMethods) > 9 {
		bad("too many entries (at most %d origins, allowHeaders and exposeHeaders, 9 methods)", maxCORSItems)
	}
	for _, o := range c.AllowOrigins {
		switch s := string(o); {
		case len(s) == 0 || len(s) > maxHostnameLen || !corsOriginRE.MatchString(s):
			bad("allowOrigins entry %s is not a valid origin (\"*\" or http(s)://host[:port], where host may start with \"*.\")", q(s))
		case s == "*" && len(c.AllowOrigins) > 1:
			bad("allowOrigins cannot contain \"*\" alongside other origins")
		case corsOriginRegex(s) != "" && re2.Problem(corsOriginRegex(s)) != "":
			bad("allowOrigins entry %s is too long for a wildcard origin (Envoy's regular expression size limit)", q(s))
		}
		out.AllowOrigins = append(out.AllowOrigins, string(o))
	}
	for _, m := range c.AllowMethods {
		if m != "*" && !knownMethods[gwapiv1.HTTPMethod(m)] {
			bad("allowMethods entry %s is not an HTTP method or \"*\"", q(string(m)))
		} else if m == "*" && len(c.AllowMethods) > 1 {
			bad("allowMethods cannot contain \"*\" alongside other methods")
		}
		out.AllowMethods = append(out.AllowMethods, string(m))
	}
	for _, h := range c.AllowHeaders {
		if p := checkHeaderName(string(h)); p != "" {
			bad("allowHeaders entry %s %s", q(string(h)), p)
		} else if h == "*" && len(c.AllowHeaders) > 1 {
			bad("allowHeaders cannot contain \"*\" alongside other headers")
		}
		out.AllowHeaders = append(out.AllowHeaders, string(h))
	}
	for _, h := range c.ExposeHeaders {
		if p := checkHeaderName(string(h)); p != "" {
			bad("exposeHeaders entry %s %s", q(string(h)), p)
		}
		out.ExposeHeaders = append(out.ExposeHeaders, string(h))
	}
	maxAge := c.MaxAge
	if maxAge < 0 {
		bad("maxAge %d must be at least 1", maxAge)
	}
	if maxAge <= 0 {
		maxAge = 5
	}
	out.MaxAge = ir.NewDuration(durationSeconds(maxAge))
	return out
}
