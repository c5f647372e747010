package translate

import (
	"k8s.io/apimachinery/pkg/api/resource"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
)

// withRateLimitService gives world i's options a rate-limit service
// (TrafficPolicy rateLimit.global), but in one world of three, where
// such policies are RateLimitServiceMissing.
func withRateLimitService(i int, opts *gatewayapi.Options) {
	if i%3 != 0 {
		opts.RateLimitService = "10.0.0.9:8081"
	}
}

// editTrafficPolicy is one random edit of a TrafficPolicy (world.edit):
// another target or sectionName, a rate limit rule's rate, key or burst
// (a burst below requests makes it invalid), compression set or removed,
// the body limit set (0: invalid) or removed, global limits set, edited
// (a rule's requests, key or failOpen; a header with by ClientIP makes
// them invalid) or removed, or the spec of another one.
func (w *world) editTrafficPolicy(v *v1alpha1.TrafficPolicy) string {
	switch w.rng.IntN(7) {
	case 0:
		// Another target: a route of the world, one of its rules, or
		// a Gateway's listener.
		var routes []objKey
		for _, k := range w.keys(w.live) {
			if k.kind == "HTTPRoute" || k.kind == "GRPCRoute" {
				routes = append(routes, k)
			}
		}
		if len(v.Spec.TargetRefs) > 0 && len(routes) > 0 {
			k := routes[w.rng.IntN(len(routes))]
			v.Spec.TargetRefs[0] = gwapiv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
				Group: gwapiv1.GroupName, Kind: gwapiv1.Kind(k.kind), Name: gwapiv1.ObjectName(k.name)}}
			return "targetRef " + k.kind + " " + k.name
		}
	case 1:
		if len(v.Spec.TargetRefs) > 0 {
			v.Spec.TargetRefs[0].SectionName = []*gwapiv1.SectionName{nil, ptrTo(gwapiv1.SectionName(w.oneOf(w.sections)))}[w.rng.IntN(2)]
			return "targetRef sectionName"
		}
	case 2: // a rule's rate, key or burst (burst below requests: invalid)
		if l := v.Spec.RateLimit; l != nil && l.Local != nil && len(l.Local.Rules) > 0 {
			r := &l.Local.Rules[w.rng.IntN(len(l.Local.Rules))]
			switch w.rng.IntN(3) {
			case 0:
				r.Requests = int32(1 + w.rng.IntN(20))
				return "rate limit requests"
			case 1:
				r.By, r.Header = v1alpha1.RateLimitByHeader, ptrTo(gwapiv1.HTTPHeaderName(w.oneOf([]string{"x-user", "x-sub"})))
				return "rate limit by header"
			}
			r.Burst = ptrTo(int32(w.rng.IntN(30)))
			return "rate limit burst"
		}
		v.Spec.RateLimit = &v1alpha1.RateLimit{Local: &v1alpha1.LocalRateLimit{Shadow: w.rng.IntN(2) == 0,
			Rules: []v1alpha1.LocalRateLimitRule{{Requests: 5, Unit: v1alpha1.RateLimitSecond, By: v1alpha1.RateLimitByClientIP}}}}
		return "rate limit set"
	case 3: // compression: the algorithms, or none
		if v.Spec.Compression != nil && w.rng.IntN(3) == 0 {
			v.Spec.Compression = nil
			return "no compression"
		}
		v.Spec.Compression = &v1alpha1.Compression{Algorithms: [][]v1alpha1.CompressionAlgorithm{{"Gzip"}, {"Zstd", "Brotli"}, {"Brotli", "Gzip", "Zstd"}}[w.rng.IntN(3)],
			MinSize: ptrTo(int32(w.rng.IntN(2000)))}
		return "compression set"
	case 5: // global limits: set, a rule edited, failOpen, or none
		rl := v.Spec.RateLimit
		if rl == nil {
			rl = &v1alpha1.RateLimit{}
			v.Spec.RateLimit = rl
		}
		if g := rl.Global; g != nil && len(g.Rules) > 0 {
			r := &g.Rules[w.rng.IntN(len(g.Rules))]
			switch w.rng.IntN(5) {
			case 0:
				r.Requests = int32(1 + w.rng.IntN(20))
				return "global rate limit requests"
			case 1:
				r.By, r.Header = v1alpha1.RateLimitByHeader, ptrTo(gwapiv1.HTTPHeaderName(w.oneOf([]string{"x-user", "X-Sub"})))
				return "global rate limit by header"
			case 2:
				r.By, r.Header = v1alpha1.RateLimitByClientIP, []*gwapiv1.HTTPHeaderName{nil, ptrTo(gwapiv1.HTTPHeaderName("x-user"))}[w.rng.IntN(2)]
				return "global rate limit by client (with a header: invalid)"
			case 3:
				g.FailOpen = !g.FailOpen
				return "global rate limit failOpen"
			}
			if rl.Local != nil {
				rl.Global = nil
				return "no global rate limit"
			}
		}
		rl.Global = &v1alpha1.GlobalRateLimit{FailOpen: w.rng.IntN(2) == 0, Shadow: w.rng.IntN(4) == 0,
			Rules: []v1alpha1.GlobalRateLimitRule{{Requests: int32(1 + w.rng.IntN(100)), Unit: v1alpha1.GlobalRateLimitMinute}}}
		if w.rng.IntN(2) == 0 {
			rl.Global.Rules = append(rl.Global.Rules, v1alpha1.GlobalRateLimitRule{Requests: 5, Unit: v1alpha1.GlobalRateLimitDay, By: v1alpha1.RateLimitByClientIP})
		}
		return "global rate limit set"
	case 4: // the body limit (0: invalid), or none
		if v.Spec.RequestBody != nil && w.rng.IntN(3) == 0 {
			v.Spec.RequestBody = nil
			return "no requestBody"
		}
		v.Spec.RequestBody = &v1alpha1.RequestBody{MaxSize: resource.MustParse(w.oneOf([]string{"0", "1Ki", "10Mi"}))}
		return "requestBody set"
	}
	return w.swap(v, "Spec")
}
