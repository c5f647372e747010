package gatewayapi

import (
	"slices"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

func pathPrefix(v string) []gwapiv1.HTTPRouteMatch {
	return []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: ptr(gwapiv1.PathMatchPathPrefix), Value: ptr(v)}}}
}

func headerFilter(typ gwapiv1.HTTPRouteFilterType, h gwapiv1.HTTPHeaderFilter) gwapiv1.HTTPRouteFilter {
	f := gwapiv1.HTTPRouteFilter{Type: typ}
	if typ == gwapiv1.HTTPRouteFilterRequestHeaderModifier {
		f.RequestHeaderModifier = &h
	} else {
		f.ResponseHeaderModifier = &h
	}
	return f
}

func rewrite(u gwapiv1.HTTPURLRewriteFilter) gwapiv1.HTTPRouteFilter {
	return gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterURLRewrite, URLRewrite: &u}
}

func redirectTo(r gwapiv1.HTTPRequestRedirectFilter) gwapiv1.HTTPRouteFilter {
	return gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &r}
}

func corsF(c gwapiv1.HTTPCORSFilter) gwapiv1.HTTPRouteFilter {
	return gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterCORS, CORS: &c}
}

func fullPath(v string) *gwapiv1.HTTPPathModifier {
	return &gwapiv1.HTTPPathModifier{Type: gwapiv1.FullPathHTTPPathModifier, ReplaceFullPath: ptr(v)}
}

func prefixPath(v string) *gwapiv1.HTTPPathModifier {
	return &gwapiv1.HTTPPathModifier{Type: gwapiv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr(v)}
}

