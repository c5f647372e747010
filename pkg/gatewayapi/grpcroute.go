package gatewayapi

// What is GRPCRoute's own: its method and header matches (as the request
// path "/<service>/<method>" and headers), its four filter types, its
// backends speaking HTTP/2, its failures answered as gRPC UNAVAILABLE, and
// the precedence of its matches. Attachment and status are shared
// (routes.go), and so are filters and backendRefs (rules.go, filters.go,
// backends.go), which read a GRPCRouteRule's as HTTPRoute ones: the
// GRPCRoute filter and backendRef types are the HTTPRoute types' subset.

import (
	"regexp"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// grpcFailure is the HTTP status of a GRPCRoute rule, or backend share,
// that cannot be served: Envoy answers a gRPC request's local reply as
// HTTP 200 with grpc-status mapped from it, and 503 maps to 14 UNAVAILABLE,
// the status GRPCRouteRule backendRefs asks for. Invalid filters answer it
// too (the spec asks only for "an error response").
const grpcFailure = 503

// grpcFilterTypes are the GRPCRouteFilter types (GRPCRouteFilterType).
var grpcFilterTypes = map[gwapiv1.HTTPRouteFilterType]bool{
	gwapiv1.HTTPRouteFilterRequestHeaderModifier:  true,
	gwapiv1.HTTPRouteFilterResponseHeaderModifier: true,
	gwapiv1.HTTPRouteFilterRequestMirror:          true,
	gwapiv1.HTTPRouteFilterExtensionRef:           true,
}

// The GRPCMethodMatch CEL patterns of Exact matches.
var (
	grpcServiceRE = regexp.MustCompile(`^(?i)\.?[a-z_][a-z_0-9]*(\.[a-z_][a-z_0-9]*)*$`)
	grpcMethodRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z_0-9]*$`)
)

// maxGRPCNameLen is the length limit of GRPCMethodMatch service and method.
const maxGRPCNameLen = 1024

// grpcRoute reads one GRPCRoute: nil when no parentRef names a Gateway of
// ours. A GRPCRoute without rules attaches and serves nothing.
func (t *translator) grpcRoute(gr *gwapiv1.GRPCRoute) *routeState {
	if gr == nil {
		return nil
	}
	r := t.newRoute(RouteKey{Kind: KindGRPCRoute, Namespace: gr.Namespace, Name: gr.Name}, &gr.ObjectMeta, t.parentRefs(gr.Namespace, gr.Spec.CommonRouteSpec), gr.Spec.Hostnames)
	if r == nil {
		return nil
	}
	matches := 0
	for _, ru := range gr.Spec.Rules {
		matches += len(ru.Matches)
	}
	r.spec = routeSpecProblem(gr.Spec.Hostnames, maxItems16, len(gr.Spec.Rules), maxItems16, matches)
	base := ruleContext{failure: grpcFailure, http2: true, filterTypes: grpcFilterTypes}
	r.rules = t.translateRules(r, len(gr.Spec.Rules), base, func(rc *ruleContext) *ruleIR {
		return rc.translateGRPCRule(&gr.Spec.Rules[rc.index])
	})
	return r
}

// translateGRPCRule turns one GRPCRouteRule into its IR: an invalid rule
// answers 503 (gRPC UNAVAILABLE), or is left out when its matches cannot
// be expressed; a rule with an ExtensionRef filter, without backendRefs or
// whose backendRefs are all invalid answers 503; else it forwards to its
// backends over HTTP/2, invalid ones answering 503 for their share.
func (rc *ruleContext) translateGRPCRule(rule *gwapiv1.GRPCRouteRule) *ruleIR {
	r := &ruleIR{index: rc.index, name: string(deref(rule.Name, ""))}
	matches, ranks, ok := rc.grpcMatches(rule.Matches)
	if ok {
		r.matches, r.ranks = matches, ranks
	}
	filters, extRef := rc.filters(httpFilters(rule.Filters), matches)
	if len(rule.BackendRefs) > maxItems16 {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%d backendRefs; at most %d are allowed", len(rule.BackendRefs), maxItems16)
	}
	refs := make([]gwapiv1.HTTPBackendRef, 0, len(rule.BackendRefs))
	for _, b := range rule.BackendRefs {
		refs = append(refs, gwapiv1.HTTPBackendRef{BackendRef: b.BackendRef, Filters: httpFilters(b.Filters)})
	}
	backends := rc.backendRefs(refs)
	session := rc.sessionPersistence(rule.SessionPersistence)
	r.template = &ir.HTTPRoute{GRPC: true}
	rc.forward(r.template, filters, extRef, backends)
	if r.template.Backends != nil {
		r.template.SessionPersistence = ruleSession(session, r.template.Backends)
	}
	return r
}

// httpFilters reads GRPCRouteFilters as the HTTPRouteFilters they are a
// subset of (same type names and fields).
func httpFilters(fs []gwapiv1.GRPCRouteFilter) []gwapiv1.HTTPRouteFilter {
	out := make([]gwapiv1.HTTPRouteFilter, 0, len(fs))
	for _, f := range fs {
		out = append(out, gwapiv1.HTTPRouteFilter{
			Type:                   gwapiv1.HTTPRouteFilterType(f.Type),
			RequestHeaderModifier:  f.RequestHeaderModifier,
			ResponseHeaderModifier: f.ResponseHeaderModifier,
			RequestMirror:          f.RequestMirror,
			ExtensionRef:           f.ExtensionRef,
		})
	}
	return out
}

// grpcMatches translates GRPCRouteRule matches (none matches every gRPC
// request) into HTTP matches on the request path and headers, with their
// precedence keys (grpcExact). At most 64 matches. Anything invalid is
// UnsupportedValue, and the rule, whose matches cannot be expressed, is
// left out (ok false).
func (rc *ruleContext) grpcMatches(ms []gwapiv1.GRPCRouteMatch) (matches []ir.HTTPMatch, ranks [][]int, ok bool) {
	if len(ms) == 0 {
		ms = []gwapiv1.GRPCRouteMatch{{}}
	}
	before := len(rc.unsupported)
	if len(ms) > maxMatchesPerRule {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%d matches; at most %d are allowed", len(ms), maxMatchesPerRule)
	}
	for j, m := range ms {
		var im ir.HTTPMatch
		class, service, method := grpcNoMethod, "", ""
		if m.Method != nil {
			class, service, method = grpcExact, deref(m.Method.Service, ""), deref(m.Method.Method, "")
			if deref(m.Method.Type, gwapiv1.GRPCMethodMatchExact) != gwapiv1.GRPCMethodMatchExact {
				class = grpcRegex
			}
			im.Path = rc.grpcMethod(j, m.Method)
		}
		hs := make([]gwapiv1.HTTPHeaderMatch, 0, len(m.Headers))
		for _, h := range m.Headers {
			hs = append(hs, gwapiv1.HTTPHeaderMatch{Type: (*gwapiv1.HeaderMatchType)(h.Type), Name: gwapiv1.HTTPHeaderName(h.Name), Value: h.Value})
		}
		im.Headers = rc.headerMatches(j, hs)
		matches = append(matches, im)
		ranks = append(ranks, []int{class, -len(service), -len(method), -len(im.Headers)})
	}
	return matches, ranks, len(rc.unsupported) == before
}

// The classes of GRPCRoute matches, the first part of their precedence key
// [class, -len(service), -len(method), -header matches]: within a class,
// the spec's order (GRPCRouteRule matches: more characters in the service,
// then in the method, then more header matches). The spec leaves
// RegularExpression method matches to implementations: like HTTPRoute's
// regular expression paths, they come after every Exact method match, and
// before matches without a method (which match every method).
const (
	grpcExact = iota
	grpcRegex
	grpcNoMethod
)

// grpcMethod translates a GRPCMethodMatch into a match on the request path
// "/<service>/<method>":
//   - Exact (the default) with both: the exact path; with a service only:
//     the path prefix "/<service>" (by path element); with a method only:
//     the regular expression "/[^/]+/<method>". Service and method must
//     match the GRPCMethodMatch CEL patterns.
//   - RegularExpression: "/(?:<service>)/(?:<method>)", "[^/]+" for the
//     one not given. Each must be RE2.
//
// One of service and method is required; each is at most 1024 characters.
func (rc *ruleContext) grpcMethod(j int, m *gwapiv1.GRPCMethodMatch) *ir.StringMatch {
	typ := deref(m.Type, gwapiv1.GRPCMethodMatchExact)
	service, method := deref(m.Service, ""), deref(m.Method, "")
	bad := func(format string, a ...any) *ir.StringMatch {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: method: "+format, append([]any{j}, a...)...)
		return nil
	}
	if service == "" && method == "" {
		return bad("one or both of service and method must be specified")
	}
	if len(service) > maxGRPCNameLen || len(method) > maxGRPCNameLen {
		return bad("service and method may be at most %d characters long", maxGRPCNameLen)
	}
	switch typ {
	case gwapiv1.GRPCMethodMatchExact:
		if service != "" && !grpcServiceRE.MatchString(service) {
			return bad("service %s is not a gRPC service name (%s)", q(service), grpcServiceRE)
		}
		if method != "" && !grpcMethodRE.MatchString(method) {
			return bad("method %s is not a gRPC method name (%s)", q(method), grpcMethodRE)
		}
		switch {
		case method == "":
			return &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/" + service}
		case service == "":
			return &ir.StringMatch{Type: ir.MatchRegex, Value: "/[^/]+/" + method}
		}
		return &ir.StringMatch{Type: ir.MatchExact, Value: "/" + service + "/" + method}
	case gwapiv1.GRPCMethodMatchRegularExpression:
		failed := false
		part := func(what, re string) string {
			if re == "" {
				return "[^/]+"
			}
			if p := checkRegex(re, maxGRPCNameLen); p != "" {
				bad("%s regular expression %s %s", what, q(re), p)
				failed = true
			}
			return "(?:" + re + ")"
		}
		re := "/" + part("service", service) + "/" + part("method", method)
		if failed {
			return nil
		}
		if p := checkRegex(re, 2*maxGRPCNameLen+16); p != "" {
			return bad("the path regular expression %s %s", q(re), p)
		}
		return &ir.StringMatch{Type: ir.MatchRegex, Value: re}
	}
	return bad("match type %s is not supported", q(string(typ)))
}
