package gatewayapi

// BackendPolicy (gateway.xds-controller.dev/v1alpha1, ours): health
// checks, circuit breakers, load balancing, connection settings and the
// PROXY protocol for the Service ports it targets. Its attachment,
// precedence (a port over its Service), conflicts and status.ancestors
// (one entry per Gateway of ours whose routes reach a targeted port) are
// every policy kind's (policy.go); here are its validation, what it
// renders (the IR backend's Policy, ir.BackendPolicy: pkg/xdstranslator
// renders it on the Service port's cluster, and its hash key on the
// routes) and its registration. docs/traffic-policy.md is the user's view.
//
// A policy that cannot be honoured (a value out of the schema's bounds,
// which only a standalone file can hold, or a combination the CEL rules
// refuse) is Accepted=False reason Invalid, every problem in the message,
// and renders nothing: its Service is served as without it.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// KindBackendPolicy is the registry name of BackendPolicy.
var KindBackendPolicy = resources.BackendPolicyKind.Name()

// backendPolicyKind registers BackendPolicy (policy.go): it targets
// Services and their ports, and renders the backends of every route kind
// whose Service port becomes a cluster of its own: HTTPRoutes,
// GRPCRoutes, Ingresses, TLSRoutes and TCPRoutes (a TCPRoute or TLSRoute
// rule with several backends has one cluster for them all, which no
// policy renders: weightedCluster). The effect of a policy is an
// *ir.BackendPolicy, shared by every backend of the port, never modified.
var backendPolicyKind = registerPolicyKind(resources.BackendPolicyKind, policyKindSpec[*v1alpha1.BackendPolicy]{
	targets: []targetKind{targetService},
	targetRefs: func(p *v1alpha1.BackendPolicy) []gwapiv1.LocalPolicyTargetReferenceWithSectionName {
		return p.Spec.TargetRefs
	},
	status:        func(p *v1alpha1.BackendPolicy) *gwapiv1.PolicyStatus { return &p.Status },
	validate:      func(_ *translator, p *v1alpha1.BackendPolicy, st *policyState) { backendPolicy(p, st) },
	backendRoutes: []string{KindHTTPRoute, KindGRPCRoute, KindIngress, KindTLSRoute, KindTCPRoute},
	backend:       applyBackendPolicy,
})

// applyBackendPolicy renders the policy of a Service port on b. A policy
// that is not accepted renders nothing. An HTTP probe without a host
// gets the Service's name, "<name>.<namespace>.svc", as its Host (Envoy's
// default, the cluster's name, has "/" in it: a server that checks its
// Host answers 400 to every probe).
func applyBackendPolicy(st *policyState, _ string, b *ir.Backend) *ir.Backend {
	e, _ := st.effect.(*ir.BackendPolicy)
	if e == nil {
		return b
	}
	if hc := e.HealthCheck; hc != nil && hc.Type == ir.HealthCheckHTTP && hc.Host == "" {
		if parts := strings.Split(b.Name, "/"); len(parts) >= 3 && parts[0] == "service" {
			probe := *hc
			probe.Host = parts[2] + "." + parts[1] + ".svc"
			withHost := *e
			withHost.HealthCheck = &probe
			e = &withHost
		}
	}
	b.Policy = e
	return b
}

// The defaults of the policy's fields (as its docs say) and the bounds of
// its durations.
const (
	defaultProbeInterval      = 5 * time.Second
	defaultProbeTimeout       = time.Second
	defaultUnhealthyThreshold = 3
	defaultHealthyThreshold   = 1
	defaultConsecutive5xx     = 5
	defaultOutlierInterval    = 10 * time.Second
	defaultBaseEjectionTime   = 30 * time.Second
	defaultMaxEjectionPercent = 10
	defaultMinWeightPercent   = 10
	maxPolicyDuration         = time.Hour
	maxCookieTTL              = 8760 * time.Hour
	maxKeepaliveIdle          = 24 * time.Hour
	maxThreshold              = 1000
	maxCircuitBreaker         = 1000000
)

// policyChecker collects a policy's problems, each prefixed by the field
// it is about.
type policyChecker struct{ problems []string }

func (c *policyChecker) bad(format string, a ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, a...))
}