// TestInvalidRuleValues gives one route a valid rule (/good) and a rule
// (/bad) with one invalid value of each kind the schema or Envoy refuses.
// The route stays Accepted with PartiallyInvalid=True (Dropped Rule(s)),
// the bad rule answers 500, or is left out when its match itself is
// invalid, the good rule serves, and the xDS translation succeeds.
func TestInvalidRuleValues(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	set := func(name, value string) gwapiv1.HTTPRouteFilter {
		return headerFilter(gwapiv1.HTTPRouteFilterRequestHeaderModifier, gwapiv1.HTTPHeaderFilter{Set: []gwapiv1.HTTPHeader{{Name: gwapiv1.HTTPHeaderName(name), Value: value}}})
	}
	for _, tc := range []struct {
		name string
		rule func(r *gwapiv1.HTTPRouteRule)
		// matchInvalid: the rule's match cannot be expressed; it is left out.
		matchInvalid bool
		want         string // in the PartiallyInvalid message
	}{
		// Header modifiers (HTTPHeader; Envoy HeaderValue).
		{name: "header value CRLF", rule: func(r *gwapiv1.HTTPRouteRule) { r.Filters = append(r.Filters, set("x", "a\r\nb")) }, want: "control character"},
		{name: "header value NUL", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, headerFilter(gwapiv1.HTTPRouteFilterResponseHeaderModifier, gwapiv1.HTTPHeaderFilter{Add: []gwapiv1.HTTPHeader{{Name: "x", Value: "a\x00"}}}))
		}, want: "control character"},
		{name: "header value empty", rule: func(r *gwapiv1.HTTPRouteRule) { r.Filters = append(r.Filters, set("x", "")) }, want: "is empty"},
		{name: "header value too long", rule: func(r *gwapiv1.HTTPRouteRule) { r.Filters = append(r.Filters, set("x", long(4097))) }, want: "longer than 4096"},
		{name: "header value invalid UTF-8", rule: func(r *gwapiv1.HTTPRouteRule) { r.Filters = append(r.Filters, set("x", "\xff")) }, want: "UTF-8"},
		{name: "header name space", rule: func(r *gwapiv1.HTTPRouteRule) { r.Filters = append(r.Filters, set("x y", "v")) }, want: "not a valid name"},
		{name: "header name too long", rule: func(r *gwapiv1.HTTPRouteRule) { r.Filters = append(r.Filters, set(long(257), "v")) }, want: "not a valid name"},
		{name: "header remove pseudo", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, headerFilter(gwapiv1.HTTPRouteFilterRequestHeaderModifier, gwapiv1.HTTPHeaderFilter{Remove: []string{":authority"}}))
		}, want: `remove ":authority": :authority is an HTTP/2 pseudo-header`},
		{name: "header set too many", rule: func(r *gwapiv1.HTTPRouteRule) {
			h := gwapiv1.HTTPHeaderFilter{}
			for i := range 17 {
				h.Set = append(h.Set, gwapiv1.HTTPHeader{Name: gwapiv1.HTTPHeaderName("x" + long(i)), Value: "v"})
			}
			r.Filters = append(r.Filters, headerFilter(gwapiv1.HTTPRouteFilterRequestHeaderModifier, h))
		}, want: "at most 16"},
		// Path matches (HTTPPathMatch CEL rules; Envoy path_separated_prefix).
		{name: "path query and fragment", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches = pathPrefix("/x?y#z") }, matchInvalid: true, want: "must not contain '#'"},
		{name: "path question mark", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches = pathPrefix("/x?y") }, matchInvalid: true, want: "valid path characters"},
		{name: "path space", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches = pathPrefix("/a b") }, matchInvalid: true, want: "valid path characters"},
		{name: "path double slash", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches = pathPrefix("/a//b") }, matchInvalid: true, want: "'//'"},
		{name: "path dot segment", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches = pathPrefix("/a/./b") }, matchInvalid: true, want: "'/./'"},
		{name: "path dot-dot segment", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches = pathPrefix("/a/../b") }, matchInvalid: true, want: "'/../'"},
		{name: "path ends with dot-dot", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches = pathPrefix("/a/..") }, matchInvalid: true, want: "'/..'"},
		{name: "path encoded slash", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches = pathPrefix("/a%2Fb") }, matchInvalid: true, want: "'%2f'"},
		{name: "path relative", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches = pathPrefix("bad") }, matchInvalid: true, want: "start with '/'"},
		{name: "path too long", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches = pathPrefix("/" + long(1024)) }, matchInvalid: true, want: "longer than 1024"},
		{name: "path bad percent-encoding", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches = pathPrefix("/a%zz") }, matchInvalid: true, want: "valid path characters"},
		// Regular expressions (RE2; Envoy RegexMatcher and program size).
		{name: "regex empty", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Matches = []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: ptr(gwapiv1.PathMatchRegularExpression), Value: ptr("")}}}
		}, matchInvalid: true, want: "is empty"},
		{name: "regex syntax", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Matches = []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: ptr(gwapiv1.PathMatchRegularExpression), Value: ptr("/(")}}}
		}, matchInvalid: true, want: "not a valid RE2"},
		{name: "regex too large for Envoy", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Matches = []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: ptr(gwapiv1.PathMatchRegularExpression), Value: ptr("/" + long(120))}}}
		}, matchInvalid: true, want: "larger than 100"},
		// Header and query parameter matches.
		{name: "header match name", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Matches[0].Headers = []gwapiv1.HTTPHeaderMatch{{Name: "a:b", Value: "v"}}
		}, matchInvalid: true, want: "header name"},
		{name: "header match value CRLF", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Matches[0].Headers = []gwapiv1.HTTPHeaderMatch{{Name: "h", Value: "a\nb"}}
		}, matchInvalid: true, want: "control character"},
		{name: "header match regex", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Matches[0].Headers = []gwapiv1.HTTPHeaderMatch{{Name: "h", Type: ptr(gwapiv1.HeaderMatchRegularExpression), Value: "("}}
		}, matchInvalid: true, want: "not a valid RE2"},
		{name: "query name", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Matches[0].QueryParams = []gwapiv1.HTTPQueryParamMatch{{Name: "a b", Value: "v"}}
		}, matchInvalid: true, want: "query parameter name"},
		{name: "query value too long", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Matches[0].QueryParams = []gwapiv1.HTTPQueryParamMatch{{Name: "q", Value: long(1025)}}
		}, matchInvalid: true, want: "longer than 1024"},
		{name: "query regex empty", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Matches[0].QueryParams = []gwapiv1.HTTPQueryParamMatch{{Name: "q", Type: ptr(gwapiv1.QueryParamMatchRegularExpression)}}
		}, matchInvalid: true, want: "is empty"},
		{name: "method", rule: func(r *gwapiv1.HTTPRouteRule) { r.Matches[0].Method = ptr(gwapiv1.HTTPMethod("BREW")) }, matchInvalid: true, want: "method"},
		// Redirects and rewrites (PreciseHostname; Envoy host_redirect,
		// host_rewrite_literal, path_redirect, prefix_rewrite).
		{name: "rewrite hostname NUL", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, rewrite(gwapiv1.HTTPURLRewriteFilter{Hostname: ptr(gwapiv1.PreciseHostname("a\x00b.example.com"))}))
		}, want: "urlRewrite hostname"},
		{name: "rewrite hostname wildcard", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, rewrite(gwapiv1.HTTPURLRewriteFilter{Hostname: ptr(gwapiv1.PreciseHostname("*.example.com"))}))
		}, want: "no wildcard"},
		{name: "rewrite full path CRLF", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, rewrite(gwapiv1.HTTPURLRewriteFilter{Path: fullPath("/a\r\nb")}))
		}, want: "replaceFullPath"},
		{name: "rewrite full path relative", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, rewrite(gwapiv1.HTTPURLRewriteFilter{Path: fullPath("x")}))
		}, want: "start with '/'"},
		{name: "rewrite prefix backslash", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, rewrite(gwapiv1.HTTPURLRewriteFilter{Path: prefixPath(`/\1`)}))
		}, want: "valid path characters"},
		{name: "rewrite prefix two matches", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Matches = append(r.Matches, pathPrefix("/bad2")...)
			r.Filters = append(r.Filters, rewrite(gwapiv1.HTTPURLRewriteFilter{Path: prefixPath("/x")}))
		}, want: "exactly one PathPrefix match"},
		{name: "redirect hostname space", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.BackendRefs = nil
			r.Filters = append(r.Filters, redirectTo(gwapiv1.HTTPRequestRedirectFilter{Hostname: ptr(gwapiv1.PreciseHostname("a b"))}))
		}, want: "redirect hostname"},
		{name: "redirect path CRLF", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.BackendRefs = nil
			r.Filters = append(r.Filters, redirectTo(gwapiv1.HTTPRequestRedirectFilter{Path: fullPath("/\r\n")}))
		}, want: "replaceFullPath"},
		{name: "redirect scheme", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.BackendRefs = nil
			r.Filters = append(r.Filters, redirectTo(gwapiv1.HTTPRequestRedirectFilter{Scheme: ptr("ftp")}))
		}, want: "scheme"},
		{name: "redirect port", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.BackendRefs = nil
			r.Filters = append(r.Filters, redirectTo(gwapiv1.HTTPRequestRedirectFilter{Port: ptr(gwapiv1.PortNumber(0))}))
		}, want: "port 0"},
		{name: "redirect status", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.BackendRefs = nil
			r.Filters = append(r.Filters, redirectTo(gwapiv1.HTTPRequestRedirectFilter{StatusCode: ptr(200)}))
		}, want: "statusCode 200"},
		{name: "redirect with backendRefs", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, redirectTo(gwapiv1.HTTPRequestRedirectFilter{}))
		}, want: "together with backendRefs"},
		// Mirrors.
		{name: "mirror percent", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwapiv1.HTTPRequestMirrorFilter{BackendRef: toApp(80).BackendObjectReference, Percent: ptr(int32(101))}})
		}, want: "outside 0-100"},
		{name: "mirror fraction", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwapiv1.HTTPRequestMirrorFilter{BackendRef: toApp(80).BackendObjectReference, Fraction: &gwapiv1.Fraction{Numerator: 3, Denominator: ptr(int32(2))}}})
		}, want: "numerator <= denominator"},
		// CORS (CORSOrigin, HTTPMethodWithWildcard, HeaderName, CEL rules).
		{name: "cors origin", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, corsF(gwapiv1.HTTPCORSFilter{AllowOrigins: []gwapiv1.CORSOrigin{"ftp://x"}}))
		}, want: "not a valid origin"},
		{name: "cors origin star with others", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, corsF(gwapiv1.HTTPCORSFilter{AllowOrigins: []gwapiv1.CORSOrigin{"*", "https://a.example.com"}}))
		}, want: "alongside"},
		{name: "cors wildcard origin too long", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, corsF(gwapiv1.HTTPCORSFilter{AllowOrigins: []gwapiv1.CORSOrigin{gwapiv1.CORSOrigin("https://*." + long(150) + ".com")}}))
		}, want: "too long for a wildcard origin"},
		{name: "cors method", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, corsF(gwapiv1.HTTPCORSFilter{AllowMethods: []gwapiv1.HTTPMethodWithWildcard{"BREW"}}))
		}, want: "allowMethods"},
		{name: "cors header", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, corsF(gwapiv1.HTTPCORSFilter{ExposeHeaders: []gwapiv1.HTTPHeaderName{"a\r\nb"}}))
		}, want: "exposeHeaders"},
		{name: "cors maxAge", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Filters = append(r.Filters, corsF(gwapiv1.HTTPCORSFilter{MaxAge: -1}))
		}, want: "maxAge"},
		// Timeouts and retries (Duration, GEP-2257; CEL rule).
		{name: "timeout fraction", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Timeouts = &gwapiv1.HTTPRouteTimeouts{Request: ptr(gwapiv1.Duration("1.5s"))}
		}, want: "GEP-2257"},
		{name: "timeout negative", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Timeouts = &gwapiv1.HTTPRouteTimeouts{BackendRequest: ptr(gwapiv1.Duration("-1s"))}
		}, want: "GEP-2257"},
		{name: "timeout backend longer", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Timeouts = &gwapiv1.HTTPRouteTimeouts{Request: ptr(gwapiv1.Duration("1s")), BackendRequest: ptr(gwapiv1.Duration("2s"))}
		}, want: "longer than timeouts.request"},
		{name: "retry attempts", rule: func(r *gwapiv1.HTTPRouteRule) { r.Retry = &gwapiv1.HTTPRouteRetry{Attempts: ptr(-1)} }, want: "retry.attempts"},
		{name: "retry code", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Retry = &gwapiv1.HTTPRouteRetry{Codes: []gwapiv1.HTTPRouteRetryStatusCode{399}}
		}, want: "retry code"},
		{name: "retry backoff", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.Retry = &gwapiv1.HTTPRouteRetry{Backoff: ptr(gwapiv1.Duration("1d"))}
		}, want: "retry.backoff"},
		// sessionPersistence (SessionPersistence CEL rules, CookieName,
		// HeaderName, Duration; what Envoy cannot do).
		{name: "session timeout with session cookie", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{AbsoluteTimeout: ptr(gwapiv1.Duration("10m"))}
		}, want: "absoluteTimeout with cookie lifetimeType Session is not supported"},
		{name: "session timeout with header", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{Type: ptr(gwapiv1.HeaderBasedSessionPersistence), AbsoluteTimeout: ptr(gwapiv1.Duration("10m")), Header: &gwapiv1.HeaderConfig{Name: "x-s"}}
		}, want: "absoluteTimeout is not supported with type Header"},
		{name: "session permanent without timeout", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{Cookie: &gwapiv1.CookieConfig{LifetimeType: ptr(gwapiv1.PermanentCookieLifetimeType)}}
		}, want: "absoluteTimeout is required"},
		{name: "session timeout below a second", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{AbsoluteTimeout: ptr(gwapiv1.Duration("999ms")), Cookie: &gwapiv1.CookieConfig{LifetimeType: ptr(gwapiv1.PermanentCookieLifetimeType)}}
		}, want: "whole number of seconds"},
		{name: "session timeout not a duration", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{AbsoluteTimeout: ptr(gwapiv1.Duration("1d")), Cookie: &gwapiv1.CookieConfig{LifetimeType: ptr(gwapiv1.PermanentCookieLifetimeType)}}
		}, want: "GEP-2257"},
		{name: "session cookie name", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{Cookie: &gwapiv1.CookieConfig{Name: ptr(gwapiv1.CookieName("a=b; Domain=evil"))}}
		}, want: "cookie name"},
		{name: "session cookie path", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{Cookie: &gwapiv1.CookieConfig{Path: ptr("/a; Domain=evil")}}
		}, want: "cookie path"},
		{name: "session cookie path relative", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{Cookie: &gwapiv1.CookieConfig{Path: ptr("a")}}
		}, want: "does not start with"},
		{name: "session lifetime type", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{Cookie: &gwapiv1.CookieConfig{LifetimeType: ptr(gwapiv1.CookieLifetimeType("Forever"))}}
		}, want: "lifetimeType"},
		{name: "session header name", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{Type: ptr(gwapiv1.HeaderBasedSessionPersistence), Header: &gwapiv1.HeaderConfig{Name: "a b"}}
		}, want: "header name"},
		{name: "session header missing", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{Type: ptr(gwapiv1.HeaderBasedSessionPersistence)}
		}, want: "header is required"},
		{name: "session header with cookie type", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{Header: &gwapiv1.HeaderConfig{Name: "x-s"}}
		}, want: "header must not be set with type Cookie"},
		{name: "session type", rule: func(r *gwapiv1.HTTPRouteRule) {
			r.SessionPersistence = &gwapiv1.SessionPersistence{Type: ptr(gwapiv1.SessionPersistenceType("IP"))}
		}, want: "type \"IP\""},
		// backendRefs (weight range, port range, Namespace, maxItems).
		{name: "weight negative", rule: func(r *gwapiv1.HTTPRouteRule) { r.BackendRefs[0].Weight = ptr(int32(-1)) }, want: "weight -1"},
		{name: "weight too large", rule: func(r *gwapiv1.HTTPRouteRule) { r.BackendRefs[0].Weight = ptr(int32(1000001)) }, want: "weight 1000001"},
		{name: "backend port", rule: func(r *gwapiv1.HTTPRouteRule) { r.BackendRefs[0].Port = ptr(gwapiv1.PortNumber(70000)) }, want: "port 70000"},
		{name: "backend namespace", rule: func(r *gwapiv1.HTTPRouteRule) { r.BackendRefs[0].Namespace = ptr(gwapiv1.Namespace("Bad NS")) }, want: "namespace"},
		{name: "too many backendRefs", rule: func(r *gwapiv1.HTTPRouteRule) {
			for range 17 {
				r.BackendRefs = append(r.BackendRefs, toApp(80))
			}
		}, want: "at most 16"},
		{name: "too many filters", rule: func(r *gwapiv1.HTTPRouteRule) {
			for range 17 {
				r.Filters = append(r.Filters, gwapiv1.HTTPRouteFilter{Type: gwapiv1.HTTPRouteFilterExtensionRef, ExtensionRef: &gwapiv1.LocalObjectReference{Group: "x", Kind: "Y", Name: "z"}})
			}
		}, want: "at most 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := gwapiv1.HTTPRouteRule{Matches: pathPrefix("/bad"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}}
			tc.rule(&bad)
			good := gwapiv1.HTTPRouteRule{Matches: pathPrefix("/good"), BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}}
			res := fixture()
			res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app", bad, good)}
			r := Translate(res, Options{})
			mustValid(t, r)
			if _, err := xdstranslator.Translate(r.IR); err != nil {
				t.Fatalf("xDS translation failed: %v", err)
			}
			ps := routeParent(t, r, "app", 0)
			wantCond(t, ps.Conditions, "Accepted", metav1.ConditionTrue, "Accepted")
			c := cond(t, ps.Conditions, "PartiallyInvalid")
			if c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "Dropped Rule(s) 0:") || !strings.Contains(c.Message, tc.want) {
				t.Errorf("PartiallyInvalid = %s %q, want True, rule 0 dropped, message with %q", c.Status, c.Message, tc.want)
			}
			var badRoutes []*ir.HTTPRoute
			goodServes := false
			for _, rt := range r.IR.Gateways[0].Listeners[0].HTTPRoutes {
				switch {
				case strings.Contains(rt.Name, "/rule/0/"):
					badRoutes = append(badRoutes, rt)
				case rt.Backends != nil && rt.Match.Path.Value == "/good":
					goodServes = true
				}
			}
			if !goodServes {
				t.Errorf("the valid rule does not serve: %+v", r.IR.Gateways[0].Listeners[0].HTTPRoutes)
			}
			if tc.matchInvalid {
				if len(badRoutes) != 0 {
					t.Errorf("a rule whose match is invalid is in the IR: %+v", badRoutes[0])
				}
				return
			}
			if len(badRoutes) == 0 {
				t.Fatal("the invalid rule is missing; it should answer 500")
			}
			for _, rt := range badRoutes {
				if rt.DirectResponse == nil || rt.DirectResponse.StatusCode != 500 || rt.Backends != nil {
					t.Errorf("invalid rule route %s = %+v, want a direct 500", rt.Name, rt)
				}
			}
		})
	}
}

