package kubernetes

import (
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
// another. Not safe for concurrent use; the zero value is empty.
type interner struct {
	prev map[internKey]metav1.Object
}

type internKey struct {
	kind      string
	namespace string
	name      string
	uid       types.UID
}

// intern replaces, in every list of res that the pipeline lists (Secrets
// and ConfigMaps keep their objects already: refCache), the objects listed
// unchanged by those handed out before, and remembers this snapshot's.
func (in *interner) intern(res *resources.Resources) {
	next := make(map[internKey]metav1.Object, len(in.prev))
	internList(in.prev, next, "GatewayClass", res.GatewayClasses)
	internList(in.prev, next, "Gateway", res.Gateways)
	internList(in.prev, next, "ListenerSet", res.ListenerSets)
	internList(in.prev, next, "HTTPRoute", res.HTTPRoutes)
	internList(in.prev, next, "GRPCRoute", res.GRPCRoutes)
	internList(in.prev, next, "TLSRoute", res.TLSRoutes)
	internList(in.prev, next, "TCPRoute", res.TCPRoutes)
	internList(in.prev, next, "UDPRoute", res.UDPRoutes)
	internList(in.prev, next, "ReferenceGrant", res.ReferenceGrants)
	internList(in.prev, next, "BackendTLSPolicy", res.BackendTLSPolicies)
	internList(in.prev, next, "Service", res.Services)
	internList(in.prev, next, "EndpointSlice", res.EndpointSlices)
	internList(in.prev, next, "Namespace", res.Namespaces)
	in.prev = next
}

func internList[T metav1.Object](prev, next map[internKey]metav1.Object, kind string, list []T) {
	for i, o := range list {
		k := internKey{kind, o.GetNamespace(), o.GetName(), o.GetUID()}
		if old, ok := prev[k].(T); ok && o.GetResourceVersion() != "" && old.GetResourceVersion() == o.GetResourceVersion() {
			list[i] = old
		}
		next[k] = list[i]
	}
}
