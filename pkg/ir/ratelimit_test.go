package ir

import (
	"errors"
	"strings"
	"testing"
)

func TestGlobalRateLimitsValidate(t *testing.T) {
	good := func() *GlobalRateLimits {
		return &GlobalRateLimits{
			Domain:  "scope",
			Service: &Backend{Name: "rls", Protocol: AppProtocolH2C, Endpoints: []Endpoint{{Address: "127.0.0.1", Port: 8081}}},
			Rules: []GlobalRateLimitRule{
				{Name: "a", Requests: 1, Unit: RateLimitSecond},
				{Name: "b", Header: "x-user", ClientIP: true, Requests: 10, Unit: RateLimitDay},
			},
		}
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		edit func(*GlobalRateLimits)
		want string
	}{
		"domain":        {func(g *GlobalRateLimits) { g.Domain = "a/b" }, "domain"},
		"no domain":     {func(g *GlobalRateLimits) { g.Domain = "" }, "domain"},
		"no service":    {func(g *GlobalRateLimits) { g.Service = nil }, "no rate-limit service"},
		"no endpoints":  {func(g *GlobalRateLimits) { g.Service.Endpoints = nil }, "no rate-limit service"},
		"http1 service": {func(g *GlobalRateLimits) { g.Service.Protocol = AppProtocolHTTP1 }, "protocol"},
		"unsorted":      {func(g *GlobalRateLimits) { g.Rules[0].Name = "c" }, "not sorted"},
		"duplicate":     {func(g *GlobalRateLimits) { g.Rules[1].Name = "a" }, `rule "a" twice`},
		"space":         {func(g *GlobalRateLimits) { g.Rules[1].Name = "b c" }, "printable"},
		"zero":          {func(g *GlobalRateLimits) { g.Rules[0].Requests = 0 }, "0 requests"},
		"unit":          {func(g *GlobalRateLimits) { g.Rules[0].Unit = "Week" }, "unknown unit"},
		"header case":   {func(g *GlobalRateLimits) { g.Rules[1].Header = "X-User" }, "lower-case"},
		"header name":   {func(g *GlobalRateLimits) { g.Rules[1].Header = "x user" }, "lower-case"},
	}
	for name, c := range cases {
		g := good()
		c.edit(g)
		err := g.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	g := good()
	if g.Rule("b") != &g.Rules[1] || g.Rule("z") != nil {
		t.Error("Rule")
	}
}

// TestIRGlobalRateLimits: a scope's rules gathered from its routes (each
// once, sorted; a policy's on several routes once), other scopes apart,
// the domain from the scope's name, and the disagreements IR.Validate
// reports.
func TestIRGlobalRateLimits(t *testing.T) {
	svc := &Backend{Name: "ratelimit/service", Protocol: AppProtocolH2C, Endpoints: []Endpoint{{Address: "10.0.0.9", Port: 8081}}}
	rule := func(name string, n uint32) GlobalRateLimitRule {
		return GlobalRateLimitRule{Name: name, Requests: n, Unit: RateLimitMinute}
	}
	shared := &RouteGlobalRateLimit{Service: svc, Rules: []GlobalRateLimitRule{rule("a/gw/0", 100)}}
	route := func(rl *RouteGlobalRateLimit) *HTTPRoute {
		return &HTTPRoute{Name: "r", Traffic: &Traffic{GlobalRateLimit: rl}}
	}
	gw := func(name, scope string, routes ...*HTTPRoute) *Gateway {
		return &Gateway{Namespace: "a", Name: name, Scope: scope, Listeners: []*Listener{{Name: "a/" + name + "/http", HTTPRoutes: routes}}}
	}
	x := &IR{Gateways: []*Gateway{
		gw("one", "gatewayclass/xds", route(shared), route(&RouteGlobalRateLimit{Service: svc, Rules: []GlobalRateLimitRule{rule("a/api/0", 5), rule("a/api/1", 6)}}), &HTTPRoute{Name: "plain"}),
		gw("two", "gatewayclass/xds", route(shared)),
		gw("three", "gateway/a/three", route(&RouteGlobalRateLimit{Service: svc, Rules: []GlobalRateLimitRule{rule("a/gw/0", 100)}})),
		gw("four", "gateway/a/four"),
	}}
	g, err := x.GlobalRateLimits("gatewayclass/xds")
	if err != nil || g == nil {
		t.Fatalf("%v %v", g, err)
	}
	var names []string
	for _, r := range g.Rules {
		names = append(names, r.Name)
	}
	if g.Domain != "gatewayclass_xds" || g.Service != svc || strings.Join(names, " ") != "a/api/0 a/api/1 a/gw/0" || g.Validate() != nil {
		t.Errorf("scope gatewayclass/xds: domain %s, rules %v, %v", g.Domain, names, g.Validate())
	}
	all, err := x.GlobalRateLimitsByScope()
	if err != nil || len(all) != 2 || all["gateway/a/three"].Domain != "gateway_a_three" || len(all["gateway/a/three"].Rules) != 1 || all["gateway/a/four"] != nil {
		t.Errorf("by scope: %v %v", all, err)
	}
	if g, err := x.GlobalRateLimits("gateway/a/four"); g != nil || err != nil {
		t.Errorf("a scope without limits: %v %v", g, err)
	}
	// Two routes of a scope disagree on a rule, or on the service.
	other := *svc
	other.Endpoints = []Endpoint{{Address: "10.0.0.10", Port: 8081}}
	for name, rl := range map[string]*RouteGlobalRateLimit{
		`another rule "a/gw/0"`:      {Service: svc, Rules: []GlobalRateLimitRule{rule("a/gw/0", 1)}},
		"another rate-limit service": {Service: &other, Rules: []GlobalRateLimitRule{rule("a/x/0", 1)}},
	} {
		y := &IR{Gateways: []*Gateway{gw("one", "s", route(shared)), gw("two", "s", route(rl))}}
		if _, err := y.GlobalRateLimits("s"); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
		if err := y.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Validate, %s: %v", name, err)
		}
	}
	// A route's limits are checked as a scope's are.
	for name, rl := range map[string]*RouteGlobalRateLimit{
		"without rules":         {Service: svc},
		"no rate-limit service": {Rules: []GlobalRateLimitRule{rule("a/x/0", 1)}},
		"limit of 0 requests":   {Service: svc, Rules: []GlobalRateLimitRule{rule("a/x/0", 0)}},
		"not sorted":            {Service: svc, Rules: []GlobalRateLimitRule{rule("a/x/1", 1), rule("a/x/0", 1)}},
	} {
		v := newValidator(nil)
		v.globalRateLimit("route", rl)
		if err := errors.Join(v.errs...); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
