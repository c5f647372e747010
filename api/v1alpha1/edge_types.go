package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// EdgeSpec hardens the Gateway's edge against slow, greedy and malformed
// clients, following Envoy's "Configuring Envoy as an edge proxy" best
// practices. Every field is optional: an unset field takes the class's
// value, then the default named in its documentation (the defaults apply to
// every HTTP and HTTPS listener, Ingresses' included, with no parameters at
// all). The bounds keep one Gateway's choices from costing a shared fleet
// much more than the defaults do.
//
// The listener settings (every field but overload) apply per Gateway in
// both modes, to its HTTP and HTTPS listeners. Overload applies to the
// Envoy fleet: in Shared mode only the GatewayClass's parameters decide it.
type EdgeSpec struct {
	// RequestHeadersTimeout is how long Envoy waits for a request's
	// headers, from their first byte to their last, before it answers 408
	// and closes the connection: a client that sends its headers byte by
	// byte (slowloris) holds a connection this long at most (Envoy
	// HttpConnectionManager request_headers_timeout). Default: 10s.
	// +optional
	RequestHeadersTimeout *Duration `json:"requestHeadersTimeout,omitempty"`

	// StreamIdleTimeout is how long a request (an HTTP/2 or HTTP/3 stream,
	// or an HTTP/1.1 request) may go without sending or receiving a byte
	// before Envoy resets it (HttpConnectionManager stream_idle_timeout).
	// Default: 5m.
	// +optional
	StreamIdleTimeout *Duration `json:"streamIdleTimeout,omitempty"`

	// ConnectionIdleTimeout is how long a downstream connection may stay
	// open without any request in flight (HttpConnectionManager
	// common_http_protocol_options.idle_timeout). Default: 1h.
	// +optional
	ConnectionIdleTimeout *Duration `json:"connectionIdleTimeout,omitempty"`

	// HeadersWithUnderscores is what Envoy does with a request header
	// whose name contains an underscore: RejectRequest answers 400 (HTTP/1)
	// or resets the stream (HTTP/2); DropHeader removes the header and
	// serves the request; Allow forwards it. Backends that read "x_user"
	// and "x-user" as one header (CGI, nginx's and many frameworks'
	// conventions) could otherwise be handed a header that a route's
	// header match or modifier never saw under that name
	// (HttpConnectionManager
	// common_http_protocol_options.headers_with_underscores_action).
	// Default: RejectRequest (Envoy's edge recommendation).
	// +optional
	HeadersWithUnderscores *HeadersWithUnderscoresAction `json:"headersWithUnderscores,omitempty"`

	// MaxRequestHeadersKB is the most KiB of request headers (and, for
	// HTTP/1, of the request line) Envoy accepts; larger ones get 431
	// Request Header Fields Too Large (HttpConnectionManager
	// max_request_headers_kb). Default: 60.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=96
	// +optional
	MaxRequestHeadersKB *int32 `json:"maxRequestHeadersKB,omitempty"`

	// MaxRequestHeadersCount is the most request headers Envoy accepts;
	// more get 431 (HttpConnectionManager
	// common_http_protocol_options.max_headers_count). Default: 100.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxRequestHeadersCount *int32 `json:"maxRequestHeadersCount,omitempty"`

	// HTTP2 bounds what one HTTP/2 client connection may hold.
	// +optional
	HTTP2 *HTTP2EdgeSpec `json:"http2,omitempty"`

	// Overload configures Envoy's overload manager: what every Envoy of the
	// fleet does when its heap or its connections run out. In Shared mode
	// only the GatewayClass's parameters set it (the fleet is shared); a
	// Dedicated Gateway's own value wins.
	// +optional
	Overload *OverloadSpec `json:"overload,omitempty"`
}

// Duration is a duration in the Gateway API's format (GEP-2257): one to
// four groups of up to five digits and a unit (h, m, s or ms), e.g. "10s"
// or "1h30m". Go's time.ParseDuration reads it.
// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(h|m|s|ms)){1,4}$`
type Duration string

// HeadersWithUnderscoresAction is what Envoy does with request headers
// whose names contain an underscore.
// +kubebuilder:validation:Enum=RejectRequest;DropHeader;Allow
type HeadersWithUnderscoresAction string

// The actions on headers with underscores (Envoy
// HttpProtocolOptions.HeadersWithUnderscoresAction REJECT_REQUEST,
// DROP_HEADER, ALLOW).
const (
	HeadersWithUnderscoresReject HeadersWithUnderscoresAction = "RejectRequest"
	HeadersWithUnderscoresDrop   HeadersWithUnderscoresAction = "DropHeader"
	HeadersWithUnderscoresAllow  HeadersWithUnderscoresAction = "Allow"
)

// HTTP2EdgeSpec bounds a downstream HTTP/2 connection (Envoy
// HttpConnectionManager http2_protocol_options).
type HTTP2EdgeSpec struct {
	// MaxConcurrentStreams is the most requests one HTTP/2 connection may
	// have in flight; further streams are refused (max_concurrent_streams).
	// Default: 100.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxConcurrentStreams *int32 `json:"maxConcurrentStreams,omitempty"`

	// InitialStreamWindowSize is how many bytes of one request body Envoy
	// buffers before the client must wait for a WINDOW_UPDATE
	// (initial_stream_window_size). Default: 65536 (64 KiB).
	// +kubebuilder:validation:Minimum=65535
	// +kubebuilder:validation:Maximum=16777216
	// +optional
	InitialStreamWindowSize *int32 `json:"initialStreamWindowSize,omitempty"`

	// InitialConnectionWindowSize is the same for all the streams of one
	// connection together (initial_connection_window_size). Default:
	// 1048576 (1 MiB).
	// +kubebuilder:validation:Minimum=65535
	// +kubebuilder:validation:Maximum=16777216
	// +optional
	InitialConnectionWindowSize *int32 `json:"initialConnectionWindowSize,omitempty"`
}

// OverloadSpec configures the overload manager of every Envoy of a fleet
// (Envoy bootstrap overload_manager).
type OverloadSpec struct {
	// MaxHeapSize is the heap size at which Envoy counts itself fully
	// loaded (fixed_heap resource monitor max_heap_size_bytes). At 95% of
	// it Envoy returns free memory to the system (shrink_heap); at 98% it
	// stops accepting connections and answers new requests with 503
	// (stop_accepting_connections, stop_accepting_requests). Default: 80%
	// of the Envoy container's memory limit (the rest is what the heap
	// statistic does not count: code, thread stacks, the allocator's own
	// use), or 2Gi (Envoy's example) when the container has no memory
	// limit.
	// +optional
	MaxHeapSize *resource.Quantity `json:"maxHeapSize,omitempty"`

	// MaxDownstreamConnections is the most client connections one Envoy
	// holds over all its listeners; further ones are closed at once
	// (global_downstream_max_connections resource monitor). Default: 50000.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	MaxDownstreamConnections *int64 `json:"maxDownstreamConnections,omitempty"`
}
