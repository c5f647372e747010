package xdstranslator

// How a listener meets its clients (ir.ClientSettings, a ListenerPolicy's
// effect): the TLS parameters of a terminating filter chain, the PROXY
// protocol listener filter, and the HTTP connection manager's client
// address detection, HTTP/1 options and access log format. The Gateway
// API translator makes the IR listeners that share an Envoy listener
// agree on what the Envoy listener (or an HTTP port's one connection
// manager) holds; here a disagreement that reaches the IR anyway takes
// the default (sharedClient).

import (
	"reflect"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/proxy_protocol/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	customheaderv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/original_ip_detection/custom_header/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// The extensions of this file.
const (
	filterProxyProtocol    = "envoy.filters.listener.proxy_protocol"
	originalIPCustomHeader = "envoy.http.original_ip_detection.custom_header"
)

// tlsVersions maps the IR's TLS versions to Envoy's.
var tlsVersions = map[ir.TLSVersion]tlsv3.TlsParameters_TlsProtocol{
	ir.TLS12: tlsv3.TlsParameters_TLSv1_2,
	ir.TLS13: tlsv3.TlsParameters_TLSv1_3,
}

// sharedClient is the ClientSettings of an Envoy listener, or of a
// connection manager, that serves ls: each field the listeners' common
// value, nil when they differ.
func sharedClient(ls ...*ir.Listener) ir.ClientSettings {
	var out ir.ClientSettings
	if len(ls) == 0 || ls[0].Client == nil {
		return out
	}
	out = *ls[0].Client
	for _, l := range ls[1:] {
		c := ir.ClientSettings{}
		if l.Client != nil {
			c = *l.Client
		}
		if !reflect.DeepEqual(out.ProxyProtocol, c.ProxyProtocol) {
			out.ProxyProtocol = nil
		}
		if !reflect.DeepEqual(out.ClientIP, c.ClientIP) {
			out.ClientIP = nil
		}
		if !reflect.DeepEqual(out.HTTP1, c.HTTP1) {
			out.HTTP1 = nil
		}
		if !reflect.DeepEqual(out.AccessLog, c.AccessLog) {
			out.AccessLog = nil
		}
		if !reflect.DeepEqual(out.TLS, c.TLS) {
			out.TLS = nil
		}
	}
	return out
}

// proxyProtocolFilter is the PROXY protocol listener filter of an Envoy
// listener serving ls (every version accepted; with Optional, a
// connection without a header too), nil when they do not all ask for it
// alike. It goes first: the TLS inspector reads the bytes after the
// header.
func proxyProtocolFilter(ls []*ir.Listener) *listenerv3.ListenerFilter {
	pp := sharedClient(ls...).ProxyProtocol
	if pp == nil {
		return nil
	}
	return &listenerv3.ListenerFilter{
		Name: filterProxyProtocol,
		ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: toAny(&proxyprotocolv3.ProxyProtocol{
			AllowRequestsWithoutProxyProtocol: pp.Optional,
		})},
	}
}

// applyClientTLS sets t's versions and cipher suites on ctx
// (common_tls_context tls_params) and its ALPN protocols, when set, in
// place of the listener's default.
func applyClientTLS(ctx *tlsv3.DownstreamTlsContext, t *ir.ClientTLS) {
	if t == nil {
		return
	}
	if t.MinVersion != "" || t.MaxVersion != "" || len(t.CipherSuites) > 0 {
		ctx.CommonTlsContext.TlsParams = &tlsv3.TlsParameters{
			TlsMinimumProtocolVersion: tlsVersions[t.MinVersion],
			TlsMaximumProtocolVersion: tlsVersions[t.MaxVersion],
			CipherSuites:              t.CipherSuites,
		}
	}
	if len(t.ALPN) > 0 {
		ctx.CommonTlsContext.AlpnProtocols = t.ALPN
	}
}

// applyClient sets c's connection manager options on h: the client
// address (xff_num_trusted_hops; or the custom_header original IP
// detection extension, which Envoy runs only without use_remote_address),
// HTTP/1 options (http_protocol_options) and the access log's format
// (stdout, when h logs at all).
func applyClient(h *hcmv3.HttpConnectionManager, c ir.ClientSettings) {
	if d := c.ClientIP; d != nil {
		if d.CustomHeader != "" {
			h.UseRemoteAddress = nil
			h.OriginalIpDetectionExtensions = []*corev3.TypedExtensionConfig{
				{Name: originalIPCustomHeader, TypedConfig: toAny(&customheaderv3.CustomHeaderConfig{HeaderName: d.CustomHeader})},
			}
		} else {
			h.XffNumTrustedHops = d.XFFNumTrustedHops
		}
	}
	if o := c.HTTP1; o != nil {
		h.HttpProtocolOptions = &corev3.Http1ProtocolOptions{
			AcceptHttp_10:         o.AcceptHTTP10,
			DefaultHostForHttp_10: o.DefaultHost,
		}
	}
	if f := c.AccessLog; f != nil && len(h.AccessLog) > 0 {
		h.AccessLog = []*accesslogv3.AccessLog{stdoutAccessLog(f)}
	}
}

// logFormat is f as Envoy's SubstitutionFormatString: the text inline, or
// a JSON object whose values are formats.
func logFormat(f *ir.AccessLogFormat) *corev3.SubstitutionFormatString {
	if len(f.JSON) == 0 {
		return &corev3.SubstitutionFormatString{Format: &corev3.SubstitutionFormatString_TextFormatSource{
			TextFormatSource: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: f.Text}},
		}}
	}
	fields := map[string]*structpb.Value{}
	for _, fl := range f.JSON {
		fields[fl.Name] = structpb.NewStringValue(fl.Format)
	}
	return &corev3.SubstitutionFormatString{Format: &corev3.SubstitutionFormatString_JsonFormat{
		JsonFormat: &structpb.Struct{Fields: fields},
	}}
}
