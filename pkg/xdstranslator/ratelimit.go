package xdstranslator

// Global rate limits (ir.GlobalRateLimits) rendered for both sides of
// Envoy's rate-limit service protocol (envoy.service.ratelimit.v3):
//
//   - the service's configuration of the scope's domain, a RateLimitConfig
//     (ratelimit.config.ratelimit.v3, the envoyproxy/ratelimit service's
//     own type): RateLimitConfig; and the files the service reads them
//     from, one per domain (RateLimitConfigFiles: standalone mode's
//     folder and the cluster's ConfigMap hold the same names and bytes);
//   - Envoy's pieces: the ratelimit HTTP filters (RateLimitFilter), the
//     service's cluster (RateLimitCluster), and a route's descriptors
//     (RouteRateLimits, the filters' per-route configuration).
//
// A rule is one descriptor: ("rule", name), then ("remote_address", the
// client's address) when ClientIP is set, then ("header", the value) when
// Header is set. The service's tree has the rule's limit on the deepest of
// these entries, whose last keys have no value: each client address or
// header value has its own counter. Envoy's actions produce the same
// entries in the same order (generic_key, remote_address,
// request_headers), and produce no descriptor at all for a rule whose
// header the request lacks.
//
// The rules that fail closed and those that fail open go through two
// filters (failure_mode_deny is the filter's, not a route's), each
// configured per route by a RateLimitPerRoute whose rate_limits are the
// route's rules of that mode; a route without rules of a mode has no
// configuration for its filter and the filter does nothing for it.

