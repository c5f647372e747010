package conformance

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	upstream "sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/gateway-api/pkg/features"
	"sigs.k8s.io/yaml"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/version"
)

// The knobs, all environment variables (the suite's own -args flags such as
// -run-test still work; a variable that is set wins):
//
//	MODE           shared (default) | dedicated: the report's mode, and the
//	               chart's mode when INSTALL_CHART is set
//	CHANNEL        standard (default) | experimental: the Gateway API release
//	               channel of the CRDs the chart installs with INSTALL_CHART
//	               (gatewayAPI.channel) and of the report's name; the report's
//	               gatewayAPIChannel, which the suite reads from the
//	               cluster's CRDs, must say the same
//	GATEWAY_CLASS  the GatewayClass under test (default xds-controller)
//	PROFILES       comma-separated conformance profiles (default: every
//	               profile we claim, GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS,
//	               GATEWAY-TCP,GATEWAY-UDP)
//	RUN_TEST       run only this test (ShortName, e.g. HTTPRouteSimpleSameNamespace)
//	SKIP_TESTS     comma-separated tests not to run
//	TRY_FEATURES   comma-separated extra features to test without claiming
//	               them in GatewayClass status (to find out whether they pass)
//	REPORT         the report's path; default
//	               reports/<gateway-api version>/<channel>-<version>-<mode>-report.yaml,
//	               and none when RUN_TEST, SKIP_TESTS or TRY_FEATURES is set
//	INSTALL_CHART  a chart folder (e.g. ../charts/xds-controller): install or
//	               upgrade it first with MODE's mode and CHANNEL's CRDs
//	               (see chart_test.go and crds_test.go)
//	USABLE_ADDRESSES, UNUSABLE_ADDRESSES
//	               comma-separated IP addresses for GatewayStaticAddresses:
//	               ones the cluster's load balancer gives to a Gateway's
//	               Service on request and no other Service gets, and ones it
//	               refuses. Defaults fit the local cluster (hack/cluster): the
//	               last address of its lb-allocator pool, in the range given
//	               only on request (LB_STATIC_START), and an address of the
//	               LoadBalancer subnet outside the pool.
const (
	defaultClass = "xds-controller"
	// defaultProfiles are the profiles we claim, in the reports.
	defaultProfiles = "GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS,GATEWAY-TCP,GATEWAY-UDP"
	suiteModule     = "sigs.k8s.io/gateway-api/conformance"
	// defaultUsable and defaultUnusable are the local cluster's
	// (hack/cluster/lib/common.sh: LB_POOL_END, and 10.244.1.5 of LB_CIDR
	// below LB_POOL_START).
	defaultUsable   = "10.244.1.250"
	defaultUnusable = "10.244.1.5"
	// deleteTimeout is the suite's DeleteTimeout, long enough for a
	// namespace whose Envoy pods drain (see its use).
	deleteTimeout = 2 * time.Minute
)

// ipAddresses turns a comma-separated list into spec.addresses entries of
// type IPAddress.
func ipAddresses(list string) []gwapiv1.GatewaySpecAddress {
	var out []gwapiv1.GatewaySpecAddress
	for _, v := range splitList(list) {
		out = append(out, gwapiv1.GatewaySpecAddress{Type: ptr.To(gwapiv1.IPAddressType), Value: v})
	}
	return out
}

// implementation is what the report says about us (upstream's reports
// README: organization, project, url, version, contact).
func implementation() confv1.Implementation {
	return confv1.Implementation{
		Organization: "xds-controller",
		Project:      "xds-controller",
		URL:          "https://github.com/xds-controller/xds-controller",
		Version:      version.Get(),
		Contact:      []string{"https://github.com/xds-controller/xds-controller/issues/new"},
	}
}

// mode returns the deployment mode under test: shared or dedicated.
func mode() (string, error) {
	m := strings.ToLower(cmp.Or(os.Getenv("MODE"), "shared"))
	if m != "shared" && m != "dedicated" {
		return "", fmt.Errorf("MODE=%q: want shared or dedicated", m)
	}
	return m, nil
}

// channels are the Gateway API release channels (the chart's
// gatewayAPI.channel values).
var channels = []string{"standard", "experimental"}

