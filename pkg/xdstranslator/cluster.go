package xdstranslator

import (
	"net/netip"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	caresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// connectTimeout bounds a TCP (and TLS) connection to an endpoint.
const connectTimeout = 10 * time.Second

// What every EDS cluster holds alike: its connect timeout, discovery type
// and EDS config. Clusters share these messages, which nothing modifies
// (like the resources themselves, which a Cache hands out again and
// again), instead of holding a copy each.
var (
	connectTimeoutPB = durationpb.New(connectTimeout)
	edsType          = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS}
	edsConfig        = &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsSource()}
	// bufferLimitPB bounds what Envoy buffers per connection, upstream
	// and downstream: 32 KiB, as Envoy's edge best practices advise
	// (Cluster and Listener per_connection_buffer_limit_bytes; Envoy's
	// default is 1 MiB).
	bufferLimitPB = wrapperspb.UInt32(32768)
	// upstreamHTTP2 are the HTTP/2 options of clusters to h2 and h2c
	// backends: the edge best practices' 64 KiB stream and 1 MiB
	// connection windows (Envoy's defaults are 256 MiB).
	upstreamHTTP2 = &corev3.Http2ProtocolOptions{
		InitialStreamWindowSize:     wrapperspb.UInt32(DefaultEdge.HTTP2InitialStreamWindowSize),
		InitialConnectionWindowSize: wrapperspb.UInt32(DefaultEdge.HTTP2InitialConnectionWindowSize),
	}
)

// cluster renders a backend as a cluster and, when its endpoints are IP
// addresses, the ClusterLoadAssignment served by EDS. A backend with a host
// name among its endpoints is a STRICT_DNS cluster with the endpoints
// inline, and no ClusterLoadAssignment.
func cluster(b *ir.Backend) (*clusterv3.Cluster, *endpointv3.ClusterLoadAssignment) {
	c := &clusterv3.Cluster{
		Name:                          b.Name,
		ConnectTimeout:                connectTimeoutPB,
		LbPolicy:                      clusterv3.Cluster_ROUND_ROBIN,
		PerConnectionBufferLimitBytes: bufferLimitPB,
	}
	cla := loadAssignment(b)
	dns := false
	for _, e := range b.Endpoints {
		if _, err := netip.ParseAddr(e.Address); err != nil {
			dns = true
			break
		}
	}
	if dns {
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
		c.DnsLookupFamily = clusterv3.Cluster_V4_PREFERRED
		c.TypedDnsResolverConfig = dnsResolver(b.DNSResolvers, b.DNSNoSearch)
		c.LoadAssignment = cla
		cla = nil
	} else {
		c.ClusterDiscoveryType = edsType
		c.EdsClusterConfig = edsConfig
	}
	http2 := b.Protocol == ir.AppProtocolHTTP2 || b.Protocol == ir.AppProtocolH2C
	if http2 {
		opts := &httpv3.HttpProtocolOptions{
			UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: upstreamHTTP2},
			}},
		}
		c.TypedExtensionProtocolOptions = map[string]*anypb.Any{httpProtocolOpts: toAny(opts)}
	}
	if b.TLS != nil {
		c.TransportSocket = upstreamTLS(b.TLS, http2)
	}
	if rb := b.RetryBudget; rb != nil {
		c.CircuitBreakers = retryBudget(rb)
	}
	if p := b.Policy; p != nil {
		backendPolicy(c, b, p) // backendpolicy.go
	}
	return c, cla
}

// retryBudget renders a backend's retry budget as the circuit breaker
// thresholds of its cluster's default priority (the priority of every
// route's requests): retry_budget with budget_percent and
// min_retry_concurrency, which replaces the max_retries threshold. The
// other thresholds keep Envoy's defaults (1024 connections, pending and
// active requests).
func retryBudget(rb *ir.RetryBudget) *clusterv3.CircuitBreakers {
	return &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
		Priority: corev3.RoutingPriority_DEFAULT,
		RetryBudget: &clusterv3.CircuitBreakers_Thresholds_RetryBudget{
			BudgetPercent:       &typev3.Percent{Value: float64(rb.Percent)},
			MinRetryConcurrency: wrapperspb.UInt32(rb.MinConcurrency),
		},
	}}}
}

func loadAssignment(b *ir.Backend) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: b.Name}
	if len(b.Endpoints) == 0 {
		return cla
	}
	loc := &endpointv3.LocalityLbEndpoints{LbEndpoints: make([]*endpointv3.LbEndpoint, 0, len(b.Endpoints))}
	proto := corev3.SocketAddress_TCP
	if b.Protocol == ir.AppProtocolUDP {
		proto = corev3.SocketAddress_UDP
	}
	for _, e := range b.Endpoints {
		addr := &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Protocol:      proto,
			Address:       e.Address,
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: e.Port},
		}}}
		loc.LbEndpoints = append(loc.LbEndpoints, &endpointv3.LbEndpoint{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: addr}},
		})
	}
	cla.Endpoints = []*endpointv3.LocalityLbEndpoints{loc}
	return cla
}