// TestInvalidRouteHostnames: a route with a hostname that is not a Gateway
// API Hostname is not accepted by any parent and serves nothing.
func TestInvalidRouteHostnames(t *testing.T) {
	many := make([]gwapiv1.Hostname, 17)
	for i := range many {
		many[i] = gwapiv1.Hostname(strings.Repeat("a", i+1) + ".example.com")
	}
	for name, hosts := range map[string][]gwapiv1.Hostname{
		"space":           {"a b"},
		"port":            {"foo:80"},
		"inner wildcard":  {"*.*.example.com"},
		"wildcard alone":  {"*"},
		"upper case":      {"Foo.example.com"},
		"trailing dot":    {"foo.example.com."},
		"NUL":             {"a\x00.example.com"},
		"label too long":  {gwapiv1.Hostname(strings.Repeat("a", 254))},
		"too many":        many,
		"one of two good": {"ok.example.com", "bad_name.example.com"},
		// Admitted by the CRD pattern, refused by the Hostname type's
		// documentation ("IPs are not allowed", RFC 1123 labels).
		"IPv4 address":           {"10.0.0.1"},
		"IPv4 short form":        {"127.1"},
		"IPv4 hex form":          {"0x7f.1"},
		"numeric under wildcard": {"*.0.0.1"},
		"label of 64":            {gwapiv1.Hostname(strings.Repeat("a", 64) + ".example.com")},
		"wildcard, label of 64":  {gwapiv1.Hostname("*." + strings.Repeat("a", 64) + ".example.com")},
		"IP beside a good name":  {"ok.example.com", "192.168.1.1"},
	} {
		t.Run(name, func(t *testing.T) {
			res := fixture()
			hr := httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
			hr.Spec.Hostnames = hosts
			res.HTTPRoutes = []*gwapiv1.HTTPRoute{hr}
			r := Translate(res, Options{})
			mustValid(t, r)
			wantCond(t, routeParent(t, r, "app", 0).Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedValue")
			if n := len(r.IR.Gateways[0].Listeners[0].HTTPRoutes); n != 0 {
				t.Errorf("%d routes served, want none", n)
			}
			if n := r.Status.Gateways[nn("default", "web")].Listeners[0].AttachedRoutes; n != 0 {
				t.Errorf("attachedRoutes = %d, want 0", n)
			}
		})
	}
}

// TestGatewaySpecRules: a Gateway that breaks the schema or a CEL rule of
// its spec is Accepted=False reason Invalid, with a message naming the
// problem, and nothing of it is programmed.
func TestGatewaySpecRules(t *testing.T) {
	http := func(name string, port gwapiv1.PortNumber) gwapiv1.Listener {
		return gwapiv1.Listener{Name: gwapiv1.SectionName(name), Protocol: gwapiv1.HTTPProtocolType, Port: port}
	}
	withHost := func(l gwapiv1.Listener, h string) gwapiv1.Listener { l.Hostname = ptr(gwapiv1.Hostname(h)); return l }
	certs := &gwapiv1.ListenerTLSConfig{CertificateRefs: []gwapiv1.SecretObjectReference{{Name: "c"}}}
	for _, tc := range []struct {
		name      string
		listeners []gwapiv1.Listener
		want      string
	}{
		{"duplicate names", []gwapiv1.Listener{http("http", 80), http("http", 81)}, `listener name "http" is already used by spec.listeners[0]`},
		{"name pattern", []gwapiv1.Listener{http("Not Valid", 80)}, "not a valid listener name"},
		{"hostname pattern", []gwapiv1.Listener{withHost(http("a", 80), "a b")}, "not a valid hostname"},
		{"hostname inner wildcard", []gwapiv1.Listener{withHost(http("a", 80), "a.*.com")}, "not a valid hostname"},
		{"hostname IP address", []gwapiv1.Listener{withHost(http("a", 80), "10.0.0.1")}, `hostname "10.0.0.1" is an IP address`},
		{"hostname label of 64", []gwapiv1.Listener{withHost(http("a", 80), "*."+strings.Repeat("c", 64)+".com")}, "has a label of 64 characters"},
		{"port zero", []gwapiv1.Listener{http("a", 0)}, "port 0 is outside"},
		{"port too large", []gwapiv1.Listener{http("a", 70000)}, "port 70000 is outside"},
		{"protocol pattern", []gwapiv1.Listener{{Name: "a", Protocol: "a b", Port: 80}}, "not a valid protocol"},
		{"tls on HTTP", []gwapiv1.Listener{{Name: "a", Protocol: gwapiv1.HTTPProtocolType, Port: 80, TLS: certs}}, "tls must not be specified for protocol HTTP"},
		{"HTTPS passthrough", []gwapiv1.Listener{{Name: "a", Protocol: gwapiv1.HTTPSProtocolType, Port: 443,
			TLS: &gwapiv1.ListenerTLSConfig{Mode: ptr(gwapiv1.TLSModePassthrough)}}}, "tls mode must be Terminate for protocol HTTPS"},
		{"HTTPS terminate without certificates", []gwapiv1.Listener{{Name: "a", Protocol: gwapiv1.HTTPSProtocolType, Port: 443,
			TLS: &gwapiv1.ListenerTLSConfig{}}}, "certificateRefs or options must be specified"},
		{"TLS without mode", []gwapiv1.Listener{{Name: "a", Protocol: gwapiv1.TLSProtocolType, Port: 443}}, "tls mode must be set for protocol TLS"},
		{"TCP with hostname", []gwapiv1.Listener{withHost(gwapiv1.Listener{Name: "a", Protocol: gwapiv1.TCPProtocolType, Port: 9000}, "a.example.com")}, "hostname must not be specified for protocol TCP"},
		{"same port protocol hostname", []gwapiv1.Listener{withHost(http("a", 80), "x.example.com"), withHost(http("b", 80), "x.example.com")}, "the combination must be unique"},
		{"same port protocol no hostname", []gwapiv1.Listener{http("a", 80), http("b", 80)}, "the combination must be unique"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := fixture()
			res.Gateways = []*gwapiv1.Gateway{gateway("web", tc.listeners...)}
			res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
			r := Translate(res, Options{})
			mustValid(t, r)
			gs := r.Status.Gateways[nn("default", "web")]
			wantCond(t, gs.Conditions, "Accepted", metav1.ConditionFalse, "Invalid")
			wantCond(t, gs.Conditions, "Programmed", metav1.ConditionFalse, "Invalid")
			if c := cond(t, gs.Conditions, "Accepted"); !strings.Contains(c.Message, tc.want) {
				t.Errorf("Accepted message %q does not contain %q", c.Message, tc.want)
			}
			if len(r.IR.Gateways) != 0 {
				t.Errorf("an invalid Gateway is in the IR: %+v", r.IR.Gateways)
			}
			wantCond(t, routeParent(t, r, "app", 0).Conditions, "Accepted", metav1.ConditionFalse, "NoMatchingParent")
		})
	}
}

