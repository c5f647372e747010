package gatewayapi

// The assembly of a translation's Result from a Cache: the IR of every
// Gateway served and the status of every object.

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// result assembles the IR (Gateways sorted by namespace/name, each
// listener's routes in precedence order) and the status of every object.
// A Gateway that is not
// accepted because none of its listeners is stays in the IR without
// listeners: its scope exists (a Dedicated fleet, whose ServiceAccount
// gets an SVID, runs and serves nothing) until a listener becomes valid.
// Only a Gateway refused as a whole (its parametersRef or spec.addresses)
// is left out: it is not served.
func (c *Cache) result() *Result {
	t := c.t
	st := &Status{
		GatewayClasses: c.classes,
		Gateways:       map[types.NamespacedName]*gwapiv1.GatewayStatus{},
		ListenerSets:   map[types.NamespacedName]*gwapiv1.ListenerSetStatus{},
		Routes:         c.routeStatus,
	}
	c.statusShared = true
	for _, k := range slices.SortedFunc(maps.Keys(c.sliceWarnings), compareNN) {
		st.Warnings = append(st.Warnings, c.sliceWarnings[k])
	}
	st.Warnings = append(st.Warnings, c.gatewayWarnings...)
	for _, k := range slices.SortedFunc(maps.Keys(c.warned), compareRouteKeys) {
		st.Warnings = append(st.Warnings, c.routes[k].warnings...)
	}
	out := &ir.IR{}
	var built []builtListener
	for _, gs := range t.gateways {
		st.Gateways[gs.nn] = gs.buildStatus()
		if gs.refused != nil || !gs.accepted() && (gs.obj.Namespace == "" || gs.obj.Name == "") {
			continue // refused, or a malformed object with nothing to serve
		}
		g := &ir.Gateway{
			Namespace: gs.obj.Namespace,
			Name:      gs.obj.Name,
			Class:     string(gs.obj.Spec.GatewayClassName),
			Scope:     gs.scope,
		}
		for _, ls := range gs.allListeners() {
			if !ls.programmed() {
				continue
			}
			ls.refresh()
			l := ls.irListener()
			t.listenerPolicies(ls, l)
			l.HTTPRoutes, l.L4Routes = ls.irRoutes, ls.irL4
			g.Listeners = append(g.Listeners, l)
			built = append(built, builtListener{gs.scope, ls, l})
		}
		out.Gateways = append(out.Gateways, g)
	}
	// Policies' status after the listeners: a ListenerPolicy that
	// disagrees with another on a shared port is Conflicted there.
	t.settleSharedPorts(built)
	st.Policies = t.policyStatus()
	t.xbackendStatus(c.xbAncestors, st.Policies)
	for _, s := range t.listenerSets {
		st.ListenerSets[s.nn] = s.buildStatus()
	}
	return &Result{IR: out, Status: st}
}
