package xdstranslator

// HTTP/3 (ir.ClientSettings HTTP3, a ListenerPolicy's http3): an HTTPS
// port whose listeners ask for it gets a second Envoy listener on the
// same address and port in UDP, "listener/<address>/<port>/udp", that
// speaks QUIC:
//   - udp_listener_config.quic_options: the HTTP/2 limits of the port's
//     edge (edgeOf: concurrent streams, stream and connection windows)
//     bound QUIC's streams too, Envoy's idle timeout (5 minutes without a
//     packet) stays; GRO on the socket;
//   - one filter chain "quic/<listener>" per HTTPS listener with HTTP/3,
//     matched by the SNI of the QUIC handshake (server_names, no
//     transport_protocol: there is no TLS inspector on a UDP listener);
//   - transport socket envoy.transport_sockets.quic
//     (QuicDownstreamTransport) around the TCP chain's
//     DownstreamTlsContext: the same certificates by SDS and the same
//     client certificate validation; no TLS parameters (QUIC is TLS 1.3)
//     and no ALPN list (QUIC offers h3 itself);
//   - the TCP chain's connection manager with codec HTTP3 and
//     http3_protocol_options, its HTTP/1 and HTTP/2 options dropped: the
//     same route configuration (RDS), HTTP filters, limits, tracing,
//     access log and client address settings, and the same stat_prefix
//     (a listener's request counters add up both).
//
// The TCP chain's route configuration adds Alt-Svc: h3=":<port>";
// ma=86400 to every response (RFC 7838; the Gateway port, which the
// client reaches), so a browser tries QUIC on its next requests; HTTP/3
// responses carry it too (the route configuration is shared), which
// clients ignore. A UDP IR listener of the scope on the same address and
// port keeps it: no QUIC listener is made there (the Gateway API
// translator says so in the policy's status).

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	quicv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/quic/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// transportQUIC is Envoy's QUIC transport socket.
const transportQUIC = "envoy.transport_sockets.quic"

// altSvcMaxAge is how long, in seconds, a client may remember that a
// port serves HTTP/3 (the Alt-Svc ma parameter): a day.
const altSvcMaxAge = 86400

// quicChain is an HTTPS listener with HTTP/3 as its TCP chain rendered
// it: its route configuration and the filters its routes use.
type quicChain struct {
	il          *ir.Listener
	routeConfig string
	use         filterUse
}

// builtQUIC is a QUIC listener and the address and port it binds.
type builtQUIC struct {
	address  string
	port     uint32
	listener *listenerv3.Listener
}

// altSvc is the Alt-Svc value of il's responses, "" when il has no
// HTTP/3.
func altSvc(il *ir.Listener) string {
	if il.Client == nil || il.Client.HTTP3 == nil {
		return ""
	}
	return fmt.Sprintf(`h3=":%d"; ma=%d`, il.GatewayPort, altSvcMaxAge)
}

// altSvcHeader is the route configuration's response header for v (none
// for ""): it replaces a backend's own Alt-Svc, which describes the
// backend, not the Gateway.
func altSvcHeader(v string) []*corev3.HeaderValueOption {
	if v == "" {
		return nil
	}
	return []*corev3.HeaderValueOption{{
		Header:       &corev3.HeaderValue{Key: "alt-svc", Value: v},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}}
}

// quicListener is the QUIC listener of the HTTPS port k (ls its IR
// listeners) with a chain for each of chains.
func (s *scopeBuilder) quicListener(k bindKey, ls []*ir.Listener, chains []quicChain) builtQUIC {
	uk := bindKey{k.address, k.port, true}
	var served []*ir.Listener
	for _, c := range chains {
		served = append(served, c.il)
	}
	e := edgeOf(served...)
	l := &listenerv3.Listener{
		Name:       ListenerName(k.address, k.port, true),
		Address:    socketAddress(k.address, k.port, true),
		StatPrefix: sharedStatName(uk, ls, s.gateway),
		UdpListenerConfig: &listenerv3.UdpListenerConfig{
			QuicOptions: &listenerv3.QuicProtocolOptions{QuicProtocolOptions: &corev3.QuicProtocolOptions{
				MaxConcurrentStreams:        wrapperspb.UInt32(e.HTTP2MaxConcurrentStreams),
				InitialStreamWindowSize:     wrapperspb.UInt32(e.HTTP2InitialStreamWindowSize),
				InitialConnectionWindowSize: wrapperspb.UInt32(e.HTTP2InitialConnectionWindowSize),
			}},
			DownstreamSocketConfig: &corev3.UdpSocketConfig{PreferGro: wrapperspb.Bool(true)},
		},
	}
	for _, c := range chains {
		il := c.il
		client := sharedClient(il)
		client.HTTP1 = nil
		h := s.hcmConfig(listenerStatName(il), c.routeConfig, c.use, accessLog(il), edgeOf(il), il.Tracing, client)
		h.CodecType = hcmv3.HttpConnectionManager_HTTP3
		h.HttpProtocolOptions, h.Http2ProtocolOptions = nil, nil
		h.Http3ProtocolOptions = &corev3.Http3ProtocolOptions{}
		var match *listenerv3.FilterChainMatch
		if il.Hostname != "" {
			match = &listenerv3.FilterChainMatch{ServerNames: []string{il.Hostname}}
		}
		l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{
			Name:             "quic/" + il.Name,
			FilterChainMatch: match,
			Filters:          []*listenerv3.Filter{hcmOf(h)},
			TransportSocket: &corev3.TransportSocket{Name: transportQUIC, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: toAny(
				&quicv3.QuicDownstreamTransport{DownstreamTlsContext: s.downstreamTLSContext(il.TLS, nil, nil)})}},
		})
	}
	return builtQUIC{k.address, k.port, l}
}
