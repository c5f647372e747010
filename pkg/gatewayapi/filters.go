package gatewayapi

import (
	"fmt"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// filters translates HTTPRouteRule filters. Supported: RequestHeaderModifier,
// ResponseHeaderModifier, RequestRedirect, URLRewrite (at most one of each),
// RequestMirror (any number), CORS. extRef reports an ExtensionRef filter:
// we support no extension kinds, so the reference cannot be resolved, and
// the rule must answer an error rather than skip it (HTTPRouteFilter
// type; GEP-1364: ResolvedRefs=False reason InvalidKind). Unknown or
// unsupported filter types (ExternalAuth included), a filter without its
// configuration field and repeated single-use filters are UnsupportedValue;
// RequestRedirect with URLRewrite is IncompatibleFilters.
func (rc *ruleContext) filters(fs []gwapiv1.HTTPRouteFilter, matches []ir.HTTPMatch) (ir.HTTPFilters, bool) {
	var out ir.HTTPFilters
	extRef := false
	seen := map[gwapiv1.HTTPRouteFilterType]bool{}
	for k, f := range fs {
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
			out.RequestHeaders = rc.headerModifier(k, f.RequestHeaderModifier)
		case gwapiv1.HTTPRouteFilterResponseHeaderModifier:
			if f.ResponseHeaderModifier == nil {
				missing()
				continue
			}
			out.ResponseHeaders = rc.headerModifier(k, f.ResponseHeaderModifier)
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
				Hostname: string(deref(f.URLRewrite.Hostname, "")),
				Path:     rc.pathModifier(k, f.URLRewrite.Path, matches),
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
			out.CORS = corsFilter(f.CORS)
		case gwapiv1.HTTPRouteFilterExtensionRef:
			extRef = true
			what := "an ExtensionRef without extensionRef"
			if e := f.ExtensionRef; e != nil {
				what = fmt.Sprintf("ExtensionRef %s %s", groupKind(e.Group, e.Kind), e.Name)
			}
			rc.refProblem(gwapiv1.RouteReasonInvalidKind, "filter %d: %s is not a filter kind xds-controller supports; the rule answers 500", k, what)
		default:
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: filter type %q is not supported", k, f.Type)
		}
	}
	if seen[gwapiv1.HTTPRouteFilterRequestRedirect] && seen[gwapiv1.HTTPRouteFilterURLRewrite] {
		rc.unsupportedf(gwapiv1.RouteReasonIncompatibleFilters, "RequestRedirect and URLRewrite cannot be combined in one rule")
	}
	return out, extRef
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// headerModifier translates a Request- or ResponseHeaderModifier. Header
// names must be valid tokens.
func (rc *ruleContext) headerModifier(k int, h *gwapiv1.HTTPHeaderFilter) *ir.HeaderModifier {
	out := &ir.HeaderModifier{}
	check := func(name string) {
		if !validHeaderName(name) {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: header name %q is not valid", k, name)
		}
	}
	for _, s := range h.Set {
		check(string(s.Name))
		out.Set = append(out.Set, ir.Header{Name: string(s.Name), Value: s.Value})
	}
	for _, a := range h.Add {
		check(string(a.Name))
		out.Add = append(out.Add, ir.Header{Name: string(a.Name), Value: a.Value})
	}
	for _, r := range h.Remove {
		check(r)
		out.Remove = append(out.Remove, r)
	}
	return out
}

// redirect translates a RequestRedirect: scheme http or https, statusCode
// 301, 302 (the default), 303, 307 or 308, port 1-65535. An unset port stays
// 0: the xDS translator derives it from the scheme (HTTPRequestRedirect
// port).
func (rc *ruleContext) redirect(k int, r *gwapiv1.HTTPRequestRedirectFilter, matches []ir.HTTPMatch) *ir.Redirect {
	out := &ir.Redirect{
		Hostname:   string(deref(r.Hostname, "")),
		Path:       rc.pathModifier(k, r.Path, matches),
		StatusCode: uint32(deref(r.StatusCode, 302)),
	}
	if r.Scheme != nil {
		switch s := *r.Scheme; s {
		case "http", "https":
			out.Scheme = s
		default:
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: redirect scheme %q is not supported", k, s)
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

// pathModifier translates an HTTPPathModifier. ReplacePrefixMatch needs
// every match of the rule to be a PathPrefix match (HTTPPathModifier
// replacePrefixMatch).
func (rc *ruleContext) pathModifier(k int, p *gwapiv1.HTTPPathModifier, matches []ir.HTTPMatch) *ir.PathModifier {
	if p == nil {
		return nil
	}
	switch p.Type {
	case gwapiv1.FullPathHTTPPathModifier:
		if p.ReplaceFullPath == nil {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: ReplaceFullPath needs replaceFullPath", k)
			return nil
		}
		return &ir.PathModifier{Type: ir.ReplaceFullPath, Value: *p.ReplaceFullPath}
	case gwapiv1.PrefixMatchHTTPPathModifier:
		if p.ReplacePrefixMatch == nil {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: ReplacePrefixMatch needs replacePrefixMatch", k)
			return nil
		}
		for _, m := range matches {
			if m.Path == nil || m.Path.Type != ir.MatchPathPrefix {
				rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: ReplacePrefixMatch needs every match of the rule to be a PathPrefix match", k)
				return nil
			}
		}
		return &ir.PathModifier{Type: ir.ReplacePrefixMatch, Value: *p.ReplacePrefixMatch}
	}
	rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: path modifier type %q is not supported", k, p.Type)
	return nil
}

// mirror translates a RequestMirror. An unresolvable backendRef drops the
// mirror and sets ResolvedRefs=False (HTTPRequestMirrorFilter backendRef).
// Percent, or fraction numerator/denominator, sets the share mirrored;
// 100% by default.
func (rc *ruleContext) mirror(k int, m *gwapiv1.HTTPRequestMirrorFilter) *ir.Mirror {
	percent := 100.0
	switch {
	case m.Percent != nil:
		percent = float64(*m.Percent)
	case m.Fraction != nil:
		den := deref(m.Fraction.Denominator, 100)
		if den <= 0 {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: mirror fraction denominator must be positive", k)
			return nil
		}
		percent = 100 * float64(m.Fraction.Numerator) / float64(den)
	}
	if percent < 0 || percent > 100 {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "filter %d: mirror percent %g is outside 0-100", k, percent)
		return nil
	}
	b, p := rc.t.resolveBackend(rc.route.Namespace, m.BackendRef)
	if p != nil {
		rc.refProblem(gwapiv1.RouteConditionReason(p.reason), "filter %d: mirror %s; the mirror is dropped", k, p.msg)
		return nil
	}
	return &ir.Mirror{Backend: b, Percent: percent}
}

// corsFilter translates a CORS filter (GEP-1767). MaxAge defaults to 5s.
func corsFilter(c *gwapiv1.HTTPCORSFilter) *ir.CORS {
	out := &ir.CORS{AllowCredentials: deref(c.AllowCredentials, false)}
	for _, o := range c.AllowOrigins {
		out.AllowOrigins = append(out.AllowOrigins, string(o))
	}
	for _, m := range c.AllowMethods {
		out.AllowMethods = append(out.AllowMethods, string(m))
	}
	for _, h := range c.AllowHeaders {
		out.AllowHeaders = append(out.AllowHeaders, string(h))
	}
	for _, h := range c.ExposeHeaders {
		out.ExposeHeaders = append(out.ExposeHeaders, string(h))
	}
	maxAge := c.MaxAge
	if maxAge <= 0 {
		maxAge = 5
	}
	out.MaxAge = ir.NewDuration(durationSeconds(maxAge))
	return out
}
