package xdstranslator

// A BackendPolicy's effect (ir.Backend Policy, pkg/ir/backend.go) on the
// Envoy cluster of its backend (backendPolicy, called by cluster) and on
// the routes that send requests there (hashPolicy, called by routeAction).

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	proxyprotocolv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/proxy_protocol/v3"
	rawbufferv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Envoy extension names of the transport sockets a PROXY protocol header
// is sent through.
const (
	transportProxyProtocol = "envoy.transport_sockets.upstream_proxy_protocol"
	transportRawBuffer     = "envoy.transport_sockets.raw_buffer"
)

// lbPolicies maps the IR's load balancers to Cluster lb_policy.
var lbPolicies = map[ir.LoadBalancerType]clusterv3.Cluster_LbPolicy{
	ir.LoadBalancerRoundRobin:   clusterv3.Cluster_ROUND_ROBIN,
	ir.LoadBalancerLeastRequest: clusterv3.Cluster_LEAST_REQUEST,
	ir.LoadBalancerRandom:       clusterv3.Cluster_RANDOM,
	ir.LoadBalancerRingHash:     clusterv3.Cluster_RING_HASH,
	ir.LoadBalancerMaglev:       clusterv3.Cluster_MAGLEV,
}

// backendPolicy renders p on c, the cluster of backend b (whose transport
// socket, TLS or none, cluster has set already). A gRPC probe needs a
// cluster that speaks HTTP/2 (Envoy refuses it on another: "cluster must
// support HTTP/2 for gRPC healthchecking"): on a backend whose protocol
// is HTTP/1.1 or TCP, the cluster gets no active health check.
func backendPolicy(c *clusterv3.Cluster, b *ir.Backend, p *ir.BackendPolicy) {
	http2 := b.Protocol == ir.AppProtocolHTTP2 || b.Protocol == ir.AppProtocolH2C
	if hc := p.HealthCheck; hc != nil && (hc.Type != ir.HealthCheckGRPC || http2) {
		c.HealthChecks = []*corev3.HealthCheck{healthCheck(hc, http2)}
	}
	if o := p.Outlier; o != nil {
		od := &clusterv3.OutlierDetection{
			Consecutive_5Xx:          wrapperspb.UInt32(o.Consecutive5xx),
			EnforcingConsecutive_5Xx: wrapperspb.UInt32(100),
			Interval:                 durationpb.New(o.Interval.Duration),
			BaseEjectionTime:         durationpb.New(o.BaseEjectionTime.Duration),
			MaxEjectionPercent:       wrapperspb.UInt32(o.MaxEjectionPercent),
			// The API's promise that one endpoint may always be ejected.
			// Without always_eject_one_host (default false) Envoy 1.40
			// ejected neither of two endpoints at the default 10 percent:
			// the failover test lost as many requests as without a policy.
			AlwaysEjectOneHost: wrapperspb.Bool(true),
		}
		if o.ConsecutiveGatewayErrors > 0 {
			od.ConsecutiveGatewayFailure = wrapperspb.UInt32(o.ConsecutiveGatewayErrors)
			od.EnforcingConsecutiveGatewayFailure = wrapperspb.UInt32(100)
		}
		c.OutlierDetection = od
	}
	if cb := p.CircuitBreaker; cb != nil {
		if c.CircuitBreakers == nil {
			c.CircuitBreakers = &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{Priority: corev3.RoutingPriority_DEFAULT}}}
		}
		th := c.CircuitBreakers.Thresholds[0] // the default priority's (retryBudget's too)
		th.MaxConnections = optUInt32(cb.MaxConnections)
		th.MaxPendingRequests = optUInt32(cb.MaxPendingRequests)
		th.MaxRequests = optUInt32(cb.MaxRequests)
		if cb.MaxRetries != nil {
			th.MaxRetries = wrapperspb.UInt32(*cb.MaxRetries)
		}
	}
	if lb := p.LoadBalancer; lb != nil {
		c.LbPolicy = lbPolicies[lb.Type]
		if ss := lb.SlowStart; ss != nil {
			cfg := &clusterv3.Cluster_SlowStartConfig{
				SlowStartWindow:  durationpb.New(ss.Window.Duration),
				Aggression:       &corev3.RuntimeDouble{DefaultValue: ss.Aggression, RuntimeKey: "upstream.slow_start.aggression"},
				MinWeightPercent: &typev3.Percent{Value: float64(ss.MinWeightPercent)},
			}
			if lb.Type == ir.LoadBalancerLeastRequest {
				c.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{SlowStartConfig: cfg}}
			} else {
				c.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: cfg}}
			}
		}
	}
	if d := p.ConnectTimeout; d != nil {
		c.ConnectTimeout = durationpb.New(d.Duration)
	}
	if ka := p.TCPKeepalive; ka != nil {
		c.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{TcpKeepalive: &corev3.TcpKeepalive{
			KeepaliveProbes:   optUInt32(ka.Probes),
			KeepaliveTime:     optUInt32(ka.IdleTimeSeconds),
			KeepaliveInterval: optUInt32(ka.IntervalSeconds),
		}}
	}
	if p.BufferLimitBytes > 0 {
		c.PerConnectionBufferLimitBytes = wrapperspb.UInt32(p.BufferLimitBytes)
	}
	if p.ProxyProtocol > 0 {
		c.TransportSocket = proxyProtocol(p.ProxyProtocol, c.TransportSocket)
	}
}

