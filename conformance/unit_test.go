package conformance

import (
	"slices"
	"testing"

	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
)

func TestReportPathFollowsUpstreamNaming(t *testing.T) {
	got := reportPath("v1.7.0", "standard", "abc1234", "dedicated")
	if want := "reports/v1.7.0/standard-abc1234-dedicated-report.yaml"; got != want {
		t.Fatalf("reportPath = %q, want %q", got, want)
	}
	got = reportPath("v1.7.0", "experimental", "abc1234", "shared")
	if want := "reports/v1.7.0/experimental-abc1234-shared-report.yaml"; got != want {
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
	// A feature we do not claim (MeshClusterIPMatching: mesh features are
	// not ours to implement).
	if slices.Contains(got, features.SupportMeshClusterIPMatching) {
		t.Fatal("MeshClusterIPMatching is claimed: pick another unclaimed feature for this test")
	}
	tried := claimedFeatures(" MeshClusterIPMatching ,")
	if !slices.Contains(tried, features.SupportMeshClusterIPMatching) || len(tried) != len(got)+1 {
		t.Errorf("TRY_FEATURES not added: %v", tried)
	}
}

func TestChartValuesPerModeAndChannel(t *testing.T) {
	for mode, want := range map[string]string{"shared": "Shared", "dedicated": "Dedicated"} {
		v, err := chartValues(mode, "experimental", "envoy.image=e:1")
		if err != nil {
			t.Fatal(err)
		}
		if v["mode"] != want {
			t.Errorf("mode %s: chart mode %v, want %s", mode, v["mode"], want)
		}
		if gw := v["gatewayAPI"].(map[string]any); gw["installCRDs"] != true || gw["channel"] != "experimental" {
			t.Errorf("gatewayAPI values %v", gw)
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

// CHANNEL: standard by default, experimental, nothing else.
func TestChannel(t *testing.T) {
	for env, want := range map[string]string{"": "standard", "standard": "standard", "Experimental": "experimental"} {
		t.Setenv("CHANNEL", env)
		if got, err := channel(); err != nil || got != want {
			t.Errorf("CHANNEL=%q: %q, %v; want %q", env, got, err, want)
		}
	}
	t.Setenv("CHANNEL", "beta")
	if got, err := channel(); err == nil {
		t.Errorf("CHANNEL=beta: %q, no error", got)
	}
}

// On the experimental channel the claimed features are the standard
// ones': every experimental-channel feature of the suite's version that
// has a conformance test is claimed already (HTTPRouteDestinationPortMatching
// in v1.7.0); the others have no test to pass. A suite upgrade that adds a
// test for one fails here until the feature is claimed (its tests pass
// with CHANNEL=experimental in both modes) or deliberately left out.
func TestExperimentalFeaturesWithTestsAreClaimed(t *testing.T) {
	tested := map[features.FeatureName][]string{}
	for _, ct := range tests.ConformanceTests {
		for _, f := range ct.Features {
			tested[f] = append(tested[f], ct.ShortName)
		}
	}
	var withTests []features.FeatureName
	for _, f := range features.AllFeatures.UnsortedList() {
		if f.Channel != features.FeatureChannelExperimental || len(tested[f.Name]) == 0 {
			continue
		}
		withTests = append(withTests, f.Name)
		if !slices.Contains(gatewayapi.SupportedFeatures, f.Name) {
			t.Errorf("experimental feature %s has tests %v and is not claimed", f.Name, tested[f.Name])
		}
	}
	if len(withTests) == 0 {
		t.Error("no experimental feature with tests: the suite's features or tests are not where this test looks")
	}
}
