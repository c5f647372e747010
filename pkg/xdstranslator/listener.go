package xdstranslator

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	udpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/udp/udp_proxy/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// adsSource is the config source of every dynamic reference: ADS, v3.
func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}

// listener renders the IR listeners bound to k as one Envoy listener and
// its route configurations. It returns a nil listener when no filter chain
// is left.
func (s *scopeBuilder) listener(k bindKey, ls []*ir.Listener) (*listenerv3.Listener, []*routev3.RouteConfiguration, error) {
	var quic []quicChain // http3.go
	name := ListenerName(k.address, k.port, k.udp)
	l := &listenerv3.Listener{
		Name:                          name,
		Address:                       socketAddress(k.address, k.port, k.udp),
		StatPrefix:                    sharedStatName(k, ls, s.gateway),
		PerConnectionBufferLimitBytes: bufferLimitPB,
	}
	var routes []*routev3.RouteConfiguration
	switch ls[0].Protocol {
	case ir.ProtocolHTTP:
		rc, use, err := s.routeConfig(name, ls, nil, "")
		if err != nil {
			return nil, nil, err
		}
		routes = append(routes, rc)
		l.FilterChains = []*listenerv3.FilterChain{{
			Name:    "http",
			Filters: []*listenerv3.Filter{s.hcmFilter(httpStatName(k, ls, s.gateway), name, use, accessLog(ls...), edgeOf(ls...), tracingOf(ls...), sharedClient(ls...))},
		}}
	case ir.ProtocolHTTPS, ir.ProtocolTLS:
		// More specific listeners first, so that a server name claimed by a
		// specific listener is not taken by a route of a wildcard one.
		ordered := slices.Clone(ls)
		slices.SortStableFunc(ordered, func(a, b *ir.Listener) int { return compareHostSpecificity(a.Hostname, b.Hostname) })
		used := map[string]bool{}
		for _, il := range ordered {
			if il.Protocol == ir.ProtocolHTTPS {
				if used[il.Hostname] {
					continue
				}
				used[il.Hostname] = true
				rcName := HTTPSRouteConfigName(name, il.Name)
				rc, use, err := s.routeConfig(rcName, []*ir.Listener{il}, misdirectedHosts(il, ordered), altSvc(il))
				if err != nil {
					return nil, nil, err
				}
				if altSvc(il) != "" {
					quic = append(quic, quicChain{il, rcName, use})
				}
				routes = append(routes, rc)
				l.FilterChains = append(l.FilterChains, &listenerv3.FilterChain{
					Name:             "https/" + il.Name,
					FilterChainMatch: tlsChainMatch(il.Hostname),
					Filters:          []*listenerv3.Filter{s.hcmFilter(listenerStatName(il), rcName, use, accessLog(il), edgeOf(il), il.Tracing, sharedClient(il))},
					TransportSocket:  s.downstreamTLS(il.TLS, []string{"h2", "http/1.1"}, sharedClient(il).TLS),
				})
				continue
			}
			for _, r := range il.L4Routes {
				snis := r.Hostnames
				if len(snis) == 0 {
					snis = []string{il.Hostname}
				}
				for _, sni := range snis {
					if used[sni] {
						continue
					}
					used[sni] = true
					label := sni
					if label == "" {
						label = "*"
					}
					chain := &listenerv3.FilterChain{
						Name:             "tls/" + il.Name + "/" + label,
						FilterChainMatch: tlsChainMatch(sni),
						Filters:          []*listenerv3.Filter{s.tcpProxyFilter(listenerStatName(il), &r.Backends)},
					}
					if il.TLS != nil && il.TLS.Mode == ir.TLSTerminate {
						// TLSRouteModeTerminate: Envoy terminates with the
						// listener's certificates and relays the plain
						// stream; no ALPN is offered (the bytes are not HTTP).
						chain.TransportSocket = s.downstreamTLS(il.TLS, nil, sharedClient(il).TLS)
					}
					l.FilterChains = append(l.FilterChains, chain)
				}
			}
		}
		if len(l.FilterChains) > 0 {
			l.ListenerFilters = []*listenerv3.ListenerFilter{{
				Name:       filterTLSInspect,
				ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: toAny(&tlsinspectorv3.TlsInspector{})},
			}}
		}
	case ir.ProtocolTCP:
		il := ls[0]
		if len(il.L4Routes) > 0 {
			l.FilterChains = []*listenerv3.FilterChain{{
				Name:    "tcp/" + il.Name,
				Filters: []*listenerv3.Filter{s.tcpProxyFilter(listenerStatName(il), &il.L4Routes[0].Backends)},
			}}
		}
	case ir.ProtocolUDP:
		il := ls[0]
		if len(il.L4Routes) == 0 {
			return nil, nil, nil
		}
		l.UdpListenerConfig = &listenerv3.UdpListenerConfig{}
		l.ListenerFilters = []*listenerv3.ListenerFilter{s.udpProxyFilter(listenerStatName(il), il.L4Routes[0])}
		l.PerConnectionBufferLimitBytes = nil
		return l, nil, nil
	default:
		return nil, nil, fmt.Errorf("unknown protocol %q", ls[0].Protocol)
	}
	if len(l.FilterChains) == 0 {
		return nil, nil, nil
	}
	if pp := proxyProtocolFilter(ls); pp != nil {
		l.ListenerFilters = append([]*listenerv3.ListenerFilter{pp}, l.ListenerFilters...)
	}
	if len(quic) > 0 {
		s.quic = append(s.quic, s.quicListener(k, ls, quic))
	}
	return l, routes, nil
}

