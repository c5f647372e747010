package gatewayapi

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// routeRules is a route's rules translated once, whatever the parents.
type routeRules struct {
	rules []*ruleIR
	// refs is the route's ResolvedRefs=False reason (the first problem's
	// reason, every problem's message), nil when all references resolve.
	refs *problem
	// unsupported is why some rules are invalid (UnsupportedValue or
	// IncompatibleFilters), nil when every rule is valid.
	unsupported *problem
	// invalid are the indexes of the invalid rules.
	invalid []int
}

// ruleIR is one translated rule: its matches, and the IR route every match
// of it becomes (without name, hostname and match).
type ruleIR struct {
	index int
	// matches are nil when the rule's matches themselves are invalid: such
	// a rule cannot be expressed at all and is left out of the IR.
	matches  []ir.HTTPMatch
	template *ir.HTTPRoute
}

func (r *routeRules) allInvalid() bool {
	return len(r.rules) > 0 && len(r.invalid) == len(r.rules)
}

func (r *routeRules) invalidIndexes() string {
	s := make([]string, 0, len(r.invalid))
	for _, i := range r.invalid {
		s = append(s, strconv.Itoa(i))
	}
	return strings.Join(s, ", ")
}

// directResponse500 is the answer of a rule that cannot be served: invalid
// references, invalid or unsupported filters, no backends.
func directResponse500() *ir.DirectResponse { return &ir.DirectResponse{StatusCode: 500} }

// translateRules translates spec.rules of hr. A route without rules gets
// the CRD default: one rule matching PathPrefix "/" (without backends, so
// it answers 500).
func (t *translator) translateRules(hr *gwapiv1.HTTPRoute) *routeRules {
	rules := hr.Spec.Rules
	if len(rules) == 0 {
		rules = []gwapiv1.HTTPRouteRule{{}}
	}
	out := &routeRules{}
	var refs, unsupported []*problem
	for i := range rules {
		rc := &ruleContext{t: t, route: hr, index: i}
		r := rc.translate(&rules[i])
		out.rules = append(out.rules, r)
		refs = append(refs, rc.refs...)
		if len(rc.unsupported) > 0 {
			out.invalid = append(out.invalid, i)
			unsupported = append(unsupported, rc.unsupported...)
		}
	}
	out.refs = summarize(refs)
	out.unsupported = summarize(unsupported)
	return out
}

// summarize keeps the first problem's reason and every problem's message.
func summarize(ps []*problem) *problem {
	if len(ps) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(ps))
	for _, p := range ps {
		msgs = append(msgs, p.msg)
	}
	return &problem{ps[0].reason, joinMessages(msgs)}
}

// ruleContext collects the problems of one rule while it is translated.
type ruleContext struct {
	t     *translator
	route *gwapiv1.HTTPRoute
	index int
	// refs are ResolvedRefs problems: the rule, or the part of it they
	// touch, answers 500.
	refs []*problem
	// unsupported are Accepted problems (UnsupportedValue,
	// IncompatibleFilters): the whole rule is invalid.
	unsupported []*problem
}

func (rc *ruleContext) unsupportedf(reason gwapiv1.RouteConditionReason, format string, a ...any) {
	rc.unsupported = append(rc.unsupported, &problem{string(reason), fmt.Sprintf("rule %d: ", rc.index) + fmt.Sprintf(format, a...)})
}

func (rc *ruleContext) refProblem(reason gwapiv1.RouteConditionReason, format string, a ...any) {
	rc.refs = append(rc.refs, &problem{string(reason), fmt.Sprintf("rule %d: ", rc.index) + fmt.Sprintf(format, a...)})
}

