package gatewayapi

// The rule machinery the HTTP-level route kinds (HTTPRoute, GRPCRoute)
// share: a ruleContext collects one rule's problems while the kind's file
// translates it, and routeRules is a route's rules translated once,
// whatever the parents. Filters (filters.go) and backendRefs (backends.go)
// are translated here for both kinds.

import (
	"fmt"
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
	// failure is the HTTP status a rule that cannot be served answers.
	failure uint32
	// l4 marks the rules of an L4 kind (TLSRoute, TCPRoute, UDPRoute):
	// each ruleIR has l4 backends instead of matches and a template.
	l4 bool
}

// ruleIR is one translated rule: its matches, and the IR route every match
// of it becomes (without name, hostname and match).
type ruleIR struct {
	index int
	// name is the rule's name (HTTPRouteRule, GRPCRouteRule name), "" for
	// none: a policy's sectionName targets it.
	name string
	// matches are nil when the rule's matches themselves are invalid: such
	// a rule cannot be expressed at all and is left out of the IR.
	matches []ir.HTTPMatch
	// ranks are the precedence keys of matches, in the same order: of two
	// routes for one hostname, the smaller key (slices.Compare) comes first
	// (sortRoutes).
	ranks    [][]int
	template *ir.HTTPRoute
	// l4 are the backends of an L4 kind's rule.
	l4 *ir.BackendGroup
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

// ruleContext collects the problems of one rule while it is translated,
// with what the route's kind decides for all of its rules.
type ruleContext struct {
	t     *translator
	route *routeState
	index int
	// failure is the HTTP status of a rule, or a backend's share, that
	// cannot be served: 500 for HTTPRoute (HTTPRouteRule backendRefs), 503
	// for GRPCRoute, which Envoy answers gRPC clients as grpc-status 14
	// UNAVAILABLE (GRPCRouteRule backendRefs).
	failure uint32
	// http2 makes every backend speak HTTP/2 (h2c unless the Service port
	// says otherwise), as gRPC needs, whatever the port's appProtocol.
	http2 bool
	// l4 is the protocol an L4 kind relays to its backends (TCP for
	// TLSRoute and TCPRoute, UDP for UDPRoute), "" for HTTP kinds.
	l4 ir.AppProtocol
	// filterTypes are the filter types the kind has (nil: every
	// HTTPRouteFilter type); others are UnsupportedValue.
	filterTypes map[gwapiv1.HTTPRouteFilterType]bool
	// ruleHost says what rewrites the Host of the rule's requests ("" when
	// nothing does): a URLRewrite hostname or a RequestHeaderModifier that
	// sets Host (filters, headers.go). A backendRef that sets Host too is
	// then refused (backendFilters). filters runs before backendRefs.
	ruleHost string
	// ruleMatches are the rule's translated matches (HTTPRoute), for the
	// ReplacePrefixMatch of a backendRef URLRewrite.
	ruleMatches []ir.HTTPMatch
	// backendPaths are the path rewrites of the rule's backendRef URLRewrite
	// filters, by backendRef index (backendFilters); hoistBackendPath turns
	// them into the rule's.
	backendPaths map[int]*ir.PathModifier
	// refs are ResolvedRefs problems: the rule, or the part of it they
	// touch, answers the failure status.
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

// failed is the direct response of a rule that cannot be served: invalid
// references, invalid or unsupported filters, no backends.
func (rc *ruleContext) failed() *ir.DirectResponse { return &ir.DirectResponse{StatusCode: rc.failure} }

// forward sets tpl's action: the failure status when the rule is invalid,
// has an ExtensionRef filter (which we cannot resolve) or no valid
// backend, else the filters and backends.
func (rc *ruleContext) forward(tpl *ir.HTTPRoute, filters ir.HTTPFilters, extRef bool, backends *ir.BackendGroup) {
	if len(rc.unsupported) > 0 || extRef || backends == nil {
		tpl.DirectResponse = rc.failed()
		return
	}
	tpl.Filters = filters
	tpl.Backends = backends
}

// translateRules translates the n rules of r, each with a ruleContext that
// copies base (t, route, failure, http2, filterTypes) and has the rule's
// index, by one.
func (t *translator) translateRules(r *routeState, n int, base ruleContext, one func(rc *ruleContext) *ruleIR) *routeRules {
	out := &routeRules{rules: make([]*ruleIR, 0, n), failure: base.failure, l4: base.l4 != ""}
	var refs, unsupported []*problem
	// One ruleContext for every rule, the translator's (one retains
	// nothing of it), rather than one allocated per rule.
	rc := &t.rule
	for i := range n {
		*rc = base
		rc.t, rc.route, rc.index = t, r, i
		ru := one(rc)
		out.rules = append(out.rules, ru)
		refs = append(refs, rc.refs...)
		if len(rc.unsupported) > 0 {
			out.invalid = append(out.invalid, i)
			unsupported = append(unsupported, rc.unsupported...)
		}
	}
	*rc = ruleContext{}
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

// headerMatches translates the header matches of match j (HTTPHeaderMatch;
// GRPCHeaderMatch has the same fields). Of several with the same
// (case-insensitive) name only the first counts. Names must be
// HTTPHeaderNames, values at most 4096 characters without control
// characters, regular expressions RE2 within Envoy's size limit; at most 16.
func (rc *ruleContext) headerMatches(j int, hs []gwapiv1.HTTPHeaderMatch) []ir.StringMatch {
	if len(hs) > maxItems16 {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: at most %d header matches are allowed", j, maxItems16)
	}
	var out []ir.StringMatch
	seen := map[string]bool{}
	for _, h := range hs {
		key := strings.ToLower(string(h.Name))
		if seen[key] {
			continue
		}
		seen[key] = true
		if p := checkHeaderName(string(h.Name)); p != "" {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: header name %s %s", j, q(string(h.Name)), p)
		}
		out = append(out, rc.stringMatch(j, "header "+q(string(h.Name)), string(h.Name), string(deref(h.Type, gwapiv1.HeaderMatchExact)), h.Value, maxHeaderValueLen))
	}
	return out
}

// stringMatch translates a header or query parameter match (what names it
// in messages) of type typ whose value may be maxLen bytes long.
func (rc *ruleContext) stringMatch(j int, what, name, typ, value string, maxLen int) ir.StringMatch {
	m, msg := valueMatch(name, typ, value, maxLen)
	if msg != "" {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "match %d: %s %s", j, what, msg)
	}
	return m
}

// valueMatch translates a header or query parameter match (HTTPHeaderMatch,
// HTTPQueryParamMatch) of name, of type typ (Exact or RegularExpression),
// whose value may be maxLen bytes long (the schema's; a regular expression
// must also pass RE2 within Envoy's program size: checkRegex). It returns
// the IR match (Exact when typ is unknown) and why the match is not valid,
// "" when it is.
func valueMatch(name, typ, value string, maxLen int) (ir.StringMatch, string) {
	switch typ {
	case "Exact":
		if p := checkFieldValue(value, maxLen); p != "" {
			return ir.StringMatch{Name: name, Type: ir.MatchExact, Value: value}, fmt.Sprintf("value %s %s", q(value), p)
		}
		return ir.StringMatch{Name: name, Type: ir.MatchExact, Value: value}, ""
	case "RegularExpression":
		if p := checkRegex(value, maxLen); p != "" {
			return ir.StringMatch{Name: name, Type: ir.MatchRegex, Value: value}, fmt.Sprintf("regular expression %s %s", q(value), p)
		}
		return ir.StringMatch{Name: name, Type: ir.MatchRegex, Value: value}, ""
	}
	return ir.StringMatch{Name: name, Type: ir.MatchExact, Value: value}, fmt.Sprintf("match type %s is not supported", q(typ))
}

// pathMatch translates an HTTPPathMatch of type typ and value (defaults
// applied: PathPrefix, "/"): Exact and PathPrefix values must pass the
// HTTPPathMatch CEL rules (checkPathMatch), a RegularExpression RE2
// within Envoy's program size. It returns the IR match and why the match
// is not valid, "" when it is; an unknown type gives no match.
func pathMatch(typ gwapiv1.PathMatchType, value string) (*ir.StringMatch, string) {
	switch typ {
	case gwapiv1.PathMatchExact, gwapiv1.PathMatchPathPrefix:
		mt := ir.MatchExact
		if typ == gwapiv1.PathMatchPathPrefix {
			mt = ir.MatchPathPrefix
		}
		m := &ir.StringMatch{Type: mt, Value: value}
		if p := checkPathMatch(value); p != "" {
			return m, fmt.Sprintf("%s %s", q(value), p)
		}
		return m, ""
	case gwapiv1.PathMatchRegularExpression:
		m := &ir.StringMatch{Type: ir.MatchRegex, Value: value}
		if p := checkRegex(value, maxPathLen); p != "" {
			return m, fmt.Sprintf("regular expression %s %s", q(value), p)
		}
		return m, ""
	}
	return nil, fmt.Sprintf("match type %s is not supported", q(string(typ)))
}
