package kubernetes

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/status"
)

// The kinds of the index: every kind ListResources lists.
const (
	ixGatewayClass           = "GatewayClass"
	ixGateway                = "Gateway"
	ixListenerSet            = "ListenerSet"
	ixHTTPRoute              = "HTTPRoute"
	ixGRPCRoute              = "GRPCRoute"
	ixTLSRoute               = "TLSRoute"
	ixTCPRoute               = "TCPRoute"
	ixUDPRoute               = "UDPRoute"
	ixReferenceGrant         = "ReferenceGrant"
	ixBackendTLSPolicy       = "BackendTLSPolicy"
	ixService                = "Service"
	ixEndpointSlice          = "EndpointSlice"
	ixNamespace              = "Namespace"
	ixIngressClass           = "IngressClass"
	ixIngress                = "Ingress"
	ixIngressClassParameters = "IngressClassParameters"
)

// sameInput says, per kind, when a new version of an object is the same
// input to the translation as the one the index holds: for the kinds whose
// status this controller writes, a write of their status alone (sameSpec);
// for a Namespace, the same labels (allowedRoutes selectors read nothing
// else); for the other kinds, the same resourceVersion.
var sameInput = map[string]func(a, b metav1.Object) bool{
	ixGatewayClass: sameSpec, ixGateway: sameSpec, ixListenerSet: sameSpec, ixHTTPRoute: sameSpec, ixGRPCRoute: sameSpec,
	ixTLSRoute: sameSpec, ixTCPRoute: sameSpec, ixUDPRoute: sameSpec,
	ixNamespace: sameLabels,
}

// Every policy kind's status is ours to write: sameSpec.
func init() {
	for _, pk := range gatewayapi.PolicyKinds() {
		sameInput[pk.Name()] = sameSpec
	}
}

// objectIndex is the pipeline's copy of the informer caches: per kind, the
// objects sorted by namespace/name, kept up to date by the informers'
// event handlers (handler), so that a run reads what changed since the
// last one instead of listing and sorting every object (snapshot).
//
// The objects are the informers' own (read-only, like a List with
// client.UnsafeDisableDeepCopy). An object that did not change is the
// very object of the last snapshot: translate.Cache recognises unchanged
// objects by identity. So is an object of statusWritten whose status
// alone changed (sameInput): the translation reads none of their status,
// and without this every run after one of our own status writes (a
// Gateway's attachedRoutes, after any route came or went) would translate
// again what depends on that object: for a Gateway, everything. The live
// status of routes and policies, which the pipeline needs to
// remove stale entries of ours, is kept beside (liveStatus).
//
// Safe for concurrent use: handlers run on the informers' goroutines.
type objectIndex struct {
	mu      sync.Mutex
	pending map[string]map[types.NamespacedName]metav1.Object // nil value: deleted
	kinds   map[string]*kindIndex
}

// kindIndex is one kind's objects.
type kindIndex struct {
	objs []metav1.Object // sorted by namespace/name, one per key
	// live are the newest objects where objs keeps an older one (a status
	// write), by key.
	live map[types.NamespacedName]metav1.Object
}

func newObjectIndex() *objectIndex {
	return &objectIndex{pending: map[string]map[types.NamespacedName]metav1.Object{}, kinds: map[string]*kindIndex{}}
}

