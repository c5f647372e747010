package integration

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// TestTrafficPolicyCRDValidation: the TrafficPolicy CRD's schema and CEL
// rules, as the API server applies them: each spec is created, and is
// either accepted or refused with a message holding want.
func TestTrafficPolicyCRDValidation(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	targets := []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
		Group: gwapiv1.GroupName, Kind: "Gateway", Name: "web"}}}
	limit := func(r v1alpha1.LocalRateLimitRule) v1alpha1.TrafficPolicySpec {
		return v1alpha1.TrafficPolicySpec{TargetRefs: targets, RateLimit: &v1alpha1.RateLimit{Local: &v1alpha1.LocalRateLimit{Rules: []v1alpha1.LocalRateLimitRule{r}}}}
	}
	global := func(r v1alpha1.GlobalRateLimitRule) v1alpha1.TrafficPolicySpec {
		return v1alpha1.TrafficPolicySpec{TargetRefs: targets, RateLimit: &v1alpha1.RateLimit{Global: &v1alpha1.GlobalRateLimit{FailOpen: true, Rules: []v1alpha1.GlobalRateLimitRule{r}}}}
	}
	body := func(q string) v1alpha1.TrafficPolicySpec {
		return v1alpha1.TrafficPolicySpec{TargetRefs: targets, RequestBody: &v1alpha1.RequestBody{MaxSize: resource.MustParse(q)}}
	}
	header := gwapiv1.HTTPHeaderName("x-user")
	for i, tc := range []struct {
		name string
		spec v1alpha1.TrafficPolicySpec
		want string // "" when accepted
	}{
		{"a route-wide rule", limit(v1alpha1.LocalRateLimitRule{Requests: 10, Unit: v1alpha1.RateLimitSecond, Burst: new(int32(20))}), ""},
		{"a rule per header", limit(v1alpha1.LocalRateLimitRule{Requests: 10, Unit: v1alpha1.RateLimitHour, By: v1alpha1.RateLimitByHeader, Header: &header}), ""},
		{"by Header without a header", limit(v1alpha1.LocalRateLimitRule{Requests: 10, Unit: v1alpha1.RateLimitHour, By: v1alpha1.RateLimitByHeader}), "header is required when by is Header"},
		{"a header by Route", limit(v1alpha1.LocalRateLimitRule{Requests: 10, Unit: v1alpha1.RateLimitHour, Header: &header}), "header is required when by is Header"},
		{"burst below requests", limit(v1alpha1.LocalRateLimitRule{Requests: 10, Unit: v1alpha1.RateLimitSecond, Burst: new(int32(5))}), "burst must be at least requests"},
		{"a unit of a day", limit(v1alpha1.LocalRateLimitRule{Requests: 10, Unit: "Day"}), "unit"},
		{"no requests", limit(v1alpha1.LocalRateLimitRule{Unit: v1alpha1.RateLimitSecond}), "requests"},
		{"rateLimit without local or global", v1alpha1.TrafficPolicySpec{TargetRefs: targets, RateLimit: &v1alpha1.RateLimit{}}, "at least one of local and global is required"},
		{"global per header a day, fail open", global(v1alpha1.GlobalRateLimitRule{Requests: 10, Unit: v1alpha1.GlobalRateLimitDay, By: v1alpha1.RateLimitByHeader, Header: &header}), ""},
		{"global per client", global(v1alpha1.GlobalRateLimitRule{Requests: 10, Unit: v1alpha1.GlobalRateLimitSecond, By: v1alpha1.RateLimitByClientIP}), ""},
		{"global by Header without a header", global(v1alpha1.GlobalRateLimitRule{Requests: 10, Unit: v1alpha1.GlobalRateLimitHour, By: v1alpha1.RateLimitByHeader}), "header is required when by is Header"},
		{"global, a header by ClientIP", global(v1alpha1.GlobalRateLimitRule{Requests: 10, Unit: v1alpha1.GlobalRateLimitHour, By: v1alpha1.RateLimitByClientIP, Header: &header}), "header is required when by is Header"},
		{"global, a unit of a week", global(v1alpha1.GlobalRateLimitRule{Requests: 10, Unit: "Week"}), "unit"},
		{"global without rules", v1alpha1.TrafficPolicySpec{TargetRefs: targets, RateLimit: &v1alpha1.RateLimit{Global: &v1alpha1.GlobalRateLimit{}}}, "rules"},
		{"compression", v1alpha1.TrafficPolicySpec{TargetRefs: targets, Compression: &v1alpha1.Compression{
			Algorithms: []v1alpha1.CompressionAlgorithm{"Zstd", "Gzip"}, ContentTypes: []string{"text/html", "application/json"}, MinSize: new(int32(100))}}, ""},
		{"an algorithm twice", v1alpha1.TrafficPolicySpec{TargetRefs: targets, Compression: &v1alpha1.Compression{
			Algorithms: []v1alpha1.CompressionAlgorithm{"Gzip", "Gzip"}}}, "algorithms"},
		{"deflate", v1alpha1.TrafficPolicySpec{TargetRefs: targets, Compression: &v1alpha1.Compression{
			Algorithms: []v1alpha1.CompressionAlgorithm{"Deflate"}}}, "algorithms"},
		{"a content type with parameters", v1alpha1.TrafficPolicySpec{TargetRefs: targets, Compression: &v1alpha1.Compression{
			Algorithms: []v1alpha1.CompressionAlgorithm{"Gzip"}, ContentTypes: []string{"text/html; charset=utf-8"}}}, "contentTypes"},
		{"a body limit of 64Mi", body("64Mi"), ""},
		{"a body limit of 1000", body("1000"), ""},
		{"a body limit over 64Mi", body("65Mi"), "maxSize must be a whole number of bytes, 1 to 64Mi"},
		{"a body limit of 0", body("0"), "maxSize must be a whole number of bytes, 1 to 64Mi"},
		{"a body limit under a byte", body("100m"), "maxSize must be a whole number of bytes, 1 to 64Mi"},
		{"no field", v1alpha1.TrafficPolicySpec{TargetRefs: targets}, "at least one of rateLimit, compression and requestBody"},
		{"a Service target", v1alpha1.TrafficPolicySpec{TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
			Kind: "Service", Name: "s"}}}, RequestBody: body("1Ki").RequestBody}, "targetRefs must be Gateways, ListenerSets, HTTPRoutes or GRPCRoutes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1alpha1.TrafficPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crd-" + string(rune('a'+i))}, Spec: tc.spec}
			err := k8sClient.Create(ctx, p)
			if err == nil {
				t.Cleanup(func() { _ = k8sClient.Delete(ctx, p) })
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want a refusal with %q", err, tc.want)
			}
			if err != nil {
				t.Logf("refused: %v", err)
			}
		})
	}
}
