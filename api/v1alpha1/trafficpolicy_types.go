package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TrafficPolicyKind is the kind of TrafficPolicy.
const TrafficPolicyKind = "TrafficPolicy"

// TrafficPolicySpec is how the gateway treats the requests of the routes a
// TrafficPolicy covers before and after they are forwarded: rate limits,
// response compression and a request body size limit. Each field is
// independent; a policy sets at least one. docs/traffic-policy.md is the
// user's guide; a policy that cannot be honoured is Accepted=False and
// changes nothing (the routes it covers keep working without it).
//
// +kubebuilder:validation:XValidation:rule="has(self.rateLimit) || has(self.compression) || has(self.requestBody)",message="at least one of rateLimit, compression and requestBody is required"
type TrafficPolicySpec struct {
	// TargetRefs are the objects, in the policy's namespace, whose
	// requests the policy covers (GEP-713): a Gateway or a ListenerSet
	// (sectionName: one listener of it), an HTTPRoute or a GRPCRoute
	// (sectionName: one named rule of it). The most specific policy
	// applies to a route rule: rule over route over listener over
	// ListenerSet over Gateway (the whole policy: fields are not merged
	// across levels); of two on the same target the older wins and the
	// other is Accepted=False reason Conflicted.
	//
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.group == 'gateway.networking.k8s.io' && r.kind in ['Gateway', 'ListenerSet', 'HTTPRoute', 'GRPCRoute'])",message="targetRefs must be Gateways, ListenerSets, HTTPRoutes or GRPCRoutes of gateway.networking.k8s.io"
	// +kubebuilder:validation:XValidation:rule="self.all(r1, self.exists_one(r2, r1.group == r2.group && r1.kind == r2.kind && r1.name == r2.name && (has(r1.sectionName) ? has(r2.sectionName) && r1.sectionName == r2.sectionName : !has(r2.sectionName))))",message="targetRefs must be distinct"
	TargetRefs []gwapiv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`

	// RateLimit limits the rate of requests.
	// +optional
	RateLimit *RateLimit `json:"rateLimit,omitempty"`

	// Compression compresses responses for the clients that accept it
	// (Envoy's compressor HTTP filter,
	// envoy.extensions.filters.http.compressor.v3.Compressor).
	// +optional
	Compression *Compression `json:"compression,omitempty"`

	// RequestBody limits the request body.
	// +optional
	RequestBody *RequestBody `json:"requestBody,omitempty"`
}

// RateLimit holds the rate limits of a policy: local limits, counted by
// each Envoy on its own (a fleet of N replicas lets N times the limit
// through), and global limits, whose counters every Envoy of a fleet
// shares. Both may be set: a request then passes the local limits first.
//
// +kubebuilder:validation:XValidation:rule="has(self.local) || has(self.global)",message="at least one of local and global is required"
type RateLimit struct {
	// Local limits are token buckets kept by each Envoy process (Envoy's
	// local rate limit HTTP filter,
	// envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit).
	// +optional
	Local *LocalRateLimit `json:"local,omitempty"`

	// Global limits are counters shared by every Envoy of the fleet that
	// serves the routes, kept by the rate-limit service
	// (envoyproxy/ratelimit with Redis; Envoy's ratelimit HTTP filter,
	// envoy.extensions.filters.http.ratelimit.v3.RateLimit). The
	// controller must know the service (--ratelimit-service-address; in
	// standalone mode the --ratelimit-* flags): without one the policy
	// is Accepted=False reason RateLimitServiceMissing.
	// +optional
	Global *GlobalRateLimit `json:"global,omitempty"`
}

// GlobalRateLimit is a set of counters kept by the rate-limit service. A
// request counts against every rule of its route's policy and is refused
// (429 Too Many Requests, with Retry-After and the X-RateLimit-* headers
// of draft-polli-ratelimit-headers-03) when one of them is over its limit.
//
// A rule's counter belongs to the policy, not to one route: every route
// the policy covers that one fleet serves (a GatewayClass's shared fleet,
// a dedicated Gateway's) counts against it, through every Envoy of the
// fleet. The service counts in fixed windows that start on the unit's
// boundary (each wall-clock minute, hour, day).
type GlobalRateLimit struct {
	// Rules are the limits, each counted on its own.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Rules []GlobalRateLimitRule `json:"rules"`

	// FailOpen says what a request gets when the service cannot answer
	// (down, unreachable, or slower than a second): false (default)
	// refuses it with 500, true lets it through uncounted (Envoy's
	// ratelimit filter failure_mode_deny).
	// +optional
	FailOpen bool `json:"failOpen,omitempty"`

	// Shadow, when true, has the service count requests and report the
	// rules over their limit in its statistics, but lets every request
	// through (the service's shadow_mode): a way to try a limit on live
	// traffic.
	// +optional
	Shadow bool `json:"shadow,omitempty"`
}

// GlobalRateLimitUnit is the window a global rule counts requests over.
// +kubebuilder:validation:Enum=Second;Minute;Hour;Day
type GlobalRateLimitUnit string

// Global rate limit units.
const (
	GlobalRateLimitSecond GlobalRateLimitUnit = "Second"
	GlobalRateLimitMinute GlobalRateLimitUnit = "Minute"
	GlobalRateLimitHour   GlobalRateLimitUnit = "Hour"
	GlobalRateLimitDay    GlobalRateLimitUnit = "Day"
)

// GlobalRateLimitRule is one limit: Requests per Unit, counted in fixed
// windows (a window starts on the unit's boundary, and a new window starts
// from zero).
//
// +kubebuilder:validation:XValidation:rule="has(self.by) && self.by == 'Header' ? has(self.header) : !has(self.header)",message="header is required when by is Header, and only then"
type GlobalRateLimitRule struct {
	// Requests is the number of requests allowed per unit (the service's
	// requests_per_unit).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Requests int32 `json:"requests"`

	// Unit is the window: Second, Minute, Hour or Day.
	Unit GlobalRateLimitUnit `json:"unit"`

	// By is whose requests share a counter: Route (default, one counter
	// for every request the policy covers), ClientIP (a counter per
	// client address: the peer's, or the X-Forwarded-For address the
	// gateway trusts) or Header (a counter per value of header; a request
	// without it is not counted by the rule).
	// +kubebuilder:default=Route
	// +optional
	By RateLimitBy `json:"by,omitempty"`

	// Header is the request header whose value keys the counters when by
	// is Header. A JWT claim keys a counter per user this way: a
	// SecurityPolicy's jwt copies it into a header (claimToHeaders), which
	// Envoy sets from the validated token only, before the rate limits
	// read it.
	// +optional
	Header *gwapiv1.HTTPHeaderName `json:"header,omitempty"`
}

// LocalRateLimit is a set of token bucket rules. A request consumes a
// token of every rule that counts it and is refused (429 Too Many
// Requests, with Retry-After) when one of them has none left. Every
// response of a route carries X-RateLimit-Limit, X-RateLimit-Remaining
// and X-RateLimit-Reset (draft-polli-ratelimit-headers-03, Envoy's
// DRAFT_VERSION_03) for the rule closest to its limit.
//
// The buckets belong to one Envoy route (one match of a rule for one
// hostname) of one Envoy process: a rule with two matches, or a policy on
// a Gateway, gives each route its own buckets.
type LocalRateLimit struct {
	// Rules are the limits, each counted on its own.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	Rules []LocalRateLimitRule `json:"rules"`

	// Shadow, when true, counts requests against the rules (statistics
	// http_local_rate_limit.rate_limited) and adds the X-RateLimit
	// headers, but lets every request through (filter_enforced 0%): a
	// way to try a limit on live traffic.
	// +optional
	Shadow bool `json:"shadow,omitempty"`
}

// RateLimitUnit is the period a rule's requests are counted over.
// +kubebuilder:validation:Enum=Second;Minute;Hour
type RateLimitUnit string

// Rate limit units.
const (
	RateLimitSecond RateLimitUnit = "Second"
	RateLimitMinute RateLimitUnit = "Minute"
	RateLimitHour   RateLimitUnit = "Hour"
)

// RateLimitBy says which requests share a bucket.
// +kubebuilder:validation:Enum=Route;ClientIP;Header
type RateLimitBy string

// What a rule's bucket is kept per.
const (
	// RateLimitByRoute: one bucket for every request of the route.
	RateLimitByRoute RateLimitBy = "Route"
	// RateLimitByClientIP: a bucket per client address (the peer's, or
	// the X-Forwarded-For address the gateway trusts).
	RateLimitByClientIP RateLimitBy = "ClientIP"
	// RateLimitByHeader: a bucket per distinct value of a request header.
	RateLimitByHeader RateLimitBy = "Header"
)

// LocalRateLimitRule is one token bucket (TokenBucket): it holds Burst
// tokens at most and gains Requests tokens per Unit, steadily (one every
// Unit/Requests); a request takes one.
//
// +kubebuilder:validation:XValidation:rule="has(self.by) && self.by == 'Header' ? has(self.header) : !has(self.header)",message="header is required when by is Header, and only then"
// +kubebuilder:validation:XValidation:rule="!has(self.burst) || self.burst >= self.requests",message="burst must be at least requests"
type LocalRateLimitRule struct {
	// Requests is the number of requests allowed per unit (TokenBucket
	// tokens_per_fill).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	Requests int32 `json:"requests"`

	// Unit is the period: Second, Minute or Hour (TokenBucket
	// fill_interval). Envoy refills the bucket steadily over the period,
	// not at its end: 60 per Minute is a token a second.
	Unit RateLimitUnit `json:"unit"`

	// Burst is the size of the bucket: the requests allowed at once after
	// a quiet time (TokenBucket max_tokens). Default: requests. At least
	// requests.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000000
	// +optional
	Burst *int32 `json:"burst,omitempty"`

	// By is whose requests share a bucket: Route (default, one bucket),
	// ClientIP (a bucket per client address) or Header (a bucket per
	// value of header; a request without it is not counted by the rule).
	// Envoy keeps the 10000 most recently used buckets of a ClientIP or
	// Header rule (max_dynamic_descriptors); an evicted key starts anew.
	// +kubebuilder:default=Route
	// +optional
	By RateLimitBy `json:"by,omitempty"`

	// Header is the request header whose value keys the buckets when by
	// is Header (a RequestHeaders rate limit action). The claims a
	// SecurityPolicy's jwt copies into headers (claimToHeaders) key a
	// bucket per user this way.
	// +optional
	Header *gwapiv1.HTTPHeaderName `json:"header,omitempty"`
}

// CompressionAlgorithm is a content coding Envoy compresses with.
// +kubebuilder:validation:Enum=Gzip;Brotli;Zstd
type CompressionAlgorithm string

// Compression algorithms (content codings gzip, br and zstd).
const (
	CompressionGzip   CompressionAlgorithm = "Gzip"
	CompressionBrotli CompressionAlgorithm = "Brotli"
	CompressionZstd   CompressionAlgorithm = "Zstd"
)

// Compression compresses the responses of the routes a policy covers.
// Envoy compresses a response when the client accepts one of the
// algorithms (Accept-Encoding), the response's Content-Type is one of
// contentTypes, it is at least minSize long (or has no Content-Length),
// it is not encoded already, and it has no Cache-Control no-transform.
type Compression struct {
	// Algorithms are the content codings offered, most preferred first:
	// the client's Accept-Encoding picks the one with the highest q-value;
	// on a tie the first here wins (Compressor choose_first), and between
	// the others the client's order decides.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	Algorithms []CompressionAlgorithm `json:"algorithms"`

	// ContentTypes are the media types compressed (compared with the
	// response's Content-Type in any case, its parameters ignored).
	// Default: Envoy's list, text/html, text/plain, text/css, text/xml,
	// application/javascript, application/json, application/xhtml+xml and
	// image/svg+xml, and their synonyms.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=3
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z0-9!#$&^_.+-]+/[a-zA-Z0-9!#$&^_.+*-]+$`
	// +optional
	ContentTypes []string `json:"contentTypes,omitempty"`

	// MinSize is the smallest response compressed, in bytes, from its
	// Content-Length (CommonDirectionConfig min_content_length). Default
	// 30 (Envoy's).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1073741824
	// +optional
	MinSize *int32 `json:"minSize,omitempty"`
}

