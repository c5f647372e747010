package xdstranslator

// A route's traffic settings (ir.Traffic: a TrafficPolicy's) as Envoy HTTP
// filters, each in a chain disabled by default and enabled on a route by
// its per-route configuration (typed_per_filter_config), so that a policy
// that changes changes only the routes (RDS):
//   - local rate limits: the local_ratelimit filter, whose per-route
//     LocalRateLimit holds everything (one filter serves all routes): a
//     descriptor per rule, produced by the rule's rate limit actions;
//   - the request body limit: the buffer filter, whose per-route
//     BufferPerRoute holds the route's max_request_bytes;
//   - compression: the compressor filter, one per coding and distinct
//     settings (content types and minimum size are the filter's own
//     configuration, not the route's), enabled on a route by an empty
//     CompressorPerRoute override.

import (
	"fmt"
	"math"
	"regexp"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	brotliv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/brotli/compressor/v3"
	gzipv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/gzip/compressor/v3"
	zstdv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/compression/zstd/compressor/v3"
	bufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/buffer/v3"
	compressorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/compressor/v3"
	localratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	metadatav3 "github.com/envoyproxy/go-control-plane/envoy/type/metadata/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

const (
	// filterLocalRateLimit is Envoy's local rate limit filter, one per
	// chain.
	filterLocalRateLimit = "envoy.filters.http.local_ratelimit"
	// filterBuffer is Envoy's buffer filter, one per chain: the request
	// body limit.
	filterBuffer = "envoy.filters.http.buffer"
	// filterCompressor starts the names of the compressor filters:
	// "<filterCompressor>/<hash>/<rank><coding>", hash of the settings
	// (codings in order, content types, minimum size), rank the coding's
	// place in the route's preference order: sorted by name, the filters
	// of one route are adjacent and in its order.
	filterCompressor = "envoy.filters.http.compressor"
	// localRateLimitStats is the stat prefix of the local rate limit
	// statistics: <localRateLimitStats>.http_local_rate_limit.*.
	localRateLimitStats = "http_local_rate_limiter"
	// maxDynamicBuckets is how many buckets Envoy keeps per ClientIP or
	// Header rule (max_dynamic_descriptors), least recently used evicted.
	maxDynamicBuckets = 10000
	// Descriptor keys: the rule's index (a generic key), the client's
	// address (RemoteAddress's key) and a header's value.
	descriptorRule   = "rule"
	descriptorClient = "remote_address"
	descriptorHeader = "header"
	// descriptorExempt is the entry of a rule of a limit with exempt
	// ranges: the route's RBAC shadow result for the client's address
	// (rateLimitExemptResult), "allowed" in a range, else "denied".
	descriptorExempt = "exempt"
)

// localRateLimitFilter is the chain's local_ratelimit filter: no bucket of
// its own, disabled by default (localRateLimit enables it per route).
func localRateLimitFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name:       filterLocalRateLimit,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&localratelimitv3.LocalRateLimit{StatPrefix: localRateLimitStats})},
		Disabled:   true,
	}
}

// percent is a fraction of requests, n percent (no runtime key).
func percent(n uint32) *corev3.RuntimeFractionalPercent {
	return &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: n, Denominator: typev3.FractionalPercent_HUNDRED}}
}

// tokenBucket is a rule's bucket: burst tokens at most, requests added
// per period (Envoy adds them steadily: one every period/requests).
func tokenBucket(r ir.RateLimitRule) *typev3.TokenBucket {
	return &typev3.TokenBucket{MaxTokens: r.Burst, TokensPerFill: wrapperspb.UInt32(r.Requests), FillInterval: durationpb.New(r.Period)}
}