func socketAddress(addr string, port uint32, udp bool) *corev3.Address {
	proto := corev3.SocketAddress_TCP
	if udp {
		proto = corev3.SocketAddress_UDP
	}
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Protocol:      proto,
		Address:       addr,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		// "::" also accepts IPv4 connections, so one listener serves a
		// dual-stack pod.
		Ipv4Compat: addr == "::",
	}}}
}

// tlsChainMatch matches TLS connections, by SNI when hostname is set.
func tlsChainMatch(hostname string) *listenerv3.FilterChainMatch {
	m := &listenerv3.FilterChainMatch{TransportProtocol: "tls"}
	if hostname != "" {
		m.ServerNames = []string{hostname}
	}
	return m
}

// compareHostSpecificity orders hostnames most specific first: exact names,
// then wildcards with the longest suffix first, then "" and "*" (every
// host); ties by name.
func compareHostSpecificity(a, b string) int {
	rank := func(h string) int {
		switch {
		case h == "" || h == "*":
			return 2
		case strings.HasPrefix(h, "*"):
			return 1
		}
		return 0
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), -cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
}

// accessLog says whether the HTTP connection manager serving ls logs
// requests: unless every one of them has NoAccessLog.
func accessLog(ls ...*ir.Listener) bool {
	return slices.ContainsFunc(ls, func(l *ir.Listener) bool { return !l.NoAccessLog })
}

// stdoutAccessLog writes the access log to Envoy's stdout, in Envoy's
// default format, or in f when set (client.go logFormat).
func stdoutAccessLog(f *ir.AccessLogFormat) *accesslogv3.AccessLog {
	l := &streamv3.StdoutAccessLog{}
	if f != nil {
		l.AccessLogFormat = &streamv3.StdoutAccessLog_LogFormat{LogFormat: logFormat(f)}
	}
	return &accesslogv3.AccessLog{
		Name:       accessLogStdout,
		ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: toAny(l)},
	}
}

// downstreamTLS terminates TLS with the listener's certificates, fetched
// by SDS over ADS, offering alpn (h2 and http/1.1 on HTTPS listeners, none
// on TLS listeners; ct, a ListenerPolicy's, may replace them and set the
// TLS versions and cipher suites). With ClientValidation, client certificates are
// checked against its CA bundle (inline): required
// (require_client_certificate), or with AllowInsecureFallback requested
// and accepted whatever they are (trust_chain_verification
// ACCEPT_UNTRUSTED; a client without one is let in too).
func (s *scopeBuilder) downstreamTLS(t *ir.ListenerTLS, alpn []string, ct *ir.ClientTLS) *corev3.TransportSocket {
	return &corev3.TransportSocket{Name: transportTLS, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: toAny(s.downstreamTLSContext(t, alpn, ct))}}
}

// downstreamTLSContext is downstreamTLS's context (http3.go wraps it in
// QUIC's transport socket).
func (s *scopeBuilder) downstreamTLSContext(t *ir.ListenerTLS, alpn []string, ct *ir.ClientTLS) *tlsv3.DownstreamTlsContext {
	ctx := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		AlpnProtocols: alpn,
	}}
	applyClientTLS(ctx, ct)
	if t != nil && t.ClientValidation != nil {
		vc := &tlsv3.CertificateValidationContext{
			TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: t.ClientValidation.CACertificates}},
		}
		// Set either way: Envoy's unset default is deprecated.
		ctx.RequireClientCertificate = wrapperspb.Bool(!t.ClientValidation.AllowInsecureFallback)
		if t.ClientValidation.AllowInsecureFallback {
			vc.TrustChainVerification = tlsv3.CertificateValidationContext_ACCEPT_UNTRUSTED
		}
		ctx.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}
	}
	if t != nil {
		for _, c := range t.Certificates {
			s.useSecret(c)
			ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs = append(ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs,
				&tlsv3.SdsSecretConfig{Name: c.Name, SdsConfig: adsSource()})
		}
	}
	return ctx
}

