package ir

// HTTPEdge are a listener's limits on what its clients may send or hold
// (GatewayParameters spec.edge). A zero field means the xDS translator's
// default (xdstranslator.DefaultEdge); a listener without HTTPEdge takes
// every default.
type HTTPEdge struct {
	// RequestHeadersTimeout bounds the time from a request's first header
	// byte to its last.
	RequestHeadersTimeout *Duration `json:"requestHeadersTimeout,omitempty"`
	// StreamIdleTimeout bounds the time a request may go without a byte
	// sent or received.
	StreamIdleTimeout *Duration `json:"streamIdleTimeout,omitempty"`
	// ConnectionIdleTimeout bounds the time a connection may stay open
	// without a request in flight.
	ConnectionIdleTimeout *Duration `json:"connectionIdleTimeout,omitempty"`
	// HeadersWithUnderscores is what happens to a request header whose
	// name has an underscore.
	HeadersWithUnderscores HeadersWithUnderscores `json:"headersWithUnderscores,omitempty"`
	// MaxRequestHeadersKB and MaxRequestHeadersCount bound a request's
	// headers (larger or more: 431).
	MaxRequestHeadersKB    uint32 `json:"maxRequestHeadersKB,omitempty"`
	MaxRequestHeadersCount uint32 `json:"maxRequestHeadersCount,omitempty"`
	// HTTP2MaxConcurrentStreams, HTTP2InitialStreamWindowSize and
	// HTTP2InitialConnectionWindowSize bound an HTTP/2 connection.
	HTTP2MaxConcurrentStreams        uint32 `json:"http2MaxConcurrentStreams,omitempty"`
	HTTP2InitialStreamWindowSize     uint32 `json:"http2InitialStreamWindowSize,omitempty"`
	HTTP2InitialConnectionWindowSize uint32 `json:"http2InitialConnectionWindowSize,omitempty"`
}

// HeadersWithUnderscores is what a listener does with a request header
// whose name has an underscore.
type HeadersWithUnderscores string

// The actions on headers with underscores.
const (
	UnderscoresReject HeadersWithUnderscores = "Reject"
	UnderscoresDrop   HeadersWithUnderscores = "Drop"
	UnderscoresAllow  HeadersWithUnderscores = "Allow"
)
