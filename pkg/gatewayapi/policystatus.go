package gatewayapi

// The status of policies, written one way for every policy kind
// (policy.go): status.ancestors holds one PolicyAncestorStatus per Gateway
// of ours the policy reaches, with Accepted and, for kinds that resolve
// references, ResolvedRefs. And the registry as the status writer and the
// providers see it (PolicyKind).

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// PolicyKey names one policy object: its kind ("BackendTLSPolicy") and
// namespace/name (the IR's ObjectKey, as RouteKey).
type PolicyKey = ir.ObjectKey

// PolicyKind is a registered policy kind as the status writer and the
// providers use it.
type PolicyKind interface {
	// Name is the kind's name, its resources.Kind name ("BackendTLSPolicy").
	Name() string
	// New returns an empty object of the kind.
	New() resources.Object
	// Objects returns the kind's objects in r (nil ones left out), in r's
	// order, as a new slice.
	Objects(r *resources.Resources) []resources.Object
	// Ancestors returns obj's status.ancestors, and false when obj is not
	// of the kind.
	Ancestors(obj resources.Object) ([]gwapiv1.PolicyAncestorStatus, bool)
	// SetAncestors sets obj's status.ancestors; it reports false, and
	// sets nothing, when obj is not of the kind.
	SetAncestors(obj resources.Object, as []gwapiv1.PolicyAncestorStatus) bool
	// References returns the Secrets and ConfigMaps obj reads, which a
	// provider that fetches referenced objects only must fetch.
	References(obj resources.Object) (secrets, configMaps []types.NamespacedName)
}

// PolicyKinds returns every registered policy kind, in the order of
// registration, then XBackend, whose status.ancestors are written the same
// way and whose references are fetched the same way (xbackendstatus.go):
// a new slice.
func PolicyKinds() []PolicyKind {
	out := make([]PolicyKind, 0, len(policyKinds)+1)
	for _, k := range policyKinds {
		out = append(out, k)
	}
	return append(out, xbackendStatusKind{})
}

// PolicyKindNamed returns the kind of PolicyKinds called name, or nil.
func PolicyKindNamed(name string) PolicyKind {
	for _, k := range PolicyKinds() {
		if k.Name() == name {
			return k
		}
	}
	return nil
}

// Name implements PolicyKind.
func (k *policyKind) Name() string { return k.name }

// New implements PolicyKind.
func (k *policyKind) New() resources.Object { return k.newObject() }

// Objects implements PolicyKind.
func (k *policyKind) Objects(r *resources.Resources) []resources.Object { return k.objects(r) }

// Ancestors implements PolicyKind.
func (k *policyKind) Ancestors(obj resources.Object) ([]gwapiv1.PolicyAncestorStatus, bool) {
	if st := k.status(obj); st != nil {
		return st.Ancestors, true
	}
	return nil, false
}

// SetAncestors implements PolicyKind.
func (k *policyKind) SetAncestors(obj resources.Object, as []gwapiv1.PolicyAncestorStatus) bool {
	if st := k.status(obj); st != nil {
		st.Ancestors = as
		return true
	}
	return false
}

// References implements PolicyKind.
func (k *policyKind) References(obj resources.Object) ([]types.NamespacedName, []types.NamespacedName) {
	return k.references(obj)
}

// policyConditionResolvedRefs is the ResolvedRefs condition of a policy
// ancestor, and its reason when true (BackendTLSPolicy's constants, the
// one kind of the Gateway API that names them).
const (
	policyConditionResolvedRefs = gwapiv1.BackendTLSPolicyConditionResolvedRefs
	policyReasonResolvedRefs    = gwapiv1.BackendTLSPolicyReasonResolvedRefs
)

// policyStatus renders status.ancestors of every policy that reaches a
// Gateway of ours: one entry per Gateway, sorted by namespace/name, with
// Accepted and, for kinds with resolvedRefs, ResolvedRefs. A policy that
// reaches none has no entry.
func (t *translator) policyStatus() map[PolicyKey]*gwapiv1.PolicyStatus {
	all := map[PolicyKey]*gwapiv1.PolicyStatus{}
	for _, st := range t.policies {
		var gws []types.NamespacedName
		for g, n := range st.ancestors {
			if n > 0 {
				gws = append(gws, g)
			}
		}
		if len(gws) == 0 {
			continue
		}
		slices.SortFunc(gws, compareNN)
		gen := st.obj.GetGeneration()
		out := &gwapiv1.PolicyStatus{Ancestors: []gwapiv1.PolicyAncestorStatus{}}
		for _, g := range gws {
			ns := gwapiv1.Namespace(g.Namespace)
			a := gwapiv1.PolicyAncestorStatus{
				AncestorRef:    gwapiv1.ParentReference{Group: ptr(gwapiv1.Group(gwapiv1.GroupName)), Kind: ptr(gwapiv1.Kind("Gateway")), Namespace: &ns, Name: gwapiv1.ObjectName(g.Name)},
				ControllerName: t.controller,
			}
			if p := st.notAccepted; p != nil {
				setCondition(&a.Conditions, condition(gwapiv1.PolicyConditionAccepted, false, p.reason, p.msg, gen))
			} else {
				setCondition(&a.Conditions, condition(gwapiv1.PolicyConditionAccepted, true, gwapiv1.PolicyReasonAccepted, cmp.Or(st.acceptedMsg, "policy is accepted"), gen))
			}
			if st.kind.resolvedRefs {
				if p := st.refs; p != nil {
					setCondition(&a.Conditions, condition(policyConditionResolvedRefs, false, p.reason, p.msg, gen))
				} else {
					setCondition(&a.Conditions, condition(policyConditionResolvedRefs, true, policyReasonResolvedRefs, "all references resolved", gen))
				}
			}
			out.Ancestors = append(out.Ancestors, a)
		}
		all[PolicyKey{Kind: st.kind.name, Namespace: st.obj.GetNamespace(), Name: st.obj.GetName()}] = out
	}
	return all
}
