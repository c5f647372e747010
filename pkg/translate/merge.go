package translate

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Result is the IR and the status of one run: the Gateway API objects'
// (pkg/gatewayapi) and the Ingresses' (pkg/ingress), merged (merge).
type Result struct {
	// IR holds the Gateways of both translations, sorted by namespace,
	// then name.
	IR *ir.IR
	// Status is the status of the Gateway API objects of ours.
	Status *gatewayapi.Status
	// Ingresses are the status of every Ingress of our IngressClasses, by
	// namespace/name (nil without any class of ours).
	Ingresses map[types.NamespacedName]*ingress.Status
}

// merge joins the Ingress translation ing to the Gateway API translation
// gw of the same snapshot and options, as one fleet serves both:
//
//   - The Gateways that stand for IngressClasses join the IR one by one,
//     in the order of ing.Gateways (the classes' names), after every
//     Gateway API Gateway. Each of their listeners joins its scope unless
//     a listener already there (of a Gateway API Gateway, or of a class
//     Gateway that joined before) binds the same port on an overlapping
//     address: the same address, or the wildcard of the same family, over
//     TCP (one Envoy listener cannot serve both). The one already there
//     keeps the port; the class's listener is left out and its Ingresses
//     say so (ingress.Result.Unbind). A class Gateway left without
//     listeners still joins (an Envoy fleet may serve nothing yet).
//   - The IR's Gateways are then sorted by namespace/name, as
//     pkg/gatewayapi sorts its own (a class Gateway never shares its
//     namespace/name with a Gateway: pkg/ingress refuses to serve the class
//     then).
//   - The statuses stay side by side: Status is gw's, Ingresses ing's.
//
// gw's IR is not modified: with Ingress Gateways the Result has an IR of
// its own (the Gateway API Gateways themselves are shared). ing's Gateways
// and statuses become the Result's.
func merge(gw *gatewayapi.Result, ing *ingress.Result) *Result {
	out := &Result{IR: gw.IR, Status: gw.Status, Ingresses: ing.Status}
	if len(ing.Gateways) == 0 {
		return out
	}
	merged := *gw.IR
	merged.Gateways = slices.Grow(slices.Clip(gw.IR.Gateways), len(ing.Gateways))
	for _, g := range ing.Gateways {
		for _, l := range slices.Clone(g.Listeners) {
			if by := boundBy(merged.Gateways, g.Scope, l); by != "" {
				ing.Unbind(g, l, by)
			}
		}
		merged.Gateways = append(merged.Gateways, g)
	}
	slices.SortStableFunc(merged.Gateways, func(a, b *ir.Gateway) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	out.IR = &merged
	return out
}

// boundBy says which listener of gws in scope binds l's port on an
// address that overlaps l's, over TCP: "port <port> on <address> is bound
// by listener <name> of Gateway <namespace>/<name>"; "" when none does.
func boundBy(gws []*ir.Gateway, scope string, l *ir.Listener) string {
	mine, err := netip.ParseAddr(l.Address)
	if err != nil {
		return ""
	}
	for _, og := range gws {
		if og.Scope != scope {
			continue
		}
		for _, ol := range og.Listeners {
			theirs, err := netip.ParseAddr(ol.Address)
			if ol.Port == l.Port && ol.Protocol != ir.ProtocolUDP && err == nil && overlap(mine, theirs) {
				return fmt.Sprintf("port %d on %s is bound by listener %s of Gateway %s/%s", l.Port, l.Address, ol.Name, og.Namespace, og.Name)
			}
		}
	}
	return ""
}

// overlap says whether two bind addresses take the same traffic: equal, or
// one is the wildcard of the other's family.
func overlap(a, b netip.Addr) bool {
	return a == b || a.Is4() == b.Is4() && (a.IsUnspecified() || b.IsUnspecified())
}
