package xdstranslator

import (
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

func testGlobalRateLimits() *ir.GlobalRateLimits {
	return &ir.GlobalRateLimits{
		Domain:  "standalone",
		Service: &ir.Backend{Name: "ratelimit", Protocol: ir.AppProtocolH2C, Endpoints: []ir.Endpoint{{Address: "127.0.0.1", Port: 8081}}},
		Rules: []ir.GlobalRateLimitRule{
			{Name: "a/by-client", ClientIP: true, Requests: 5, Unit: ir.RateLimitSecond},
			{Name: "a/by-client-and-user", ClientIP: true, Header: "x-user", Requests: 7, Unit: ir.RateLimitHour, Shadow: true},
			{Name: "a/route", Requests: 100, Unit: ir.RateLimitMinute, FailOpen: true},
			{Name: "a/user", Header: "x-user", Requests: 2, Unit: ir.RateLimitDay},
		},
	}
}

// The service's tree: the rule's key and name first, then a valueless
// entry per counter dimension (client address, then header), the limit
// on the deepest.
func TestRateLimitConfigTree(t *testing.T) {
	g := testGlobalRateLimits()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	c := RateLimitConfig(g)
	if c.Domain != "standalone" || c.Name != "standalone" || len(c.Descriptors) != 4 {
		t.Fatalf("config %v", c)
	}
	type entry struct {
		key, value string
	}
	cases := []struct {
		path   []entry
		unit   rlsconfv3.RateLimitUnit
		n      uint32
		shadow bool
	}{
		{[]entry{{"rule", "a/by-client"}, {"remote_address", ""}}, rlsconfv3.RateLimitUnit_SECOND, 5, false},
		{[]entry{{"rule", "a/by-client-and-user"}, {"remote_address", ""}, {"header", ""}}, rlsconfv3.RateLimitUnit_HOUR, 7, true},
		{[]entry{{"rule", "a/route"}}, rlsconfv3.RateLimitUnit_MINUTE, 100, false},
		{[]entry{{"rule", "a/user"}, {"header", ""}}, rlsconfv3.RateLimitUnit_DAY, 2, false},
	}
	for i, want := range cases {
		d := c.Descriptors[i]
		for j, e := range want.path {
			if d.Key != e.key || d.Value != e.value {
				t.Fatalf("rule %d entry %d: %s=%s, want %s=%s", i, j, d.Key, d.Value, e.key, e.value)
			}
			if j < len(want.path)-1 {
				if d.RateLimit != nil || len(d.Descriptors) != 1 {
					t.Fatalf("rule %d entry %d: a limit or %d children above the leaf", i, j, len(d.Descriptors))
				}
				d = d.Descriptors[0]
			}
		}
		if len(d.Descriptors) != 0 || d.RateLimit == nil || d.RateLimit.Unit != want.unit || d.RateLimit.RequestsPerUnit != want.n || d.ShadowMode != want.shadow {
			t.Errorf("rule %d leaf: %v", i, d)
		}
	}
}

// The filters: one per failure mode, the service's cluster, 429 with
// retry-after and the RateLimit-* headers.
func TestRateLimitFilter(t *testing.T) {
	g := testGlobalRateLimits()
	for _, failOpen := range []bool{false, true} {
		f := RateLimitFilter(g, failOpen)
		if f.Name != RateLimitFilterName(failOpen) || !strings.HasPrefix(f.Name, "envoy.filters.http.ratelimit/") {
			t.Fatalf("name %q", f.Name)
		}
		var c ratelimitv3.RateLimit
		if err := f.GetTypedConfig().UnmarshalTo(&c); err != nil {
			t.Fatal(err)
		}
		if err := c.ValidateAll(); err != nil {
			t.Fatal(err)
		}
		if c.FailureModeDeny == failOpen {
			t.Errorf("failOpen %v: failure_mode_deny %v", failOpen, c.FailureModeDeny)
		}
		if c.Domain != "standalone" || c.GetRateLimitService().GetGrpcService().GetEnvoyGrpc().GetClusterName() != "ratelimit" ||
			c.Timeout.AsDuration() != RateLimitTimeout || !c.EnableRetryAfterHeader || c.EnableXRatelimitHeaders != ratelimitv3.RateLimit_DRAFT_VERSION_03 {
			t.Errorf("filter %s", prototext.Format(&c))
		}
	}
	if RateLimitFilterName(true) == RateLimitFilterName(false) {
		t.Fatal("one name for both modes")
	}
	c, cla := RateLimitCluster(g)
	if c.Name != "ratelimit" || c.TypedExtensionProtocolOptions == nil || len(cla.GetEndpoints()) != 1 {
		t.Errorf("cluster %v %v", c, cla)
	}
}

// A route's rules go to the filter of their mode, in the route's order,
// each as the actions that make its descriptor.
func TestRouteRateLimits(t *testing.T) {
	g := testGlobalRateLimits()
	m, err := RouteRateLimits(g, []string{"a/user", "a/route", "a/by-client-and-user"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 {
		t.Fatalf("%d filters", len(m))
	}
	kinds := func(rl *routev3.RateLimit) string {
		var s []string
		for _, a := range rl.Actions {
			switch x := a.ActionSpecifier.(type) {
			case *routev3.RateLimit_Action_GenericKey_:
				s = append(s, x.GenericKey.DescriptorKey+"="+x.GenericKey.DescriptorValue)
			case *routev3.RateLimit_Action_RemoteAddress_:
				s = append(s, "remote_address")
			case *routev3.RateLimit_Action_RequestHeaders_:
				s = append(s, x.RequestHeaders.DescriptorKey+"<"+x.RequestHeaders.HeaderName)
			}
		}
		return strings.Join(s, ",")
	}
	read := func(name string) []string {
		var p ratelimitv3.RateLimitPerRoute
		if err := m[name].UnmarshalTo(&p); err != nil {
			t.Fatal(err)
		}
		if err := p.ValidateAll(); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, rl := range p.RateLimits {
			out = append(out, kinds(rl))
		}
		return out
	}
	closed := read(RateLimitFilterName(false))
	if strings.Join(closed, " ") != "rule=a/user,header<x-user rule=a/by-client-and-user,remote_address,header<x-user" {
		t.Errorf("fail-closed: %q", closed)
	}
	open := read(RateLimitFilterName(true))
	if strings.Join(open, " ") != "rule=a/route" {
		t.Errorf("fail-open: %q", open)
	}
	if m, err := RouteRateLimits(g, nil); m != nil || err != nil {
		t.Errorf("no rules: %v %v", m, err)
	}
	if _, err := RouteRateLimits(g, []string{"a/nope"}); err == nil || !strings.Contains(err.Error(), `"a/nope"`) {
		t.Errorf("unknown rule: %v", err)
	}
}

// The service's files: one per domain, "<domain>.yaml", in its YAML
// schema (proto names, the unit's name); names that are no ConfigMap key
// (the cluster mounts them from one), dotfiles (the service skips them)
// and a domain twice are refused.
func TestRateLimitConfigFiles(t *testing.T) {
	g := testGlobalRateLimits()
	other := &ir.GlobalRateLimits{Domain: "gateway.apps.web"}
	files, err := RateLimitConfigFiles(RateLimitConfig(g), RateLimitConfig(other))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files["gateway.apps.web.yaml"] == nil {
		t.Fatalf("files %v", files)
	}
	got := string(files["standalone.yaml"])
	for _, want := range []string{"domain: standalone\n", "  key: rule\n  value: a/by-client\n", "requests_per_unit: 5\n", "unit: SECOND\n", "shadow_mode: true\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("standalone.yaml lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range [][]string{{"a:b"}, {"../x"}, {".hidden"}, {""}, {"a", "a"}, {strings.Repeat("d", 250)}} {
		var cs []*rlsconfv3.RateLimitConfig
		for _, d := range bad {
			cs = append(cs, &rlsconfv3.RateLimitConfig{Name: d, Domain: d})
		}
		if _, err := RateLimitConfigFiles(cs...); err == nil {
			t.Errorf("domains %q: no error", bad)
		}
	}
}

// A route's global limits (ir.Traffic GlobalRateLimit) in a scope's
// translation: the per-route configuration of each mode's filter, the
// filters (the scope's domain, disabled but on their routes) and the
// service's backend; nothing on a redirect or a direct response, which
// Envoy's ratelimit filter skips.
func TestRouteGlobalRateLimit(t *testing.T) {
	g := testGlobalRateLimits()
	rl := &ir.RouteGlobalRateLimit{Service: g.Service, Rules: g.Rules}
	fwd := &ir.HTTPRoute{Name: "r", Backends: &ir.BackendGroup{Backends: []*ir.Backend{{Name: "b"}}}, Traffic: &ir.Traffic{GlobalRateLimit: rl}}
	out, use := &routev3.Route{}, filterUse{}
	b, err := globalRateLimit(out, fwd, "gatewayclass_xds", &use)
	if err != nil || b != g.Service {
		t.Fatalf("backend %v, %v", b, err)
	}
	if len(out.TypedPerFilterConfig) != 2 || len(use.rateLimits) != 2 ||
		use.rateLimits[0].name != RateLimitFilterName(false) || use.rateLimits[1].name != RateLimitFilterName(true) {
		t.Fatalf("per-route %v, filters %v", out.TypedPerFilterConfig, use.rateLimits)
	}
	for _, f := range use.rateLimits {
		var c ratelimitv3.RateLimit
		if err := f.filter.GetTypedConfig().UnmarshalTo(&c); err != nil {
			t.Fatal(err)
		}
		if !f.filter.Disabled || c.Domain != "gatewayclass_xds" || c.FailureModeDeny != (f.name == RateLimitFilterName(false)) {
			t.Errorf("%s: disabled %v, domain %s, failure_mode_deny %v", f.name, f.filter.Disabled, c.Domain, c.FailureModeDeny)
		}
	}
	for name, r := range map[string]*ir.HTTPRoute{
		"a redirect":        {Name: "r", Traffic: fwd.Traffic, Filters: ir.HTTPFilters{Redirect: &ir.Redirect{}}},
		"a direct response": {Name: "r", Traffic: fwd.Traffic, DirectResponse: &ir.DirectResponse{StatusCode: 500}},
		"no global limits":  {Name: "r", Backends: fwd.Backends, Traffic: &ir.Traffic{}},
	} {
		out, use := &routev3.Route{}, filterUse{}
		if b, err := globalRateLimit(out, r, "d", &use); b != nil || err != nil || out.TypedPerFilterConfig != nil || use.rateLimits != nil {
			t.Errorf("%s: backend %v, %v, per-route %v", name, b, err, out.TypedPerFilterConfig)
		}
	}
}