// channel returns the Gateway API release channel under test (CHANNEL):
// standard (the default) or experimental.
func channel() (string, error) {
	c := strings.ToLower(cmp.Or(os.Getenv("CHANNEL"), "standard"))
	if !slices.Contains(channels, c) {
		return "", fmt.Errorf("CHANNEL=%q: want standard or experimental", c)
	}
	return c, nil
}

// suiteVersion is the version of the conformance module this test runs
// (v1.7.0): the reports folder it belongs in. It is read from this
// module's go.mod (test binaries carry no dependency versions in their
// build information).
func suiteVersion() (string, error) {
	raw, err := os.ReadFile("go.mod")
	if err != nil {
		return "", err
	}
	return requiredVersion(raw, suiteModule)
}

// requiredVersion returns the version of module in the require lines of a
// go.mod file's content.
func requiredVersion(gomod []byte, module string) (string, error) {
	for line := range strings.SplitSeq(string(gomod), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == module {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("go.mod requires no %s", module)
}

// reportPath is upstream's naming: <channel>-<implementation version>-<mode>-report.yaml
// in a folder per Gateway API version.
func reportPath(gwapiVersion, channel, implVersion, mode string) string {
	return filepath.Join("reports", gwapiVersion, fmt.Sprintf("%s-%s-%s-report.yaml", channel, implVersion, mode))
}

// claimedFeatures is the one list GatewayClass status.supportedFeatures
// also reports (pkg/gatewayapi.SupportedFeatures), plus TRY_FEATURES. It
// is the same on both channels: of the v1.7.0 experimental-channel
// features, the one with conformance tests (HTTPRouteDestinationPortMatching)
// is in the list, and the others (GatewayAddressRoutability,
// GatewayAddressRoutabilityCluster, GatewayListenerFilters,
// ClusterTrustBundle) have no tests in the v1.7.0 suite
// (TestExperimentalFeaturesWithTestsAreClaimed).
func claimedFeatures(try string) []features.FeatureName {
	out := slices.Clone(gatewayapi.SupportedFeatures)
	for f := range strings.SplitSeq(try, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, features.FeatureName(f))
		}
	}
	return sets.List(sets.New(out...))
}

