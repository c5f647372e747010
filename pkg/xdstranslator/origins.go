package xdstranslator

import (
	"sync"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Origins says what each Envoy route of a scope's route configurations was
// made for: the Origin of the IR route of the same name (ir.HTTPRoute
// Origin: an HTTPRoute's or GRPCRoute's rule and match, an Ingress's path).
// It is how what is found wrong in an Envoy route (pkg/xdsvalidate's
// problems, Envoy's NACK of a route configuration: pkg/quarantine) is
// traced back to its object, so that route names need not be read.
//
// Translate makes it from the virtual hosts it renders, and the name map
// only when first asked (Of): most translations never are. Safe for
// concurrent use; a nil *Origins knows no route.
type Origins struct {
	// configs are the rendered virtual hosts of each route configuration,
	// which are not modified once made (vhostMemo).
	configs [][]*vhostMemo
	once    sync.Once
	byName  map[string]ir.Origin
}

// OriginsOf returns the Origins of resources made without Translate (by
// hand, in tests): m maps Envoy route names to their origins.
func OriginsOf(m map[string]ir.Origin) *Origins {
	return &Origins{byName: m}
}

// Of returns the origin of the Envoy route named route, and whether it has
// one: false for a route not made from an IR route with an Origin
// ("misdirected/<host>", an IR made by hand).
func (o *Origins) Of(route string) (ir.Origin, bool) {
	if o == nil {
		return ir.Origin{}, false
	}
	o.once.Do(o.index)
	v, ok := o.byName[route]
	return v, ok
}

// index fills byName from configs. Route names are unique per origin
// (pkg/gatewayapi, pkg/ingress), so a route served in several virtual
// hosts has one entry.
func (o *Origins) index() {
	if len(o.configs) == 0 {
		return
	}
	n := 0
	for _, vhosts := range o.configs {
		for _, m := range vhosts {
			n += len(m.routes.Keys())
		}
	}
	o.byName = make(map[string]ir.Origin, n)
	for _, vhosts := range o.configs {
		for _, m := range vhosts {
			for _, r := range m.routes.Keys() {
				if r.Origin != (ir.Origin{}) {
					o.byName[r.Name] = r.Origin
				}
			}
		}
	}
}
