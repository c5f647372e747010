// Package xdstranslator renders the IR into Envoy xDS resources, one set per
// proxy scope, ready for go-control-plane's snapshot cache. Translate is
// pure: the same IR gives byte-identical resources, with deterministic names
// and order.
package xdstranslator

import (
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Resources is the xDS configuration of one proxy scope, each list sorted
// by resource name.
type Resources struct {
	Listeners []types.Resource // *listenerv3.Listener
	Routes    []types.Resource // *routev3.RouteConfiguration
	Clusters  []types.Resource // *clusterv3.Cluster
	Endpoints []types.Resource // *endpointv3.ClusterLoadAssignment
	Secrets   []types.Resource // *tlsv3.Secret
}

// Translate renders x into xDS resources per scope (the IR Gateway Scope).
// x must have passed ir.IR.Validate.
func Translate(x *ir.IR) (map[string]*Resources, error) {
	panic("not implemented")
}