// localRateLimit renders l as the route's LocalRateLimit. Each rule i is
// a descriptor whose first entry is rule=i (a generic key) and, for a
// ClientIP or Header rule, a second entry with a blank value (a wildcard:
// a bucket per distinct value, at most maxDynamicBuckets): the route's
// rate_limits produce those entries for each request (RemoteAddress,
// RequestHeaders; no descriptor when the header is absent). The route's
// own bucket is unlimited and consumed only by a request no rule counts
// (always_consume_default_token_bucket false). Refusals are 429 with
// Retry-After (the seconds until the refusing bucket has a token), every
// response carries the X-RateLimit-* headers of draft 03, gRPC calls are
// refused with RESOURCE_EXHAUSTED; shadow enforces 0%. With exempt
// ranges, each rule's descriptor has an entry exempt=denied, from the
// route's RBAC shadow rules (exemptRangesRBAC): a client in a range
// produces exempt=allowed, which no rule's descriptor matches.
func localRateLimit(l *ir.LocalRateLimit) *anypb.Any {
	c := &localratelimitv3.LocalRateLimit{
		StatPrefix: localRateLimitStats,
		TokenBucket: &typev3.TokenBucket{
			MaxTokens: math.MaxUint32, TokensPerFill: wrapperspb.UInt32(math.MaxUint32), FillInterval: durationpb.New(1e9),
		},
		FilterEnabled:                   percent(100),
		FilterEnforced:                  percent(100),
		AlwaysConsumeDefaultTokenBucket: wrapperspb.Bool(false),
		EnableXRatelimitHeaders:         ratelimitv3.XRateLimitHeadersRFCVersion_DRAFT_VERSION_03,
		EnableRetryAfterHeader:          true,
		RateLimitedAsResourceExhausted:  true,
		MaxDynamicDescriptors:           wrapperspb.UInt32(maxDynamicBuckets),
	}
	if l.Shadow {
		c.FilterEnforced = percent(0)
	}
	for i, r := range l.Rules {
		id := strconv.Itoa(i)
		actions := []*routev3.RateLimit_Action{{ActionSpecifier: &routev3.RateLimit_Action_GenericKey_{
			GenericKey: &routev3.RateLimit_Action_GenericKey{DescriptorKey: descriptorRule, DescriptorValue: id}}}}
		entries := []*ratelimitv3.RateLimitDescriptor_Entry{{Key: descriptorRule, Value: id}}
		if len(l.ExemptRanges) > 0 {
			// Only "denied" (outside the ranges) matches the rule's
			// descriptor; an exempt client's takes the route's own,
			// unlimited bucket. No result (no RBAC): counted.
			actions = append(actions, &routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_Metadata{
				Metadata: &routev3.RateLimit_Action_MetaData{
					DescriptorKey: descriptorExempt,
					MetadataKey: &metadatav3.MetadataKey{Key: rbacMetadataNamespace, Path: []*metadatav3.MetadataKey_PathSegment{
						{Segment: &metadatav3.MetadataKey_PathSegment_Key{Key: rateLimitExemptResult}}}},
					DefaultValue: "denied",
					Source:       routev3.RateLimit_Action_MetaData_DYNAMIC,
				}}})
			entries = append(entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: descriptorExempt, Value: "denied"})
		}
		switch r.Key {
		case ir.RateLimitClientIP:
			actions = append(actions, &routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_RemoteAddress_{
				RemoteAddress: &routev3.RateLimit_Action_RemoteAddress{}}})
			entries = append(entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: descriptorClient})
		case ir.RateLimitHeader:
			actions = append(actions, &routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_RequestHeaders_{
				RequestHeaders: &routev3.RateLimit_Action_RequestHeaders{HeaderName: r.Header, DescriptorKey: descriptorHeader}}})
			entries = append(entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: descriptorHeader})
		}
		c.RateLimits = append(c.RateLimits, &routev3.RateLimit{Actions: actions})
		c.Descriptors = append(c.Descriptors, &ratelimitv3.LocalRateLimitDescriptor{Entries: entries, TokenBucket: tokenBucket(r)})
	}
	return toAny(c)
}

// exemptRanges are the ranges r's local rate limit exempts, when r has
// one.
func exemptRanges(r *ir.HTTPRoute) []string {
	if t := r.Traffic; t != nil && t.LocalRateLimit != nil && r.DirectResponse == nil {
		return t.LocalRateLimit.ExemptRanges
	}
	return nil
}

// bufferFilter is the chain's buffer filter, disabled by default
// (bodyLimit enables it per route). Envoy requires its own limit; it is
// the largest a route may have.
func bufferFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name:       filterBuffer,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&bufferv3.Buffer{MaxRequestBytes: wrapperspb.UInt32(ir.MaxRequestBodyLimit)})},
		Disabled:   true,
	}
}

// bodyLimit is a route's BufferPerRoute: the buffer filter holds the
// request's body until it is complete and answers 413 when it grows over
// n bytes, whether it came with a Content-Length or chunked (Envoy's
// decoder buffer limit), and forwards it with its Content-Length.
func bodyLimit(n uint32) *anypb.Any {
	return toAny(&bufferv3.BufferPerRoute{Override: &bufferv3.BufferPerRoute_Buffer{
		Buffer: &bufferv3.Buffer{MaxRequestBytes: wrapperspb.UInt32(n)}}})
}

