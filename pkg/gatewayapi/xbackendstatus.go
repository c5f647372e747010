package gatewayapi

// The status of XBackends: status.ancestors holds one entry per Gateway of
// ours whose routes resolve a backendRef to the XBackend, with Accepted
// (False reason Invalid when the XBackend cannot be used, saying why). It
// is written as the policies' status.ancestors are (pkg/status, through
// PolicyKinds), and the Secrets and ConfigMaps an XBackend names are
// fetched as a policy's are (References). The Gateways are counted when a
// route is read (Cache.read: the route's XBackend dependencies and its
// parents) and taken back when it is read again or removed (dropRead), so
// an incremental translation reports what a full one does.

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// xbackendAncestor is a Gateway (gw) whose routes use XBackend xb.
type xbackendAncestor struct{ xb, gw types.NamespacedName }

// xbackendStatusKind is XBackend as the status writer and the providers
// see a kind with status.ancestors (PolicyKind).
type xbackendStatusKind struct{}

// Name implements PolicyKind.
func (xbackendStatusKind) Name() string { return resources.XBackendKind.Name() }

// New implements PolicyKind.
func (xbackendStatusKind) New() resources.Object { return resources.XBackendKind.New() }

// Objects implements PolicyKind.
func (xbackendStatusKind) Objects(r *resources.Resources) []resources.Object {
	var out []resources.Object
	for _, xb := range r.XBackends {
		if xb != nil {
			out = append(out, xb)
		}
	}
	return out
}

// Ancestors implements PolicyKind: BackendAncestorStatus has
// PolicyAncestorStatus's fields.
func (xbackendStatusKind) Ancestors(obj resources.Object) ([]gwapiv1.PolicyAncestorStatus, bool) {
	xb, ok := obj.(*gwapixv1alpha1.XBackend)
	if !ok {
		return nil, false
	}
	out := make([]gwapiv1.PolicyAncestorStatus, 0, len(xb.Status.Ancestors))
	for _, a := range xb.Status.Ancestors {
		out = append(out, gwapiv1.PolicyAncestorStatus{AncestorRef: a.AncestorRef, ControllerName: a.ControllerName, Conditions: a.Conditions})
	}
	return out, true
}

// SetAncestors implements PolicyKind.
func (xbackendStatusKind) SetAncestors(obj resources.Object, as []gwapiv1.PolicyAncestorStatus) bool {
	xb, ok := obj.(*gwapixv1alpha1.XBackend)
	if !ok {
		return false
	}
	xb.Status.Ancestors = make([]gwapixv1alpha1.BackendAncestorStatus, 0, len(as))
	for _, a := range as {
		xb.Status.Ancestors = append(xb.Status.Ancestors, gwapixv1alpha1.BackendAncestorStatus{AncestorRef: a.AncestorRef, ControllerName: a.ControllerName, Conditions: a.Conditions})
	}
	return true
}

// References implements PolicyKind: the Secret of tls.clientCertificateRef
// and the ConfigMaps of tls.validation.caCertificateRefs.
func (xbackendStatusKind) References(obj resources.Object) (secrets, configMaps []types.NamespacedName) {
	xb, ok := obj.(*gwapixv1alpha1.XBackend)
	if !ok || xb.Spec.TLS == nil {
		return nil, nil
	}
	if ref := xb.Spec.TLS.ClientCertificateRef; ref != nil && deref(ref.Group, "") == "" && deref(ref.Kind, "Secret") == "Secret" {
		secrets = append(secrets, nn(string(deref(ref.Namespace, gwapiv1.Namespace(xb.Namespace))), string(ref.Name)))
	}
	if v := xb.Spec.TLS.Validation; v != nil {
		for _, ref := range v.CACertificateRefs {
			if ref.Group == "" && ref.Kind == "ConfigMap" {
				configMaps = append(configMaps, nn(xb.Namespace, string(ref.Name)))
			}
		}
	}
	return secrets, configMaps
}

// xbackendStatus renders status.ancestors of every XBackend that a route
// of a Gateway of ours uses (counts: by XBackend and Gateway), into all:
// one entry per Gateway, sorted by namespace/name, with Accepted.
func (t *translator) xbackendStatus(counts map[xbackendAncestor]int, all map[PolicyKey]*gwapiv1.PolicyStatus) {
	gws := map[types.NamespacedName][]types.NamespacedName{}
	for a, n := range counts {
		if n > 0 {
			gws[a.xb] = append(gws[a.xb], a.gw)
		}
	}
	for k, list := range gws {
		xb := t.xbackends[k]
		if xb == nil {
			continue
		}
		slices.SortFunc(list, compareNN)
		gen := xb.Generation
		accepted := condition(gwapixv1alpha1.BackendConditionAccepted, true, gwapixv1alpha1.BackendReasonAccepted, "backend is accepted", gen)
		if msg := t.checkXBackend(xb, &ir.Backend{}); msg != "" {
			accepted = condition(gwapixv1alpha1.BackendConditionAccepted, false, gwapiv1.PolicyReasonInvalid, msg, gen)
		}
		out := &gwapiv1.PolicyStatus{Ancestors: []gwapiv1.PolicyAncestorStatus{}}
		for _, g := range list {
			ns := gwapiv1.Namespace(g.Namespace)
			a := gwapiv1.PolicyAncestorStatus{
				AncestorRef:    gwapiv1.ParentReference{Group: ptr(gwapiv1.Group(gwapiv1.GroupName)), Kind: ptr(gwapiv1.Kind("Gateway")), Namespace: &ns, Name: gwapiv1.ObjectName(g.Name)},
				ControllerName: t.controller,
			}
			setCondition(&a.Conditions, accepted)
			out.Ancestors = append(out.Ancestors, a)
		}
		all[PolicyKey{Kind: resources.XBackendKind.Name(), Namespace: k.Namespace, Name: k.Name}] = out
	}
}
