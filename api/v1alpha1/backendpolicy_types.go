package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// BackendPolicyKind is the kind of BackendPolicy.
const BackendPolicyKind = "BackendPolicy"

// BackendPolicySpec is how Envoy treats the endpoints of the Service ports
// a BackendPolicy targets: health checks, circuit breakers, load
// balancing, connection settings and the PROXY protocol. Each field
// renders on the Envoy cluster of the Service port (one cluster per port,
// shared by every route that sends requests there), except the load
// balancer's hash key, which is the routes' (RouteAction hash_policy).
// docs/traffic-policy.md is the user's guide; a policy that cannot be
// honoured is Accepted=False reason Invalid and the Service is served as
// without it.
//
// +kubebuilder:validation:XValidation:rule="has(self.healthCheck) || has(self.circuitBreaker) || has(self.loadBalancer) || has(self.connection) || has(self.proxyProtocol)",message="at least one of healthCheck, circuitBreaker, loadBalancer, connection and proxyProtocol is required"
type BackendPolicySpec struct {
	// TargetRefs are the Services, in the policy's namespace, whose
	// endpoints the policy covers (GEP-713), each with an optional
	// sectionName: the name of one port of it. A policy on a port wins
	// over one on the whole Service; of two on the same target the older
	// wins and the other is Accepted=False reason Conflicted.
	//
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.group == '' && r.kind == 'Service')",message="targetRefs must be core Services"
	// +kubebuilder:validation:XValidation:rule="self.all(r1, self.exists_one(r2, r1.group == r2.group && r1.kind == r2.kind && r1.name == r2.name && (has(r1.sectionName) ? has(r2.sectionName) && r1.sectionName == r2.sectionName : !has(r2.sectionName))))",message="targetRefs must be distinct"
	TargetRefs []gwapiv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`

	// HealthCheck finds the endpoints that fail: by probing them (active)
	// or by watching the answers to real requests (passive).
	// +optional
	HealthCheck *HealthCheck `json:"healthCheck,omitempty"`

	// CircuitBreaker bounds what Envoy sends to the Service port at once
	// (Envoy Cluster circuit_breakers, thresholds of the default
	// priority); a request over a bound is answered 503 at once.
	// +optional
	CircuitBreaker *CircuitBreaker `json:"circuitBreaker,omitempty"`

	// LoadBalancer chooses how a request picks an endpoint.
	// +optional
	LoadBalancer *LoadBalancer `json:"loadBalancer,omitempty"`

	// Connection sets the TCP connections to the endpoints. HTTP/2 to the
	// backend is not a field here: the Service port's appProtocol chooses
	// it (kubernetes.io/h2c, http2, grpc), as without a policy.
	// +optional
	Connection *BackendConnection `json:"connection,omitempty"`

	// ProxyProtocol sends a PROXY protocol header, the client's address
	// and port, at the start of every connection to the endpoints.
	// +optional
	ProxyProtocol *BackendProxyProtocol `json:"proxyProtocol,omitempty"`
}

// HealthCheck is active and passive health checking; either or both.
//
// +kubebuilder:validation:XValidation:rule="has(self.active) || has(self.passive)",message="at least one of active and passive is required"
type HealthCheck struct {
	// Active probes every endpoint at an interval (Envoy Cluster
	// health_checks, config.core.v3.HealthCheck): an endpoint that fails
	// unhealthyThreshold probes in a row gets no requests until it passes
	// healthyThreshold in a row.
	// +optional
	Active *ActiveHealthCheck `json:"active,omitempty"`

	// Passive ejects an endpoint whose answers fail in a row (outlier
	// detection, Envoy Cluster outlier_detection), for baseEjectionTime
	// times the number of its ejections so far.
	// +optional
	Passive *PassiveHealthCheck `json:"passive,omitempty"`
}

// ActiveHealthCheckType is the kind of probe.
//
// +kubebuilder:validation:Enum=HTTP;TCP;GRPC
type ActiveHealthCheckType string

// The probe types.
const (
	ActiveHealthCheckHTTP ActiveHealthCheckType = "HTTP"
	ActiveHealthCheckTCP  ActiveHealthCheckType = "TCP"
	ActiveHealthCheckGRPC ActiveHealthCheckType = "GRPC"
)

// ActiveHealthCheck probes the endpoints.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'HTTP' ? has(self.http) : !has(self.http)",message="http is required with type HTTP, and only then"
// +kubebuilder:validation:XValidation:rule="self.type == 'GRPC' || !has(self.grpc)",message="grpc is allowed with type GRPC only"
type ActiveHealthCheck struct {
	// Type is the probe: HTTP (a GET whose status must be expected), TCP
	// (a connection must open), GRPC (grpc.health.v1.Health/Check must
	// answer SERVING).
	Type ActiveHealthCheckType `json:"type"`

	// Interval is the time between two probes of an endpoint
	// (HealthCheck interval). Default: 5s; at least 100ms, at most 1h.
	// +optional
	Interval *gwapiv1.Duration `json:"interval,omitempty"`

	// Timeout is how long a probe may take before it counts as failed
	// (HealthCheck timeout). Default: 1s; at least 10ms, at most 1h.
	// +optional
	Timeout *gwapiv1.Duration `json:"timeout,omitempty"`

	// UnhealthyThreshold is the number of failed probes in a row that
	// make an endpoint unhealthy (HealthCheck unhealthy_threshold).
	// Default: 3.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	UnhealthyThreshold *int32 `json:"unhealthyThreshold,omitempty"`

	// HealthyThreshold is the number of passed probes in a row that make
	// an unhealthy endpoint healthy again (HealthCheck
	// healthy_threshold). Default: 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	HealthyThreshold *int32 `json:"healthyThreshold,omitempty"`

	// HTTP is the HTTP probe (type HTTP).
	// +optional
	HTTP *HTTPHealthCheck `json:"http,omitempty"`

	// GRPC is the gRPC probe's settings (type GRPC).
	// +optional
	GRPC *GRPCHealthCheck `json:"grpc,omitempty"`
}

// HTTPHealthCheck is a GET of path (HealthCheck.HttpHealthCheck).
type HTTPHealthCheck struct {
	// Path is the probe's path (path).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x20\x7f?#]*$`
	Path string `json:"path"`

	// Host is the probe's Host header (host). Default: the Service's
	// name, "<name>.<namespace>.svc".
	// +optional
	Host *gwapiv1.PreciseHostname `json:"host,omitempty"`

	// ExpectedStatuses are the HTTP statuses that pass (expected_statuses).
	// Default: 200 only.
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=100
	// +kubebuilder:validation:items:Maximum=599
	// +optional
	ExpectedStatuses []int32 `json:"expectedStatuses,omitempty"`
}

