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
//
// The producer (pkg/gatewayapi: a TrafficPolicy's rateLimit.global) puts
// a route's rules on the route (Traffic GlobalRateLimit, with the
// service); a scope's GlobalRateLimits is gathered from its routes
// (IR.GlobalRateLimits), its domain made from the scope's name
// (RateLimitDomain). Rule names carry the policy's namespace and name,
// so that no tenant's rule meets another's in a domain.

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
	// (Protocol AppProtocolH2C) with IP or host name endpoints; Envoy
	// reaches it through the cluster of that name.
	Service *Backend `json:"service"`
	// Rules are sorted by Name, names distinct.
	Rules []GlobalRateLimitRule `json:"rules"`
}

// GlobalRateLimitRule is one counter, or one per client and/or header
// value, with its limit.
type GlobalRateLimitRule struct {
	// Name identifies the rule in its domain: the value of its first
	// descriptor entry, "rule" (e.g. "<policy namespace>/<policy name>/0"),
	// printable ASCII without spaces, at most MaxRateLimitRuleName
	// characters.
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
		if r.Name == "" || len(r.Name) > MaxRateLimitRuleName || !printable(r.Name) {
			bad("rule %q: name of 1 to %d printable characters without spaces", r.Name, MaxRateLimitRuleName)
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

// MaxRateLimitRuleName is the longest rule name: room for a policy's
// "<namespace>/<name>/<index>" (63 + 253 characters and the index).
const MaxRateLimitRuleName = 400

// RouteGlobalRateLimit is what a route's requests count against: the
// rules of its policy and the service that keeps their counters. The
// route's scope gives the domain (RateLimitDomain).
type RouteGlobalRateLimit struct {
	// Service is the rate-limit service (GlobalRateLimits Service): the
	// same for every route of a scope.
	Service *Backend `json:"service"`
	// Rules are sorted by Name, names distinct, at least one; a rule of
	// a name is the same on every route of a scope that has it.
	Rules []GlobalRateLimitRule `json:"rules"`
}

// RateLimitDomain is the service's domain of scope: its name with "/"
// made "_" ("gatewayclass/web" is "gatewayclass_web"). Scope names are
// made of "/" and Kubernetes names, which hold no "_": two scopes never
// share a domain.
func RateLimitDomain(scope string) string { return strings.ReplaceAll(scope, "/", "_") }

// GlobalRateLimits gathers the global rate limits of the routes of
// scope's Gateways: the scope's domain, the service, and every rule once,
// sorted by name. It is nil when no route of the scope has any; an error
// says that two routes disagree on the service or on a rule of one name
// (ir.IR.Validate reports the same).
func (x *IR) GlobalRateLimits(scope string) (*GlobalRateLimits, error) {
	m, err := x.gatherRateLimits(func(s string) bool { return s == scope })
	return m[scope], err
}

// GlobalRateLimitsByScope is GlobalRateLimits of every scope that has
// global rate limits, by scope, in one pass over the IR.
func (x *IR) GlobalRateLimitsByScope() (map[string]*GlobalRateLimits, error) {
	return x.gatherRateLimits(func(string) bool { return true })
}

// gatherRateLimits gathers the global rate limits of the scopes that
// want says.
func (x *IR) gatherRateLimits(want func(scope string) bool) (map[string]*GlobalRateLimits, error) {
	out := map[string]*GlobalRateLimits{}
	seen := map[*RouteGlobalRateLimit]string{}
	var errs []error
	for _, gw := range x.Gateways {
		if !want(gw.Scope) {
			continue
		}
		for _, l := range gw.Listeners {
			for _, r := range l.HTTPRoutes {
				if r.Traffic == nil || r.Traffic.GlobalRateLimit == nil {
					continue
				}
				rl := r.Traffic.GlobalRateLimit
				if s, ok := seen[rl]; ok && s == gw.Scope {
					continue // a policy's, met on another route already
				}
				seen[rl] = gw.Scope
				g := out[gw.Scope]
				if g == nil {
					g = &GlobalRateLimits{Domain: RateLimitDomain(gw.Scope), Service: rl.Service}
					out[gw.Scope] = g
				} else if !sameService(g.Service, rl.Service) {
					errs = append(errs, fmt.Errorf("global rate limits of scope %s: route %s names another rate-limit service", gw.Scope, r.Name))
					continue
				}
				for _, rule := range rl.Rules {
					i, found := slices.BinarySearchFunc(g.Rules, rule.Name, func(a GlobalRateLimitRule, n string) int { return strings.Compare(a.Name, n) })
					switch {
					case !found:
						g.Rules = slices.Insert(g.Rules, i, rule)
					case g.Rules[i] != rule:
						errs = append(errs, fmt.Errorf("global rate limits of scope %s: route %s has another rule %q", gw.Scope, r.Name, rule.Name))
					}
				}
			}
		}
	}
	return out, errors.Join(errs...)
}

// sameService says whether a and b are the same rate-limit service.
func sameService(a, b *Backend) bool {
	if a == b {
		return true
	}
	return a != nil && b != nil && a.Name == b.Name && a.Protocol == b.Protocol && slices.Equal(a.Endpoints, b.Endpoints)
}

// globalRateLimit checks a route's global rate limits as GlobalRateLimits
// Validate does, and that it has a rule.
func (v *validator) globalRateLimit(p string, rl *RouteGlobalRateLimit) {
	if len(rl.Rules) == 0 {
		v.add(p, "global rate limit without rules")
	}
	g := GlobalRateLimits{Domain: "route", Service: rl.Service, Rules: rl.Rules}
	if err := g.Validate(); err != nil {
		v.add(p, err.Error())
	}
	if rl.Service != nil {
		v.backend(p, rl.Service) // one name, one content, across the IR
	}
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