// upstreamTLS originates TLS to a backend and verifies its certificate
// against the SubjectAltNames, or the SNI when there are none. A client
// certificate is presented from the SDS secret named after it
// (CommonTlsContext tls_certificate_sds_secret_configs; useBackend records
// the secret), so a rotated Secret reaches Envoy without a new cluster.
func upstreamTLS(t *ir.BackendTLS, http2 bool) *corev3.TransportSocket {
	vc := &tlsv3.CertificateValidationContext{}
	if len(t.CACertificates) > 0 {
		vc.TrustedCa = &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: t.CACertificates}}
	} else {
		vc.TrustedCa = &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: wellKnownCABundle}}
	}
	names := t.SubjectAltNames
	if len(names) == 0 && t.SNI != "" {
		names = []string{t.SNI}
	}
	for _, n := range names {
		typ := tlsv3.SubjectAltNameMatcher_DNS
		if strings.Contains(n, "://") {
			typ = tlsv3.SubjectAltNameMatcher_URI
		}
		vc.MatchTypedSubjectAltNames = append(vc.MatchTypedSubjectAltNames, &tlsv3.SubjectAltNameMatcher{
			SanType: typ,
			Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: n}},
		})
	}
	ctx := &tlsv3.UpstreamTlsContext{
		Sni: t.SNI,
		CommonTlsContext: &tlsv3.CommonTlsContext{
			ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc},
		},
	}
	if c := t.ClientCertificate; c != nil {
		ctx.CommonTlsContext.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{{Name: c.Name, SdsConfig: adsSource()}}
	}
	if http2 {
		ctx.CommonTlsContext.AlpnProtocols = []string{"h2"}
	}
	return &corev3.TransportSocket{Name: transportTLS, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: toAny(ctx)}}
}

// weightedCluster renders a cluster whose ClusterLoadAssignment (served by
// EDS, or inline in a STRICT_DNS cluster when an endpoint is a host name,
// as for cluster) has one locality per backend (named after the backend's cluster) with
// the backend's weight as load_balancing_weight and its endpoints, and
// locality-weighted load balancing (Cluster.CommonLbConfig
// locality_weighted_lb_config): a new connection or UDP session picks a
// backend by weight, then an endpoint of it round robin.
func weightedCluster(name string, backends []*ir.Backend) (*clusterv3.Cluster, *endpointv3.ClusterLoadAssignment) {
	c := &clusterv3.Cluster{
		Name:                 name,
		ConnectTimeout:       connectTimeoutPB,
		LbPolicy:             clusterv3.Cluster_ROUND_ROBIN,
		ClusterDiscoveryType: edsType,
		EdsClusterConfig:     edsConfig,
		CommonLbConfig: &clusterv3.Cluster_CommonLbConfig{LocalityConfigSpecifier: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig_{
			LocalityWeightedLbConfig: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig{},
		}},
	}
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name}
	dns := false
	var resolvers []string
	noSearch := false
	for _, b := range backends {
		if len(b.DNSResolvers) > 0 && resolvers == nil {
			resolvers = b.DNSResolvers
		}
		noSearch = noSearch || b.DNSNoSearch
		loc := loadAssignment(b).GetEndpoints()
		lle := &endpointv3.LocalityLbEndpoints{
			Locality:            &corev3.Locality{Zone: b.Name},
			LoadBalancingWeight: wrapperspb.UInt32(b.Weight),
		}
		if len(loc) > 0 {
			lle.LbEndpoints = loc[0].LbEndpoints
		}
		cla.Endpoints = append(cla.Endpoints, lle)
		for _, e := range b.Endpoints {
			if _, err := netip.ParseAddr(e.Address); err != nil {
				dns = true
			}
		}
	}
	if dns {
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
		c.DnsLookupFamily = clusterv3.Cluster_V4_PREFERRED
		c.TypedDnsResolverConfig = dnsResolver(resolvers, noSearch)
		c.EdsClusterConfig = nil
		c.LoadAssignment = cla
		return c, nil
	}
	return c, cla
}

// caresResolver is the name of Envoy's c-ares DNS resolver extension.
const caresResolver = "envoy.network.dns_resolver.cares"

// dnsResolver is the DNS resolver of a STRICT_DNS cluster whose backends
// name DNS servers (ir.Backend DNSResolvers, "ip:port") or ask for
// absolute names (DNSNoSearch): Envoy's c-ares resolver asking those
// servers only (without servers, those of the host's /etc/resolv.conf),
// without the host's search domains (Cluster typed_dns_resolver_config,
// CaresDnsResolverConfig resolvers and
// dns_resolver_options.no_default_search_domain). nil (Envoy's default
// resolver, the host's /etc/resolv.conf with its search domains) for
// neither; an address that does not parse is skipped (the flags that set
// them check them).
func dnsResolver(servers []string, noSearch bool) *corev3.TypedExtensionConfig {
	var addrs []*corev3.Address
	for _, s := range servers {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			continue
		}
		addrs = append(addrs, &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Protocol:      corev3.SocketAddress_UDP,
			Address:       ap.Addr().String(),
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(ap.Port())},
		}}})
	}
	if len(addrs) == 0 && !noSearch {
		return nil
	}
	return &corev3.TypedExtensionConfig{Name: caresResolver, TypedConfig: toAny(&caresv3.CaresDnsResolverConfig{
		Resolvers:          addrs,
		DnsResolverOptions: &corev3.DnsResolverOptions{NoDefaultSearchDomain: true},
	})}
}
