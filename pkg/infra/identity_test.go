package infra

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// TestFleetScopes: the shared fleet's SVID may subscribe to its class's
// scope only, a dedicated fleet's to its own Gateway's only; two Gateways
// of one class share the shared fleet's entry.
func TestFleetScopes(t *testing.T) {
	td := spiffeid.RequireTrustDomainFromString("cluster.local")
	web, api, other := gateway("apps", "web", 0, 80), gateway("apps", "api", 0, 80), gateway("team", "web", 0, 80)
	var fleets []Fleet
	fleets = append(fleets, FleetForScope("xds-system", web, Scope(v1alpha1.ModeShared, web)))
	fleets = append(fleets, FleetForScope("xds-system", api, Scope(v1alpha1.ModeShared, api)))
	fleets = append(fleets, FleetForScope("xds-system", other, Scope(v1alpha1.ModeDedicated, other)))
	got := map[string][]string{}
	for id, scopes := range FleetScopes(td, fleets) {
		got[id.String()] = scopes
	}
	want := map[string][]string{
		"spiffe://cluster.local/ns/xds-system/sa/envoy-xds": {"gatewayclass/xds"},
		"spiffe://cluster.local/ns/team/sa/web-xds":         {"gateway/team/web"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("FleetScopes (-want +got): %s", d)
	}
}