// GRPCHealthCheck is a grpc.health.v1.Health/Check call
// (HealthCheck.GrpcHealthCheck).
type GRPCHealthCheck struct {
	// Service is the service name asked about (service_name). Default:
	// "" (the server's overall health).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Service *string `json:"service,omitempty"`
}

// PassiveHealthCheck is Envoy's outlier detection. Connection failures
// and timeouts count as 5xx and gateway errors (they are answered 503).
type PassiveHealthCheck struct {
	// Consecutive5xxErrors is the number of 5xx answers in a row that
	// eject an endpoint (consecutive_5xx). Default: 5.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Consecutive5xxErrors *int32 `json:"consecutive5xxErrors,omitempty"`

	// ConsecutiveGatewayErrors, when set, is the number of 502, 503 and
	// 504 answers in a row that eject an endpoint
	// (consecutive_gateway_failure, enforced). Default: not enforced.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	ConsecutiveGatewayErrors *int32 `json:"consecutiveGatewayErrors,omitempty"`

	// Interval is the time between two sweeps of the ejection analysis,
	// which also ends ejections whose time has passed (interval).
	// Default: 10s; at least 100ms, at most 1h.
	// +optional
	Interval *gwapiv1.Duration `json:"interval,omitempty"`

	// BaseEjectionTime is how long an endpoint stays ejected the first
	// time, multiplied by the number of times it was ejected
	// (base_ejection_time). Default: 30s; at least 100ms, at most 1h.
	// +optional
	BaseEjectionTime *gwapiv1.Duration `json:"baseEjectionTime,omitempty"`

	// MaxEjectionPercent is the largest share of the endpoints ejected at
	// once (max_ejection_percent); one endpoint may always be ejected.
	// Default: 10.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxEjectionPercent *int32 `json:"maxEjectionPercent,omitempty"`
}