// l4Target is where a TCP, TLS or UDP route sends its traffic: one cluster,
// or weighted clusters.
func (s *scopeBuilder) l4Target(g *ir.BackendGroup) (cluster string, weighted []*ir.Backend) {
	for _, b := range g.Backends {
		if b.Weight == 0 {
			continue
		}
		s.useBackend(b)
		weighted = append(weighted, b)
	}
	switch {
	case len(weighted) == 0:
		return InvalidBackendCluster, nil
	case len(weighted) == 1:
		return clusterOf(weighted[0]), nil
	}
	return "", weighted
}

func clusterOf(b *ir.Backend) string {
	if b.Invalid {
		return InvalidBackendCluster
	}
	return b.Name
}

func (s *scopeBuilder) tcpProxyFilter(stat string, g *ir.BackendGroup) *listenerv3.Filter {
	p := &tcpproxyv3.TcpProxy{StatPrefix: stat}
	cluster, weighted := s.l4Target(g)
	if weighted == nil {
		p.ClusterSpecifier = &tcpproxyv3.TcpProxy_Cluster{Cluster: cluster}
	} else {
		wc := &tcpproxyv3.TcpProxy_WeightedCluster{}
		for _, b := range weighted {
			wc.Clusters = append(wc.Clusters, &tcpproxyv3.TcpProxy_WeightedCluster_ClusterWeight{Name: clusterOf(b), Weight: b.Weight})
		}
		p.ClusterSpecifier = &tcpproxyv3.TcpProxy_WeightedClusters{WeightedClusters: wc}
	}
	return &listenerv3.Filter{Name: filterTCPProxy, ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: toAny(p)}}
}

// udpProxyFilter relays a UDP route's datagrams. A udp_proxy route names
// one cluster, so a route with several weighted backends gets a cluster of
// its own, "weighted/<route name>", whose localities are the backends with
// their weights (locality-weighted load balancing): every client flow (a
// session: source address and port) picks a backend by weight. Invalid
// backends have no locality there: Envoy cannot drop a share of the
// flows, so theirs goes to the valid backends.
func (s *scopeBuilder) udpProxyFilter(stat string, r *ir.L4Route) *listenerv3.ListenerFilter {
	cluster, weighted := s.l4Target(&r.Backends)
	if weighted != nil {
		var valid []*ir.Backend
		for _, b := range weighted {
			if !b.Invalid {
				valid = append(valid, b)
			}
		}
		switch len(valid) {
		case 0:
			cluster = InvalidBackendCluster
		case 1:
			cluster = valid[0].Name
		default:
			cluster = WeightedClusterName(r.Name)
			s.weighted[cluster] = valid
		}
	}
	p := &udpproxyv3.UdpProxyConfig{
		StatPrefix: stat,
		RouteSpecifier: &udpproxyv3.UdpProxyConfig_Matcher{Matcher: &xdsmatcherv3.Matcher{
			OnNoMatch: &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{
				Action: typedExtension(udpRouteAction, &udpproxyv3.Route{Cluster: cluster}),
			}},
		}},
	}
	return &listenerv3.ListenerFilter{Name: filterUDPProxy, ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: toAny(p)}}
}

// misdirectedHosts are the virtual host domains that an HTTPS listener's
// route configuration answers with 421 Misdirected Request
// (GatewayHTTPSListenerDetectMisdirectedRequests; RFC 9110 section
// 15.5.20): the hosts that another listener on the same port, TLS or
// HTTPS, would serve, as a client reusing one HTTP/2 connection for
// several hosts (connection coalescing) sends them to the listener its TLS
// handshake chose. A listener with a hostname answers 421 for every host
// it does not cover ("*") and for those covered by a more specific
// sibling; a listener without hostname answers 421 for the siblings'
// hostnames and serves (or answers 404 for) the rest.
func misdirectedHosts(il *ir.Listener, siblings []*ir.Listener) []string {
	var out []string
	if il.Hostname != "" {
		out = append(out, "*")
	}
	for _, sib := range siblings {
		h := strings.ToLower(sib.Hostname)
		if sib == il || h == "" || h == strings.ToLower(il.Hostname) || slices.Contains(out, h) {
			continue
		}
		if il.Hostname == "" || (covers(strings.ToLower(il.Hostname), h) && compareHostSpecificity(h, il.Hostname) < 0) {
			out = append(out, h)
		}
	}
	return out
}