// TestPortTieBreakMessage: the older Gateway keeps the port; the message
// says whether it was older or only first by namespace/name.
func TestPortTieBreakMessage(t *testing.T) {
	for _, tc := range []struct {
		name         string
		aTime, bTime time.Time
		loser, want  string
	}{
		{"no timestamps", time.Time{}, time.Time{}, "b", "default/a, which sorts first by namespace/name"},
		{"same timestamp", time.Unix(100, 0), time.Unix(100, 0), "b", "default/a, which sorts first by namespace/name"},
		{"b older", time.Unix(200, 0), time.Unix(100, 0), "a", "default/b, which was created earlier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := fixture()
			a := gateway("a", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80})
			b := gateway("b", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80})
			a.CreationTimestamp, b.CreationTimestamp = metav1.NewTime(tc.aTime), metav1.NewTime(tc.bTime)
			res.Gateways = []*gwapiv1.Gateway{a, b}
			hr := httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
			hr.Spec.ParentRefs = []gwapiv1.ParentReference{{Name: gwapiv1.ObjectName(tc.loser)}}
			res.HTTPRoutes = []*gwapiv1.HTTPRoute{hr}
			r := Translate(res, Options{})
			mustValid(t, r)
			l := r.Status.Gateways[nn("default", tc.loser)].Listeners[0]
			c := cond(t, l.Conditions, "Accepted")
			if c.Reason != "PortUnavailable" || !strings.HasSuffix(c.Message, tc.want) {
				t.Errorf("loser %s: Accepted = %s %q, want PortUnavailable ending %q", tc.loser, c.Reason, c.Message, tc.want)
			}
			// The route attached to the loser's listener is accepted
			// (attachment does not depend on listener status), counted, and
			// told that the listener does not serve it.
			ra := cond(t, routeParent(t, r, "app", 0).Conditions, "Accepted")
			if ra.Status != metav1.ConditionTrue || !strings.Contains(ra.Message, "no listener of Gateway default/"+tc.loser) || !strings.Contains(ra.Message, "PortUnavailable") {
				t.Errorf("route Accepted = %s %q", ra.Status, ra.Message)
			}
			if l.AttachedRoutes != 1 {
				t.Errorf("attachedRoutes = %d, want 1", l.AttachedRoutes)
			}
		})
	}
}

