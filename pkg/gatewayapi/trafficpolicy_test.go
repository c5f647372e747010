package gatewayapi

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// TestTrafficEffect: what a TrafficPolicySpec renders, each field's
// defaults, and a message naming the field for every value the CRD's
// schema refuses (standalone mode has no API server to apply it).
func TestTrafficEffect(t *testing.T) {
	rule := func(edit func(*v1alpha1.LocalRateLimitRule)) *v1alpha1.TrafficPolicySpec {
		r := v1alpha1.LocalRateLimitRule{Requests: 10, Unit: v1alpha1.RateLimitMinute}
		edit(&r)
		return &v1alpha1.TrafficPolicySpec{RateLimit: &v1alpha1.RateLimit{Local: &v1alpha1.LocalRateLimit{Rules: []v1alpha1.LocalRateLimitRule{r}}}}
	}
	gzip := func(edit func(*v1alpha1.Compression)) *v1alpha1.TrafficPolicySpec {
		c := &v1alpha1.Compression{Algorithms: []v1alpha1.CompressionAlgorithm{v1alpha1.CompressionGzip}}
		edit(c)
		return &v1alpha1.TrafficPolicySpec{Compression: c}
	}
	body := func(q string) *v1alpha1.TrafficPolicySpec {
		return &v1alpha1.TrafficPolicySpec{RequestBody: &v1alpha1.RequestBody{MaxSize: resource.MustParse(q)}}
	}
	for _, tc := range []struct {
		name string
		spec *v1alpha1.TrafficPolicySpec
		want *ir.Traffic
		msg  string
	}{
		{name: "a rule's defaults: burst = requests, by Route", spec: rule(func(*v1alpha1.LocalRateLimitRule) {}),
			want: &ir.Traffic{LocalRateLimit: &ir.LocalRateLimit{Rules: []ir.RateLimitRule{{Requests: 10, Period: time.Minute, Burst: 10, Key: ir.RateLimitRoute}}}}},
		{name: "per header, lower-cased, with a burst", spec: rule(func(r *v1alpha1.LocalRateLimitRule) {
			r.Unit, r.Burst, r.By, r.Header = v1alpha1.RateLimitHour, ptr[int32](20), v1alpha1.RateLimitByHeader, ptr[gwapiv1.HTTPHeaderName]("X-User")
		}), want: &ir.Traffic{LocalRateLimit: &ir.LocalRateLimit{Rules: []ir.RateLimitRule{{Requests: 10, Period: time.Hour, Burst: 20, Key: ir.RateLimitHeader, Header: "x-user"}}}}},
		{name: "burst below requests", spec: rule(func(r *v1alpha1.LocalRateLimitRule) { r.Burst = ptr[int32](9) }),
			msg: "rateLimit.local.rules[0].burst 9 is not requests (10) to 1000000000"},
		{name: "no requests", spec: rule(func(r *v1alpha1.LocalRateLimitRule) { r.Requests = 0 }),
			msg: "rateLimit.local.rules[0].requests 0 is not 1 to 1000000000"},
		{name: "unknown unit", spec: rule(func(r *v1alpha1.LocalRateLimitRule) { r.Unit = "Day" }),
			msg: `rateLimit.local.rules[0].unit "Day" is not Second, Minute or Hour`},
		{name: "by Header without a header", spec: rule(func(r *v1alpha1.LocalRateLimitRule) { r.By = v1alpha1.RateLimitByHeader }),
			msg: "rateLimit.local.rules[0].header is required when by is Header, and only then"},
		{name: "a header with by ClientIP", spec: rule(func(r *v1alpha1.LocalRateLimitRule) {
			r.By, r.Header = v1alpha1.RateLimitByClientIP, ptr[gwapiv1.HTTPHeaderName]("x-user")
		}), msg: "rateLimit.local.rules[0].header is required when by is Header, and only then"},
		{name: "a header that is no token", spec: rule(func(r *v1alpha1.LocalRateLimitRule) {
			r.By, r.Header = v1alpha1.RateLimitByHeader, ptr[gwapiv1.HTTPHeaderName]("x user")
		}), msg: "rateLimit.local.rules[0].header is not a valid name"},
		{name: "neither local nor global", spec: &v1alpha1.TrafficPolicySpec{RateLimit: &v1alpha1.RateLimit{}}, msg: "rateLimit: at least one of local and global is required"},
		{name: "no rules", spec: &v1alpha1.TrafficPolicySpec{RateLimit: &v1alpha1.RateLimit{Local: &v1alpha1.LocalRateLimit{}}},
			msg: "rateLimit.local.rules: 0 entries; 1 to 8 are required"},
		{name: "compression defaults", spec: gzip(func(*v1alpha1.Compression) {}),
			want: &ir.Traffic{Compression: &ir.Compression{Algorithms: []ir.CompressionAlgorithm{"gzip"}, MinSize: 30}}},
		{name: "compression: order kept, types sorted and lower-cased", spec: gzip(func(c *v1alpha1.Compression) {
			c.Algorithms = []v1alpha1.CompressionAlgorithm{"Zstd", "Gzip", "Brotli"}
			c.ContentTypes, c.MinSize = []string{"text/html", "Application/JSON"}, ptr[int32](0)
		}), want: &ir.Traffic{Compression: &ir.Compression{Algorithms: []ir.CompressionAlgorithm{"zstd", "gzip", "br"}, ContentTypes: []string{"application/json", "text/html"}}}},
		{name: "an algorithm twice", spec: gzip(func(c *v1alpha1.Compression) { c.Algorithms = append(c.Algorithms, "Gzip") }),
			msg: "compression.algorithms: Gzip is given twice"},
		{name: "unknown algorithm", spec: gzip(func(c *v1alpha1.Compression) { c.Algorithms = []v1alpha1.CompressionAlgorithm{"deflate"} }),
			msg: `compression.algorithms: "deflate" is not Gzip, Brotli or Zstd`},
		{name: "a content type with parameters", spec: gzip(func(c *v1alpha1.Compression) { c.ContentTypes = []string{"text/html;charset=utf-8"} }),
			msg: `compression.contentTypes: "text/html;charset=utf-8" is not a media type`},
		{name: "negative minSize", spec: gzip(func(c *v1alpha1.Compression) { c.MinSize = ptr[int32](-1) }),
			msg: "compression.minSize -1 is not 0 to 1073741824"},
		{name: "body 1Mi", spec: body("1Mi"), want: &ir.Traffic{MaxRequestBodyBytes: 1 << 20}},
		{name: "body 64Mi, the largest", spec: body("64Mi"), want: &ir.Traffic{MaxRequestBodyBytes: 64 << 20}},
		{name: "body over 64Mi", spec: body("65Mi"), msg: "requestBody.maxSize 65Mi is not 1 byte to 64Mi"},
		{name: "body 0", spec: body("0"), msg: "requestBody.maxSize 0 is not 1 byte to 64Mi"},
		{name: "body a fraction of a byte", spec: body("500m"), msg: "requestBody.maxSize 500m is not 1 byte to 64Mi"},
		{name: "nothing", spec: &v1alpha1.TrafficPolicySpec{}, msg: "at least one of rateLimit, compression and requestBody is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, msg := trafficEffect(tc.spec)
			switch {
			case tc.msg != "" && !strings.HasPrefix(msg, tc.msg):
				t.Errorf("message %q; want it to start with %q", msg, tc.msg)
			case tc.msg != "" && got != nil:
				t.Errorf("an invalid spec rendered %+v", got)
			case tc.msg == "" && msg != "":
				t.Errorf("refused: %s", msg)
			case tc.msg == "" && !reflect.DeepEqual(got, tc.want):
				t.Errorf("got %+v; want %+v", got, tc.want)
			}
		})
	}
}
