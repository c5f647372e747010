package gatewayapi

// Default Gateways (GEP-3793, experimental channel): a Gateway whose
// spec.defaultScope is set claims the routes whose spec.useDefaultGateways
// names the same scope, as if they named it in parentRefs.

import (
	"fmt"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The condition a default Gateway reports (GEP-3793 "Controlling which
// Gateways accept Defaulted Routes": type DefaultGateway, status True,
// naming its scope). The API module defines no constant for it yet; the
// reason repeats the type, as Accepted and Programmed do.
const (
	GatewayConditionDefaultGateway gwapiv1.GatewayConditionType   = "DefaultGateway"
	GatewayReasonDefaultGateway    gwapiv1.GatewayConditionReason = "DefaultGateway"
)

// defaultScope is gw's spec.defaultScope when it makes gw a default
// Gateway ("All", the only scope GatewayDefaultScope defines besides
// None), else "" (unset, None, or a value the enum does not allow, which
// gatewaySpecProblem refuses).
func defaultScope(gw *gwapiv1.Gateway) gwapiv1.GatewayDefaultScope {
	if gw.Spec.DefaultScope == gwapiv1.GatewayDefaultScopeAll {
		return gw.Spec.DefaultScope
	}
	return ""
}

// defaultScopeProblem is the message for a spec.defaultScope outside the
// CRD's enum (All, None), "" when it is valid.
func defaultScopeProblem(s gwapiv1.GatewayDefaultScope) string {
	switch s {
	case "", gwapiv1.GatewayDefaultScopeAll, gwapiv1.GatewayDefaultScopeNone:
		return ""
	}
	return fmt.Sprintf("spec.defaultScope %s is not All or None", q(string(s)))
}

// parentRefs are the parentRefs a route of namespace ns attaches through
// (CommonRouteSpec): its own, then one per default Gateway of ours whose
// spec.defaultScope is the route's spec.useDefaultGateways (GEP-3793: every
// such Gateway, none preferred; the route is bound as if it named them,
// so the Gateways' allowedRoutes still decide), sorted by namespace/name.
// A default Gateway the route already names in a parentRef of its own is
// not added again (the parentRefs stay distinct); useDefaultGateways None
// or unset adds none, as does a scope no Gateway of ours claims. The
// implicit refs name group, kind, namespace and name, which the route's
// status.parents entry for that Gateway repeats.
func (t *translator) parentRefs(ns string, spec gwapiv1.CommonRouteSpec) []gwapiv1.ParentReference {
	scope := spec.UseDefaultGateways
	if scope == "" || scope == gwapiv1.GatewayDefaultScopeNone {
		return spec.ParentRefs
	}
	refs := spec.ParentRefs
	for _, gs := range t.gateways {
		if gs.refused != nil || defaultScope(gs.obj) != scope {
			continue
		}
		named := false
		for _, ref := range spec.ParentRefs {
			if deref(ref.Group, gwapiv1.GroupName) == gwapiv1.GroupName && deref(ref.Kind, "Gateway") == "Gateway" &&
				string(deref(ref.Namespace, gwapiv1.Namespace(ns))) == gs.nn.Namespace && string(ref.Name) == gs.nn.Name {
				named = true
				break
			}
		}
		if named {
			continue
		}
		group, kind, gwNS := gwapiv1.Group(gwapiv1.GroupName), gwapiv1.Kind("Gateway"), gwapiv1.Namespace(gs.nn.Namespace)
		if len(refs) == len(spec.ParentRefs) {
			refs = append([]gwapiv1.ParentReference(nil), spec.ParentRefs...)
		}
		refs = append(refs, gwapiv1.ParentReference{Group: &group, Kind: &kind, Namespace: &gwNS, Name: gwapiv1.ObjectName(gs.nn.Name)})
	}
	return refs
}
