package gatewayapi

// The route kinds: one table (routeKindTable) holds what is a route kind's
// own and what the shared machinery needs of it. The incremental
// translation (incremental.go) iterates it to find the routes of a
// snapshot and what changed, in the order of a full translation;
// attachment (routes.go readRoute) dispatches through it to the kind's
// reader; listeners (listeners.go) take from it the kinds each protocol
// accepts; pkg/status writes status.parents through its hooks; and the
// Kubernetes provider (pkg/provider/kubernetes) watches, indexes, lists
// and counts the kinds of the snapshot's registry (resources.Kinds) with
// the status of the route kinds written by the writer.
//
// Adding a route kind:
//  1. pkg/resources/resources.go: its list in Resources and its line of
//     the registry;
//  2. here: its entry in routeKindTable (registry kind, reader, status
//     hook, listener protocols);
//  3. its reader in a file of its own: its parents, hostnames and rules
//     as a routeState (newRoute, translateRules, as httproute.go or
//     l4routes.go do);
//  4. the chart's RBAC (charts/xds-controller/templates/_helpers.tpl):
//     get, list and watch the kind, and patch its status.
//
// pkg/xdstranslator renders the IR, not kinds: a kind whose rules are HTTP
// routes or L4 routes of the IR needs nothing there.

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// The names of the route kinds and of the other kinds that route keys and
// messages name: the registry's (resources.Kind Name), spelled once there.
var (
	KindHTTPRoute = resources.HTTPRouteKind.Name()
	KindGRPCRoute = resources.GRPCRouteKind.Name()
	KindTLSRoute  = resources.TLSRouteKind.Name()
	KindTCPRoute  = resources.TCPRouteKind.Name()
	KindUDPRoute  = resources.UDPRouteKind.Name()
	// KindIngress (networking.k8s.io/v1) is translated by pkg/ingress,
	// which resolves its backends with Refs.
	KindIngress = resources.IngressKind.Name()
)

// RouteKind is one route kind of the Gateway API: its kind in the
// snapshot's registry and what the translation and the status writer do
// with objects of it.
type RouteKind struct {
	// Kind is the kind in the snapshot's registry: its name ("HTTPRoute",
	// RouteKey Kind), API group, an empty object and its list in a
	// Resources.
	Kind resources.Kind
	// protocols are the listener protocols that accept the kind (a
	// listener's supportedKinds; Gateway listener protocol).
	protocols []gwapiv1.ProtocolType
	// prefix is the kind's name lower-cased, as the names of its IR
	// routes start ("httproute/default/web/rule/0/match/0").
	prefix string
	// order is the kind's place in a full translation (its index in
	// routeKindTable; compareRouteKeys).
	order int
	// read reads one object of the kind (the kind's reader; readRoute).
	read func(t *translator, obj any) *routeState
	// parents is the object's status.parents, nil when obj is not of the
	// kind.
	parents func(obj any) *[]gwapiv1.RouteParentStatus
	// each appends every object of the kind in res to dst, as a route
	// object to translate (eachObject); diff appends every object new,
	// gone or changed from prev to cur (diffSorted), and reports false
	// when cur's list is not sorted.
	each func(res *resources.Resources, dst *[]routeChange)
	diff func(prev, cur *resources.Resources, dst *[]routeChange) bool
}

// routeKindTable are the route kinds in the order of a full translation
// (HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute), which is also the
// order of their status.
var routeKindTable = numbered(
	routeKind(resources.HTTPRouteKind, (*translator).httpRoute,
		func(o *gwapiv1.HTTPRoute) *[]gwapiv1.RouteParentStatus { return &o.Status.Parents },
		gwapiv1.HTTPProtocolType, gwapiv1.HTTPSProtocolType),
	routeKind(resources.GRPCRouteKind, (*translator).grpcRoute,
		func(o *gwapiv1.GRPCRoute) *[]gwapiv1.RouteParentStatus { return &o.Status.Parents },
		gwapiv1.HTTPProtocolType, gwapiv1.HTTPSProtocolType),
	// TLS listeners take TLSRoutes in both tls modes.
	routeKind(resources.TLSRouteKind, (*translator).tlsRoute,
		func(o *gwapiv1.TLSRoute) *[]gwapiv1.RouteParentStatus { return &o.Status.Parents },
		gwapiv1.TLSProtocolType),
	routeKind(resources.TCPRouteKind, (*translator).tcpRoute,
		func(o *gwapiv1.TCPRoute) *[]gwapiv1.RouteParentStatus { return &o.Status.Parents },
		gwapiv1.TCPProtocolType),
	routeKind(resources.UDPRouteKind, (*translator).udpRoute,
		func(o *gwapiv1.UDPRoute) *[]gwapiv1.RouteParentStatus { return &o.Status.Parents },
		gwapiv1.UDPProtocolType),
)

