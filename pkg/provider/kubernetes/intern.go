package kubernetes

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// interner hands out, for an object listed again unchanged, the object it
// handed out the first time: the translation cache recognises unchanged
// objects by identity (translate.Cache), and listing an informer cache
// copies every object (controller-runtime's List, even without a deep
// copy, fills a list of values). An object is unchanged while its UID and
// resourceVersion are: the API server gives every write a new
// resourceVersion. Objects without a resourceVersion are never taken for
// another.
//
// The kinds whose status this controller writes (GatewayClass, Gateway,
// ListenerSet, the route kinds, BackendTLSPolicy) are also unchanged
// across a write of their status alone: the same UID and
// metadata.generation (the API server bumps it on every spec change of
// these kinds, whose CRDs have a status subresource), labels, annotations
// and deletionTimestamp. The translation reads none of their status, and
// without this every run after one of our own status writes (a Gateway's
// attachedRoutes, after any route came or went) would translate again
// what depends on that object: for a Gateway, everything. So the status
// of an object handed out may be older than the live one: read live
// status before interning (liveStatus).
//
// Objects are found again by UID, which the API server makes unique
// across kinds and time; objects without one are never taken for
// another. Not safe for concurrent use; the zero value is empty.
type interner struct {
	objects map[types.UID]*interned
	pass    uint64
}

type interned struct {
	obj  metav1.Object
	pass uint64 // the last pass that listed it
}

// intern replaces, in every list of res that the pipeline lists (Secrets
// and ConfigMaps keep their objects already: refCache), the objects listed
// unchanged by those handed out before, and remembers this snapshot's.
func (in *interner) intern(res *resources.Resources) {
	if in.objects == nil {
		in.objects = map[types.UID]*interned{}
	}
	in.pass++
	internList(in, res.GatewayClasses, sameSpec)
	internList(in, res.Gateways, sameSpec)
	internList(in, res.ListenerSets, sameSpec)
	internList(in, res.HTTPRoutes, sameSpec)
	internList(in, res.GRPCRoutes, sameSpec)
	internList(in, res.TLSRoutes, sameSpec)
	internList(in, res.TCPRoutes, sameSpec)
	internList(in, res.UDPRoutes, sameSpec)
	internList(in, res.ReferenceGrants, sameVersion)
	internList(in, res.BackendTLSPolicies, sameSpec)
	internList(in, res.Services, sameVersion)
	internList(in, res.EndpointSlices, sameVersion)
	internList(in, res.Namespaces, sameVersion)
	maps.DeleteFunc(in.objects, func(_ types.UID, e *interned) bool { return e.pass != in.pass })
}

// sameVersion: b is a listed again unchanged (the same resourceVersion).
func sameVersion(a, b metav1.Object) bool {
	return b.GetResourceVersion() != "" && a.GetResourceVersion() == b.GetResourceVersion()
}

// sameSpec: b is a, or a with another status only (the same generation,
// labels, annotations and deletionTimestamp). Objects without a
// generation are compared by resourceVersion.
func sameSpec(a, b metav1.Object) bool {
	if sameVersion(a, b) {
		return true
	}
	return b.GetResourceVersion() != "" && b.GetGeneration() != 0 && a.GetGeneration() == b.GetGeneration() &&
		maps.Equal(a.GetLabels(), b.GetLabels()) && maps.Equal(a.GetAnnotations(), b.GetAnnotations()) &&
		a.GetDeletionTimestamp().Equal(b.GetDeletionTimestamp())
}

func internList[T metav1.Object](in *interner, list []T, same func(a, b metav1.Object) bool) {
	for i, o := range list {
		uid := o.GetUID()
		if uid == "" {
			continue
		}
		e := in.objects[uid]
		if e == nil {
			in.objects[uid] = &interned{obj: o, pass: in.pass}
			continue
		}
		if old, ok := e.obj.(T); ok && old.GetNamespace() == o.GetNamespace() && old.GetName() == o.GetName() && same(old, o) {
			list[i] = old
		} else {
			e.obj = o
		}
		e.pass = in.pass
	}
}