// translate turns one HTTPRouteRule into its IR. What the route does:
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
func (rc *ruleContext) translate(rule *gwapiv1.HTTPRouteRule) *ruleIR {
	r := &ruleIR{index: rc.index}
	matches, matchesOK := rc.matches(rule.Matches)
	if matchesOK {
		r.matches = matches
	}
	filters, extRef := rc.filters(rule.Filters, matches)
	if filters.Redirect != nil && len(rule.BackendRefs) > 0 {
		// HTTPRouteRule CEL rule.
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "a RequestRedirect filter must not be used together with backendRefs")
	}
	if len(rule.BackendRefs) > maxItems16 {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%d backendRefs; at most %d are allowed", len(rule.BackendRefs), maxItems16)
	}
	backends := rc.backendRefs(rule.BackendRefs)
	timeouts := rc.timeouts(rule.Timeouts)
	retry := rc.retry(rule.Retry)

	tpl := &ir.HTTPRoute{}
	r.template = tpl
	switch {
	case len(rc.unsupported) > 0 || extRef:
		tpl.DirectResponse = directResponse500()
	case filters.Redirect != nil:
		tpl.Filters = ir.HTTPFilters{Redirect: filters.Redirect, ResponseHeaders: filters.ResponseHeaders}
	case backends == nil:
		tpl.DirectResponse = directResponse500()
	default:
		tpl.Filters = filters
		tpl.Backends = backends
		tpl.Timeouts = timeouts
		tpl.Retry = retry
	}
	return r
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
		switch typ {
		case gwapiv1.PathMatchExact, gwapiv1.PathMatchPathPrefix:
			if p := checkPathMatch(value); p != "" {
				rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: path %s %s", j, q(value), p)
			}
			mt := ir.MatchExact
			if typ == gwapiv1.PathMatchPathPrefix {
				mt = ir.MatchPathPrefix
			}
			im.Path = &ir.StringMatch{Type: mt, Value: value}
		case gwapiv1.PathMatchRegularExpression:
			if p := checkRegex(value, maxPathLen); p != "" {
				rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: path regular expression %s %s", j, q(value), p)
			}
			im.Path = &ir.StringMatch{Type: ir.MatchRegex, Value: value}
		default:
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: path match type %s is not supported", j, q(string(typ)))
		}
		if len(m.Headers) > maxItems16 || len(m.QueryParams) > maxItems16 {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: at most %d header and %d query parameter matches are allowed", j, maxItems16, maxItems16)
		}
		seen := map[string]bool{}
		for _, h := range m.Headers {
			key := strings.ToLower(string(h.Name))
			if seen[key] {
				continue
			}
			seen[key] = true
			if p := checkHeaderName(string(h.Name)); p != "" {
				rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: header name %s %s", j, q(string(h.Name)), p)
			}
			im.Headers = append(im.Headers, rc.stringMatch(j, "header "+q(string(h.Name)), string(h.Name), string(deref(h.Type, gwapiv1.HeaderMatchExact)), h.Value, maxHeaderValueLen))
		}
		seen = map[string]bool{}
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

// stringMatch translates a header or query parameter match (what names it
// in messages) of type typ whose value may be maxLen bytes long.
func (rc *ruleContext) stringMatch(j int, what, name, typ, value string, maxLen int) ir.StringMatch {
	switch typ {
	case "Exact":
		if p := checkFieldValue(value, maxLen); p != "" {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: %s value %s %s", j, what, q(value), p)
		}
		return ir.StringMatch{Name: name, Type: ir.MatchExact, Value: value}
	case "RegularExpression":
		if p := checkRegex(value, maxLen); p != "" {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: %s regular expression %s %s", j, what, q(value), p)
		}
		return ir.StringMatch{Name: name, Type: ir.MatchRegex, Value: value}
	}
	rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: %s match type %s is not supported", j, what, q(typ))
	return ir.StringMatch{Name: name, Type: ir.MatchExact, Value: value}
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
// means one retry (Envoy's default); set, it must be at least 1 (schema
// minimum) and fit Envoy's uint32. Codes must be within 400-599.
func (rc *ruleContext) retry(r *gwapiv1.HTTPRouteRetry) *ir.Retry {
	if r == nil {
		return nil
	}
	out := &ir.Retry{Attempts: 1}
	if r.Attempts != nil {
		if *r.Attempts < 1 || int64(*r.Attempts) > math.MaxUint32 {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "retry.attempts %d is outside 1-%d", *r.Attempts, uint32(math.MaxUint32))
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