// CircuitBreaker is the thresholds of Envoy's circuit breaker for the
// default priority (CircuitBreakers.Thresholds). An unset field keeps
// Envoy's default, 1024 (3 for maxRetries). An XBackendTrafficPolicy's
// retry budget on the same Service replaces maxRetries.
type CircuitBreaker struct {
	// MaxConnections bounds the connections to all endpoints
	// (max_connections).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	MaxConnections *int32 `json:"maxConnections,omitempty"`

	// MaxPendingRequests bounds the requests waiting for a connection
	// (max_pending_requests).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	MaxPendingRequests *int32 `json:"maxPendingRequests,omitempty"`

	// MaxRequests bounds the requests in flight (max_requests).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	MaxRequests *int32 `json:"maxRequests,omitempty"`

	// MaxRetries bounds the retries in flight (max_retries).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	MaxRetries *int32 `json:"maxRetries,omitempty"`
}

// LoadBalancerType is an Envoy load balancing policy (Cluster lb_policy).
//
// +kubebuilder:validation:Enum=RoundRobin;LeastRequest;Random;RingHash;Maglev
type LoadBalancerType string

// The load balancer types.
const (
	LoadBalancerRoundRobin   LoadBalancerType = "RoundRobin"
	LoadBalancerLeastRequest LoadBalancerType = "LeastRequest"
	LoadBalancerRandom       LoadBalancerType = "Random"
	LoadBalancerRingHash     LoadBalancerType = "RingHash"
	LoadBalancerMaglev       LoadBalancerType = "Maglev"
)

// LoadBalancer is how a request picks an endpoint.
//
// +kubebuilder:validation:XValidation:rule="self.type in ['RingHash', 'Maglev'] ? has(self.hashKey) : !has(self.hashKey)",message="hashKey is required with RingHash and Maglev, and only then"
// +kubebuilder:validation:XValidation:rule="self.type in ['RoundRobin', 'LeastRequest'] || !has(self.slowStart)",message="slowStart is allowed with RoundRobin and LeastRequest only"
type LoadBalancer struct {
	// Type is the policy: RoundRobin (the default without a policy),
	// LeastRequest (the fewer of two random endpoints' active requests),
	// Random, RingHash and Maglev (consistent hashing of hashKey: one key
	// goes to one endpoint while the endpoints stay the same).
	Type LoadBalancerType `json:"type"`

	// HashKey is what RingHash and Maglev hash.
	// +optional
	HashKey *HashKey `json:"hashKey,omitempty"`

	// SlowStart ramps a new endpoint's share of requests up over a window
	// (RoundRobin and LeastRequest: their slow_start_config).
	// +optional
	SlowStart *SlowStart `json:"slowStart,omitempty"`
}

// HashKeyType is what a request's hash is computed from.
//
// +kubebuilder:validation:Enum=Header;Cookie;ClientIP
type HashKeyType string

// The hash key types.
const (
	HashKeyHeader   HashKeyType = "Header"
	HashKeyCookie   HashKeyType = "Cookie"
	HashKeyClientIP HashKeyType = "ClientIP"
)

// HashKey is the key of a hash load balancer: Envoy's
// RouteAction.hash_policy on every route that sends requests to the
// Service port. A request without the key (no such header) gets a random
// endpoint.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'Header' ? has(self.header) : !has(self.header)",message="header is required with type Header, and only then"
// +kubebuilder:validation:XValidation:rule="self.type == 'Cookie' ? has(self.cookie) : !has(self.cookie)",message="cookie is required with type Cookie, and only then"
type HashKey struct {
	// Type is Header (a request header's value), Cookie (a cookie's value;
	// Envoy sets the cookie when the request has none) or ClientIP (the
	// client's address).
	Type HashKeyType `json:"type"`

	// Header names the header (type Header).
	// +optional
	Header *HashHeader `json:"header,omitempty"`

	// Cookie is the cookie (type Cookie).
	// +optional
	Cookie *HashCookie `json:"cookie,omitempty"`
}

// HashHeader is a request header whose value is hashed.
type HashHeader struct {
	// Name is the header's name.
	Name gwapiv1.HTTPHeaderName `json:"name"`
}

// HashCookie is a cookie whose value is hashed; Envoy generates it (from
// the client's address) and sets it in the answer when a request lacks
// it.
type HashCookie struct {
	// Name is the cookie's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[!#$%&'*+\-.^_|~0-9A-Za-z]+$`
	Name string `json:"name"`

	// TTL is the generated cookie's Max-Age. Default: none, a session
	// cookie (kept until the browser closes). At most 1 year (8760h).
	// +optional
	TTL *gwapiv1.Duration `json:"ttl,omitempty"`

	// Path is the generated cookie's Path attribute. Default: none.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f;]*$`
	// +optional
	Path *string `json:"path,omitempty"`
}