// handler records kind's adds, updates and deletes. A Namespace arrives as
// metadata (PartialObjectMetadata) and is kept as a corev1.Namespace.
func (x *objectIndex) handler(kind string) toolscache.ResourceEventHandler {
	set := func(obj any, deleted bool) {
		o := objectOf(obj)
		if o == nil {
			return
		}
		if pm, ok := o.(*metav1.PartialObjectMetadata); ok && kind == ixNamespace {
			o = &corev1.Namespace{ObjectMeta: pm.ObjectMeta}
		}
		k := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.pending[kind] == nil {
			x.pending[kind] = map[types.NamespacedName]metav1.Object{}
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
// the objects of every kind, sorted (Secrets and ConfigMaps are not
// indexed). The lists are new slices; the objects of a kind without
// changes are the last snapshot's.
func (x *objectIndex) snapshot() *resources.Resources {
	x.mu.Lock()
	pending := x.pending
	x.pending = map[string]map[types.NamespacedName]metav1.Object{}
	x.mu.Unlock()
	for kind, changes := range pending {
		k := x.kinds[kind]
		if k == nil {
			k = &kindIndex{live: map[types.NamespacedName]metav1.Object{}}
			x.kinds[kind] = k
		}
		same := sameInput[kind]
		if same == nil {
			same = sameVersion
		}
		k.apply(changes, same)
	}
	res := &resources.Resources{
		GatewayClasses:         typed[*gwapiv1.GatewayClass](x.kinds[ixGatewayClass]),
		Gateways:               typed[*gwapiv1.Gateway](x.kinds[ixGateway]),
		ListenerSets:           typed[*gwapiv1.ListenerSet](x.kinds[ixListenerSet]),
		HTTPRoutes:             typed[*gwapiv1.HTTPRoute](x.kinds[ixHTTPRoute]),
		GRPCRoutes:             typed[*gwapiv1.GRPCRoute](x.kinds[ixGRPCRoute]),
		TLSRoutes:              typed[*gwapiv1.TLSRoute](x.kinds[ixTLSRoute]),
		TCPRoutes:              typed[*gwapiv1.TCPRoute](x.kinds[ixTCPRoute]),
		UDPRoutes:              typed[*gwapiv1.UDPRoute](x.kinds[ixUDPRoute]),
		ReferenceGrants:        typed[*gwapiv1.ReferenceGrant](x.kinds[ixReferenceGrant]),
		BackendTLSPolicies:     typed[*gwapiv1.BackendTLSPolicy](x.kinds[ixBackendTLSPolicy]),
		Services:               typed[*corev1.Service](x.kinds[ixService]),
		EndpointSlices:         typed[*discoveryv1.EndpointSlice](x.kinds[ixEndpointSlice]),
		Namespaces:             typed[*corev1.Namespace](x.kinds[ixNamespace]),
		IngressClasses:         typed[*networkingv1.IngressClass](x.kinds[ixIngressClass]),
		Ingresses:              typed[*networkingv1.Ingress](x.kinds[ixIngress]),
		IngressClassParameters: typed[*v1alpha1.IngressClassParameters](x.kinds[ixIngressClassParameters]),
	}
	return res
}

// liveStatus returns the newest status of the routes and policies of res,
// the last snapshot: where the index kept an older copy of an object
// whose status alone changed, the newer object's. Call it before the
// next snapshot. The pipeline calls it after publishing: with our status
// on every route, it looks up every route.
func (x *objectIndex) liveStatus(res *resources.Resources) liveStatus {
	return liveStatus{
		routes: status.Routes(&resources.Resources{
			HTTPRoutes: withLive(res.HTTPRoutes, x.kinds[ixHTTPRoute]),
			GRPCRoutes: withLive(res.GRPCRoutes, x.kinds[ixGRPCRoute]),
			TLSRoutes:  withLive(res.TLSRoutes, x.kinds[ixTLSRoute]),
			TCPRoutes:  withLive(res.TCPRoutes, x.kinds[ixTCPRoute]),
			UDPRoutes:  withLive(res.UDPRoutes, x.kinds[ixUDPRoute]),
		}),
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
func (k *kindIndex) apply(changes map[types.NamespacedName]metav1.Object, same func(a, b metav1.Object) bool) {
	keyOf := func(o metav1.Object) types.NamespacedName {
		return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	}
	// kept is the object the index holds for key after the change from
	// old (nil: none) to n (nil: deleted).
	kept := func(key types.NamespacedName, old, n metav1.Object) metav1.Object {
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
		byKey := make(map[types.NamespacedName]metav1.Object, len(k.objs)+len(changes))
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
		k.objs = slices.SortedFunc(maps.Values(byKey), func(a, b metav1.Object) int { return compareNN(keyOf(a), keyOf(b)) })
		return
	}
	objs := slices.Clone(k.objs)
	for key, n := range changes {
		i, found := slices.BinarySearchFunc(objs, key, func(o metav1.Object, key types.NamespacedName) int { return compareNN(keyOf(o), key) })
		var old metav1.Object
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

// typed returns k's objects as a list of T (nil for an empty or missing
// kind).
func typed[T metav1.Object](k *kindIndex) []T {
	if k == nil || len(k.objs) == 0 {
		return nil
	}
	out := make([]T, len(k.objs))
	for i, o := range k.objs {
		out[i] = o.(T)
	}
	return out
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
