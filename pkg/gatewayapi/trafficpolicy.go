package gatewayapi

// TrafficPolicy (gateway.xds-controller.dev/v1alpha1, ours): the local
// and global rate limits (trafficglobal.go), response compression and
// request body limit of the
// requests of the Gateways, listeners, ListenerSets, routes and route
// rules it targets. Its attachment, precedence (rule over route over
// listener over ListenerSet over Gateway), conflicts and status.ancestors
// are every policy kind's (policy.go); here are its validation, what it
// renders (ir.Traffic, on every IR route of the rules it covers) and its
// registration. docs/traffic-policy.md is the user's view.
//
// A policy that cannot be honoured (a schema violation the API server
// did not catch: standalone mode has none) is Accepted=False reason
// Invalid and renders nothing: the routes it covers are served without
// its limits. So is a policy with global limits when the controller knows
// no rate-limit service (Options.RateLimitService), reason
// RateLimitServiceMissing. As with every kind, it still takes precedence
// over the less specific policies of the kind.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// KindTrafficPolicy is the registry name of TrafficPolicy.
var KindTrafficPolicy = resources.TrafficPolicyKind.Name()

// trafficPolicyKind registers TrafficPolicy (policy.go): it targets
// Gateways, ListenerSets, HTTPRoutes and GRPCRoutes (and their listeners
// and named rules) and renders every IR route of the rules it covers; the
// effect of a policy is an *ir.Traffic, nil when it cannot be honoured.
var trafficPolicyKind = registerPolicyKind(resources.TrafficPolicyKind, policyKindSpec[*v1alpha1.TrafficPolicy]{
	targets: []targetKind{targetGateway, targetListenerSet, targetHTTPRoute, targetGRPCRoute},
	targetRefs: func(p *v1alpha1.TrafficPolicy) []gwapiv1.LocalPolicyTargetReferenceWithSectionName {
		return p.Spec.TargetRefs
	},
	status:   func(p *v1alpha1.TrafficPolicy) *gwapiv1.PolicyStatus { return &p.Status },
	validate: (*translator).trafficPolicy,
	route:    trafficRoute,
})

// trafficRoute renders the effective policy of a rule on r, one IR route
// of it: its ir.Traffic (shared by every route of the policy: the IR is
// never modified in place). An invalid policy renders nothing.
func trafficRoute(st *policyState, r *ir.HTTPRoute) {
	if t, _ := st.effect.(*ir.Traffic); t != nil {
		r.Traffic = t
	}
}

// rateLimitPeriods are the refill intervals of the units.
var rateLimitPeriods = map[v1alpha1.RateLimitUnit]time.Duration{
	v1alpha1.RateLimitSecond: time.Second,
	v1alpha1.RateLimitMinute: time.Minute,
	v1alpha1.RateLimitHour:   time.Hour,
}

// compressionCodings are the content codings of the algorithms.
var compressionCodings = map[v1alpha1.CompressionAlgorithm]ir.CompressionAlgorithm{
	v1alpha1.CompressionGzip:   ir.CompressionGzip,
	v1alpha1.CompressionBrotli: ir.CompressionBrotli,
	v1alpha1.CompressionZstd:   ir.CompressionZstd,
}

// Limits of TrafficPolicySpec (the CRD's, which standalone mode has no
// API server to apply).
const (
	maxRateLimitRules   = 8
	maxRateLimitTokens  = 1_000_000_000
	maxContentTypes     = 32
	maxContentTypeLen   = 128
	maxCompressionMin   = 1 << 30
	defaultCompressMin  = 30 // Envoy's min_content_length default
	maxCompressionAlgos = 3
)

// trafficPolicy validates one policy (TrafficPolicySpec, with the CRD's
// schema and CEL rules): a violation is Accepted=False reason Invalid and
// no effect; otherwise the effect is the policy's ir.Traffic.
func (t *translator) trafficPolicy(p *v1alpha1.TrafficPolicy, st *policyState) {
	spec := p.Spec
	msg := checkTargetRefs(spec.TargetRefs)
	var out *ir.Traffic
	if msg == "" {
		out, msg = trafficEffect(&spec)
	}
	if msg == "" && spec.RateLimit != nil && spec.RateLimit.Global != nil {
		out.GlobalRateLimit, msg = globalRateLimit(p.Namespace, p.Name, spec.RateLimit.Global) // trafficglobal.go
	}
	if msg != "" {
		st.notAccepted = &problem{string(gwapiv1.PolicyReasonInvalid), msg + "; the routes it covers are served without it"}
		return
	}
	if g := out.GlobalRateLimit; g != nil {
		if g.Service, msg = t.rateLimitService(); msg != "" {
			st.notAccepted = &problem{ReasonRateLimitServiceMissing, msg + "; the routes it covers are served without the policy"}
			return
		}
	}
	st.effect = out
}

