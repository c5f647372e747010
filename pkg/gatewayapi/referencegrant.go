package gatewayapi

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// grantAllows says whether a ReferenceGrant in toNS lets objects of
// fromGroup/fromKind in fromNS refer to the toGroup/toKind object toName
// (ReferenceGrant spec.from and spec.to; a "to" entry without a name
// allows every object of its kind).
func (t *translator) grantAllows(fromGroup, fromKind, fromNS, toGroup, toKind, toNS, toName string) bool {
	t.recordRead(depKey{referenceGrantKind, nn(toNS, "")})
	for _, g := range t.grants[toNS] {
		from := slices.ContainsFunc(g.Spec.From, func(f gwapiv1.ReferenceGrantFrom) bool {
			return string(f.Group) == fromGroup && string(f.Kind) == fromKind && string(f.Namespace) == fromNS
		})
		if !from {
			continue
		}
		to := slices.ContainsFunc(g.Spec.To, func(to gwapiv1.ReferenceGrantTo) bool {
			return string(to.Group) == toGroup && string(to.Kind) == toKind && (to.Name == nil || *to.Name == "" || string(*to.Name) == toName)
		})
		if to {
			return true
		}
	}
	return false
}

// namespaceLabels are the labels of namespace ns as listener selectors see
// them: the Namespace object's labels plus kubernetes.io/metadata.name,
// which the API server sets on every namespace. A namespace with no object
// in the snapshot has no labels at all.
func (t *translator) namespaceLabels(ns string) labels.Set {
	t.recordRead(depKey{namespaceKind, nn("", ns)})
	n := t.namespaces[ns]
	if n == nil {
		return nil
	}
	set := labels.Set{}
	for k, v := range n.Labels {
		set[k] = v
	}
	set["kubernetes.io/metadata.name"] = ns
	return set
}
