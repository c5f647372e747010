package gatewayapi

// SecurityPolicy authorization: validation of spec.authorization and its
// IR (ir.Authorization on every route the policy covers), with the
// requirements of spec.jwt's providers (requiredClaims, requiredScopes),
// which the same RBAC checks. pkg/xdstranslator/securityrbac.go renders
// it; docs/security-policy.md is the user's view.

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// authorization validates spec.authorization of a policy whose JWT is j
// (nil without spec.jwt) and returns its IR: rules in order, the default
// action (Deny when not set). A problem is a schema violation or a rule
// whose jwt names a provider j does not have (Invalid).
func authorization(a *v1alpha1.Authorization, j *v1alpha1.JWT) (*ir.Authorization, *problem) {
	invalid := func(format string, args ...any) (*ir.Authorization, *problem) {
		return nil, &problem{"", fmt.Sprintf(format, args...)}
	}
	out := &ir.Authorization{}
	switch d := deref(a.DefaultAction, v1alpha1.AuthorizationDeny); d {
	case v1alpha1.AuthorizationAllow, v1alpha1.AuthorizationDeny:
		out.DefaultAllow = d == v1alpha1.AuthorizationAllow
	default:
		return invalid("authorization.defaultAction %s is not Allow or Deny", q(string(d)))
	}
	if n := len(a.Rules); n > 64 {
		return invalid("authorization.rules: %d entries; at most 64", n)
	}
	for i, r := range a.Rules {
		field := fmt.Sprintf("authorization.rules[%d]", i)
		o, msg := authorizationRule(r, j)
		if msg != "" {
			return invalid("%s%s", field, msg)
		}
		out.Rules = append(out.Rules, o)
	}
	return out, nil
}

// authorizationRule validates one rule; the message starts with the
// field at fault (".clientCIDRs: ...").
func authorizationRule(r v1alpha1.AuthorizationRule, j *v1alpha1.JWT) (ir.AuthorizationRule, string) {
	out := ir.AuthorizationRule{Name: r.Name, Allow: r.Action == v1alpha1.AuthorizationAllow}
	switch {
	case len(r.Name) > 63:
		return out, ".name is longer than 63 characters"
	case r.Action != v1alpha1.AuthorizationAllow && r.Action != v1alpha1.AuthorizationDeny:
		return out, fmt.Sprintf(".action %s is not Allow or Deny", q(string(r.Action)))
	case len(r.ClientCIDRs) > 64:
		return out, ".clientCIDRs: at most 64"
	case len(r.Headers) > maxItems16, len(r.Paths) > maxItems16, len(r.Methods) > 9:
		return out, ": at most 16 headers, 16 paths and 9 methods"
	}
	for _, c := range r.ClientCIDRs {
		p, msg := ClientCIDR(c)
		if msg != "" {
			return out, ".clientCIDRs: " + msg
		}
		if !slices.Contains(out.ClientCIDRs, p) {
			out.ClientCIDRs = append(out.ClientCIDRs, p)
		}
	}
	if m := r.JWT; m != nil {
		if j == nil || !slices.ContainsFunc(j.Providers, func(p v1alpha1.JWTProvider) bool { return p.Name == m.Provider }) {
			return out, fmt.Sprintf(".jwt.provider %s is not a provider of spec.jwt", q(m.Provider))
		}
		claims, msg := jwtClaims(m.Claims)
		if msg != "" {
			return out, ".jwt.claims" + msg
		}
		if msg := checkScopes(m.Scopes); msg != "" {
			return out, ".jwt.scopes" + msg
		}
		out.JWT = &ir.JWTMatch{Provider: m.Provider, Claims: claims, Scopes: slices.Clone(m.Scopes)}
	}
	for _, h := range r.Headers {
		if msg := checkHeaderName(string(h.Name)); msg != "" {
			return out, fmt.Sprintf(".headers: name %s %s", q(string(h.Name)), msg)
		}
		m, msg := valueMatch(strings.ToLower(string(h.Name)), string(deref(h.Type, gwapiv1.HeaderMatchExact)), h.Value, maxHeaderValueLen)
		if msg != "" {
			return out, fmt.Sprintf(".headers %s: %s", h.Name, msg)
		}
		out.Headers = append(out.Headers, m)
	}
	for _, m := range r.Methods {
		if !knownMethods[m] {
			return out, fmt.Sprintf(".methods: %s is not an HTTP method of the Gateway API", q(string(m)))
		}
		if !slices.Contains(out.Methods, string(m)) {
			out.Methods = append(out.Methods, string(m))
		}
	}
	for _, p := range r.Paths {
		m, msg := pathMatch(deref(p.Type, gwapiv1.PathMatchPathPrefix), deref(p.Value, "/"))
		if msg != "" {
			return out, ".paths: " + msg
		}
		out.Paths = append(out.Paths, *m)
	}
	return out, ""
}

// ClientCIDR reads a client range, a CIDR or one IP address (a /32 or
// /128), and returns it canonical (the host bits cleared, as
// ingress-nginx's source ranges are read: pkg/ingress reads them with it),
// or why c is neither.
func ClientCIDR(c string) (string, string) {
	p, err := netip.ParsePrefix(c)
	if err != nil {
		a, aerr := netip.ParseAddr(c)
		if aerr != nil {
			return "", q(c) + " is not a CIDR or an IP address"
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return p.Masked().String(), ""
}

// jwtAndAuthorization validates spec.jwt and spec.authorization of p
// (either may be absent) and returns their IR: the JWT authentication,
// and the authorization that the route's RBAC checks, which also holds
// the providers' requiredClaims and requiredScopes (nil when there is
// neither a rule nor a requirement).
func (t *translator) jwtAndAuthorization(p *v1alpha1.SecurityPolicy) (j *ir.JWT, a *ir.Authorization, bad, refs *problem) {
	if p.Spec.JWT != nil {
		if j, bad, refs = t.jwt(p, p.Spec.JWT); bad != nil || refs != nil {
			return nil, nil, bad, refs
		}
	}
	if p.Spec.Authorization != nil {
		if a, bad = authorization(p.Spec.Authorization, p.Spec.JWT); bad != nil {
			return nil, nil, bad, nil
		}
	}
	if j != nil {
		if reqs := jwtRequirements(j); reqs != nil {
			if a == nil {
				a = &ir.Authorization{DefaultAllow: true}
			}
			a.RequireJWT = reqs
		}
	}
	return j, a, nil, nil
}

// jwtReferences adds to secrets and configMaps those p's jwt reads: the
// Secret or ConfigMap of each localJWKS and the ConfigMaps of each
// remoteJWKS's caCertificateRefs (all in p's namespace).
func jwtReferences(p *v1alpha1.SecurityPolicy, secrets, configMaps []types.NamespacedName) ([]types.NamespacedName, []types.NamespacedName) {
	if p.Spec.JWT == nil {
		return secrets, configMaps
	}
	for _, pr := range p.Spec.JWT.Providers {
		if l := pr.LocalJWKS; l != nil {
			switch l.Kind {
			case "Secret":
				secrets = append(secrets, nn(p.Namespace, string(l.Name)))
			case "ConfigMap":
				configMaps = append(configMaps, nn(p.Namespace, string(l.Name)))
			}
		}
		if r := pr.RemoteJWKS; r != nil {
			for _, c := range r.CACertificateRefs {
				if c.Group == "" && c.Kind == "ConfigMap" {
					configMaps = append(configMaps, nn(p.Namespace, string(c.Name)))
				}
			}
		}
	}
	return secrets, configMaps
}
