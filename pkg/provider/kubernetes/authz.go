package kubernetes

import (
	"context"
	"net"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/identity"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
)

// FleetScopes is the ScopeTable of a translation: for every Gateway of
// the IR, the fleet that serves its scope (infra.FleetForScope) may
// subscribe to that scope. The identity service issues SVIDs to exactly
// these fleets' ServiceAccounts. It is pure.
func FleetScopes(td spiffeid.TrustDomain, controllerNamespace string, x *ir.IR) xdsserver.ScopeTable {
	if x == nil {
		return xdsserver.ScopeTable{}
	}
	fleets := make([]infra.Fleet, 0, len(x.Gateways))
	for _, g := range x.Gateways {
		gw := &gwapiv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: g.Name},
			Spec:       gwapiv1.GatewaySpec{GatewayClassName: gwapiv1.ObjectName(g.Class)},
		}
		fleets = append(fleets, infra.FleetForScope(controllerNamespace, gw, g.Scope))
	}
	return infra.FleetScopes(td, fleets)
}

// serveIdentity serves the identity service on lis until ctx ends.
func (c *Controller) serveIdentity(ctx context.Context, lis net.Listener, svc *identity.Server) error {
	return svc.Serve(ctx, lis, c.ident.IdentityTLS())
}
