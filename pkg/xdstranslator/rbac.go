package xdstranslator

import (
	"fmt"
	"net/netip"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// sourceRangesRBAC is the per-route RBAC policy (RBACPerRoute) of
// AllowedSourceRanges: allow the remote addresses in ranges (remote_ip:
// the peer, or the X-Forwarded-For address the connection manager
// trusts), deny everyone else with 403. The chain's RBAC filter itself has
// no rules: routes without AllowedSourceRanges let everyone in.
func sourceRangesRBAC(ranges []string) (*rbacv3.RBACPerRoute, error) {
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
	return &rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{
		Action:   rbacconfigv3.RBAC_ALLOW,
		Policies: map[string]*rbacconfigv3.Policy{"allowed-source-ranges": policy},
	}}}, nil
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
