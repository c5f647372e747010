package ir

// Global rate limits: counters shared by every Envoy of a fleet, kept by
// the envoyproxy/ratelimit service (Envoy's rate-limit service protocol,
// envoy.service.ratelimit.v3) in Redis. The form here is what both sides
// are rendered from (pkg/xdstranslator/ratelimit.go): the service's
// configuration (a RateLimitConfig: one domain per proxy scope, a
// descriptor tree per rule) and Envoy's pieces (the ratelimit HTTP filters,
// one per failure mode, the service's cluster, a route's rate_limits
// actions).
//
// A rule counts the requests of the routes that name it; with ClientIP
// and/or Header set, each client address and/or each value of the header
// has its own counter. A request is refused (429) when one of the rules
// of its route is over its limit.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// RateLimitUnit is the period a limit's requests are counted over (the
// service's RateLimitUnit: a fixed window that starts on the unit's
// boundary, e.g. each wall-clock minute).
type RateLimitUnit string

// The units the service knows (ratelimit.config.ratelimit.v3
// RateLimitUnit; the service also has WEEK, MONTH and YEAR, which a
// gateway has no use for).
const (
	RateLimitSecond RateLimitUnit = "Second"
	RateLimitMinute RateLimitUnit = "Minute"
	RateLimitHour   RateLimitUnit = "Hour"
	RateLimitDay    RateLimitUnit = "Day"
)

// GlobalRateLimits is a proxy scope's global limits: the service's domain
// and every rule the scope's routes use.
type GlobalRateLimits struct {
	// Domain is the service's domain of the scope (unique per scope: the
	// counters of two scopes never mix), a non-empty string of at most
	// 253 characters without "/" (it names a configuration file).
	Domain string `json:"domain"`
	// Service is the rate-limit service's gRPC endpoint, an h2c backend
	// (Protocol AppProtocolH2C) with IP endpoints; Envoy reaches it through
	// the cluster of that name.
	Service *Backend `json:"service"`
	// Rules are sorted by Name, names distinct.
	Rules []GlobalRateLimitRule `json:"rules"`
}

// GlobalRateLimitRule is one counter, or one per client and/or header
// value, with its limit.
type GlobalRateLimitRule struct {
	// Name identifies the rule in its domain: the value of its first
	// descriptor entry, "rule" (e.g. "<policy namespace>/<policy name>/0"),
	// printable ASCII without spaces, at most 253 characters.
	Name string `json:"name"`
	// ClientIP gives each client address its own counter (Envoy's
	// remote_address action: the trusted downstream address, after the
	// listener's X-Forwarded-For settings).
	ClientIP bool `json:"clientIP,omitempty"`
	// Header, when set, gives each value of this request header (a
	// lower-case HTTP header name) its own counter; requests without the
	// header are not counted by the rule (Envoy sends no descriptor for
	// a rule whose header is absent).
	Header string `json:"header,omitempty"`
	// Requests per Unit is the limit: at least 1.
	Requests uint32        `json:"requests"`
	Unit     RateLimitUnit `json:"unit"`
	// FailOpen says what a request gets when the service cannot answer
	// for this rule (down, unreachable, or slower than the filter's
	// timeout): true passes it, false refuses it with 500 (Envoy's
	// ratelimit filter failure_mode_deny; the rules of each choice go
	// through a filter of their own).
	FailOpen bool `json:"failOpen,omitempty"`
	// Shadow makes the service count the rule and report it over limit in
	// its statistics without refusing requests (its shadow_mode).
	Shadow bool `json:"shadow,omitempty"`
}

// Validate checks the invariants the rendering relies on and returns them
// all, joined, or nil: a domain and a service, rule names distinct and
// sorted, limits of at least one request per known unit, header names
// valid lower-case HTTP header names.
func (g *GlobalRateLimits) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("global rate limits: "+format, a...)) }
	if g.Domain == "" || len(g.Domain) > 253 || strings.Contains(g.Domain, "/") || !printable(g.Domain) {
		bad("domain %q: 1 to 253 printable characters without / or spaces", g.Domain)
	}
	if g.Service == nil || g.Service.Name == "" || len(g.Service.Endpoints) == 0 {
		bad("no rate-limit service (a backend with endpoints)")
	} else if g.Service.Protocol != AppProtocolH2C {
		bad("service %s: protocol %q, want %q (gRPC without TLS)", g.Service.Name, g.Service.Protocol, AppProtocolH2C)
	}
	if !slices.IsSortedFunc(g.Rules, func(a, b GlobalRateLimitRule) int { return strings.Compare(a.Name, b.Name) }) {
		bad("rules not sorted by name")
	}
	for i, r := range g.Rules {
		if i > 0 && g.Rules[i-1].Name == r.Name {
			bad("rule %q twice", r.Name)
		}
		if r.Name == "" || len(r.Name) > 253 || !printable(r.Name) {
			bad("rule %q: name of 1 to 253 printable characters without spaces", r.Name)
		}
		if r.Requests == 0 {
			bad("rule %q: limit of 0 requests", r.Name)
		}
		switch r.Unit {
		case RateLimitSecond, RateLimitMinute, RateLimitHour, RateLimitDay:
		default:
			bad("rule %q: unknown unit %q (Second, Minute, Hour or Day)", r.Name, r.Unit)
		}
		if r.Header != "" && (strings.ToLower(r.Header) != r.Header || len(validation.IsHTTPHeaderName(r.Header)) > 0) {
			bad("rule %q: header %q is not a lower-case HTTP header name", r.Name, r.Header)
		}
	}
	return errors.Join(errs...)
}

// Rule returns the rule named name, or nil.
func (g *GlobalRateLimits) Rule(name string) *GlobalRateLimitRule {
	i, ok := slices.BinarySearchFunc(g.Rules, name, func(r GlobalRateLimitRule, n string) int { return strings.Compare(r.Name, n) })
	if !ok {
		return nil
	}
	return &g.Rules[i]
}

// printable says whether s is printable ASCII without spaces.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
