package kubernetes

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/status"
)

// sameInput says, for a kind of the index, when a new version of an
// object is the same input to the translation as the one the index holds:
// for the kinds whose status this controller writes (status.Writes), a
// write of their status alone (sameSpec), except Ingresses, compared by
// resourceVersion like the kinds whose status we do not write
// (sameVersion); for a Namespace, the same labels (allowedRoutes selectors
// read nothing else).
func sameInput(k resources.Kind) func(a, b metav1.Object) bool {
	switch {
	case k == resources.NamespaceKind:
		return sameLabels
	case k == resources.IngressKind:
		return sameVersion
	case status.Writes(k.Name()):
		return sameSpec
	}
	return sameVersion
}

// objectIndex is the pipeline's copy of the informer caches: per kind, the
// objects sorted by namespace/name, kept up to date by the informers'
// event handlers (handler), so that a run reads what changed since the
// last one instead of listing and sorting every object (snapshot).
//
// The objects are the informers' own (read-only, like a List with
// client.UnsafeDisableDeepCopy). An object that did not change is the
// very object of the last snapshot: translate.Cache recognises unchanged
// objects by identity. So is an object of a kind whose status we write
// (status.Writes) whose status alone changed (sameInput): the translation
// reads none of their status, and without this every run after one of our
// own status writes (a Gateway's attachedRoutes, after any route came or
// went) would translate again what depends on that object: for a Gateway,
// everything. The live
// status of routes and policies, which the pipeline needs to
// remove stale entries of ours, is kept beside (liveStatus).
//
// Safe for concurrent use: handlers run on the informers' goroutines.
type objectIndex struct {
	mu sync.Mutex
	// pending and kinds are by kind name (resources.Kind Name).
	pending map[string]map[types.NamespacedName]resources.Object // nil value: deleted
	kinds   map[string]*kindIndex
}

// kindIndex is one kind's objects.
type kindIndex struct {
	objs []resources.Object // sorted by namespace/name, one per key
	// live are the newest objects where objs keeps an older one (a status
	// write), by key.
	live map[types.NamespacedName]resources.Object
}

func newObjectIndex() *objectIndex {
	return &objectIndex{pending: map[string]map[types.NamespacedName]resources.Object{}, kinds: map[string]*kindIndex{}}
}

// handler records the adds, updates and deletes of kind's objects. A
// Namespace arrives as metadata (PartialObjectMetadata) and is kept as a
// corev1.Namespace.
func (x *objectIndex) handler(k resources.Kind) toolscache.ResourceEventHandler {
	kind := k.Name()
	set := func(obj any, deleted bool) {
		o := objectOf(obj)
		if o == nil {
			return
		}
		if pm, ok := o.(*metav1.PartialObjectMetadata); ok && k == resources.NamespaceKind {
			o = &corev1.Namespace{ObjectMeta: pm.ObjectMeta}
		}
		k := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.pending[kind] == nil {
			x.pending[kind] = map[types.NamespacedName]resources.Object{}
		}
		if deleted {
			x.pending[kind][k] = nil
		} else {
			x.pending[kind][k] = o
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj, false) },
		UpdateFunc: func(_, obj any) { set(obj, false) },
		DeleteFunc: func(obj any) { set(obj, true) },
	}
}

// snapshot applies the changes recorded since the last call and returns
// the objects of every kind of the registry (resources.Kinds) the index
// holds, sorted (Secrets and ConfigMaps are not indexed). The lists are
// new slices; the objects of a kind without changes are the last
// snapshot's.
func (x *objectIndex) snapshot() *resources.Resources {
	x.mu.Lock()
	pending := x.pending
	x.pending = map[string]map[types.NamespacedName]resources.Object{}
	x.mu.Unlock()
	res := &resources.Resources{}
	for _, kind := range resources.Kinds() {
		k := x.kinds[kind.Name()]
		if changes := pending[kind.Name()]; changes != nil {
			if k == nil {
				k = &kindIndex{live: map[types.NamespacedName]resources.Object{}}
				x.kinds[kind.Name()] = k
			}
			k.apply(changes, sameInput(kind))
		}
		if k != nil && len(k.objs) > 0 {
			kind.SetObjects(res, k.objs)
		}
	}
	return res
}