// duration is field's value v (def when nil), a GEP-2257 duration between
// least and most.
func (c *policyChecker) duration(field string, v *gwapiv1.Duration, def, least, most time.Duration) ir.Duration {
	if v == nil {
		return ir.Duration{Duration: def}
	}
	d, p := checkDuration(string(*v))
	switch {
	case p != "":
		c.bad("%s %s %s", field, q(string(*v)), p)
	case d < least || d > most:
		c.bad("%s %s is not between %s and %s", field, *v, shortDuration(least), shortDuration(most))
	}
	return ir.Duration{Duration: d}
}

// shortDuration prints d without Go's zero minutes and seconds ("1h",
// not "1h0m0s").
func shortDuration(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
}

// count is field's value v (def when nil), between least and most.
func (c *policyChecker) count(field string, v *int32, def uint32, least, most int32) uint32 {
	if v == nil {
		return def
	}
	if *v < least || *v > most {
		c.bad("%s %d is not between %d and %d", field, *v, least, most)
		return def
	}
	return uint32(*v)
}

// backendPolicy validates one policy into its effect: the schema's bounds
// and CEL rules (for standalone files), each field's default filled in.
func backendPolicy(p *v1alpha1.BackendPolicy, st *policyState) {
	c := &policyChecker{}
	s := p.Spec
	if msg := checkTargetRefs(s.TargetRefs); msg != "" {
		c.bad("%s", msg)
	}
	for i, r := range s.TargetRefs {
		if r.Group != "" || r.Kind != "Service" {
			c.bad("targetRefs[%d]: %s is not a core Service", i, groupKind(string(r.Group), string(r.Kind)))
		}
	}
	out := &ir.BackendPolicy{}
	if hc := s.HealthCheck; hc != nil {
		if hc.Active == nil && hc.Passive == nil {
			c.bad("healthCheck: at least one of active and passive is required")
		}
		out.HealthCheck = c.activeHealthCheck(hc.Active)
		out.Outlier = c.outlierDetection(hc.Passive)
	}
	if cb := s.CircuitBreaker; cb != nil {
		out.CircuitBreaker = &ir.CircuitBreaker{
			MaxConnections:     c.count("circuitBreaker.maxConnections", cb.MaxConnections, 0, 1, maxCircuitBreaker),
			MaxPendingRequests: c.count("circuitBreaker.maxPendingRequests", cb.MaxPendingRequests, 0, 1, maxCircuitBreaker),
			MaxRequests:        c.count("circuitBreaker.maxRequests", cb.MaxRequests, 0, 1, maxCircuitBreaker),
		}
		if cb.MaxRetries != nil {
			n := c.count("circuitBreaker.maxRetries", cb.MaxRetries, 0, 0, maxCircuitBreaker)
			out.CircuitBreaker.MaxRetries = &n
		}
	}
	if lb := s.LoadBalancer; lb != nil {
		out.LoadBalancer, out.Hash = c.loadBalancer(lb)
	}
	if cn := s.Connection; cn != nil {
		if cn.ConnectTimeout != nil {
			d := c.duration("connection.connectTimeout", cn.ConnectTimeout, 0, 10*time.Millisecond, maxPolicyDuration)
			out.ConnectTimeout = &d
		}
		out.BufferLimitBytes = c.count("connection.bufferLimitBytes", cn.BufferLimitBytes, 0, 1024, 16<<20)
		if ka := cn.TCPKeepalive; ka != nil {
			out.TCPKeepalive = &ir.TCPKeepalive{
				Probes:          c.count("connection.tcpKeepalive.probes", ka.Probes, 0, 1, 100),
				IdleTimeSeconds: c.seconds("connection.tcpKeepalive.idleTime", ka.IdleTime, maxKeepaliveIdle),
				IntervalSeconds: c.seconds("connection.tcpKeepalive.interval", ka.Interval, maxPolicyDuration),
			}
		}
	}
	if pp := s.ProxyProtocol; pp != nil {
		switch pp.Version {
		case v1alpha1.ProxyProtocolV1:
			out.ProxyProtocol = 1
		case v1alpha1.ProxyProtocolV2:
			out.ProxyProtocol = 2
		default:
			c.bad("proxyProtocol.version %s is not V1 or V2", q(string(pp.Version)))
		}
	}
	if s.HealthCheck == nil && s.CircuitBreaker == nil && s.LoadBalancer == nil && s.Connection == nil && s.ProxyProtocol == nil {
		c.bad("at least one of healthCheck, circuitBreaker, loadBalancer, connection and proxyProtocol is required")
	}
	if len(c.problems) > 0 {
		st.notAccepted = &problem{string(gwapiv1.PolicyReasonInvalid), strings.Join(c.problems, "; ")}
		return
	}
	st.effect = out
}

