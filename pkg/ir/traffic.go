package ir

// Traffic settings of a route: local and global rate limits, response
// compression and a request body size limit. pkg/gatewayapi fills them from the
// TrafficPolicy that covers a route rule (trafficpolicy.go); Ingress
// annotations may fill the same fields. pkg/xdstranslator renders them
// as per-route configurations of Envoy's local_ratelimit, compressor and
// buffer HTTP filters (traffic.go there).

import (
	"fmt"
	"slices"
	"time"
)

// Traffic is what the gateway does to a route's requests and responses
// besides forwarding them. Every field is optional.
type Traffic struct {
	// LocalRateLimit, when set, refuses requests over its rules with 429.
	LocalRateLimit *LocalRateLimit `json:"localRateLimit,omitempty"`
	// Compression, when set, compresses the route's responses.
	Compression *Compression `json:"compression,omitempty"`
	// GlobalRateLimit, when set, refuses requests over its rules with 429;
	// their counters are kept by the rate-limit service, shared by every
	// Envoy of the scope (ratelimit.go).
	GlobalRateLimit *RouteGlobalRateLimit `json:"globalRateLimit,omitempty"`
	// MaxRequestBodyBytes, when not 0, is the largest request body
	// accepted, in bytes (1 to MaxRequestBodyLimit); a larger one, with a
	// Content-Length or chunked, gets 413.
	MaxRequestBodyBytes uint32 `json:"maxRequestBodyBytes,omitempty"`
}

// MaxRequestBodyLimit is the largest MaxRequestBodyBytes: 64 MiB. Envoy
// buffers the whole body, up to the limit, before it forwards a request.
const MaxRequestBodyLimit = 64 << 20

// LocalRateLimit is a set of token buckets kept by each Envoy process, per
// Envoy route: a request takes a token of every rule that counts it and
// is refused when one has none.
type LocalRateLimit struct {
	// Rules are the buckets, 1 to 8.
	Rules []RateLimitRule `json:"rules"`
	// Shadow counts without refusing (statistics and headers only).
	Shadow bool `json:"shadow,omitempty"`
}

// RateLimitKey is what a rule keeps a bucket per.
type RateLimitKey string

// Rate limit keys.
const (
	// RateLimitRoute: one bucket for the route.
	RateLimitRoute RateLimitKey = "Route"
	// RateLimitClientIP: a bucket per client address (Envoy's remote
	// address).
	RateLimitClientIP RateLimitKey = "ClientIP"
	// RateLimitHeader: a bucket per value of Header; requests without it
	// are not counted.
	RateLimitHeader RateLimitKey = "Header"
)

// RateLimitRule is one token bucket: Burst tokens at most, Requests
// tokens added every Period.
type RateLimitRule struct {
	// Requests is the tokens added per Period (at least 1).
	Requests uint32 `json:"requests"`
	// Period is the refill interval: a second, a minute or an hour.
	Period time.Duration `json:"period"`
	// Burst is the bucket's size, at least Requests.
	Burst uint32 `json:"burst"`
	// Key is what a bucket is kept per.
	Key RateLimitKey `json:"key"`
	// Header is the request header (lower case) whose value keys the
	// buckets; set only when Key is RateLimitHeader.
	Header string `json:"header,omitempty"`
}

// CompressionAlgorithm is an HTTP content coding.
type CompressionAlgorithm string

// Content codings Envoy compresses with.
const (
	CompressionGzip   CompressionAlgorithm = "gzip"
	CompressionBrotli CompressionAlgorithm = "br"
	CompressionZstd   CompressionAlgorithm = "zstd"
)

// Compression compresses a route's responses.
type Compression struct {
	// Algorithms are the codings offered, distinct, most preferred first:
	// the first wins a tie of Accept-Encoding q-values.
	Algorithms []CompressionAlgorithm `json:"algorithms"`
	// ContentTypes are the media types compressed, sorted; empty means
	// Envoy's default list.
	ContentTypes []string `json:"contentTypes,omitempty"`
	// MinSize is the smallest Content-Length compressed, in bytes.
	MinSize uint32 `json:"minSize"`
}

// traffic checks what Envoy would refuse in t (a NACK) or what the xDS
// translator cannot render: rules 1 to 8, periods of a second, a minute
// or an hour, Requests at least 1 and at most Burst, a header only for a
// Header key and then an RFC 7230 token; algorithms known and distinct;
// a body limit of at most MaxRequestBodyLimit.
func (v *validator) traffic(p string, t *Traffic) {
	if l := t.LocalRateLimit; l != nil {
		if n := len(l.Rules); n < 1 || n > 8 {
			v.add(p, fmt.Sprintf("local rate limit: %d rules; 1 to 8 are required", n))
		}
		for i, r := range l.Rules {
			switch {
			case r.Period != time.Second && r.Period != time.Minute && r.Period != time.Hour:
				v.add(p, fmt.Sprintf("local rate limit rule %d: period %s is not a second, a minute or an hour", i, r.Period))
			case r.Requests < 1 || r.Burst < r.Requests:
				v.add(p, fmt.Sprintf("local rate limit rule %d: requests %d is not 1 to burst %d", i, r.Requests, r.Burst))
			case (r.Key == RateLimitHeader) != (r.Header != ""):
				v.add(p, fmt.Sprintf("local rate limit rule %d: a header is set exactly when the key is Header", i))
			case r.Key != RateLimitRoute && r.Key != RateLimitClientIP && r.Key != RateLimitHeader:
				v.add(p, fmt.Sprintf("local rate limit rule %d: unknown key %q", i, r.Key))
			case r.Header != "" && !isToken(r.Header):
				v.add(p, fmt.Sprintf("local rate limit rule %d: header %q is not an RFC 7230 token", i, r.Header))
			}
		}
	}
	if c := t.Compression; c != nil {
		if len(c.Algorithms) == 0 {
			v.add(p, "compression needs at least one algorithm")
		}
		for i, a := range c.Algorithms {
			if a != CompressionGzip && a != CompressionBrotli && a != CompressionZstd {
				v.add(p, fmt.Sprintf("compression: unknown algorithm %q", a))
			}
			if slices.Contains(c.Algorithms[:i], a) {
				v.add(p, fmt.Sprintf("compression: algorithm %q is given twice", a))
			}
		}
		if !slices.IsSorted(c.ContentTypes) {
			v.add(p, "compression: content types are not sorted")
		}
	}
	if g := t.GlobalRateLimit; g != nil {
		v.globalRateLimit(p, g)
	}
	if t.MaxRequestBodyBytes > MaxRequestBodyLimit {
		v.add(p, fmt.Sprintf("request body limit %d is over %d bytes", t.MaxRequestBodyBytes, MaxRequestBodyLimit))
	}
}