func splitList(s string) []string {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func TestConformance(t *testing.T) {
	if os.Getenv("KUBECONFIG") == "" {
		t.Skip("KUBECONFIG is not set: the conformance suite needs a cluster (make conformance)")
	}
	m, err := mode()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := channel()
	if err != nil {
		t.Fatal(err)
	}
	if chart := os.Getenv("INSTALL_CHART"); chart != "" {
		installChart(t, chart, m, ch)
	}

	opts := upstream.DefaultOptions(t)
	waitForSuiteNamespaces(t, opts.Client)
	opts.GatewayClassName = cmp.Or(os.Getenv("GATEWAY_CLASS"), opts.GatewayClassName)
	if opts.GatewayClassName == "gateway-conformance" { // the suite's default: not ours
		opts.GatewayClassName = defaultClass
	}
	opts.Mode = m
	opts.Implementation = implementation()
	opts.ConformanceProfiles = suite.ParseConformanceProfilesSlice(cmp.Or(os.Getenv("PROFILES"), defaultProfiles))
	opts.SupportedFeatures = claimedFeatures(os.Getenv("TRY_FEATURES"))
	opts.RunTest = cmp.Or(os.Getenv("RUN_TEST"), opts.RunTest)
	opts.SkipTests = append(opts.SkipTests, splitList(os.Getenv("SKIP_TESTS"))...)
	opts.UsableNetworkAddresses = ipAddresses(cmp.Or(os.Getenv("USABLE_ADDRESSES"), defaultUsable))
	opts.UnusableNetworkAddresses = ipAddresses(cmp.Or(os.Getenv("UNUSABLE_ADDRESSES"), defaultUnusable))
	// A namespace holding Gateways is gone only when their Envoy pods (in
	// Dedicated mode, in that namespace) have drained and exited: a grace
	// period of infra.DefaultDrainSeconds + infra.ShutdownMarginSeconds
	// (25 s). The suite's default DeleteTimeout (30 s) left the namespace
	// controller 5 s, and its cleanup failed TestConformance once with
	// every test passed. The suite sets no maximum for DeleteTimeout.
	opts.TimeoutConfig.DeleteTimeout = max(opts.TimeoutConfig.DeleteTimeout, deleteTimeout)

	partial := opts.RunTest != "" || len(opts.SkipTests) > 0 || os.Getenv("TRY_FEATURES") != ""
	opts.ReportOutputPath = os.Getenv("REPORT")
	if opts.ReportOutputPath == "" {
		if partial {
			opts.ReportOutputPath = filepath.Join(t.TempDir(), "report.yaml")
		} else {
			v, err := suiteVersion()
			if err != nil {
				t.Fatal(err)
			}
			opts.ReportOutputPath = reportPath(v, ch, opts.Implementation.Version, m)
		}
	}
	if err := os.MkdirAll(filepath.Dir(opts.ReportOutputPath), 0o755); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: this one runs after the suite's,
	// which writes the report.
	t.Cleanup(func() { printSummary(t, opts.ReportOutputPath, ch) })
	upstream.RunConformanceWithOptions(t, opts)
}

// printSummary prints, per profile, the core and extended results with
// their counts and the failed and skipped tests of the report at path, and
// fails the test when the report's gatewayAPIChannel (the suite reads it
// from the cluster's CRDs) is not channel, the one the report is named by.
func printSummary(t *testing.T, path, channel string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Logf("no report to summarise: %v", err)
		return
	}
	var r confv1.ConformanceReport
	if err := yaml.Unmarshal(raw, &r); err != nil {
		t.Errorf("report %s: %v", path, err)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n==== conformance summary: %s %s, mode %s, Gateway API %s (%s)\n",
		r.Implementation.Project, r.Implementation.Version, r.Mode, r.GatewayAPIVersion, r.GatewayAPIChannel)
	for _, p := range r.ProfileReports {
		fmt.Fprintf(&b, "%s core: %s (passed %d, failed %d, skipped %d)\n", p.Name, p.Core.Result,
			p.Core.Statistics.Passed, p.Core.Statistics.Failed, p.Core.Statistics.Skipped)
		writeTests(&b, "  failed", p.Core.FailedTests)
		writeTests(&b, "  skipped", p.Core.SkippedTests)
		if p.Extended != nil {
			fmt.Fprintf(&b, "%s extended: %s (passed %d, failed %d, skipped %d) supported %v\n", p.Name, p.Extended.Result,
				p.Extended.Statistics.Passed, p.Extended.Statistics.Failed, p.Extended.Statistics.Skipped, p.Extended.SupportedFeatures)
			writeTests(&b, "  failed", p.Extended.FailedTests)
			writeTests(&b, "  skipped", p.Extended.SkippedTests)
		}
	}
	fmt.Fprintf(&b, "report: %s\n", path)
	fmt.Print(b.String())
	if r.GatewayAPIChannel != channel {
		t.Errorf("the report's gatewayAPIChannel is %q, CHANNEL %q: the cluster's Gateway API CRDs are not of CHANNEL's channel", r.GatewayAPIChannel, channel)
	}
}

func writeTests(b *strings.Builder, what string, tests []string) {
	if len(tests) > 0 {
		fmt.Fprintf(b, "%s: %s\n", what, strings.Join(tests, " "))
	}
}

// suiteNamespaces are the namespaces the suite creates and deletes.
var suiteNamespaces = []string{"gateway-conformance-infra", "gateway-conformance-app-backend", "gateway-conformance-web-backend"}

// waitForSuiteNamespaces waits (at most 5 minutes) until no namespace of
// the suite is still terminating from a previous run: the suite deletes
// them when it ends, and a run started right after (the other mode) would
// fail to create its objects in them.
func waitForSuiteNamespaces(t *testing.T, c client.Client) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for _, name := range suiteNamespaces {
		for {
			var ns corev1.Namespace
			err := c.Get(context.Background(), types.NamespacedName{Name: name}, &ns)
			if apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp == nil) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("namespace %s is still terminating (or unreadable: %v) after 5 minutes", name, err)
			}
			time.Sleep(2 * time.Second)
		}
	}
}