// seconds is a keep-alive duration in whole seconds, 1s to most (0 when
// v is nil: the system's default).
func (c *policyChecker) seconds(field string, v *gwapiv1.Duration, most time.Duration) uint32 {
	if v == nil {
		return 0
	}
	d := c.duration(field, v, 0, time.Second, most)
	if d.Duration%time.Second != 0 {
		c.bad("%s %s is not a whole number of seconds", field, *v)
	}
	return uint32(d.Duration / time.Second)
}

// activeHealthCheck is healthCheck.active with its defaults; nil stays nil.
func (c *policyChecker) activeHealthCheck(a *v1alpha1.ActiveHealthCheck) *ir.HealthCheck {
	if a == nil {
		return nil
	}
	const f = "healthCheck.active."
	out := &ir.HealthCheck{
		Type:               ir.HealthCheckType(a.Type),
		Interval:           c.duration(f+"interval", a.Interval, defaultProbeInterval, 100*time.Millisecond, maxPolicyDuration),
		Timeout:            c.duration(f+"timeout", a.Timeout, defaultProbeTimeout, 10*time.Millisecond, maxPolicyDuration),
		UnhealthyThreshold: c.count(f+"unhealthyThreshold", a.UnhealthyThreshold, defaultUnhealthyThreshold, 1, maxThreshold),
		HealthyThreshold:   c.count(f+"healthyThreshold", a.HealthyThreshold, defaultHealthyThreshold, 1, maxThreshold),
	}
	switch a.Type {
	case v1alpha1.ActiveHealthCheckHTTP, v1alpha1.ActiveHealthCheckTCP, v1alpha1.ActiveHealthCheckGRPC:
	default:
		c.bad(f+"type %s is not HTTP, TCP or GRPC", q(string(a.Type)))
	}
	if (a.HTTP != nil) != (a.Type == v1alpha1.ActiveHealthCheckHTTP) {
		c.bad(f + "http is required with type HTTP, and only then")
	}
	if a.GRPC != nil && a.Type != v1alpha1.ActiveHealthCheckGRPC {
		c.bad(f + "grpc is allowed with type GRPC only")
	}
	if h := a.HTTP; h != nil {
		if !strings.HasPrefix(h.Path, "/") || len(h.Path) > 1024 || strings.ContainsAny(h.Path, "?#") || strings.IndexFunc(h.Path, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
			c.bad(f+"http.path %s is not an absolute path without a query, fragment, spaces or control characters", q(h.Path))
		}
		out.Path = h.Path
		if h.Host != nil {
			if msg := checkPreciseHostname(string(*h.Host)); msg != "" {
				c.bad(f+"http.host %s %s", q(string(*h.Host)), msg)
			}
			out.Host = string(*h.Host)
		}
		if len(h.ExpectedStatuses) > maxItems16 {
			c.bad(f+"http.expectedStatuses: %d entries; at most 16 are allowed", len(h.ExpectedStatuses))
		}
		for _, code := range h.ExpectedStatuses {
			if code < 100 || code > 599 {
				c.bad(f+"http.expectedStatuses: %d is not between 100 and 599", code)
			}
			out.ExpectedStatuses = append(out.ExpectedStatuses, uint32(code))
		}
		if len(out.ExpectedStatuses) == 0 {
			out.ExpectedStatuses = []uint32{200}
		}
	}
	if g := a.GRPC; g != nil && g.Service != nil {
		out.GRPCService = *g.Service
		if len(out.GRPCService) > 253 || strings.IndexFunc(out.GRPCService, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
			c.bad(f+"grpc.service %s is not a service name (at most 253 printable characters)", q(out.GRPCService))
		}
	}
	return out
}

// outlierDetection is healthCheck.passive with its defaults; nil stays
// nil.
func (c *policyChecker) outlierDetection(p *v1alpha1.PassiveHealthCheck) *ir.OutlierDetection {
	if p == nil {
		return nil
	}
	const f = "healthCheck.passive."
	return &ir.OutlierDetection{
		Consecutive5xx:           c.count(f+"consecutive5xxErrors", p.Consecutive5xxErrors, defaultConsecutive5xx, 1, maxThreshold),
		ConsecutiveGatewayErrors: c.count(f+"consecutiveGatewayErrors", p.ConsecutiveGatewayErrors, 0, 1, maxThreshold),
		Interval:                 c.duration(f+"interval", p.Interval, defaultOutlierInterval, 100*time.Millisecond, maxPolicyDuration),
		BaseEjectionTime:         c.duration(f+"baseEjectionTime", p.BaseEjectionTime, defaultBaseEjectionTime, 100*time.Millisecond, maxPolicyDuration),
		MaxEjectionPercent:       c.count(f+"maxEjectionPercent", p.MaxEjectionPercent, defaultMaxEjectionPercent, 0, 100),
	}
}

