package ir

// What a BackendPolicy sets on a backend (Backend.Policy): the Envoy
// cluster of a Service port renders every field but Hash, which the routes
// that send requests to the backend render (RouteAction hash_policy).
// Every value is explicit: pkg/gatewayapi fills the defaults in.

import (
	"fmt"
	"strings"
)

// BackendPolicy is the effect of a BackendPolicy on a backend; nil fields
// render nothing (Envoy's or our defaults).
type BackendPolicy struct {
	// HealthCheck is the active health check (Cluster health_checks).
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`
	// Outlier is the passive health check (Cluster outlier_detection).
	Outlier *OutlierDetection `json:"outlier,omitempty"`
	// CircuitBreaker holds the default priority's thresholds (Cluster
	// circuit_breakers).
	CircuitBreaker *CircuitBreaker `json:"circuitBreaker,omitempty"`
	// LoadBalancer is the cluster's lb_policy and its options; nil is
	// round robin.
	LoadBalancer *LoadBalancer `json:"loadBalancer,omitempty"`
	// Hash is the hash key of a RingHash or Maglev load balancer, which
	// the routes render.
	Hash *HashKey `json:"hash,omitempty"`
	// ConnectTimeout replaces the cluster's connect_timeout (10s).
	ConnectTimeout *Duration `json:"connectTimeout,omitempty"`
	// TCPKeepalive sets upstream_connection_options.tcp_keepalive.
	TCPKeepalive *TCPKeepalive `json:"tcpKeepalive,omitempty"`
	// BufferLimitBytes, when above 0, replaces the cluster's
	// per_connection_buffer_limit_bytes (32768).
	BufferLimitBytes uint32 `json:"bufferLimitBytes,omitempty"`
	// ProxyProtocol, when 1 or 2, is the version of the PROXY protocol
	// header sent at the start of every connection (the
	// upstream_proxy_protocol transport socket around the raw or TLS one).
	ProxyProtocol uint32 `json:"proxyProtocol,omitempty"`
}

// HealthCheckType is the kind of active probe.
type HealthCheckType string

// The active probe types.
const (
	HealthCheckHTTP HealthCheckType = "HTTP"
	HealthCheckTCP  HealthCheckType = "TCP"
	HealthCheckGRPC HealthCheckType = "GRPC"
)

// HealthCheck is an active health check (config.core.v3.HealthCheck).
type HealthCheck struct {
	Type HealthCheckType `json:"type"`
	// Interval and Timeout are the probe's period and deadline (interval,
	// timeout), both above 0.
	Interval Duration `json:"interval"`
	Timeout  Duration `json:"timeout"`
	// UnhealthyThreshold and HealthyThreshold are probes in a row (at
	// least 1).
	UnhealthyThreshold uint32 `json:"unhealthyThreshold"`
	HealthyThreshold   uint32 `json:"healthyThreshold"`
	// Path, Host and ExpectedStatuses are the HTTP probe's (Host empty:
	// the cluster's name, which pkg/gatewayapi never leaves: it fills in
	// the Service's); ExpectedStatuses are codes 100-599, at least one.
	Path             string   `json:"path,omitempty"`
	Host             string   `json:"host,omitempty"`
	ExpectedStatuses []uint32 `json:"expectedStatuses,omitempty"`
	// GRPCService is the gRPC probe's service_name.
	GRPCService string `json:"grpcService,omitempty"`
}

// OutlierDetection is Envoy's passive health check
// (cluster.v3.OutlierDetection).
type OutlierDetection struct {
	// Consecutive5xx ejects after that many 5xx in a row (enforced).
	Consecutive5xx uint32 `json:"consecutive5xx"`
	// ConsecutiveGatewayErrors, when above 0, ejects after that many
	// 502/503/504 in a row (enforced); 0 leaves it off.
	ConsecutiveGatewayErrors uint32 `json:"consecutiveGatewayErrors,omitempty"`
	// Interval, BaseEjectionTime: above 0.
	Interval         Duration `json:"interval"`
	BaseEjectionTime Duration `json:"baseEjectionTime"`
	// MaxEjectionPercent is 0 to 100.
	MaxEjectionPercent uint32 `json:"maxEjectionPercent"`
}

// CircuitBreaker holds thresholds of the default priority; 0 (nil for
// MaxRetries, where 0 refuses every retry) keeps Envoy's default.
type CircuitBreaker struct {
	MaxConnections     uint32  `json:"maxConnections,omitempty"`
	MaxPendingRequests uint32  `json:"maxPendingRequests,omitempty"`
	MaxRequests        uint32  `json:"maxRequests,omitempty"`
	MaxRetries         *uint32 `json:"maxRetries,omitempty"`
}

// LoadBalancerType is a cluster's lb_policy.
type LoadBalancerType string

// The load balancers.
const (
	LoadBalancerRoundRobin   LoadBalancerType = "RoundRobin"
	LoadBalancerLeastRequest LoadBalancerType = "LeastRequest"
	LoadBalancerRandom       LoadBalancerType = "Random"
	LoadBalancerRingHash     LoadBalancerType = "RingHash"
	LoadBalancerMaglev       LoadBalancerType = "Maglev"
)

// LoadBalancer is a cluster's load balancing policy.
type LoadBalancer struct {
	Type LoadBalancerType `json:"type"`
	// SlowStart is RoundRobin's or LeastRequest's slow_start_config.
	SlowStart *SlowStart `json:"slowStart,omitempty"`
}

// SlowStart is Envoy's SlowStartConfig.
type SlowStart struct {
	// Window is slow_start_window, above 0.
	Window Duration `json:"window"`
	// Aggression is aggression, above 0 (1 is linear).
	Aggression float64 `json:"aggression"`
	// MinWeightPercent is min_weight_percent, 1 to 100.
	MinWeightPercent uint32 `json:"minWeightPercent"`
}

// HashKeyType is what a hash load balancer hashes.
type HashKeyType string

// The hash keys.
const (
	HashHeader   HashKeyType = "Header"
	HashCookie   HashKeyType = "Cookie"
	HashClientIP HashKeyType = "ClientIP"
)

// HashKey is one RouteAction.HashPolicy.
type HashKey struct {
	Type HashKeyType `json:"type"`
	// Name is the header's (lower case) or the cookie's name.
	Name string `json:"name,omitempty"`
	// CookieTTL is the generated cookie's Max-Age; nil or 0 is a session
	// cookie. CookiePath is its Path, "" for none.
	CookieTTL  *Duration `json:"cookieTTL,omitempty"`
	CookiePath string    `json:"cookiePath,omitempty"`
	// CookieNotSet: the cookie is hashed when the request has it, and
	// never set (Envoy's hash_policy cookie without ttl; an Ingress's
	// upstream-hash-by $cookie_<name>, whose cookie is the
	// application's). CookieTTL and CookiePath are then unused.
	CookieNotSet bool `json:"cookieNotSet,omitempty"`
}

// TCPKeepalive is core.v3.TcpKeepalive; 0 keeps the system's default.
type TCPKeepalive struct {
	Probes          uint32 `json:"probes,omitempty"`
	IdleTimeSeconds uint32 `json:"idleTimeSeconds,omitempty"`
	IntervalSeconds uint32 `json:"intervalSeconds,omitempty"`
}

// problems lists what of p Envoy would refuse or misread (IR.Validate):
// durations that are not above 0, thresholds below 1, statuses out of
// 100-599, unknown types, a hash key without its name, percents over 100,
// a PROXY protocol version other than 1 or 2.
func (p *BackendPolicy) problems() []string {
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if hc := p.HealthCheck; hc != nil {
		switch hc.Type {
		case HealthCheckHTTP:
			if !strings.HasPrefix(hc.Path, "/") {
				bad("health check path %q is not absolute", hc.Path)
			}
			for _, s := range hc.ExpectedStatuses {
				if s < 100 || s > 599 {
					bad("health check status %d is not 100-599", s)
				}
			}
		case HealthCheckTCP, HealthCheckGRPC:
		default:
			bad("health check type %q is unknown", hc.Type)
		}
		if hc.Interval.Duration <= 0 || hc.Timeout.Duration <= 0 || hc.UnhealthyThreshold < 1 || hc.HealthyThreshold < 1 {
			bad("health check interval, timeout and thresholds must be above 0")
		}
	}
	if o := p.Outlier; o != nil && (o.Consecutive5xx < 1 || o.Interval.Duration <= 0 || o.BaseEjectionTime.Duration <= 0 || o.MaxEjectionPercent > 100) {
		bad("outlier detection needs consecutive 5xx, interval and ejection time above 0, and an ejection percent of 100 at most")
	}
	if lb := p.LoadBalancer; lb != nil {
		switch lb.Type {
		case LoadBalancerRoundRobin, LoadBalancerLeastRequest, LoadBalancerRandom, LoadBalancerRingHash, LoadBalancerMaglev:
		default:
			bad("load balancer %q is unknown", lb.Type)
		}
		if ss := lb.SlowStart; ss != nil && (ss.Window.Duration <= 0 || ss.Aggression <= 0 || ss.MinWeightPercent < 1 || ss.MinWeightPercent > 100) {
			bad("slow start needs a window and an aggression above 0, and a min weight percent of 1-100")
		}
	}
	if h := p.Hash; h != nil {
		switch h.Type {
		case HashHeader, HashCookie:
			if h.Name == "" {
				bad("hash key %s needs a name", h.Type)
			}
		case HashClientIP:
		default:
			bad("hash key %q is unknown", h.Type)
		}
	}
	if d := p.ConnectTimeout; d != nil && d.Duration <= 0 {
		bad("connect timeout %s is not above 0", d.Duration)
	}
	if p.ProxyProtocol > 2 {
		bad("PROXY protocol version %d is not 1 or 2", p.ProxyProtocol)
	}
	return out
}