// compressorLibraries are the compressor extensions of the codings and
// their library names (statistics compressor.<name>.*), with Envoy's
// default settings.
var compressorLibraries = map[ir.CompressionAlgorithm]func() (string, proto.Message){
	ir.CompressionGzip:   func() (string, proto.Message) { return "gzip", &gzipv3.Gzip{} },
	ir.CompressionBrotli: func() (string, proto.Message) { return "brotli", &brotliv3.Brotli{} },
	ir.CompressionZstd:   func() (string, proto.Message) { return "zstd", &zstdv3.Zstd{} },
}

// compressors renders c as the compressor filters that serve it, one per
// coding in c's order (disabled by default; named so that, sorted, they
// come in that order; the first chosen on a tie of q-values), and the per-route configuration that enables each
// on a route (an empty CompressorOverrides). Only responses are
// compressed; the filters' content types are c's (content_type_matcher:
// the media type in any case, parameters allowed; Envoy's default list
// when empty) and their minimum size c's.
func compressors(c *ir.Compression) ([]authzFilter, *anypb.Any) {
	settings := &compressorv3.Compressor_CommonDirectionConfig{MinContentLength: wrapperspb.UInt32(c.MinSize)}
	for _, ct := range c.ContentTypes {
		// The media type, in any case, with or without parameters.
		settings.ContentTypeMatcher = append(settings.ContentTypeMatcher, &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{
			SafeRegex: &matcherv3.RegexMatcher{Regex: `(?i)` + regexp.QuoteMeta(ct) + `(\s*;.*)?`}}})
	}
	codings := make([]string, len(c.Algorithms))
	for i, a := range c.Algorithms {
		codings[i] = string(a)
	}
	hash := configHash(&compressorv3.Compressor{
		ResponseDirectionConfig: &compressorv3.Compressor_ResponseDirectionConfig{CommonConfig: settings},
		CompressorLibrary:       &corev3.TypedExtensionConfig{Name: fmt.Sprint(codings)},
	})
	out := make([]authzFilter, len(c.Algorithms))
	for i, a := range c.Algorithms {
		lib, m := compressorLibraries[a]()
		name := fmt.Sprintf("%s/%s/%d%s", filterCompressor, hash, i, a)
		out[i] = authzFilter{name: name, filter: &hcmv3.HttpFilter{
			Name: name,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(&compressorv3.Compressor{
				CompressorLibrary:       &corev3.TypedExtensionConfig{Name: lib, TypedConfig: toAny(m)},
				RequestDirectionConfig:  &compressorv3.Compressor_RequestDirectionConfig{CommonConfig: &compressorv3.Compressor_CommonDirectionConfig{Enabled: &corev3.RuntimeFeatureFlag{DefaultValue: wrapperspb.Bool(false)}}},
				ResponseDirectionConfig: &compressorv3.Compressor_ResponseDirectionConfig{CommonConfig: settings},
				// The most preferred coding wins a tie of q-values (a
				// browser's "gzip, deflate, br, zstd"); between the others
				// Envoy takes the client's order.
				ChooseFirst: i == 0,
			})},
			Disabled: true,
		}}
	}
	enable := toAny(&compressorv3.CompressorPerRoute{Override: &compressorv3.CompressorPerRoute_Overrides{Overrides: &compressorv3.CompressorOverrides{}}})
	return out, enable
}

// traffic sets out's per-route configurations of t's filters and reports
// them in use. A route that answers by itself (a DirectResponse) has
// none; a redirect is rate limited only; the body limit leaves gRPC
// routes alone (buffering a stream whole would stall it).
func traffic(out *routev3.Route, r *ir.HTTPRoute, use *filterUse) {
	t := r.Traffic
	if t == nil || r.DirectResponse != nil {
		return
	}
	if l := t.LocalRateLimit; l != nil {
		setPerFilter(out, filterLocalRateLimit, localRateLimit(l))
		use.localRateLimit = true
	}
	if r.Backends == nil {
		return
	}
	if n := t.MaxRequestBodyBytes; n > 0 && !r.GRPC {
		setPerFilter(out, filterBuffer, bodyLimit(n))
		use.buffer = true
	}
	if c := t.Compression; c != nil {
		fs, enable := compressors(c)
		for _, f := range fs {
			setPerFilter(out, f.name, enable)
			use.compressors = addNamed(use.compressors, f)
		}
	}
}
