package status

// The route kinds whose status.parents the writer writes: every kind of
// the route kinds' table (gatewayapi.RouteKinds: HTTPRoute, GRPCRoute,
// TLSRoute, TCPRoute, UDPRoute), through its status hook
// (gatewayapi.RouteKind Parents). A new route kind needs nothing here.

import (
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// newObject returns an empty object of a route kind or of a policy kind
// (gatewayapi.PolicyKinds; kind: the registry's name, Key Kind), or nil
// for another kind.
func newObject(kind string) client.Object {
	if pk := gatewayapi.PolicyKindNamed(kind); pk != nil {
		return pk.New()
	}
	if k := gatewayapi.RouteKindNamed(kind); k != nil {
		return k.Kind.New()
	}
	return nil
}

// getParents returns the status.parents of a route made by newObject, or a
// policy's status.ancestors as parent entries.
func getParents(obj client.Object) []gwapiv1.RouteParentStatus {
	for _, pk := range gatewayapi.PolicyKinds() {
		if as, ok := pk.Ancestors(obj); ok {
			return ancestorsAsParents(as)
		}
	}
	return *routeParents(obj)
}

// setParents sets what getParents reads.
func setParents(obj client.Object, ps []gwapiv1.RouteParentStatus) {
	for _, pk := range gatewayapi.PolicyKinds() {
		if _, ok := pk.Ancestors(obj); ok {
			pk.SetAncestors(obj, parentsAsAncestors(ps))
			return
		}
	}
	*routeParents(obj) = ps
}

func routeParents(obj client.Object) *[]gwapiv1.RouteParentStatus {
	if p := gatewayapi.RouteParents(obj); p != nil {
		return p
	}
	panic(fmt.Sprintf("status: %T is not a route", obj))
}

// Routes returns every route of every kind in res, as objects and their
// status.parents, by kind in the order of gatewayapi.RouteKinds.
func Routes(res *resources.Resources) []RouteObject {
	var out []RouteObject
	for _, k := range gatewayapi.RouteKinds() {
		for _, o := range k.Kind.Objects(res) {
			out = append(out, RouteObject{Kind: k.Kind.Name(), Object: o, Parents: *k.Parents(o)})
		}
	}
	return out
}

// RouteObject is a route of any kind with its live status.parents.
type RouteObject struct {
	// Kind is the route kind's name (gatewayapi.RouteKey Kind).
	Kind    string
	Object  metav1.Object
	Parents []gwapiv1.RouteParentStatus
}

// WithStaleRoutes returns st plus an empty entry for every route in routes
// that still carries a parents entry of controller but that st does not
// mention: the route detached from all of our Gateways (or they vanished),
// and writing the empty entry removes our stale parents. st is not modified.
func WithStaleRoutes(st *gatewayapi.Status, routes []RouteObject, controller gwapiv1.GatewayController) *gatewayapi.Status {
	var known map[gatewayapi.RouteKey]*gwapiv1.RouteStatus
	if st != nil {
		known = st.Routes
	}
	var stale []gatewayapi.RouteKey
	for _, r := range routes {
		k := gatewayapi.RouteKey{Kind: r.Kind, Namespace: r.Object.GetNamespace(), Name: r.Object.GetName()}
		if _, ok := known[k]; !ok && HasOwnParents(r.Parents, controller) {
			stale = append(stale, k)
		}
	}
	out := &gatewayapi.Status{}
	if st != nil {
		*out = *st
	}
	if len(stale) == 0 && out.Routes != nil {
		return out // st's map, shared: neither side modifies it
	}
	out.Routes = make(map[gatewayapi.RouteKey]*gwapiv1.RouteStatus, len(known)+len(stale))
	for k, v := range known {
		out.Routes[k] = v
	}
	for _, k := range stale {
		out.Routes[k] = &gwapiv1.RouteStatus{}
	}
	return out
}

// A policy's status.ancestors are written like a route's
// status.parents (a JSON merge patch of the atomic list, other
// controllers' entries kept): an ancestor entry has a parent entry's shape
// (ancestorRef, controllerName, conditions), so the route helpers compare
// and merge them.

func ancestorsAsParents(as []gwapiv1.PolicyAncestorStatus) []gwapiv1.RouteParentStatus {
	out := make([]gwapiv1.RouteParentStatus, 0, len(as))
	for _, a := range as {
		out = append(out, gwapiv1.RouteParentStatus{ParentRef: a.AncestorRef, ControllerName: a.ControllerName, Conditions: a.Conditions})
	}
	return out
}

func parentsAsAncestors(ps []gwapiv1.RouteParentStatus) []gwapiv1.PolicyAncestorStatus {
	out := make([]gwapiv1.PolicyAncestorStatus, 0, len(ps))
	for _, p := range ps {
		out = append(out, gwapiv1.PolicyAncestorStatus{AncestorRef: p.ParentRef, ControllerName: p.ControllerName, Conditions: p.Conditions})
	}
	return out
}

// PolicyObject is a policy of any registered kind with its live
// status.ancestors.
type PolicyObject struct {
	Kind      string
	Object    metav1.Object
	Ancestors []gwapiv1.PolicyAncestorStatus
}

// Policies returns the objects of policy kind pk (objs, of that kind) as
// PolicyObjects with their status.ancestors.
func Policies(pk gatewayapi.PolicyKind, objs []resources.Object) []PolicyObject {
	out := make([]PolicyObject, 0, len(objs))
	for _, o := range objs {
		if as, ok := pk.Ancestors(o); ok {
			out = append(out, PolicyObject{Kind: pk.Name(), Object: o, Ancestors: as})
		}
	}
	return out
}

// WithStalePolicies returns st plus an empty entry for every policy in
// policies that still carries an ancestors entry of controller but that st
// does not mention (no route of ours reaches it any more): writing it
// removes our stale ancestors. st is modified and returned.
func WithStalePolicies(st *gatewayapi.Status, policies []PolicyObject, controller gwapiv1.GatewayController) *gatewayapi.Status {
	if st.Policies == nil {
		st.Policies = map[gatewayapi.PolicyKey]*gwapiv1.PolicyStatus{}
	} else {
		st.Policies = maps.Clone(st.Policies)
	}
	for _, p := range policies {
		k := gatewayapi.PolicyKey{Kind: p.Kind, Namespace: p.Object.GetNamespace(), Name: p.Object.GetName()}
		if _, ok := st.Policies[k]; !ok && HasOwnParents(ancestorsAsParents(p.Ancestors), controller) {
			st.Policies[k] = &gwapiv1.PolicyStatus{}
		}
	}
	return st
}
