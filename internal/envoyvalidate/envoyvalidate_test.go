package envoyvalidate_test

import (
	"github.com/xds-controller/xds-controller/internal/testenvoy"

	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xds-controller/xds-controller/internal/envoyvalidate"
	"github.com/xds-controller/xds-controller/internal/xdstest"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

func validateAll(t *testing.T, bin string, x map[string]*xdstranslator.Resources) {
	t.Helper()
	for _, scope := range slices.Sorted(maps.Keys(x)) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := envoyvalidate.Validate(ctx, bin, x[scope])
		cancel()
		if err != nil {
			t.Errorf("scope %s: %v", scope, err)
		}
	}
}

// TestFeatureIR loads an IR that uses every feature of the xDS translator
// into Envoy.
func TestFeatureIR(t *testing.T) {
	bin := testenvoy.Path(t)
	x := xdstest.FeatureIR()
	if err := x.Validate(); err != nil {
		t.Fatalf("feature IR is invalid: %v", err)
	}
	out, err := xdstranslator.Translate(x)
	if err != nil {
		t.Fatal(err)
	}
	validateAll(t, bin, out)
}

// TestRejects makes sure a configuration Envoy cannot load fails with
// Envoy's message: a regex that RE2 refuses passes ValidateAll but not
// Envoy.
func TestRejects(t *testing.T) {
	bin := testenvoy.Path(t)
	x := xdstest.ScaleIR(1)
	x.Gateways[0].Listeners[0].HTTPRoutes[0].Match.Path = &ir.StringMatch{Type: ir.MatchRegex, Value: "/(["}
	out, err := xdstranslator.Translate(x)
	if err != nil {
		t.Fatal(err)
	}
	err = envoyvalidate.Validate(context.Background(), bin, out["gatewayclass/xds"])
	if err == nil || !strings.Contains(err.Error(), "missing ]") {
		t.Fatalf("want Envoy's RE2 error, got %v", err)
	}
}

// TestStaticReferences reports references that Envoy would leave waiting
// in dynamic mode.
func TestStaticReferences(t *testing.T) {
	out, err := xdstranslator.Translate(xdstest.ScaleIR(2))
	if err != nil {
		t.Fatal(err)
	}
	r := *out["gatewayclass/xds"]
	r.Endpoints = r.Endpoints[:1]
	r.Routes = nil
	_, err = envoyvalidate.Static(&r)
	for _, want := range []string{"no ClusterLoadAssignment", "route configuration \"listener/0.0.0.0/8080\" is not defined"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error with %q, got %v", want, err)
		}
	}
}

// TestStaticSecretReferences reports SDS secrets that are not defined,
// those of listeners and those of clusters (backend client certificates).
func TestStaticSecretReferences(t *testing.T) {
	out, err := xdstranslator.Translate(xdstest.FeatureIR())
	if err != nil {
		t.Fatal(err)
	}
	r := *out["gatewayclass/xds"]
	r.Secrets = nil
	_, err = envoyvalidate.Static(&r)
	for _, want := range []string{
		`filter chain https/default/gw/https: secret "default/example-tls" is not defined`,
		`cluster service/default/secure/443/client-certificate/default/backend-client: secret "default/backend-client" is not defined`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error with %q, got %v", want, err)
		}
	}
}

// TestRejectsDeprecated refuses a configuration that only loads with a
// deprecated field (HeaderValueOption.append).
func TestRejectsDeprecated(t *testing.T) {
	bin := testenvoy.Path(t)
	out, err := xdstranslator.Translate(xdstest.ScaleIR(1))
	if err != nil {
		t.Fatal(err)
	}
	r := out["gatewayclass/xds"]
	rc := r.Routes[0].(*routev3.RouteConfiguration)
	rc.VirtualHosts[0].Routes[0].RequestHeadersToAdd[0].Append = wrapperspb.Bool(true)
	rc.VirtualHosts[0].Routes[0].RequestHeadersToAdd[0].AppendAction = 0
	err = envoyvalidate.Validate(context.Background(), bin, r)
	if err == nil || !strings.Contains(err.Error(), "deprecated") {
		t.Fatalf("want a deprecation error, got %v", err)
	}
}
