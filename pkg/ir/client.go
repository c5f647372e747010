package ir

import "slices"

// ClientSettings are how a listener meets its clients (ListenerPolicy):
// each field nil takes the xDS translator's default. Where each lands in
// Envoy decides who may differ:
//   - TLS is per filter chain: each HTTPS listener (and TLS listener in
//     mode Terminate) has its own;
//   - ProxyProtocol is a listener filter: one per Envoy listener (address
//     and port), so the IR listeners that share one must agree (the
//     Gateway API translator clears it on all of them when they do not);
//   - ClientIP, HTTP1 and AccessLog are HTTP connection manager options:
//     one per HTTPS listener, one for all the HTTP listeners of a port
//     (they share a connection manager), which must agree likewise;
//   - HTTP3 adds a QUIC listener (UDP) on the port of an HTTPS listener:
//     one per Envoy listener, so the HTTPS listeners of a port agree
//     (each keeps its own QUIC filter chain, by SNI), and no UDP
//     listener of the scope may bind the same address and port.
type ClientSettings struct {
	TLS           *ClientTLS         `json:"tls,omitempty"`
	ProxyProtocol *ProxyProtocol     `json:"proxyProtocol,omitempty"`
	ClientIP      *ClientIPDetection `json:"clientIP,omitempty"`
	HTTP1         *HTTP1Options      `json:"http1,omitempty"`
	AccessLog     *AccessLogFormat   `json:"accessLog,omitempty"`
	HTTP3         *HTTP3             `json:"http3,omitempty"`
}

// HTTP3 serves an HTTPS listener over HTTP/3 too: a UDP Envoy listener on
// its address and port with a QUIC filter chain per HTTPS listener
// (transport socket envoy.transport_sockets.quic, the same certificates
// and client validation; connection manager codec HTTP3, the same route
// configuration and filters), and the TCP responses' header
// Alt-Svc: h3=":<GatewayPort>"; ma=86400 (RFC 7838: the port the
// client sees, not the one Envoy binds). QUIC is TLS 1.3 only: the
// listener's TLS parameters and ALPN do not apply to it.
type HTTP3 struct{}

// TLSVersion is a TLS protocol version, "1.2" or "1.3".
type TLSVersion string

// The TLS versions.
const (
	TLS12 TLSVersion = "1.2"
	TLS13 TLSVersion = "1.3"
)

// ClientTLS are a terminating listener's TLS parameters (Envoy
// DownstreamTlsContext common_tls_context tls_params, alpn_protocols).
type ClientTLS struct {
	// MinVersion and MaxVersion bound the versions accepted; "" is
	// Envoy's default (1.2 and 1.3). MinVersion is not above MaxVersion.
	MinVersion TLSVersion `json:"minVersion,omitempty"`
	MaxVersion TLSVersion `json:"maxVersion,omitempty"`
	// CipherSuites are TLS 1.2 cipher suites by Envoy's (OpenSSL) names,
	// in preference order; empty is Envoy's list.
	CipherSuites []string `json:"cipherSuites,omitempty"`
	// ALPN are the protocols offered ("h2", "http/1.1"); empty is the
	// listener's default.
	ALPN []string `json:"alpn,omitempty"`
}

// ProxyProtocol reads a PROXY protocol header (v1 or v2) at the start of
// every connection of an Envoy listener (listener filter
// envoy.filters.listener.proxy_protocol).
type ProxyProtocol struct {
	// Optional accepts connections without one
	// (allow_requests_without_proxy_protocol).
	Optional bool `json:"optional,omitempty"`
}

// ClientIPDetection is where an HTTP connection manager takes the client
// address from: XFFNumTrustedHops (HttpConnectionManager
// xff_num_trusted_hops), or, when CustomHeader is set, that header
// (original IP detection extension custom_header; X-Forwarded-For is then
// left as it came).
type ClientIPDetection struct {
	XFFNumTrustedHops uint32 `json:"xffNumTrustedHops,omitempty"`
	// CustomHeader is a lower-case header name.
	CustomHeader string `json:"customHeader,omitempty"`
}