// TestUnownedParentWarnings: parentRefs to a Gateway that does not exist,
// or whose class does not, get no status but a warning; a Gateway of
// another controller's class gets neither.
func TestUnownedParentWarnings(t *testing.T) {
	res := fixture()
	res.GatewayClasses = append(res.GatewayClasses, &gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}, Spec: gwapiv1.GatewayClassSpec{ControllerName: "example.com/other"}})
	foreign := gateway("foreign", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80})
	foreign.Spec.GatewayClassName = "theirs"
	orphan := gateway("orphan", gwapiv1.Listener{Name: "http", Protocol: gwapiv1.HTTPProtocolType, Port: 80})
	orphan.Spec.GatewayClassName = "nope"
	res.Gateways = append(res.Gateways, foreign, orphan)
	hr := httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})
	hr.Spec.ParentRefs = []gwapiv1.ParentReference{{Name: "missing"}, {Name: "foreign"}, {Name: "orphan"}}
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{hr}
	r := Translate(res, Options{})
	mustValid(t, r)
	if st := r.Status.Routes[RouteKey{Kind: KindHTTPRoute, Namespace: "default", Name: "app"}]; st != nil {
		t.Errorf("route has status %+v, want none", st)
	}
	want := []string{
		"HTTPRoute default/app: parentRef default/missing: no such Gateway; the route is not attached to it",
		`HTTPRoute default/app: parentRef default/orphan: the Gateway's GatewayClass nope does not exist; the route is not attached to it`,
	}
	if !slices.Equal(r.Status.Warnings, want) {
		t.Errorf("warnings = %q, want %q", r.Status.Warnings, want)
	}
}

