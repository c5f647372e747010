package ir

import (
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
