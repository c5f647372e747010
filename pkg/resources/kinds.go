package resources

import (
	"cmp"
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gwapixv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

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
// (Kinds, registered in resources.go beside the lists) is the one place a
// kind of the snapshot is listed: Resources.Add
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
	// Get returns the object namespace/name of the kind's list in r, which
	// must be sorted (Resources.Sort): the first of several with that name.
	Get(r *Resources, namespace, name string) (Object, bool)
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

// Get implements Kind.
func (k *TypedKind[T]) Get(r *Resources, namespace, name string) (Object, bool) {
	l := *k.list(r)
	i, ok := slices.BinarySearchFunc(l, [2]string{namespace, name}, func(o T, key [2]string) int {
		return cmp.Or(cmp.Compare(o.GetNamespace(), key[0]), cmp.Compare(o.GetName(), key[1]))
	})
	if !ok {
		return nil, false
	}
	return l[i], true
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

// AddToScheme registers in s the API groups of every kind of the snapshot
// (client-go's built-in groups, the Gateway API's v1 and v1beta1, its
// experimental gateway.networking.x-k8s.io v1alpha1, ours),
// so that a provider can decode and watch every kind of the registry.
// It returns the first registration error.
func AddToScheme(s *runtime.Scheme) error {
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gwapiv1.Install, gwapiv1beta1.Install, v1alpha1.AddToScheme, gwapixv1a1.Install} {
		if err := add(s); err != nil {
			return err
		}
	}
	return nil
}