import (
	"fmt"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	ratelimitconfv3 "github.com/envoyproxy/go-control-plane/envoy/config/ratelimit/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

const (
	// filterRateLimit starts the names of the ratelimit filters:
	// filterRateLimit+"/fail-closed" and filterRateLimit+"/fail-open".
	filterRateLimit = "envoy.filters.http.ratelimit"
	// RateLimitTimeout bounds each call to the service (the filter's
	// timeout; Envoy's default is 20 ms): a slower answer counts as a
	// failure, which the rule's failure mode decides. A second leaves room
	// for a loaded service and Redis; a request waits at most that long.
	RateLimitTimeout = time.Second
	// Descriptor keys of a rule's entries (the service's tree and Envoy's
	// actions use the same).
	rateLimitKeyRule     = "rule"
	rateLimitKeyClientIP = "remote_address"
	rateLimitKeyHeader   = "header"
)

// rateLimitUnits maps the IR's units to the service's.
var rateLimitUnits = map[ir.RateLimitUnit]rlsconfv3.RateLimitUnit{
	ir.RateLimitSecond: rlsconfv3.RateLimitUnit_SECOND,
	ir.RateLimitMinute: rlsconfv3.RateLimitUnit_MINUTE,
	ir.RateLimitHour:   rlsconfv3.RateLimitUnit_HOUR,
	ir.RateLimitDay:    rlsconfv3.RateLimitUnit_DAY,
}

// RateLimitConfig renders g as the service's configuration of its domain:
// name and domain g.Domain, one descriptor tree per rule, in g's order.
// g must be valid (ir.GlobalRateLimits.Validate).
func RateLimitConfig(g *ir.GlobalRateLimits) *rlsconfv3.RateLimitConfig {
	c := &rlsconfv3.RateLimitConfig{Name: g.Domain, Domain: g.Domain}
	for _, r := range g.Rules {
		root := &rlsconfv3.RateLimitDescriptor{Key: rateLimitKeyRule, Value: r.Name}
		leaf := root
		if r.ClientIP {
			d := &rlsconfv3.RateLimitDescriptor{Key: rateLimitKeyClientIP}
			leaf.Descriptors = []*rlsconfv3.RateLimitDescriptor{d}
			leaf = d
		}
		if r.Header != "" {
			d := &rlsconfv3.RateLimitDescriptor{Key: rateLimitKeyHeader}
			leaf.Descriptors = []*rlsconfv3.RateLimitDescriptor{d}
			leaf = d
		}
		leaf.RateLimit = &rlsconfv3.RateLimitPolicy{Unit: rateLimitUnits[r.Unit], RequestsPerUnit: r.Requests}
		leaf.ShadowMode = r.Shadow
		c.Descriptors = append(c.Descriptors, root)
	}
	return c
}

// RateLimitConfigFiles renders configs as the files the service reads
// (CONFIG_TYPE=FILE), keyed by file name: "<domain>.yaml" holds the
// domain's RateLimitConfig in the service's YAML schema (the proto's
// fields under their proto names: domain, descriptors, key, value,
// rate_limit, unit, requests_per_unit, shadow_mode). Standalone mode
// writes them into its folder and the controller into a ConfigMap that
// the service's pod mounts, so a name must also be a ConfigMap key
// ([-._a-zA-Z0-9], at most 253 characters) and must not start with "."
// (the service skips dotfiles: RUNTIME_IGNOREDOTFILES). An error names a
// domain twice or a domain that makes no such name.
func RateLimitConfigFiles(configs ...*rlsconfv3.RateLimitConfig) (map[string][]byte, error) {
	out := make(map[string][]byte, len(configs))
	for _, c := range configs {
		name := c.Domain + ".yaml"
		if c.Domain == "" || strings.HasPrefix(name, ".") || len(validation.IsConfigMapKey(name)) > 0 {
			return nil, fmt.Errorf("rate-limit configuration: domain %q makes no file name or ConfigMap key (letters, digits, '-', '_', '.'; not first '.')", c.Domain)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("rate-limit configuration: domain %q twice", c.Domain)
		}
		j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(c)
		if err != nil {
			return nil, fmt.Errorf("rate-limit configuration of domain %q: %w", c.Domain, err)
		}
		if out[name], err = yaml.JSONToYAML(j); err != nil {
			return nil, fmt.Errorf("rate-limit configuration of domain %q: %w", c.Domain, err)
		}
	}
	return out, nil
}

// RateLimitFilterName is the name of the ratelimit filter of the rules
// whose FailOpen is failOpen.
func RateLimitFilterName(failOpen bool) string {
	if failOpen {
		return filterRateLimit + "/fail-open"
	}
	return filterRateLimit + "/fail-closed"
}

// RateLimitFilter is the ratelimit HTTP filter of g's rules whose FailOpen
// is failOpen: domain g.Domain; the service through g.Service's cluster
// (Envoy gRPC, API v3) with RateLimitTimeout; failure_mode_deny
// !failOpen (a failure then answers 500); over a limit, 429 with
// retry-after (enable_retry_after_header: the seconds until the
// window resets) and the draft RFC's RateLimit-Limit, RateLimit-Remaining
// and RateLimit-Reset headers (enable_x_ratelimit_headers
// DRAFT_VERSION_03, which Envoy sends as x-ratelimit-*). It is disabled
// (HttpFilter disabled) but on a route with its per-route configuration
// (RouteRateLimits).
func RateLimitFilter(g *ir.GlobalRateLimits, failOpen bool) *hcmv3.HttpFilter {
	c := &ratelimitv3.RateLimit{
		Domain:          g.Domain,
		Timeout:         durationpb.New(RateLimitTimeout),
		FailureModeDeny: !failOpen,
		RateLimitService: &ratelimitconfv3.RateLimitServiceConfig{
			TransportApiVersion: corev3.ApiVersion_V3,
			GrpcService: &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
				EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: g.Service.Name},
			}},
		},
		EnableXRatelimitHeaders: ratelimitv3.RateLimit_DRAFT_VERSION_03,
		EnableRetryAfterHeader:  true,
	}
	return &hcmv3.HttpFilter{
		Name:       RateLimitFilterName(failOpen),
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(c)},
		Disabled:   true,
	}
}

