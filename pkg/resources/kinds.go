package resources

import (
	"cmp"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// Object is an object of the snapshot: a Kubernetes object with metadata
// (every pointer type of a list of Resources is one; so is
// controller-runtime's client.Object).
type Object interface {
	metav1.Object
	runtime.Object
}

// Kind is one kind of object the snapshot holds: its name and API group,
// an empty object of it, and its list in a Resources. The registry
// (Kinds) is the one place a kind of the snapshot is listed: Resources.Add
// and Sort, the file loader and the Kubernetes provider's watches and
// index iterate it, so a new kind is a field of Resources and one line of
// the registry.
type Kind interface {
	// Name is the kind's name ("HTTPRoute"), unique in the registry.
	Name() string
	// Group is the kind's API group ("gateway.networking.k8s.io"; "" for
	// the core group).
	Group() string
	// New returns an empty object of the kind (for a watch, or to decode
	// into).
	New() Object
	// Len is the length of the kind's list in r.
	Len(r *Resources) int
	// Objects returns the kind's list in r as a new slice.
	Objects(r *Resources) []Object
	// SetObjects replaces the kind's list in r with objs, in their order.
	// It panics when an object is of another type (a programming error).
	SetObjects(r *Resources, objs []Object)

	add(r *Resources, o runtime.Object) bool
	sort(r *Resources)
}

// TypedKind is a Kind whose objects are of type T, with typed access to
// its list.
type TypedKind[T Object] struct {
	name, group string
	list        func(*Resources) *[]T
}

// Name implements Kind.
func (k *TypedKind[T]) Name() string { return k.name }

// Group implements Kind.
func (k *TypedKind[T]) Group() string { return k.group }

// New implements Kind.
func (k *TypedKind[T]) New() Object {
	return reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
}

// List is the kind's list in r (the Resources' own slice, not a copy).
func (k *TypedKind[T]) List(r *Resources) []T { return *k.list(r) }

// Len implements Kind.
func (k *TypedKind[T]) Len(r *Resources) int { return len(*k.list(r)) }

// Objects implements Kind.
func (k *TypedKind[T]) Objects(r *Resources) []Object {
	l := *k.list(r)
	out := make([]Object, len(l))
	for i, o := range l {
		out[i] = o
	}
	return out
}

// SetObjects implements Kind.
func (k *TypedKind[T]) SetObjects(r *Resources, objs []Object) {
	l := make([]T, len(objs))
	for i, o := range objs {
		l[i] = o.(T)
	}
	*k.list(r) = l
}

func (k *TypedKind[T]) add(r *Resources, o runtime.Object) bool {
	t, ok := o.(T)
	if ok {
		l := k.list(r)
		*l = append(*l, t)
	}
	return ok
}

func (k *TypedKind[T]) sort(r *Resources) {
	slices.SortStableFunc(*k.list(r), func(a, b T) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
}

var registry []Kind

func register[T Object](group, name string, list func(*Resources) *[]T) *TypedKind[T] {
	k := &TypedKind[T]{name: name, group: group, list: list}
	registry = append(registry, k)
	return k
}

// The kinds of the snapshot, in the order of Resources' fields.
var (
	GatewayClassKind     = register(gwapiv1.GroupName, "GatewayClass", func(r *Resources) *[]*gwapiv1.GatewayClass { return &r.GatewayClasses })
	GatewayKind          = register(gwapiv1.GroupName, "Gateway", func(r *Resources) *[]*gwapiv1.Gateway { return &r.Gateways })
	ListenerSetKind      = register(gwapiv1.GroupName, "ListenerSet", func(r *Resources) *[]*gwapiv1.ListenerSet { return &r.ListenerSets })
	HTTPRouteKind        = register(gwapiv1.GroupName, "HTTPRoute", func(r *Resources) *[]*gwapiv1.HTTPRoute { return &r.HTTPRoutes })
	GRPCRouteKind        = register(gwapiv1.GroupName, "GRPCRoute", func(r *Resources) *[]*gwapiv1.GRPCRoute { return &r.GRPCRoutes })
	TLSRouteKind         = register(gwapiv1.GroupName, "TLSRoute", func(r *Resources) *[]*gwapiv1.TLSRoute { return &r.TLSRoutes })
	TCPRouteKind         = register(gwapiv1.GroupName, "TCPRoute", func(r *Resources) *[]*gwapiv1.TCPRoute { return &r.TCPRoutes })
	UDPRouteKind         = register(gwapiv1.GroupName, "UDPRoute", func(r *Resources) *[]*gwapiv1.UDPRoute { return &r.UDPRoutes })
	ReferenceGrantKind   = register(gwapiv1.GroupName, "ReferenceGrant", func(r *Resources) *[]*gwapiv1.ReferenceGrant { return &r.ReferenceGrants })
	BackendTLSPolicyKind = register(gwapiv1.GroupName, "BackendTLSPolicy", func(r *Resources) *[]*gwapiv1.BackendTLSPolicy {
		return &r.BackendTLSPolicies
	})
	ServiceKind                = register("", "Service", func(r *Resources) *[]*corev1.Service { return &r.Services })
	EndpointSliceKind          = register(discoveryv1.GroupName, "EndpointSlice", func(r *Resources) *[]*discoveryv1.EndpointSlice { return &r.EndpointSlices })
	SecretKind                 = register("", "Secret", func(r *Resources) *[]*corev1.Secret { return &r.Secrets })
	ConfigMapKind              = register("", "ConfigMap", func(r *Resources) *[]*corev1.ConfigMap { return &r.ConfigMaps })
	NamespaceKind              = register("", "Namespace", func(r *Resources) *[]*corev1.Namespace { return &r.Namespaces })
	IngressClassKind           = register(networkingv1.GroupName, "IngressClass", func(r *Resources) *[]*networkingv1.IngressClass { return &r.IngressClasses })
	IngressKind                = register(networkingv1.GroupName, "Ingress", func(r *Resources) *[]*networkingv1.Ingress { return &r.Ingresses })
	IngressClassParametersKind = register(v1alpha1.GroupVersion.Group, "IngressClassParameters", func(r *Resources) *[]*v1alpha1.IngressClassParameters {
		return &r.IngressClassParameters
	})
)

// Kinds returns every kind of the snapshot, in the order of Resources'
// fields (a new slice).
func Kinds() []Kind { return slices.Clone(registry) }

// KindNamed returns the kind of the snapshot called name, or nil.
func KindNamed(name string) Kind {
	for _, k := range registry {
		if k.Name() == name {
			return k
		}
	}
	return nil
}
