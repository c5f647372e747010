package gatewayapi

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// TestGlobalRateLimit: what a TrafficPolicy's rateLimit.global renders
// (rules named by the policy's namespace and name, its failOpen and
// shadow on every rule), and a message naming the field for every value
// the CRD's schema and CEL refuse (standalone mode has no API server).
func TestGlobalRateLimit(t *testing.T) {
	one := func(edit func(*v1alpha1.GlobalRateLimitRule)) *v1alpha1.GlobalRateLimit {
		r := v1alpha1.GlobalRateLimitRule{Requests: 10, Unit: v1alpha1.GlobalRateLimitMinute}
		edit(&r)
		return &v1alpha1.GlobalRateLimit{Rules: []v1alpha1.GlobalRateLimitRule{r}}
	}
	header := ptr[gwapiv1.HTTPHeaderName]("X-User")
	for _, tc := range []struct {
		name string
		in   *v1alpha1.GlobalRateLimit
		want []ir.GlobalRateLimitRule
		msg  string
	}{
		{name: "defaults: by Route, fail closed", in: one(func(*v1alpha1.GlobalRateLimitRule) {}),
			want: []ir.GlobalRateLimitRule{{Name: "team/limits/0", Requests: 10, Unit: ir.RateLimitMinute}}},
		{name: "per client, a day", in: one(func(r *v1alpha1.GlobalRateLimitRule) {
			r.By, r.Unit = v1alpha1.RateLimitByClientIP, v1alpha1.GlobalRateLimitDay
		}),
			want: []ir.GlobalRateLimitRule{{Name: "team/limits/0", ClientIP: true, Requests: 10, Unit: ir.RateLimitDay}}},
		{name: "per header, lower-cased", in: one(func(r *v1alpha1.GlobalRateLimitRule) { r.By, r.Header = v1alpha1.RateLimitByHeader, header }),
			want: []ir.GlobalRateLimitRule{{Name: "team/limits/0", Header: "x-user", Requests: 10, Unit: ir.RateLimitMinute}}},
		{name: "failOpen and shadow on every rule, names in order", in: &v1alpha1.GlobalRateLimit{FailOpen: true, Shadow: true, Rules: []v1alpha1.GlobalRateLimitRule{
			{Requests: 1, Unit: v1alpha1.GlobalRateLimitSecond}, {Requests: 2, Unit: v1alpha1.GlobalRateLimitHour, By: v1alpha1.RateLimitByRoute},
		}}, want: []ir.GlobalRateLimitRule{
			{Name: "team/limits/0", Requests: 1, Unit: ir.RateLimitSecond, FailOpen: true, Shadow: true},
			{Name: "team/limits/1", Requests: 2, Unit: ir.RateLimitHour, FailOpen: true, Shadow: true},
		}},
		{name: "no rules", in: &v1alpha1.GlobalRateLimit{}, msg: "rateLimit.global.rules: 0 entries; 1 to 8 are required"},
		{name: "nine rules", in: &v1alpha1.GlobalRateLimit{Rules: make([]v1alpha1.GlobalRateLimitRule, 9)}, msg: "rateLimit.global.rules: 9 entries; 1 to 8 are required"},
		{name: "no requests", in: one(func(r *v1alpha1.GlobalRateLimitRule) { r.Requests = 0 }), msg: "rateLimit.global.rules[0].requests 0 is not 1 to 1000000000"},
		{name: "too many requests", in: one(func(r *v1alpha1.GlobalRateLimitRule) { r.Requests = 1_000_000_001 }), msg: "rateLimit.global.rules[0].requests 1000000001 is not 1 to 1000000000"},
		{name: "unknown unit", in: one(func(r *v1alpha1.GlobalRateLimitRule) { r.Unit = "Week" }), msg: `rateLimit.global.rules[0].unit "Week" is not Second, Minute, Hour or Day`},
		{name: "unknown by", in: one(func(r *v1alpha1.GlobalRateLimitRule) { r.By = "Cookie" }), msg: `rateLimit.global.rules[0].by "Cookie" is not Route, ClientIP or Header`},
		{name: "by Header without a header", in: one(func(r *v1alpha1.GlobalRateLimitRule) { r.By = v1alpha1.RateLimitByHeader }),
			msg: "rateLimit.global.rules[0].header is required when by is Header, and only then"},
		{name: "a header with by ClientIP", in: one(func(r *v1alpha1.GlobalRateLimitRule) { r.By, r.Header = v1alpha1.RateLimitByClientIP, header }),
			msg: "rateLimit.global.rules[0].header is required when by is Header, and only then"},
		{name: "a header that is no token", in: one(func(r *v1alpha1.GlobalRateLimitRule) {
			r.By, r.Header = v1alpha1.RateLimitByHeader, ptr[gwapiv1.HTTPHeaderName]("x user")
		}), msg: "rateLimit.global.rules[0].header is not a valid name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := globalRateLimit("team", "limits", tc.in)
			switch {
			case tc.msg != "" && !strings.HasPrefix(msg, tc.msg):
				t.Errorf("message %q; want it to start with %q", msg, tc.msg)
			case tc.msg != "" && got != nil:
				t.Errorf("an invalid spec rendered %+v", got)
			case tc.msg == "" && msg != "":
				t.Errorf("refused: %s", msg)
			case tc.msg == "" && !reflect.DeepEqual(got.Rules, tc.want):
				t.Errorf("got %+v; want %+v", got.Rules, tc.want)
			}
		})
	}
}

// TestRateLimitServiceBackend: the service's address (--ratelimit-service-address,
// Options.RateLimitService) as the h2c backend Envoy reaches it through.
func TestRateLimitServiceBackend(t *testing.T) {
	for addr, want := range map[string]string{
		"10.0.0.9:8081":                   "10.0.0.9:8081",
		"[::ffff:10.0.0.9]:8081":          "10.0.0.9:8081",
		"[2001:db8::1]:8081":              "2001:db8::1:8081",
		"ratelimit.xds-system.svc:8081":   "ratelimit.xds-system.svc:8081",
		"10.0.0.9":                        "missing port",
		"10.0.0.9:0":                      "is not 1 to 65535",
		"10.0.0.9:http":                   "is not 1 to 65535",
		"under_score.example:8081":        "host",
		"[fe80::1%eth0]:8081":             "zone",
		"ratelimit.xds-system.svc:100000": "is not 1 to 65535",
	} {
		b, err := RateLimitServiceBackend(addr)
		if err != nil {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %v; want %q", addr, err, want)
			}
			continue
		}
		e := b.Endpoints[0]
		got := fmt.Sprintf("%s:%d", e.Address, e.Port)
		if got != want || b.Name != RateLimitServiceCluster || b.Protocol != ir.AppProtocolH2C || len(b.Endpoints) != 1 {
			t.Errorf("%s: %+v; want endpoint %s, cluster %s, h2c", addr, b, want, RateLimitServiceCluster)
		}
	}
}