// optUInt32 is v as a protobuf wrapper, nil for 0 (Envoy's default).
func optUInt32(v uint32) *wrapperspb.UInt32Value {
	if v == 0 {
		return nil
	}
	return wrapperspb.UInt32(v)
}

// healthCheck renders an active health check. The probes run at the
// interval whether or not the cluster has had traffic (Envoy's
// no_traffic_interval, 60s by default, would otherwise space the probes
// of a cluster that had none when it was last probed: a replica killed
// then would be found a minute later). An HTTP probe of an HTTP/2
// backend speaks HTTP/2 (codec_client_type), as the cluster does.
func healthCheck(hc *ir.HealthCheck, http2 bool) *corev3.HealthCheck {
	interval := durationpb.New(hc.Interval.Duration)
	out := &corev3.HealthCheck{
		Timeout:            durationpb.New(hc.Timeout.Duration),
		Interval:           interval,
		NoTrafficInterval:  interval,
		UnhealthyThreshold: wrapperspb.UInt32(hc.UnhealthyThreshold),
		HealthyThreshold:   wrapperspb.UInt32(hc.HealthyThreshold),
	}
	switch hc.Type {
	case ir.HealthCheckHTTP:
		h := &corev3.HealthCheck_HttpHealthCheck{Host: hc.Host, Path: hc.Path}
		for _, s := range hc.ExpectedStatuses {
			h.ExpectedStatuses = append(h.ExpectedStatuses, &typev3.Int64Range{Start: int64(s), End: int64(s) + 1})
		}
		if http2 {
			h.CodecClientType = typev3.CodecClientType_HTTP2
		}
		out.HealthChecker = &corev3.HealthCheck_HttpHealthCheck_{HttpHealthCheck: h}
	case ir.HealthCheckGRPC:
		out.HealthChecker = &corev3.HealthCheck_GrpcHealthCheck_{GrpcHealthCheck: &corev3.HealthCheck_GrpcHealthCheck{ServiceName: hc.GRPCService}}
	default: // TCP: a connection that opens passes
		out.HealthChecker = &corev3.HealthCheck_TcpHealthCheck_{TcpHealthCheck: &corev3.HealthCheck_TcpHealthCheck{}}
	}
	return out
}

// proxyProtocol wraps inner (TLS, or nil: plaintext) in the transport
// socket that sends a PROXY protocol header of version (1 or 2) first
// (transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport).
func proxyProtocol(version uint32, inner *corev3.TransportSocket) *corev3.TransportSocket {
	if inner == nil {
		inner = &corev3.TransportSocket{Name: transportRawBuffer, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: toAny(&rawbufferv3.RawBuffer{})}}
	}
	v := corev3.ProxyProtocolConfig_V1
	if version == 2 {
		v = corev3.ProxyProtocolConfig_V2
	}
	return &corev3.TransportSocket{Name: transportProxyProtocol, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: toAny(&proxyprotocolv3.ProxyProtocolUpstreamTransport{
		Config:          &corev3.ProxyProtocolConfig{Version: v},
		TransportSocket: inner,
	})}}
}

// hashPolicy is the hash_policy of a route whose requests go to backends
// (those with a weight): the hash key of their BackendPolicies' RingHash
// or Maglev load balancer. Backends without a hash key ignore the hash,
// so they do not count; when two backends have different keys, the route
// gets none (Envoy then hashes nothing and each hash load balancer picks
// an endpoint at random), since one route has one hash.
func hashPolicy(backends []*ir.Backend) []*routev3.RouteAction_HashPolicy {
	var key *ir.HashKey
	for _, b := range backends {
		if b.Invalid || b.Policy == nil || b.Policy.Hash == nil {
			continue
		}
		if h := b.Policy.Hash; key == nil {
			key = h
		} else if !sameHashKey(key, h) {
			return nil
		}
	}
	if key == nil {
		return nil
	}
	hp := &routev3.RouteAction_HashPolicy{}
	switch key.Type {
	case ir.HashHeader:
		hp.PolicySpecifier = &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{HeaderName: key.Name}}
	case ir.HashCookie:
		// A ttl, 0 for a session cookie, makes Envoy set the cookie when
		// the request lacks it.
		// Without one (CookieNotSet), Envoy hashes the cookie when the
		// request has it and nothing otherwise.
		ck := &routev3.RouteAction_HashPolicy_Cookie{Name: key.Name, Path: key.CookiePath, Ttl: durationpb.New(0)}
		switch {
		case key.CookieNotSet:
			ck.Path, ck.Ttl = "", nil
		case key.CookieTTL != nil:
			ck.Ttl = durationpb.New(key.CookieTTL.Duration)
		}
		hp.PolicySpecifier = &routev3.RouteAction_HashPolicy_Cookie_{Cookie: ck}
	default:
		hp.PolicySpecifier = &routev3.RouteAction_HashPolicy_ConnectionProperties_{ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: true}}
	}
	return []*routev3.RouteAction_HashPolicy{hp}
}

// sameHashKey says whether two hash keys hash the same thing the same way.
func sameHashKey(a, b *ir.HashKey) bool {
	ttl := func(k *ir.HashKey) int64 {
		if k.CookieTTL == nil {
			return 0
		}
		return int64(k.CookieTTL.Duration)
	}
	return a.Type == b.Type && a.Name == b.Name && a.CookiePath == b.CookiePath && ttl(a) == ttl(b) && a.CookieNotSet == b.CookieNotSet
}