// RequestBody limits request bodies.
//
// +kubebuilder:validation:XValidation:rule="quantity(string(self.maxSize)).isInteger() && quantity(string(self.maxSize)).compareTo(quantity('1')) >= 0 && quantity(string(self.maxSize)).compareTo(quantity('64Mi')) <= 0",message="maxSize must be a whole number of bytes, 1 to 64Mi"
type RequestBody struct {
	// MaxSize is the largest request body accepted: a larger one, with a
	// Content-Length or streamed (chunked), gets 413 Content Too Large.
	// Envoy's buffer filter holds the whole body, up to MaxSize, before
	// the request is forwarded (BufferPerRoute max_request_bytes): 1 byte
	// to 64Mi.
	MaxSize resource.Quantity `json:"maxSize"`
}

// TrafficPolicy sets rate limits, compression and a request body limit
// on the Gateways, listeners, routes and route rules it targets
// (docs/traffic-policy.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=gateway-api;xds-controller,shortName=trafficpol
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TrafficPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TrafficPolicySpec `json:"spec"`
	// Status is one entry per Gateway the policy reaches (GEP-713
	// PolicyAncestorStatus): Accepted, Conflicted.
	// +optional
	Status gwapiv1.PolicyStatus `json:"status,omitempty"`
}

// TrafficPolicyList is a list of TrafficPolicies.
//
// +kubebuilder:object:root=true
type TrafficPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrafficPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&TrafficPolicy{}, &TrafficPolicyList{})
}
