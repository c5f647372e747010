package conformance

import (
	"slices"
	"testing"

	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
)

func TestReportPathFollowsUpstreamNaming(t *testing.T) {
	got := reportPath("v1.7.0", "abc1234", "dedicated")
	if want := "reports/v1.7.0/standard-abc1234-dedicated-report.yaml"; got != want {
		t.Fatalf("reportPath = %q, want %q", got, want)
	}
}

func TestClaimedFeaturesAreTheGatewayClassList(t *testing.T) {
	got := claimedFeatures("")
	for _, f := range gatewayapi.SupportedFeatures {
		if !slices.Contains(got, f) {
			t.Errorf("claimed features %v lack %s of pkg/gatewayapi.SupportedFeatures", got, f)
		}
	}
	if len(got) != len(gatewayapi.SupportedFeatures) {
		t.Errorf("claimed %v, GatewayClass status says %v", got, gatewayapi.SupportedFeatures)
	}
	// A feature we do not claim (GatewayListenerFilters, experimental).
	if slices.Contains(got, features.SupportGatewayListenerFilters) {
		t.Fatal("GatewayListenerFilters is claimed: pick another unclaimed feature for this test")
	}
	tried := claimedFeatures(" GatewayListenerFilters ,")
	if !slices.Contains(tried, features.SupportGatewayListenerFilters) || len(tried) != len(got)+1 {
		t.Errorf("TRY_FEATURES not added: %v", tried)
	}
}

func TestChartValuesPerMode(t *testing.T) {
	for mode, want := range map[string]string{"shared": "Shared", "dedicated": "Dedicated"} {
		v, err := chartValues(mode, "envoy.image=e:1")
		if err != nil {
			t.Fatal(err)
		}
		if v["mode"] != want {
			t.Errorf("mode %s: chart mode %v, want %s", mode, v["mode"], want)
		}
		if img := v["envoy"].(map[string]any)["image"]; img != "e:1" {
			t.Errorf("CHART_SET not applied: %v", v)
		}
	}
}

func TestSuiteVersionIsTheRequiredConformanceModule(t *testing.T) {
	v, err := suiteVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v != "v1.7.0" {
		t.Errorf("suite version %q, want v1.7.0 (go.mod)", v)
	}
	got, err := requiredVersion([]byte("module x\nrequire sigs.k8s.io/gateway-api/conformance v1.2.3\n"), suiteModule)
	if err != nil || got != "v1.2.3" {
		t.Errorf("single-line require: %q, %v", got, err)
	}
}

// The static addresses handed to GatewayStaticAddresses are IPAddress
// entries, one per list element.
func TestIPAddresses(t *testing.T) {
	got := ipAddresses(" 10.244.1.250, ,10.244.1.249")
	if len(got) != 2 || got[0].Value != "10.244.1.250" || got[1].Value != "10.244.1.249" ||
		*got[0].Type != "IPAddress" || *got[1].Type != "IPAddress" {
		t.Errorf("ipAddresses = %+v", got)
	}
	if got := ipAddresses(defaultUnusable); len(got) != 1 || got[0].Value != "10.244.1.5" {
		t.Errorf("default unusable = %+v", got)
	}
}
