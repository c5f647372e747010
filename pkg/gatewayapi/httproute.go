package gatewayapi

// What is HTTPRoute's own: its rules' matches (path, headers, query
// parameters, method), RequestRedirect, timeouts and retries, and the
// precedence of its matches. Attachment and status are shared (routes.go),
// and so are filters and backendRefs (rules.go, filters.go, backends.go).

import (
	"fmt"
	"math"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// httpRoute reads one HTTPRoute: nil when no parentRef names a Gateway of
// ours. A route without rules gets the CRD default: one rule matching
// PathPrefix "/" (without backends, so it answers 500).
func (t *translator) httpRoute(hr *gwapiv1.HTTPRoute) *routeState {
	if hr == nil {
		return nil
	}
	r := t.newRoute(RouteKey{Kind: KindHTTPRoute, Namespace: hr.Namespace, Name: hr.Name}, &hr.ObjectMeta, t.parentRefs(hr.Namespace, hr.Spec.CommonRouteSpec), hr.Spec.Hostnames)
	if r == nil {
		return nil
	}
	rules := hr.Spec.Rules
	if len(rules) == 0 {
		rules = []gwapiv1.HTTPRouteRule{{}}
	}
	matches := 0
	for _, ru := range hr.Spec.Rules {
		matches += len(ru.Matches)
	}
	r.spec = routeSpecProblem(hr.Spec.Hostnames, maxItems16, len(hr.Spec.Rules), maxItems16, matches)
	r.rules = t.translateRules(r, len(rules), ruleContext{failure: 500}, func(rc *ruleContext) *ruleIR {
		return rc.translateHTTPRule(&rules[rc.index])
	})
	return r
}

// translateHTTPRule turns one HTTPRouteRule into its IR. What the route
// does:
//   - an invalid rule (unsupported values, incompatible filters) answers
//     500, or is left out when its matches cannot be expressed;
//   - a rule with an ExtensionRef filter answers 500 (we support no
//     extension filters; GEP-1364 makes that a reference failure:
//     ResolvedRefs=False reason InvalidKind);
//   - a RequestRedirect rule redirects;
//   - a rule without backendRefs, or whose backendRefs are all invalid,
//     answers 500 (HTTPRouteRule backendRefs);
//   - else the rule forwards to its backends; invalid ones keep their
//     weight and answer 500 for their share.
func (rc *ruleContext) translateHTTPRule(rule *gwapiv1.HTTPRouteRule) *ruleIR {
	r := &ruleIR{index: rc.index, name: string(deref(rule.Name, ""))}
	matches, matchesOK := rc.matches(rule.Matches)
	if matchesOK {
		r.matches = matches
		for _, m := range matches {
			r.ranks = append(r.ranks, httpRank(m))
		}
	}
	rc.ruleMatches = matches
	filters, extRef := rc.filters(rule.Filters, matches)
	if filters.Redirect != nil && len(rule.BackendRefs) > 0 {
		// HTTPRouteRule CEL rule.
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "a RequestRedirect filter must not be used together with backendRefs")
	}
	if len(rule.BackendRefs) > maxItems16 {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%d backendRefs; at most %d are allowed", len(rule.BackendRefs), maxItems16)
	}
	backends := rc.backendRefs(rule.BackendRefs)
	rc.hoistBackendPath(&filters, backends)
	timeouts := rc.timeouts(rule.Timeouts)
	retry := rc.retry(rule.Retry)
	session := rc.sessionPersistence(rule.SessionPersistence)

	tpl := &ir.HTTPRoute{}
	r.template = tpl
	if filters.Redirect != nil && len(rc.unsupported) == 0 && !extRef {
		tpl.Filters = ir.HTTPFilters{Redirect: filters.Redirect, ResponseHeaders: filters.ResponseHeaders}
		return r
	}
	rc.forward(tpl, filters, extRef, backends)
	if tpl.Backends != nil {
		tpl.Timeouts, tpl.Retry, tpl.SessionPersistence = timeouts, retry, ruleSession(session, tpl.Backends)
	}
	return r
}

// httpRank is the precedence key of an HTTPRoute match (HTTPRouteRule
// matches): an Exact path, then a RegularExpression path, then a
// PathPrefix with more characters; then a method match; then more header
// matches; then more query parameter matches.
//
// The spec leaves the rank of RegularExpression paths to implementations.
// We put them after Exact and before every PathPrefix (longer pattern
// first), so that a regex rule is not shadowed by a catch-all prefix "/".
func httpRank(m ir.HTTPMatch) []int {
	kind, length := 2, 0 // PathPrefix "/"
	if p := m.Path; p != nil {
		switch p.Type {
		case ir.MatchExact:
			kind, length = 0, len(p.Value)
		case ir.MatchRegex:
			kind, length = 1, len(p.Value)
		default:
			length = len(strings.TrimSuffix(p.Value, "/"))
		}
	}
	return []int{kind, -length, -boolInt(m.Method != ""), -len(m.Headers), -len(m.QueryParams)}
}

// knownMethods are the HTTPMethod values of the Gateway API.
var knownMethods = map[gwapiv1.HTTPMethod]bool{
	gwapiv1.HTTPMethodGet: true, gwapiv1.HTTPMethodHead: true, gwapiv1.HTTPMethodPost: true,
	gwapiv1.HTTPMethodPut: true, gwapiv1.HTTPMethodDelete: true, gwapiv1.HTTPMethodConnect: true,
	gwapiv1.HTTPMethodOptions: true, gwapiv1.HTTPMethodTrace: true, gwapiv1.HTTPMethodPatch: true,
}

