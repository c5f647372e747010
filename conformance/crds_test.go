package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// safeUpgrades is the name of the ValidatingAdmissionPolicy (and its
// binding) that the Gateway API CRD bundle installs
// (config/crd/standard/gateway.networking.k8s.io_vap_safeupgrades.yaml).
// The v1.7.0 one refuses every Gateway API CRD whose bundle-version
// annotation is older than v1.7.0, v1.6.3's every one older than v1.5.0.
const (
	safeUpgrades      = "safe-upgrades.gateway.networking.k8s.io"
	bundleVersionAnno = "gateway.networking.k8s.io/bundle-version"
	chartPolicyFile   = "files/gateway-api/standard/gateway.networking.k8s.io_vap_safeupgrades.yaml"
)

var bundleVersionRE = regexp.MustCompile(`(?m)^\s+gateway\.networking\.k8s\.io/bundle-version:\s*(\S+)\s*$`)

// chartBundleVersion returns the Gateway API bundle version of the CRDs in
// the chart at dir (the bundle-version annotation of its safe-upgrades
// policy), or an error when the file or the annotation is missing.
func chartBundleVersion(dir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, chartPolicyFile))
	if err != nil {
		return "", err
	}
	m := bundleVersionRE.FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf("%s: no %s annotation", chartPolicyFile, bundleVersionAnno)
	}
	return string(m[1]), nil
}

// replacePolicy says whether the cluster's safe-upgrades policy (bundle
// version onCluster, "" when there is none) must be deleted before the
// chart installs its CRDs of version inChart: whenever the two differ. The
// chart recreates the policy of its own version after the CRDs (Helm applies
// ValidatingAdmissionPolicy, a kind it does not order, last). Needed to go
// back: the v1.7.0 policy refuses the v1.6.3 CRDs; for v1.6.3 -> v1.7.0 the
// old policy would let the CRDs through anyway.
func replacePolicy(onCluster, inChart string) bool {
	return onCluster != "" && onCluster != inChart
}

// prepareGatewayAPICRDs runs before a chart install with
// gatewayAPI.installCRDs=true on the cluster of kubeconfig: when the
// cluster's safe-upgrades policy belongs to another Gateway API version than
// the chart's CRDs, it deletes that policy and its binding (and says so), so
// that the install can move the CRDs to the chart's version in either
// direction on a cluster shared by branches on different versions.
func prepareGatewayAPICRDs(t *testing.T, kubeconfig, chartDir string) {
	t.Helper()
	want, err := chartBundleVersion(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	adm := cs.AdmissionregistrationV1()
	p, err := adm.ValidatingAdmissionPolicies().Get(ctx, safeUpgrades, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Fatalf("get ValidatingAdmissionPolicy %s: %v", safeUpgrades, err)
	}
	have := p.Annotations[bundleVersionAnno]
	if !replacePolicy(have, want) {
		return
	}
	for _, del := range []func() error{
		func() error {
			return adm.ValidatingAdmissionPolicyBindings().Delete(ctx, safeUpgrades, metav1.DeleteOptions{})
		},
		func() error {
			return adm.ValidatingAdmissionPolicies().Delete(ctx, safeUpgrades, metav1.DeleteOptions{})
		},
	} {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete %s: %v", safeUpgrades, err)
		}
	}
	t.Logf("Gateway API CRDs %s -> %s: deleted the cluster's %s safe-upgrades ValidatingAdmissionPolicy and binding; the chart installs its %s one", have, want, have, want)
}

func TestChartBundleVersionIsTheModules(t *testing.T) {
	got, err := chartBundleVersion("../charts/xds-controller")
	if err != nil {
		t.Fatal(err)
	}
	v, err := suiteVersion()
	if err != nil {
		t.Fatal(err)
	}
	if got != v {
		t.Errorf("chart CRDs are %s, the suite %s (make chart-crds)", got, v)
	}
}

func TestReplacePolicyOnlyAcrossVersions(t *testing.T) {
	for _, c := range []struct {
		cluster, chart string
		want           bool
	}{
		{"", "v1.7.0", false},
		{"v1.7.0", "v1.7.0", false},
		{"v1.6.3", "v1.7.0", true},
		{"v1.7.0", "v1.6.3", true},
	} {
		if got := replacePolicy(c.cluster, c.chart); got != c.want {
			t.Errorf("replacePolicy(%q, %q) = %v, want %v", c.cluster, c.chart, got, c.want)
		}
	}
}
