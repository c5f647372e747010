package translate

import (
	"bytes"
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// TestGlobalRateLimitGoldenConfigs: the rate-limit service's side of the
// golden cases with TrafficPolicy rateLimit.global (the .xds.yaml files
// show Envoy's side only): a scope's domain holds each rule a route uses
// once, a Gateway policy's rule once for all its routes, tenants' rules
// apart, shadow_mode from the policy, and no domain without a service.
func TestGlobalRateLimitGoldenConfigs(t *testing.T) {
	for in, want := range map[string]string{
		"testdata/150-traffic-global-ratelimit.in.yaml": `{"name":"gatewayclass_xds","domain":"gatewayclass_xds","descriptors":[` +
			`{"key":"rule","value":"default/limits/0","rate_limit":{"unit":"SECOND","requests_per_unit":100}},` +
			`{"key":"rule","value":"default/limits/1","descriptors":[{"key":"remote_address","rate_limit":{"unit":"MINUTE","requests_per_unit":10}}]},` +
			`{"key":"rule","value":"default/limits/2","descriptors":[{"key":"header","rate_limit":{"unit":"DAY","requests_per_unit":1000}}]}]}`,
		"testdata/151-traffic-global-failopen.in.yaml": `{"name":"gatewayclass_xds","domain":"gatewayclass_xds","descriptors":[` +
			`{"key":"rule","value":"default/fleet/0","rate_limit":{"unit":"MINUTE","requests_per_unit":1000}},` +
			`{"key":"rule","value":"default/open/0","descriptors":[{"key":"remote_address","rate_limit":{"unit":"HOUR","requests_per_unit":5},"shadow_mode":true}]}]}`,
		"testdata/153-traffic-global-no-service.in.yaml": ``,
		"testdata/154-traffic-global-conflict.in.yaml": `{"name":"gatewayclass_xds","domain":"gatewayclass_xds","descriptors":[` +
			`{"key":"rule","value":"team-a/limits/0","rate_limit":{"unit":"MINUTE","requests_per_unit":100}},` +
			`{"key":"rule","value":"team-a/older/0","descriptors":[{"key":"remote_address","rate_limit":{"unit":"SECOND","requests_per_unit":10}}]},` +
			`{"key":"rule","value":"team-b/limits/0","rate_limit":{"unit":"MINUTE","requests_per_unit":100}}]}`,
	} {
		res, _, err := file.Load(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Run(res, goldenOptions(t, in))
		if err != nil {
			t.Fatal(err)
		}
		byScope, err := out.Result.IR.GlobalRateLimitsByScope()
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		g := byScope["gatewayclass/xds"]
		if want == "" {
			if len(byScope) != 0 {
				t.Errorf("%s: global limits without a service: %+v", in, byScope)
			}
			continue
		}
		if g == nil || g.Validate() != nil {
			t.Fatalf("%s: scope gatewayclass/xds: %+v", in, g)
		}
		got, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(xdstranslator.RateLimitConfig(g))
		if err != nil {
			t.Fatal(err)
		}
		// protojson's spacing is not stable: compare compacted.
		if c := compact(t, got); c != want {
			t.Errorf("%s: the service's configuration\n%s\nwant\n%s", in, c, want)
		}
	}
}

// compact is b, JSON, without insignificant space.
func compact(t *testing.T, b []byte) string {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
