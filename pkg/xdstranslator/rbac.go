package xdstranslator

import (
	"fmt"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The RBAC filter's dynamic metadata that tells the rate limit whether a
// client is exempt: under the filter's namespace, the shadow engine's
// result ("allowed" or "denied") with the shadow rules' stat prefix
// before its field name (Envoy's RBAC filter writes
// <shadow_rules_stat_prefix>shadow_engine_result).
const (
	rbacMetadataNamespace = "envoy.filters.http.rbac"
	rateLimitExemptPrefix = "ratelimit_exempt_"
	rateLimitExemptResult = rateLimitExemptPrefix + "shadow_engine_result"
)

// sourceRangesRBAC is the per-route RBAC policy (RBACPerRoute) of
// AllowedSourceRanges: allow the remote addresses in ranges (remote_ip:
// the peer, or the X-Forwarded-For address the connection manager
// trusts), deny everyone else with 403; and of a local rate limit's
// ExemptRanges: shadow rules that allow the addresses in exempt, whose
// result the rate limit reads (localRateLimit). Either may be empty. The
// chain's RBAC filter itself has no rules: routes without either let
// everyone in.
func sourceRangesRBAC(ranges, exempt []string) (*rbacv3.RBACPerRoute, error) {
	out := &rbacv3.RBAC{}
	if len(ranges) > 0 {
		policy, err := remoteIPPolicy(ranges)
		if err != nil {
			return nil, err
		}
		out.Rules = &rbacconfigv3.RBAC{Action: rbacconfigv3.RBAC_ALLOW, Policies: map[string]*rbacconfigv3.Policy{"allowed-source-ranges": policy}}
	}
	if len(exempt) > 0 {
		policy, err := remoteIPPolicy(exempt)
		if err != nil {
			return nil, err
		}
		out.ShadowRules = &rbacconfigv3.RBAC{Action: rbacconfigv3.RBAC_ALLOW, Policies: map[string]*rbacconfigv3.Policy{"rate-limit-exempt": policy}}
		out.ShadowRulesStatPrefix = rateLimitExemptPrefix
	}
	return &rbacv3.RBACPerRoute{Rbac: out}, nil
}

// remoteIPPolicy is a policy of every request from the remote addresses
// in ranges.
func remoteIPPolicy(ranges []string) (*rbacconfigv3.Policy, error) {
	policy := &rbacconfigv3.Policy{
		Permissions: []*rbacconfigv3.Permission{{Rule: &rbacconfigv3.Permission_Any{Any: true}}},
	}
	for _, r := range ranges {
		c, err := cidrRange(r)
		if err != nil {
			return nil, err
		}
		policy.Principals = append(policy.Principals, &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_RemoteIp{RemoteIp: c}})
	}
	return policy, nil
}

// cidrRange reads an IR client range (a CIDR, "10.0.0.0/8") as Envoy's
// CidrRange, the one parsing of client ranges for every RBAC rule.
func cidrRange(r string) (*corev3.CidrRange, error) {
	p, err := netip.ParsePrefix(r)
	if err != nil {
		return nil, fmt.Errorf("source range %q: %w", r, err)
	}
	return &corev3.CidrRange{AddressPrefix: p.Addr().String(), PrefixLen: wrapperspb.UInt32(uint32(p.Bits()))}, nil
}