// matches translates HTTPRouteRule matches; none means PathPrefix "/".
// Path type defaults to PathPrefix and value to "/"; header and query
// parameter types default to Exact. Of several header matches with the
// same (case-insensitive) name only the first counts, likewise for query
// parameters (case-sensitive names). Every value must pass the schema
// (validation.go): path values the HTTPPathMatch CEL rules, names the
// HTTPHeaderName pattern, values their lengths and no control characters,
// regular expressions RE2 within Envoy's size limit; at most 64 matches and
// 16 header and 16 query parameter matches each. Anything else, unknown
// match types and methods included, is UnsupportedValue, and the rule,
// whose matches cannot be expressed, is left out.
func (rc *ruleContext) matches(ms []gwapiv1.HTTPRouteMatch) ([]ir.HTTPMatch, bool) {
	if len(ms) == 0 {
		ms = []gwapiv1.HTTPRouteMatch{{}}
	}
	before := len(rc.unsupported)
	if len(ms) > maxMatchesPerRule {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%d matches; at most %d are allowed", len(ms), maxMatchesPerRule)
	}
	out := make([]ir.HTTPMatch, 0, len(ms))
	for j, m := range ms {
		var im ir.HTTPMatch
		typ, value := gwapiv1.PathMatchPathPrefix, "/"
		if m.Path != nil {
			typ = deref(m.Path.Type, gwapiv1.PathMatchPathPrefix)
			value = deref(m.Path.Value, "/")
		}
		var msg string
		if im.Path, msg = pathMatch(typ, value); msg != "" {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: path %s", j, msg)
		}
		im.Headers = rc.headerMatches(j, m.Headers)
		if len(m.QueryParams) > maxItems16 {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: at most %d query parameter matches are allowed", j, maxItems16)
		}
		seen := map[string]bool{}
		for _, qp := range m.QueryParams {
			if seen[string(qp.Name)] {
				continue
			}
			seen[string(qp.Name)] = true
			if p := checkHeaderName(string(qp.Name)); p != "" {
				rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: query parameter name %s %s", j, q(string(qp.Name)), p)
			}
			im.QueryParams = append(im.QueryParams, rc.stringMatch(j, "query parameter "+q(string(qp.Name)), string(qp.Name), string(deref(qp.Type, gwapiv1.QueryParamMatchExact)), qp.Value, maxQueryValueLen))
		}
		if m.Method != nil {
			if !knownMethods[*m.Method] {
				rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: method %s is not supported", j, q(string(*m.Method)))
			}
			im.Method = string(*m.Method)
		}
		out = append(out, im)
	}
	return out, len(rc.unsupported) == before
}

// parseDuration reads a Gateway API Duration (GEP-2257: a subset of Go's
// syntax, e.g. "1h30m", "500ms"; never negative).
func parseDuration(d gwapiv1.Duration) (*ir.Duration, error) {
	v, p := checkDuration(string(d))
	if p != "" {
		return nil, fmt.Errorf("%s %s", q(string(d)), p)
	}
	return ir.NewDuration(v), nil
}

// timeouts maps HTTPRouteRule timeouts (GEP-1742) to the IR.
func (rc *ruleContext) timeouts(to *gwapiv1.HTTPRouteTimeouts) *ir.Timeouts {
	if to == nil || (to.Request == nil && to.BackendRequest == nil) {
		return nil
	}
	out := &ir.Timeouts{}
	var err error
	if to.Request != nil {
		if out.Request, err = parseDuration(*to.Request); err != nil {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "timeouts.request: %v", err)
		}
	}
	if to.BackendRequest != nil {
		if out.BackendRequest, err = parseDuration(*to.BackendRequest); err != nil {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "timeouts.backendRequest: %v", err)
		}
	}
	if out.Request != nil && out.BackendRequest != nil && out.Request.Duration != 0 && out.BackendRequest.Duration > out.Request.Duration {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "timeouts.backendRequest %s is longer than timeouts.request %s", *to.BackendRequest, *to.Request)
	}
	return out
}

// retry maps HTTPRouteRule retry (GEP-1731) to the IR. Unset attempts
// means one retry (the schema's default); set, it must be at least 0 (the
// v1.7.0 schema minimum: an explicit 0 disables retries) and fit Envoy's
// uint32. Codes must be within 400-599.
func (rc *ruleContext) retry(r *gwapiv1.HTTPRouteRetry) *ir.Retry {
	if r == nil {
		return nil
	}
	out := &ir.Retry{Attempts: 1}
	if r.Attempts != nil {
		if *r.Attempts < 0 || int64(*r.Attempts) > math.MaxUint32 {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "retry.attempts %d is outside 0-%d", *r.Attempts, uint32(math.MaxUint32))
		} else {
			out.Attempts = uint32(*r.Attempts)
		}
	}
	for _, c := range r.Codes {
		if c < 400 || c > 599 {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "retry code %d is outside 400-599", c)
			continue
		}
		out.Codes = append(out.Codes, uint32(c))
	}
	if r.Backoff != nil {
		d, err := parseDuration(*r.Backoff)
		if err != nil {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "retry.backoff: %v", err)
		}
		out.Backoff = d
	}
	return out
}