// TestEndpointAddressTypes: addresses that are invalid or not of the
// slice's addressType are dropped and reported once per slice; FQDN
// addresses are kept.
func TestEndpointAddressTypes(t *testing.T) {
	res := fixture()
	es := res.EndpointSlices[0]
	es.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1", "999.1.2.3", "not-an-ip", "fd00::1", "::ffff:10.0.0.3", ""}}}
	v6 := es.DeepCopy()
	v6.Name, v6.AddressType = "app-6", discoveryv1.AddressTypeIPv6
	v6.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"FD00::2", "10.0.0.4", "fe80::1%eth0"}}}
	fqdn := es.DeepCopy()
	fqdn.Name, fqdn.AddressType = "app-dns", discoveryv1.AddressTypeFQDN
	fqdn.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"backend.example.com", "a b"}}}
	res.EndpointSlices = append(res.EndpointSlices, v6, fqdn)
	res.HTTPRoutes = []*gwapiv1.HTTPRoute{httpRoute("app", gwapiv1.HTTPRouteRule{BackendRefs: []gwapiv1.HTTPBackendRef{toApp(80)}})}
	r := Translate(res, Options{})
	mustValid(t, r)
	if _, err := xdstranslator.Translate(r.IR); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range r.IR.Gateways[0].Listeners[0].HTTPRoutes[0].Backends.Backends[0].Endpoints {
		got = append(got, e.Address)
	}
	if want := []string{"10.0.0.1", "backend.example.com", "fd00::2"}; !slices.Equal(got, want) {
		t.Errorf("endpoints = %q, want %q", got, want)
	}
	want := []string{
		`EndpointSlice default/app-1: dropped 5 address(es) that are not valid IPv4 addresses: "999.1.2.3", "not-an-ip", "fd00::1", "::ffff:10.0.0.3", ""`,
		`EndpointSlice default/app-6: dropped 2 address(es) that are not valid IPv6 addresses: "10.0.0.4", "fe80::1%eth0"`,
		`EndpointSlice default/app-dns: dropped 1 address(es) that are not valid FQDN addresses: "a b"`,
	}
	if !slices.Equal(r.Status.Warnings, want) {
		t.Errorf("warnings =\n%q\nwant\n%q", r.Status.Warnings, want)
	}
}