// SlowStart is Envoy's slow start (SlowStartConfig): an endpoint new to
// the cluster (or healthy again) gets a share of requests that grows
// with its age over the window, weight * max(minWeightPercent,
// (age/window)^(1/aggression)).
type SlowStart struct {
	// Window is the ramp's length (slow_start_window); at least 1s, at
	// most 1h.
	Window gwapiv1.Duration `json:"window"`

	// Aggression shapes the ramp, a decimal above 0 and at most 100
	// (aggression): 1 is linear, above 1 faster at first. Default: "1".
	// +kubebuilder:validation:Pattern=`^[0-9]{1,3}(\.[0-9]{1,3})?$`
	// +optional
	Aggression *string `json:"aggression,omitempty"`

	// MinWeightPercent is the least share of its weight a new endpoint
	// gets (min_weight_percent). Default: 10.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MinWeightPercent *int32 `json:"minWeightPercent,omitempty"`
}

// BackendConnection is the connections to the endpoints.
type BackendConnection struct {
	// ConnectTimeout bounds the opening of a connection (TCP and TLS)
	// to an endpoint (Cluster connect_timeout). Default: 10s; at least
	// 10ms, at most 1h.
	// +optional
	ConnectTimeout *gwapiv1.Duration `json:"connectTimeout,omitempty"`

	// TCPKeepalive turns on TCP keep-alive probes on the connections
	// (Cluster upstream_connection_options.tcp_keepalive).
	// +optional
	TCPKeepalive *TCPKeepalive `json:"tcpKeepalive,omitempty"`

	// BufferLimitBytes bounds what Envoy buffers per connection
	// (Cluster per_connection_buffer_limit_bytes). Default: 32768 (32
	// KiB); at least 1024, at most 16 MiB.
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=16777216
	// +optional
	BufferLimitBytes *int32 `json:"bufferLimitBytes,omitempty"`
}

// TCPKeepalive is the kernel's TCP keep-alive on the connections
// (core.v3.TcpKeepalive); an unset field keeps the system's default
// (Linux: 9 probes, 7200s idle, 75s interval). Durations are whole
// seconds.
type TCPKeepalive struct {
	// Probes is the number of unanswered probes after which the
	// connection is dropped (keepalive_probes).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Probes *int32 `json:"probes,omitempty"`

	// IdleTime is how long a connection is idle before the first probe
	// (keepalive_time). 1s to 24h, whole seconds.
	// +optional
	IdleTime *gwapiv1.Duration `json:"idleTime,omitempty"`

	// Interval is the time between two probes (keepalive_interval). 1s to
	// 1h, whole seconds.
	// +optional
	Interval *gwapiv1.Duration `json:"interval,omitempty"`
}

// ProxyProtocolVersion is a version of the PROXY protocol.
//
// +kubebuilder:validation:Enum=V1;V2
type ProxyProtocolVersion string

// The PROXY protocol versions.
const (
	ProxyProtocolV1 ProxyProtocolVersion = "V1"
	ProxyProtocolV2 ProxyProtocolVersion = "V2"
)

// BackendProxyProtocol sends the PROXY protocol (HAProxy's, versions 1
// and 2) to the endpoints (the upstream_proxy_protocol transport socket,
// around the TLS a BackendTLSPolicy originates, or around plaintext).
type BackendProxyProtocol struct {
	// Version is V1 (text) or V2 (binary).
	Version ProxyProtocolVersion `json:"version"`
}

// BackendPolicy sets health checks, circuit breakers, load balancing,
// connection settings and the PROXY protocol for the Services, or Service
// ports, it targets (docs/traffic-policy.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=gateway-api;xds-controller,shortName=bepol
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BackendPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BackendPolicySpec `json:"spec"`
	// Status is one entry per Gateway whose routes reach a targeted
	// Service port (GEP-713 PolicyAncestorStatus): Accepted.
	// +optional
	Status gwapiv1.PolicyStatus `json:"status,omitempty"`
}

// BackendPolicyList is a list of BackendPolicies.
//
// +kubebuilder:object:root=true
type BackendPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackendPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BackendPolicy{}, &BackendPolicyList{})
}