// HTTP1Options are an HTTP connection manager's HTTP/1 options
// (http_protocol_options).
type HTTP1Options struct {
	// AcceptHTTP10 serves HTTP/1.0 requests (accept_http_10).
	AcceptHTTP10 bool `json:"acceptHTTP10,omitempty"`
	// DefaultHost is the Host of an HTTP/1.0 request without one
	// (default_host_for_http_10); only with AcceptHTTP10.
	DefaultHost string `json:"defaultHost,omitempty"`
}

// AccessLogFormat is the format of an HTTP connection manager's access
// log on stdout: Text (a line ending in "\n") or JSON (one object per
// request, its fields in Name order), both in Envoy's substitution format
// with command operators that ValidateAccessLogFormat accepts. Off is
// ir.Listener NoAccessLog.
type AccessLogFormat struct {
	Text string           `json:"text,omitempty"`
	JSON []AccessLogField `json:"json,omitempty"`
}

// AccessLogField is one field of a JSON access log: its key and its
// value's format.
type AccessLogField struct {
	Name   string `json:"name"`
	Format string `json:"format"`
}

// client checks l's ClientSettings: TLS only on a terminating listener,
// known versions in order; the HTTP settings only on HTTP and HTTPS
// listeners; one client address source; a default host only with
// HTTP/1.0; one access log format, JSON fields named and distinct;
// HTTP/3 only on HTTPS listeners, with TLS 1.3 allowed.
func (v *validator) client(p string, l *Listener) {
	c, p := l.Client, p+".client"
	http := l.Protocol == ProtocolHTTP || l.Protocol == ProtocolHTTPS
	if t := c.TLS; t != nil {
		if l.TLS == nil || l.TLS.Mode != TLSTerminate {
			v.add(p+".tls", "TLS parameters apply only to a listener that terminates TLS")
		}
		for _, ver := range []TLSVersion{t.MinVersion, t.MaxVersion} {
			if ver != "" && ver != TLS12 && ver != TLS13 {
				v.add(p+".tls", "unknown TLS version "+string(ver))
			}
		}
		if t.MinVersion != "" && t.MaxVersion != "" && t.MinVersion > t.MaxVersion {
			v.add(p+".tls", "minVersion above maxVersion")
		}
	}
	if c.HTTP3 != nil && (l.Protocol != ProtocolHTTPS || l.TLS == nil || l.TLS.Mode != TLSTerminate) {
		v.add(p+".http3", "HTTP/3 applies only to HTTPS listeners that terminate TLS")
	}
	if c.HTTP3 != nil && c.TLS != nil && c.TLS.MaxVersion == TLS12 {
		v.add(p+".http3", "HTTP/3 (QUIC) is TLS 1.3, which maxVersion 1.2 refuses")
	}
	if c.ProxyProtocol != nil && l.Protocol == ProtocolUDP {
		v.add(p+".proxyProtocol", "PROXY protocol applies only to TCP-based listeners")
	}
	if (c.ClientIP != nil || c.HTTP1 != nil || c.AccessLog != nil) && !http {
		v.add(p, "clientIP, http1 and accessLog apply only to HTTP and HTTPS listeners")
	}
	if d := c.ClientIP; d != nil && d.CustomHeader != "" && d.XFFNumTrustedHops != 0 {
		v.add(p+".clientIP", "a custom header and trusted X-Forwarded-For hops are exclusive")
	}
	if o := c.HTTP1; o != nil && o.DefaultHost != "" && !o.AcceptHTTP10 {
		v.add(p+".http1", "a default host for HTTP/1.0 needs acceptHTTP10")
	}
	if f := c.AccessLog; f != nil {
		if (f.Text == "") == (len(f.JSON) == 0) {
			v.add(p+".accessLog", "exactly one of text and json is required")
		}
		var names []string
		for _, fl := range f.JSON {
			if fl.Name == "" || slices.Contains(names, fl.Name) {
				v.add(p+".accessLog", "JSON field names must be set and distinct")
			}
			names = append(names, fl.Name)
		}
	}
}