// RateLimitCluster is the service's cluster (an h2c backend: gRPC without
// TLS) and its endpoints, as every backend's (cluster).
func RateLimitCluster(g *ir.GlobalRateLimits) (*clusterv3.Cluster, *endpointv3.ClusterLoadAssignment) {
	return cluster(g.Service)
}

// RouteRateLimits is the typed_per_filter_config of a route whose requests
// the rules named count: for each failure mode among them, the
// RateLimitPerRoute of that mode's filter, its rate_limits one entry per
// rule in names' order. Nil for no names; an error names a rule g lacks.
func RouteRateLimits(g *ir.GlobalRateLimits, names []string) (map[string]*anypb.Any, error) {
	perMode := map[bool]*ratelimitv3.RateLimitPerRoute{}
	for _, n := range names {
		r := g.Rule(n)
		if r == nil {
			return nil, fmt.Errorf("global rate limit rule %q: not in domain %s", n, g.Domain)
		}
		p := perMode[r.FailOpen]
		if p == nil {
			p = &ratelimitv3.RateLimitPerRoute{}
			perMode[r.FailOpen] = p
		}
		p.RateLimits = append(p.RateLimits, rateLimitActions(r))
	}
	if len(perMode) == 0 {
		return nil, nil
	}
	out := make(map[string]*anypb.Any, len(perMode))
	for failOpen, p := range perMode {
		out[RateLimitFilterName(failOpen)] = toAny(p)
	}
	return out, nil
}

// rateLimitActions are the actions that make rule r's descriptor.
func rateLimitActions(r *ir.GlobalRateLimitRule) *routev3.RateLimit {
	rl := &routev3.RateLimit{Actions: []*routev3.RateLimit_Action{{
		ActionSpecifier: &routev3.RateLimit_Action_GenericKey_{GenericKey: &routev3.RateLimit_Action_GenericKey{
			DescriptorKey: rateLimitKeyRule, DescriptorValue: r.Name,
		}},
	}}}
	if r.ClientIP {
		rl.Actions = append(rl.Actions, &routev3.RateLimit_Action{
			ActionSpecifier: &routev3.RateLimit_Action_RemoteAddress_{RemoteAddress: &routev3.RateLimit_Action_RemoteAddress{}},
		})
	}
	if r.Header != "" {
		rl.Actions = append(rl.Actions, &routev3.RateLimit_Action{
			ActionSpecifier: &routev3.RateLimit_Action_RequestHeaders_{RequestHeaders: &routev3.RateLimit_Action_RequestHeaders{
				HeaderName: r.Header, DescriptorKey: rateLimitKeyHeader,
			}},
		})
	}
	return rl
}

// globalRateLimit sets out's per-route configurations of r's global rate
// limits (RouteRateLimits: the rules' actions, for the filter of their
// failure mode), reports the filters in use (domain the scope's,
// ir.RateLimitDomain) and returns the service's backend, whose cluster
// the route then needs; nil when r has none. Only a route that forwards
// has them: Envoy's ratelimit filter skips a redirect and a direct
// response.
func globalRateLimit(out *routev3.Route, r *ir.HTTPRoute, domain string, use *filterUse) (*ir.Backend, error) {
	if r.Traffic == nil || r.Traffic.GlobalRateLimit == nil || r.Backends == nil || r.DirectResponse != nil {
		return nil, nil
	}
	rl := r.Traffic.GlobalRateLimit
	g := &ir.GlobalRateLimits{Domain: domain, Service: rl.Service, Rules: rl.Rules}
	names := make([]string, len(rl.Rules))
	for i, rule := range rl.Rules {
		names[i] = rule.Name
	}
	per, err := RouteRateLimits(g, names)
	if err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(per) {
		setPerFilter(out, name, per[name])
		use.rateLimits = addNamed(use.rateLimits, authzFilter{name: name, filter: RateLimitFilter(g, name == RateLimitFilterName(true))})
	}
	return rl.Service, nil
}
