package provisioner

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// plan is what one provisioning pass does, decided from the snapshot and
// its resolution alone (pure); Provisioner.Provision carries it out.
type plan struct {
	// sharedFleets are the classes whose shared fleet is rendered and
	// synced: valid parameters and at least one Gateway in Shared mode.
	sharedFleets []*gwapiv1.GatewayClass
	// prunedClasses are the classes whose shared fleet is deleted: valid
	// parameters and no Gateway that may need it.
	prunedClasses []string
	// shared and dedicated are the Gateways whose own objects are synced,
	// by mode.
	shared, dedicated []*gwapiv1.Gateway
	// departed are Gateways that are no longer ours (their class is not,
	// or is gone) but still have a Service we wrote: everything of theirs
	// is deleted. Gateways that stood for an IngressClass and stand no
	// more (the class left us, or its Gateway moved to another namespace
	// with its GatewayParameters) are among them: only a stub of their
	// namespace and name.
	departed []*gwapiv1.Gateway
}

// makePlan decides a pass. What is being deleted is left to the garbage
// collector (owner references), and what has refused parameters is left as
// it is: a Gateway whose parameters are refused is not served, but its
// fleet is neither changed nor deleted, so fixing the reference brings it
// back without new pods; a class whose parameters are refused keeps its
// shared fleet for the same reason, and so does a class whose only Gateways
// have refused parameters (their mode is unknown).
// signature names what p syncs and prunes: two passes with equal
// signatures do the same syncs.
func (p plan) signature() string {
	var b strings.Builder
	for _, gc := range p.sharedFleets {
		fmt.Fprintf(&b, "fleet %s %s\n", gc.Name, gc.UID)
	}
	for _, c := range p.prunedClasses {
		fmt.Fprintf(&b, "pruned %s\n", c)
	}
	for _, gws := range [][]*gwapiv1.Gateway{p.shared, p.dedicated, p.departed} {
		for _, gw := range gws {
			fmt.Fprintf(&b, "gateway %s/%s %s\n", gw.Namespace, gw.Name, gw.UID)
		}
		b.WriteString("--\n")
	}
	return b.String()
}

func makePlan(res *resources.Resources, r *Resolver) plan {
	var p plan
	sharedIn, refusedIn := map[string]bool{}, map[string]bool{}
	for _, gw := range r.gateways {
		if gw.DeletionTimestamp != nil {
			continue
		}
		if r.Mode(gw) == v1alpha1.ModeDedicated {
			p.dedicated = append(p.dedicated, gw)
			continue
		}
		p.shared = append(p.shared, gw)
		sharedIn[string(gw.Spec.GatewayClassName)] = true
	}
	for _, gw := range r.refused {
		refusedIn[string(gw.Spec.GatewayClassName)] = true
	}
	for _, gc := range res.GatewayClasses {
		if r.classes[gc.Name] != gc || gc.DeletionTimestamp != nil {
			continue // not ours, a duplicate, or going away
		}
		if _, bad := r.invalid.GatewayClasses[gc.Name]; bad {
			continue
		}
		switch {
		case sharedIn[gc.Name]:
			p.sharedFleets = append(p.sharedFleets, gc)
		case !refusedIn[gc.Name]:
			p.prunedClasses = append(p.prunedClasses, gc.Name)
		}
	}
	// Departed Gateways: ours no longer, with a Service of ours left.
	withService := map[types.NamespacedName]bool{}
	for _, s := range res.Services {
		if s != nil && s.Labels[infra.LabelManagedBy] == infra.ManagedByValue && s.Annotations[infra.AnnotationGatewayName] != "" {
			withService[types.NamespacedName{Namespace: s.Namespace, Name: s.Annotations[infra.AnnotationGatewayName]}] = true
		}
	}
	for _, gw := range res.Gateways {
		if gw == nil || gw.DeletionTimestamp != nil {
			continue
		}
		if _, ours := r.classes[string(gw.Spec.GatewayClassName)]; ours {
			continue
		}
		if withService[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}] {
			p.departed = append(p.departed, gw)
		}
	}
	p.departed = append(p.departed, departedClassGateways(res, r)...)
	return p
}

// departedClassGateways are the Gateways that stood for an IngressClass
// (their Service of ours is owned by an IngressClass) and are neither
// served nor refused now: stubs with their namespace and name.
func departedClassGateways(res *resources.Resources, r *Resolver) []*gwapiv1.Gateway {
	current := map[types.NamespacedName]bool{}
	for _, gw := range append(slices.Clone(r.gateways), r.refused...) {
		current[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}] = true
	}
	var out []*gwapiv1.Gateway
	for _, s := range res.Services {
		name := s.Annotations[infra.AnnotationGatewayName]
		if s.Labels[infra.LabelManagedBy] != infra.ManagedByValue || name == "" || current[types.NamespacedName{Namespace: s.Namespace, Name: name}] ||
			!slices.ContainsFunc(s.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "IngressClass" }) {
			continue
		}
		out = append(out, &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: name}})
	}
	return out
}