// loadBalancer is loadBalancer with its defaults, and the hash key of the
// hash load balancers.
func (c *policyChecker) loadBalancer(lb *v1alpha1.LoadBalancer) (*ir.LoadBalancer, *ir.HashKey) {
	const f = "loadBalancer."
	out := &ir.LoadBalancer{Type: ir.LoadBalancerType(lb.Type)}
	hashed := false
	switch lb.Type {
	case v1alpha1.LoadBalancerRingHash, v1alpha1.LoadBalancerMaglev:
		hashed = true
	case v1alpha1.LoadBalancerRoundRobin, v1alpha1.LoadBalancerLeastRequest, v1alpha1.LoadBalancerRandom:
	default:
		c.bad(f+"type %s is not RoundRobin, LeastRequest, Random, RingHash or Maglev", q(string(lb.Type)))
	}
	if hashed != (lb.HashKey != nil) {
		c.bad(f + "hashKey is required with RingHash and Maglev, and only then")
	}
	if ss := lb.SlowStart; ss != nil {
		if lb.Type != v1alpha1.LoadBalancerRoundRobin && lb.Type != v1alpha1.LoadBalancerLeastRequest {
			c.bad(f + "slowStart is allowed with RoundRobin and LeastRequest only")
		}
		out.SlowStart = &ir.SlowStart{
			Window:           c.duration(f+"slowStart.window", &ss.Window, 0, time.Second, maxPolicyDuration),
			Aggression:       1,
			MinWeightPercent: c.count(f+"slowStart.minWeightPercent", ss.MinWeightPercent, defaultMinWeightPercent, 1, 100),
		}
		if a := ss.Aggression; a != nil {
			v, err := strconv.ParseFloat(*a, 64)
			if err != nil || v <= 0 || v > 100 || strings.ContainsAny(*a, "eE+-") {
				c.bad(f+"slowStart.aggression %s is not a decimal above 0 and at most 100", q(*a))
			}
			out.SlowStart.Aggression = v
		}
	}
	hk := lb.HashKey
	if hk == nil {
		return out, nil
	}
	h := &ir.HashKey{Type: ir.HashKeyType(hk.Type)}
	if (hk.Header != nil) != (hk.Type == v1alpha1.HashKeyHeader) {
		c.bad(f + "hashKey.header is required with type Header, and only then")
	}
	if (hk.Cookie != nil) != (hk.Type == v1alpha1.HashKeyCookie) {
		c.bad(f + "hashKey.cookie is required with type Cookie, and only then")
	}
	switch hk.Type {
	case v1alpha1.HashKeyHeader, v1alpha1.HashKeyCookie, v1alpha1.HashKeyClientIP:
	default:
		c.bad(f+"hashKey.type %s is not Header, Cookie or ClientIP", q(string(hk.Type)))
	}
	if hh := hk.Header; hh != nil {
		if msg := checkHeaderName(string(hh.Name)); msg != "" {
			c.bad(f+"hashKey.header.name %s %s", q(string(hh.Name)), msg)
		}
		h.Name = strings.ToLower(string(hh.Name))
	}
	if ck := hk.Cookie; ck != nil {
		if msg := checkHeaderName(ck.Name); msg != "" { // cookie and header names are RFC 7230 tokens
			c.bad(f+"hashKey.cookie.name %s %s", q(ck.Name), msg)
		}
		h.Name = ck.Name
		if ck.TTL != nil {
			d := c.duration(f+"hashKey.cookie.ttl", ck.TTL, 0, time.Second, maxCookieTTL)
			h.CookieTTL = &d
		}
		if ck.Path != nil {
			if msg := checkCookiePath(*ck.Path); msg != "" {
				c.bad(f+"hashKey.cookie.path %s %s", q(*ck.Path), msg)
			}
			h.CookiePath = *ck.Path
		}
	}
	return out, h
}