// TestHostnameNameRules: the rules of the Gateway API's Hostname and
// PreciseHostname that the CRD pattern does not check (no IP address,
// labels of at most 63 characters), on the names both accept otherwise.
func TestHostnameNameRules(t *testing.T) {
	l63, l64 := strings.Repeat("a", 63), strings.Repeat("a", 64)
	for _, h := range []string{"example.com", "1.example.com", "10.0.0.1.example.com", "123abc.com", "a.0x7g", "com",
		l63 + ".example.com", "x." + l63, "xn--bcher-kva.example"} {
		if p := checkHostname(h); p != "" {
			t.Errorf("Hostname %q: %s, want valid", h, p)
		}
		if p := checkHostname("*." + h); p != "" {
			t.Errorf("Hostname %q: %s, want valid", "*."+h, p)
		}
		if p := checkPreciseHostname(h); p != "" {
			t.Errorf("PreciseHostname %q: %s, want valid", h, p)
		}
	}
	for h, want := range map[string]string{
		"10.0.0.1":           "is an IP address",
		"255.255.255.255":    "is an IP address",
		"127.1":              "is an IP address",
		"2130706433":         "is an IP address",
		"0x7f.0x1":           "is an IP address",
		"example.123":        "is an IP address",
		l64 + ".example.com": "has a label of 64 characters",
		"x." + l64 + ".com":  "has a label of 64 characters",
		"x.example." + l64:   "has a label of 64 characters",
	} {
		if p := checkHostname(h); !strings.Contains(p, want) {
			t.Errorf("Hostname %q: %q, want %q", h, p, want)
		}
		if p := checkHostname("*." + h); !strings.Contains(p, want) {
			t.Errorf("Hostname %q: %q, want %q", "*."+h, p, want)
		}
		if p := checkPreciseHostname(h); !strings.Contains(p, want) {
			t.Errorf("PreciseHostname %q: %q, want %q", h, p, want)
		}
	}
}