// routeKind makes the table entry of the registry kind k, read by read,
// whose status.parents parents returns, accepted by listeners of
// protocols. Its iteration over a snapshot is typed (no allocation per
// object).
func routeKind[E any, T interface {
	*E
	resources.Object
}](k *resources.TypedKind[T], read func(*translator, T) *routeState, parents func(T) *[]gwapiv1.RouteParentStatus, protocols ...gwapiv1.ProtocolType) *RouteKind {
	name := k.Name()
	return &RouteKind{
		Kind:      k,
		protocols: protocols,
		prefix:    strings.ToLower(name),
		read:      func(t *translator, obj any) *routeState { return read(t, obj.(T)) },
		parents: func(obj any) *[]gwapiv1.RouteParentStatus {
			if o, ok := obj.(T); ok && o != nil {
				return parents(o)
			}
			return nil
		},
		each: func(res *resources.Resources, dst *[]routeChange) {
			eachObject(k.List(res), func(n types.NamespacedName, o T) {
				*dst = append(*dst, routeChange{RouteKey{Kind: name, Namespace: n.Namespace, Name: n.Name}, o, true})
			})
		},
		diff: func(prev, cur *resources.Resources, dst *[]routeChange) bool {
			return diffSorted(k.List(prev), k.List(cur), func(n types.NamespacedName, _, o T) {
				var obj any // nil, not a nil T, for an object gone
				if o != nil {
					obj = o
				}
				*dst = append(*dst, routeChange{RouteKey{Kind: name, Namespace: n.Namespace, Name: n.Name}, obj, true})
			})
		},
	}
}

func numbered(kinds ...*RouteKind) []*RouteKind {
	for i, k := range kinds {
		k.order = i
	}
	return kinds
}

// RouteKinds returns the route kinds, in the order of a full translation
// (a new slice of the package's entries, which must not be modified).
func RouteKinds() []*RouteKind { return slices.Clone(routeKindTable) }

// RouteKindNamed returns the route kind called name ("HTTPRoute"), or nil.
func RouteKindNamed(name string) *RouteKind {
	for _, k := range routeKindTable {
		if k.Kind.Name() == name {
			return k
		}
	}
	return nil
}

// Parents returns the status.parents of obj, an object of the kind (nil
// for another object): the status hook through which pkg/status reads and
// writes a route's parents.
func (k *RouteKind) Parents(obj resources.Object) *[]gwapiv1.RouteParentStatus {
	return k.parents(obj)
}

// RouteParents returns the status.parents of obj, a route of any kind of
// RouteKinds, or nil when obj is none.
func RouteParents(obj resources.Object) *[]gwapiv1.RouteParentStatus {
	for _, k := range routeKindTable {
		if p := k.parents(obj); p != nil {
			return p
		}
	}
	return nil
}

// kindsOfProtocol returns the route kinds listeners of each protocol
// accept, as supportedKinds lists them, in the table's order.
func kindsOfProtocol() map[gwapiv1.ProtocolType][]gwapiv1.RouteGroupKind {
	out := map[gwapiv1.ProtocolType][]gwapiv1.RouteGroupKind{}
	for _, k := range routeKindTable {
		for _, p := range k.protocols {
			out[p] = append(out[p], gwapiv1.RouteGroupKind{Group: ptr(gwapiv1.Group(k.Kind.Group())), Kind: gwapiv1.Kind(k.Kind.Name())})
		}
	}
	return out
}