// trafficEffect checks spec's fields and makes them the IR's, or says
// what is wrong with the first field that is.
func trafficEffect(spec *v1alpha1.TrafficPolicySpec) (*ir.Traffic, string) {
	if spec.RateLimit == nil && spec.Compression == nil && spec.RequestBody == nil {
		return nil, "at least one of rateLimit, compression and requestBody is required"
	}
	out := &ir.Traffic{}
	var msg string
	if r := spec.RateLimit; r != nil {
		if r.Local == nil && r.Global == nil {
			return nil, "rateLimit: at least one of local and global is required"
		}
		if r.Local != nil {
			if out.LocalRateLimit, msg = localRateLimit(r.Local); msg != "" {
				return nil, "rateLimit.local." + msg
			}
		}
	}
	if c := spec.Compression; c != nil {
		if out.Compression, msg = compression(c); msg != "" {
			return nil, "compression." + msg
		}
	}
	if b := spec.RequestBody; b != nil {
		n, ok := b.MaxSize.AsInt64()
		if !ok || n < 1 || n > ir.MaxRequestBodyLimit {
			return nil, fmt.Sprintf("requestBody.maxSize %s is not 1 byte to 64Mi", b.MaxSize.String())
		}
		out.MaxRequestBodyBytes = uint32(n)
	}
	return out, ""
}

// localRateLimit checks a LocalRateLimit and makes it the IR's.
func localRateLimit(l *v1alpha1.LocalRateLimit) (*ir.LocalRateLimit, string) {
	if n := len(l.Rules); n < 1 || n > maxRateLimitRules {
		return nil, fmt.Sprintf("rules: %d entries; 1 to %d are required", n, maxRateLimitRules)
	}
	out := &ir.LocalRateLimit{Shadow: l.Shadow}
	for i, r := range l.Rules {
		bad := func(format string, a ...any) (*ir.LocalRateLimit, string) {
			return nil, fmt.Sprintf("rules[%d].", i) + fmt.Sprintf(format, a...)
		}
		if r.Requests < 1 || r.Requests > maxRateLimitTokens {
			return bad("requests %d is not 1 to %d", r.Requests, maxRateLimitTokens)
		}
		period, ok := rateLimitPeriods[r.Unit]
		if !ok {
			return bad("unit %s is not Second, Minute or Hour", q(string(r.Unit)))
		}
		burst := r.Requests
		if r.Burst != nil {
			if burst = *r.Burst; burst < r.Requests || burst > maxRateLimitTokens {
				return bad("burst %d is not requests (%d) to %d", burst, r.Requests, maxRateLimitTokens)
			}
		}
		rule := ir.RateLimitRule{Requests: uint32(r.Requests), Period: period, Burst: uint32(burst)}
		switch r.By {
		case "", v1alpha1.RateLimitByRoute:
			rule.Key = ir.RateLimitRoute
		case v1alpha1.RateLimitByClientIP:
			rule.Key = ir.RateLimitClientIP
		case v1alpha1.RateLimitByHeader:
			rule.Key = ir.RateLimitHeader
		default:
			return bad("by %s is not Route, ClientIP or Header", q(string(r.By)))
		}
		switch h := r.Header; {
		case (h != nil) != (rule.Key == ir.RateLimitHeader):
			return bad("header is required when by is Header, and only then")
		case h != nil:
			if msg := checkHeaderName(string(*h)); msg != "" {
				return bad("header %s", msg)
			}
			rule.Header = strings.ToLower(string(*h))
		}
		out.Rules = append(out.Rules, rule)
	}
	return out, ""
}

// compression checks a Compression and makes it the IR's: the codings in
// the policy's order, the content types sorted (lower case), the minimum
// size defaulted to Envoy's 30 bytes.
func compression(c *v1alpha1.Compression) (*ir.Compression, string) {
	if n := len(c.Algorithms); n < 1 || n > maxCompressionAlgos {
		return nil, fmt.Sprintf("algorithms: %d entries; 1 to %d are required", n, maxCompressionAlgos)
	}
	out := &ir.Compression{MinSize: defaultCompressMin}
	for _, a := range c.Algorithms {
		coding, ok := compressionCodings[a]
		if !ok {
			return nil, fmt.Sprintf("algorithms: %s is not Gzip, Brotli or Zstd", q(string(a)))
		}
		if slices.Contains(out.Algorithms, coding) {
			return nil, fmt.Sprintf("algorithms: %s is given twice", a)
		}
		out.Algorithms = append(out.Algorithms, coding)
	}
	if n := len(c.ContentTypes); n > maxContentTypes {
		return nil, fmt.Sprintf("contentTypes: %d entries; at most %d are allowed", n, maxContentTypes)
	}
	for _, ct := range c.ContentTypes {
		typ, sub, ok := strings.Cut(ct, "/")
		if !ok || len(ct) > maxContentTypeLen || checkHeaderName(typ) != "" || checkHeaderName(sub) != "" {
			return nil, fmt.Sprintf("contentTypes: %s is not a media type (type/subtype, without parameters)", q(ct))
		}
		ct = strings.ToLower(ct)
		if slices.Contains(out.ContentTypes, ct) {
			return nil, fmt.Sprintf("contentTypes: %s is given twice", q(ct))
		}
		out.ContentTypes = append(out.ContentTypes, ct)
	}
	slices.Sort(out.ContentTypes)
	if m := c.MinSize; m != nil {
		if *m < 0 || *m > maxCompressionMin {
			return nil, fmt.Sprintf("minSize %d is not 0 to %d", *m, maxCompressionMin)
		}
		out.MinSize = uint32(*m)
	}
	return out, ""
}
