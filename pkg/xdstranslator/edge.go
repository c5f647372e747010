package xdstranslator

import (
	"cmp"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// DefaultEdge are the limits of every HTTP and HTTPS listener whose IR
// leaves them unset (ir.HTTPEdge; GatewayParameters spec.edge documents
// each). They follow Envoy's "Configuring Envoy as an edge proxy" best
// practices: connection and stream timeouts (a 10 s request headers
// timeout against slowloris clients, which Envoy leaves off by default),
// headers with underscores rejected, HTTP/2 at 100 concurrent streams with
// 64 KiB stream and 1 MiB connection windows (Envoy's defaults are
// 2147483647 streams and 256 MiB windows), and Envoy's own default bounds
// on request headers (60 KiB, 100 headers) made explicit.
var DefaultEdge = ir.HTTPEdge{
	RequestHeadersTimeout:            ir.NewDuration(10 * time.Second),
	StreamIdleTimeout:                ir.NewDuration(5 * time.Minute),
	ConnectionIdleTimeout:            ir.NewDuration(time.Hour),
	HeadersWithUnderscores:           ir.UnderscoresReject,
	MaxRequestHeadersKB:              60,
	MaxRequestHeadersCount:           100,
	HTTP2MaxConcurrentStreams:        100,
	HTTP2InitialStreamWindowSize:     65536,
	HTTP2InitialConnectionWindowSize: 1048576,
}

// edgeOf is the limits of an Envoy listener that serves ls: each field the
// strictest value any of them sets (the shortest timeout, the smallest
// limit; RejectRequest over DropHeader over Allow), else DefaultEdge's.
// One Envoy listener has one HTTP connection manager per filter chain, and
// listeners sharing a port must not loosen each other's limits.
func edgeOf(ls ...*ir.Listener) ir.HTTPEdge {
	var set ir.HTTPEdge
	minDur := func(a, b *ir.Duration) *ir.Duration {
		if a == nil || (b != nil && b.Duration < a.Duration) {
			return b
		}
		return a
	}
	minU := func(a, b uint32) uint32 {
		if a == 0 || (b != 0 && b < a) {
			return b
		}
		return a
	}
	rank := map[ir.HeadersWithUnderscores]int{ir.UnderscoresReject: 3, ir.UnderscoresDrop: 2, ir.UnderscoresAllow: 1}
	for _, l := range ls {
		e := l.Edge
		if e == nil {
			continue
		}
		set.RequestHeadersTimeout = minDur(set.RequestHeadersTimeout, e.RequestHeadersTimeout)
		set.StreamIdleTimeout = minDur(set.StreamIdleTimeout, e.StreamIdleTimeout)
		set.ConnectionIdleTimeout = minDur(set.ConnectionIdleTimeout, e.ConnectionIdleTimeout)
		if rank[e.HeadersWithUnderscores] > rank[set.HeadersWithUnderscores] {
			set.HeadersWithUnderscores = e.HeadersWithUnderscores
		}
		set.MaxRequestHeadersKB = minU(set.MaxRequestHeadersKB, e.MaxRequestHeadersKB)
		set.MaxRequestHeadersCount = minU(set.MaxRequestHeadersCount, e.MaxRequestHeadersCount)
		set.HTTP2MaxConcurrentStreams = minU(set.HTTP2MaxConcurrentStreams, e.HTTP2MaxConcurrentStreams)
		set.HTTP2InitialStreamWindowSize = minU(set.HTTP2InitialStreamWindowSize, e.HTTP2InitialStreamWindowSize)
		set.HTTP2InitialConnectionWindowSize = minU(set.HTTP2InitialConnectionWindowSize, e.HTTP2InitialConnectionWindowSize)
	}
	d := DefaultEdge
	return ir.HTTPEdge{
		RequestHeadersTimeout:            cmp.Or(set.RequestHeadersTimeout, d.RequestHeadersTimeout),
		StreamIdleTimeout:                cmp.Or(set.StreamIdleTimeout, d.StreamIdleTimeout),
		ConnectionIdleTimeout:            cmp.Or(set.ConnectionIdleTimeout, d.ConnectionIdleTimeout),
		HeadersWithUnderscores:           cmp.Or(set.HeadersWithUnderscores, d.HeadersWithUnderscores),
		MaxRequestHeadersKB:              cmp.Or(set.MaxRequestHeadersKB, d.MaxRequestHeadersKB),
		MaxRequestHeadersCount:           cmp.Or(set.MaxRequestHeadersCount, d.MaxRequestHeadersCount),
		HTTP2MaxConcurrentStreams:        cmp.Or(set.HTTP2MaxConcurrentStreams, d.HTTP2MaxConcurrentStreams),
		HTTP2InitialStreamWindowSize:     cmp.Or(set.HTTP2InitialStreamWindowSize, d.HTTP2InitialStreamWindowSize),
		HTTP2InitialConnectionWindowSize: cmp.Or(set.HTTP2InitialConnectionWindowSize, d.HTTP2InitialConnectionWindowSize),
	}
}

var underscoresAction = map[ir.HeadersWithUnderscores]corev3.HttpProtocolOptions_HeadersWithUnderscoresAction{
	ir.UnderscoresReject: corev3.HttpProtocolOptions_REJECT_REQUEST,
	ir.UnderscoresDrop:   corev3.HttpProtocolOptions_DROP_HEADER,
	ir.UnderscoresAllow:  corev3.HttpProtocolOptions_ALLOW,
}

// applyEdge sets e (complete: edgeOf) on h: HttpConnectionManager
// request_headers_timeout, stream_idle_timeout, max_request_headers_kb,
// common_http_protocol_options (idle_timeout, max_headers_count,
// headers_with_underscores_action) and http2_protocol_options
// (max_concurrent_streams, initial_stream_window_size,
// initial_connection_window_size).
func applyEdge(h *hcmv3.HttpConnectionManager, e ir.HTTPEdge) {
	h.RequestHeadersTimeout = durationpb.New(e.RequestHeadersTimeout.Duration)
	h.StreamIdleTimeout = durationpb.New(e.StreamIdleTimeout.Duration)
	h.MaxRequestHeadersKb = wrapperspb.UInt32(e.MaxRequestHeadersKB)
	h.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{
		IdleTimeout:                  durationpb.New(e.ConnectionIdleTimeout.Duration),
		MaxHeadersCount:              wrapperspb.UInt32(e.MaxRequestHeadersCount),
		HeadersWithUnderscoresAction: underscoresAction[e.HeadersWithUnderscores],
	}
	h.Http2ProtocolOptions = &corev3.Http2ProtocolOptions{
		MaxConcurrentStreams:        wrapperspb.UInt32(e.HTTP2MaxConcurrentStreams),
		InitialStreamWindowSize:     wrapperspb.UInt32(e.HTTP2InitialStreamWindowSize),
		InitialConnectionWindowSize: wrapperspb.UInt32(e.HTTP2InitialConnectionWindowSize),
	}
}