// liveStatus returns the newest status of the routes and policies of res,
// the last snapshot: where the index kept an older copy of an object
// whose status alone changed, the newer object's. Call it before the
// next snapshot. The pipeline calls it after publishing: with our status
// on every route, it looks up every route.
func (x *objectIndex) liveStatus(res *resources.Resources) liveStatus {
	routes := &resources.Resources{}
	for _, k := range gatewayapi.RouteKinds() {
		if k.Kind.Len(res) > 0 {
			k.Kind.SetObjects(routes, withLive(k.Kind.Objects(res), x.kinds[k.Kind.Name()]))
		}
	}
	return liveStatus{
		routes:   status.Routes(routes),
		policies: x.livePolicies(res),
	}
}

// livePolicies returns the policies of every kind of res with their
// newest status (liveStatus).
func (x *objectIndex) livePolicies(res *resources.Resources) []status.PolicyObject {
	var out []status.PolicyObject
	for _, pk := range gatewayapi.PolicyKinds() {
		out = append(out, status.Policies(pk, withLive(pk.Objects(res), x.kinds[pk.Name()]))...)
	}
	return out
}

// apply replaces, inserts and deletes (nil) the changed objects, keeping
// an object whose new version is the same input (same, of the same UID)
// and recording the newer one in live. objs becomes a new slice when
// anything changed (the last snapshot's lists are never modified).
func (k *kindIndex) apply(changes map[types.NamespacedName]resources.Object, same func(a, b metav1.Object) bool) {
	keyOf := func(o resources.Object) types.NamespacedName {
		return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	}
	// kept is the object the index holds for key after the change from
	// old (nil: none) to n (nil: deleted).
	kept := func(key types.NamespacedName, old, n resources.Object) resources.Object {
		delete(k.live, key)
		if n != nil && old != nil && old.GetUID() == n.GetUID() && same(old, n) {
			if old != n {
				k.live[key] = n
			}
			return old
		}
		return n
	}
	// Many changes (the informers' initial adds): rebuild and sort once,
	// rather than inserting one by one.
	if len(changes) > 64 && len(changes) > len(k.objs)/8 {
		byKey := make(map[types.NamespacedName]resources.Object, len(k.objs)+len(changes))
		for _, o := range k.objs {
			byKey[keyOf(o)] = o
		}
		for key, n := range changes {
			if o := kept(key, byKey[key], n); o != nil {
				byKey[key] = o
			} else {
				delete(byKey, key)
			}
		}
		k.objs = slices.SortedFunc(maps.Values(byKey), func(a, b resources.Object) int { return compareNN(keyOf(a), keyOf(b)) })
		return
	}
	objs := slices.Clone(k.objs)
	for key, n := range changes {
		i, found := slices.BinarySearchFunc(objs, key, func(o resources.Object, key types.NamespacedName) int { return compareNN(keyOf(o), key) })
		var old resources.Object
		if found {
			old = objs[i]
		}
		switch o := kept(key, old, n); {
		case o == nil && found:
			objs = slices.Delete(objs, i, i+1)
		case o == nil:
		case found:
			objs[i] = o
		default:
			objs = slices.Insert(objs, i, o)
		}
	}
	k.objs = objs
}

// withLive returns list (k's objects, typed) with the newest object of
// each key that k keeps an older one of; list itself when there is none.
func withLive[T metav1.Object](list []T, k *kindIndex) []T {
	if k == nil || len(k.live) == 0 {
		return list
	}
	out := slices.Clone(list)
	for i, o := range out {
		if n, ok := k.live[types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}]; ok {
			out[i] = n.(T)
		}
	}
	return out
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

// sameLabels: b is a with the same labels and deletionTimestamp (a
// Namespace: what the translation reads of it).
func sameLabels(a, b metav1.Object) bool {
	return b.GetResourceVersion() != "" && maps.Equal(a.GetLabels(), b.GetLabels()) &&
		a.GetDeletionTimestamp().Equal(b.GetDeletionTimestamp())
}

func compareNN(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