// TestRouteKindsRefuseIPHostnames: GRPCRoute and TLSRoute hostnames follow
// the HTTPRoute's rule (TestInvalidRouteHostnames): an IP address or a
// label over 63 characters makes the route Accepted=False UnsupportedValue
// and it serves nothing.
func TestRouteKindsRefuseIPHostnames(t *testing.T) {
	for _, h := range []gwapiv1.Hostname{"10.0.0.1", gwapiv1.Hostname(strings.Repeat("b", 64) + ".example.com")} {
		t.Run("GRPCRoute "+string(h[:8]), func(t *testing.T) {
			res := fixture()
			gr := grpcRoute("grpc", gwapiv1.GRPCRouteRule{BackendRefs: []gwapiv1.GRPCBackendRef{grpcToApp()}})
			gr.Spec.Hostnames = []gwapiv1.Hostname{h}
			res.GRPCRoutes = []*gwapiv1.GRPCRoute{gr}
			r := Translate(res, Options{})
			mustValid(t, r)
			st := r.Status.Routes[RouteKey{Kind: KindGRPCRoute, Namespace: "default", Name: "grpc"}]
			if st == nil || len(st.Parents) != 1 {
				t.Fatalf("status %+v", st)
			}
			wantCond(t, st.Parents[0].Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedValue")
			if n := len(r.IR.Gateways[0].Listeners[0].HTTPRoutes); n != 0 {
				t.Errorf("%d routes served, want none", n)
			}
		})
		t.Run("TLSRoute "+string(h[:8]), func(t *testing.T) {
			res := fixture()
			res.Gateways = []*gwapiv1.Gateway{gateway("web", gwapiv1.Listener{Name: "tls", Protocol: gwapiv1.TLSProtocolType, Port: 443,
				TLS: &gwapiv1.ListenerTLSConfig{Mode: ptr(gwapiv1.TLSModePassthrough)}})}
			res.TLSRoutes = []*gwapiv1.TLSRoute{{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tls", Generation: 1},
				Spec: gwapiv1.TLSRouteSpec{
					CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "web"}}},
					Hostnames:       []gwapiv1.Hostname{h},
					Rules: []gwapiv1.TLSRouteRule{{BackendRefs: []gwapiv1.BackendRef{{BackendObjectReference: gwapiv1.BackendObjectReference{
						Name: "app", Port: ptr(int32(80))}}}}},
				},
			}}
			r := Translate(res, Options{})
			mustValid(t, r)
			st := r.Status.Routes[RouteKey{Kind: KindTLSRoute, Namespace: "default", Name: "tls"}]
			if st == nil || len(st.Parents) != 1 {
				t.Fatalf("status %+v", st)
			}
			wantCond(t, st.Parents[0].Conditions, "Accepted", metav1.ConditionFalse, "UnsupportedValue")
			if !strings.Contains(cond(t, st.Parents[0].Conditions, "Accepted").Message, string(h[:8])) {
				t.Errorf("message %q does not name the hostname", cond(t, st.Parents[0].Conditions, "Accepted").Message)
			}
			if n := len(r.IR.Gateways[0].Listeners[0].L4Routes); n != 0 {
				t.Errorf("%d routes served, want none", n)
			}
		})
	}
}
