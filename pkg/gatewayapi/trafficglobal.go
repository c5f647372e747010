package gatewayapi

// A TrafficPolicy's global rate limits (spec.rateLimit.global): counters
// kept by the rate-limit service (envoyproxy/ratelimit), shared by every
// Envoy of the fleet that serves a route. The policy's rules become
// ir.GlobalRateLimitRules on each IR route it covers (ir.Traffic
// GlobalRateLimit), with the service the controller was given
// (Options.RateLimitService); the xDS translator gathers a scope's rules
// into the service's domain of that scope (ir.RateLimitDomain).
//
// Tenants. Every rule's name is "<policy namespace>/<policy name>/<index>"
// (the first entry of its descriptors), so no policy, in any namespace,
// can read or spend another's counters, even in a fleet that serves
// several tenants' Gateways (one domain per scope). A rule's counter is
// the policy's: every route the policy covers in one scope counts against
// it.

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// ReasonRateLimitServiceMissing is the reason of Accepted=False of a
// policy with global rate limits when the controller knows no rate-limit
// service.
const ReasonRateLimitServiceMissing = "RateLimitServiceMissing"

// RateLimitServiceCluster is the name of the rate-limit service's backend
// (its Envoy cluster): no route backend's name has this form.
const RateLimitServiceCluster = "ratelimit/service"

// globalRateLimitUnits are the IR's units of the API's.
var globalRateLimitUnits = map[v1alpha1.GlobalRateLimitUnit]ir.RateLimitUnit{
	v1alpha1.GlobalRateLimitSecond: ir.RateLimitSecond,
	v1alpha1.GlobalRateLimitMinute: ir.RateLimitMinute,
	v1alpha1.GlobalRateLimitHour:   ir.RateLimitHour,
	v1alpha1.GlobalRateLimitDay:    ir.RateLimitDay,
}

// globalRateLimit checks the global limits of policy ns/name (the CRD's
// schema and CEL rules) and makes them the IR's, without the service: one
// rule per entry, named "<ns>/<name>/<index>" (sorted by name: indexes
// from 0 to 7 sort as numbers), or says what is wrong, as
// "rateLimit.global.<field> ...".
func globalRateLimit(ns, name string, g *v1alpha1.GlobalRateLimit) (*ir.RouteGlobalRateLimit, string) {
	bad := func(format string, a ...any) (*ir.RouteGlobalRateLimit, string) {
		return nil, "rateLimit.global." + fmt.Sprintf(format, a...)
	}
	if n := len(g.Rules); n < 1 || n > maxRateLimitRules {
		return bad("rules: %d entries; 1 to %d are required", n, maxRateLimitRules)
	}
	out := &ir.RouteGlobalRateLimit{}
	for i, r := range g.Rules {
		rule := ir.GlobalRateLimitRule{Name: fmt.Sprintf("%s/%s/%d", ns, name, i), FailOpen: g.FailOpen, Shadow: g.Shadow}
		if r.Requests < 1 || r.Requests > maxRateLimitTokens {
			return bad("rules[%d].requests %d is not 1 to %d", i, r.Requests, maxRateLimitTokens)
		}
		rule.Requests = uint32(r.Requests)
		unit, ok := globalRateLimitUnits[r.Unit]
		if !ok {
			return bad("rules[%d].unit %s is not Second, Minute, Hour or Day", i, q(string(r.Unit)))
		}
		rule.Unit = unit
		switch r.By {
		case "", v1alpha1.RateLimitByRoute:
		case v1alpha1.RateLimitByClientIP:
			rule.ClientIP = true
		case v1alpha1.RateLimitByHeader:
		default:
			return bad("rules[%d].by %s is not Route, ClientIP or Header", i, q(string(r.By)))
		}
		switch h := r.Header; {
		case (h != nil) != (r.By == v1alpha1.RateLimitByHeader):
			return bad("rules[%d].header is required when by is Header, and only then", i)
		case h != nil:
			if msg := checkHeaderName(string(*h)); msg != "" {
				return bad("rules[%d].header %s", i, msg)
			}
			rule.Header = strings.ToLower(string(*h))
		}
		out.Rules = append(out.Rules, rule)
	}
	return out, ""
}

// rateLimitService is the rate-limit service as the backend Envoy
// reaches it through (Options.RateLimitService), or why there is none.
func (t *translator) rateLimitService() (*ir.Backend, string) {
	if t.opts.RateLimitService == "" {
		return nil, "spec.rateLimit.global needs the rate-limit service, and the controller has none " +
			"(serve controller --ratelimit-service-address host:port, the chart's rate-limit service; " +
			"serve standalone --ratelimit-path or --ratelimit-config-dir)"
	}
	b, err := RateLimitServiceBackend(t.opts.RateLimitService)
	if err != nil {
		return nil, err.Error()
	}
	return b, ""
}

// RateLimitServiceBackend is the rate-limit service at addr, "host:port"
// (an IP address or a DNS name, the port of its gRPC), as the h2c backend
// Envoy reaches it through: the cluster RateLimitServiceCluster, one
// endpoint (resolved by Envoy when a name). An error says why addr is not
// one.
func RateLimitServiceBackend(addr string) (*ir.Backend, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("rate-limit service address %q: %v", addr, err)
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("rate-limit service address %q: port %q is not 1 to 65535", addr, p)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return nil, fmt.Errorf("rate-limit service address %q: an address with a zone", addr)
		}
		host = ip.Unmap().String()
	} else if msg := checkPreciseHostname(host); msg != "" {
		return nil, fmt.Errorf("rate-limit service address %q: host %s", addr, msg)
	}
	return &ir.Backend{Name: RateLimitServiceCluster, Weight: 1, Protocol: ir.AppProtocolH2C,
		Endpoints: []ir.Endpoint{{Address: host, Port: uint32(port)}}}, nil
}
