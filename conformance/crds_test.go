package conformance

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// safeUpgrades is the name of the ValidatingAdmissionPolicy (and its
// binding) that the Gateway API CRD bundle installs
// (config/crd/<channel>/gateway.networking.k8s.io_vap_safeupgrades.yaml).
// Both v1.7.0 channels' policies refuse, on update, a
// gateway.networking.k8s.io CRD whose channel annotation is not standard
// unless the CRD it replaces was experimental: experimental CRDs over
// standard ones. The standard channel's also refuses every Gateway API CRD
// whose bundle-version annotation is older than v1.7.0, the experimental
// channel's those older than v1.5 (v1.6.3's: older than v1.5.0). Both
// v1.7.0 policies carry the annotation channel: standard, so a policy's
// channel cannot be told from its annotations.
const (
	safeUpgrades      = "safe-upgrades.gateway.networking.k8s.io"
	bundleVersionAnno = "gateway.networking.k8s.io/bundle-version"
	channelAnno       = "gateway.networking.k8s.io/channel"
	// crdFiles is where the chart keeps the Gateway API CRDs of each
	// channel (its gateway-api-crds subchart; make chart-crds).
	crdFiles   = "charts/gateway-api-crds/files"
	policyFile = "gateway.networking.k8s.io_vap_safeupgrades.yaml"
)

// gatewayAPIGroups are the API groups of the Gateway API CRD bundles (the
// experimental channel's x-k8s.io kinds in the second).
var gatewayAPIGroups = []string{"gateway.networking.k8s.io", "gateway.networking.x-k8s.io"}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

var bundleVersionRE = regexp.MustCompile(`(?m)^\s+gateway\.networking\.k8s\.io/bundle-version:\s*(\S+)\s*$`)

// chartBundleVersion returns the Gateway API bundle version of the CRDs of
// channel in the chart at dir (the bundle-version annotation of that
// channel's safe-upgrades policy), or an error when the file or the
// annotation is missing.
func chartBundleVersion(dir, channel string) (string, error) {
	path := filepath.Join(crdFiles, channel, policyFile)
	raw, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		return "", err
	}
	m := bundleVersionRE.FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf("%s: no %s annotation", path, bundleVersionAnno)
	}
	return string(m[1]), nil
}

// chartCRDNames returns the names of the CRDs of channel in the chart at
// dir, sorted.
func chartCRDNames(dir, channel string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, crdFiles, channel, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		// The policy file holds two documents; only the first is read,
		// and it is no CRD.
		first, _, _ := strings.Cut(string(raw), "\n---")
		if err := yaml.Unmarshal([]byte(first), &o); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if o.Kind == "CustomResourceDefinition" {
			out = append(out, o.Metadata.Name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CRDs of channel %s in %s", channel, filepath.Join(dir, crdFiles))
	}
	slices.Sort(out)
	return out, nil
}

// gatewayAPICRD is a CRD of a Gateway API group on the cluster: its name
// and its bundle-version and channel annotations ("" when missing).
type gatewayAPICRD struct{ name, version, channel string }

// crdSwitch is what must be done on a cluster before the chart installs
// its Gateway API CRDs.
type crdSwitch struct {
	// policyReason says why the cluster's safe-upgrades policy and its
	// binding must be deleted ("" when they stay).
	policyReason string
	// deleteCRDs are the Gateway API CRDs of the cluster that the chart's
	// channel does not install: left by another channel or version (the
	// chart keeps CRDs when it no longer renders them), they would make
	// the cluster's CRDs of two channels or versions, which the suite
	// refuses.
	deleteCRDs []string
}

// planCRDSwitch returns what must be done before the chart installs the
// Gateway API CRDs of version and channel (named inChart) on a cluster
// whose safe-upgrades policy is of bundle version policyVersion ("" when
// there is none) and whose Gateway API CRDs are onCluster. The policy goes
// when it is of another version (v1.7.0's refuses older CRDs: going back
// needs it gone; the chart installs its own after the CRDs), or when the
// chart installs the experimental channel over a standard (or unmarked)
// gateway.networking.k8s.io CRD, which both v1.7.0 policies refuse. Going
// from experimental to standard both policies allow.
func planCRDSwitch(policyVersion string, onCluster []gatewayAPICRD, version, channel string, inChart []string) crdSwitch {
	var s crdSwitch
	var standardOnes []string
	for _, c := range onCluster {
		if !slices.Contains(inChart, c.name) {
			s.deleteCRDs = append(s.deleteCRDs, c.name)
			continue
		}
		if strings.HasSuffix(c.name, ".gateway.networking.k8s.io") && c.channel != "experimental" {
			standardOnes = append(standardOnes, c.name)
		}
	}
	switch {
	case policyVersion == "":
	case policyVersion != version:
		s.policyReason = fmt.Sprintf("it is %s's, the chart's CRDs are %s", policyVersion, version)
	case channel == "experimental" && len(standardOnes) > 0:
		s.policyReason = fmt.Sprintf("it refuses experimental CRDs over the cluster's %d standard ones, %s...", len(standardOnes), standardOnes[0])
	}
	return s
}

// clusterGatewayAPICRDs returns the CRDs of the Gateway API groups on the
// cluster that carry a bundle-version or channel annotation (the ones the
// suite counts), and the channels they are of, sorted ("" for one without
// the annotation).
func clusterGatewayAPICRDs(ctx context.Context, mc metadata.Interface) ([]gatewayAPICRD, []string, error) {
	list, err := mc.Resource(crdResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	var out []gatewayAPICRD
	var channels []string
	for _, item := range list.Items {
		_, group, _ := strings.Cut(item.Name, ".")
		v, okv := item.Annotations[bundleVersionAnno]
		c, okc := item.Annotations[channelAnno]
		if !slices.Contains(gatewayAPIGroups, group) || (!okv && !okc) {
			continue
		}
		out = append(out, gatewayAPICRD{name: item.Name, version: v, channel: c})
		if !slices.Contains(channels, c) {
			channels = append(channels, c)
		}
	}
	slices.Sort(channels)
	return out, channels, nil
}

// prepareGatewayAPICRDs runs before a chart install with
// gatewayAPI.installCRDs=true and gatewayAPI.channel=channel on the cluster
// of kubeconfig: it deletes the safe-upgrades policy and its binding, and
// the Gateway API CRDs that the chart's channel does not install, when
// planCRDSwitch says so, and logs what it found and did. So the install can
// move the cluster's CRDs to the chart's version and channel in either
// direction, on a cluster shared by branches and runs of either channel.
func prepareGatewayAPICRDs(t *testing.T, kubeconfig, chartDir, channel string) {
	t.Helper()
	want, err := chartBundleVersion(chartDir, channel)
	if err != nil {
		t.Fatal(err)
	}
	inChart, err := chartCRDNames(chartDir, channel)
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
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	onCluster, channels, err := clusterGatewayAPICRDs(ctx, mc)
	if err != nil {
		t.Fatalf("list CRDs: %v", err)
	}
	adm := cs.AdmissionregistrationV1()
	var have string
	switch p, err := adm.ValidatingAdmissionPolicies().Get(ctx, safeUpgrades, metav1.GetOptions{}); {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatalf("get ValidatingAdmissionPolicy %s: %v", safeUpgrades, err)
	default:
		have = cmp.Or(p.Annotations[bundleVersionAnno], "unversioned")
	}
	t.Logf("Gateway API CRDs: the cluster has %d of channel %v, safe-upgrades policy %s; the chart installs %s %s",
		len(onCluster), channels, cmp.Or(have, "none"), want, channel)
	plan := planCRDSwitch(have, onCluster, want, channel, inChart)
	if plan.policyReason != "" {
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
		t.Logf("Gateway API CRDs: deleted the cluster's %s safe-upgrades ValidatingAdmissionPolicy and binding (%s); the chart installs the %s %s one after the CRDs", have, plan.policyReason, want, channel)
	}
	for _, name := range plan.deleteCRDs {
		if err := mc.Resource(crdResource).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete CRD %s: %v", name, err)
		}
	}
	// A CRD is gone once the API server has deleted its objects; the suite
	// counts it until then.
	deadline := time.Now().Add(2 * time.Minute)
	for _, name := range plan.deleteCRDs {
		for {
			_, err := mc.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s is still there 2 minutes after its deletion (%v)", name, err)
			}
			time.Sleep(time.Second)
		}
	}
	if len(plan.deleteCRDs) > 0 {
		t.Logf("Gateway API CRDs: deleted %s and every object of theirs: the %s channel has none of them, and the suite refuses a cluster with CRDs of two channels or versions",
			strings.Join(plan.deleteCRDs, ", "), channel)
	}
}

func TestChartBundleVersionIsTheModules(t *testing.T) {
	v, err := suiteVersion()
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range channels {
		got, err := chartBundleVersion("../charts/xds-controller", ch)
		if err != nil {
			t.Fatal(err)
		}
		if got != v {
			t.Errorf("chart CRDs of channel %s are %s, the suite %s (make chart-crds)", ch, got, v)
		}
	}
}

// The chart's CRDs per channel: the experimental channel's are the
// standard ones and the four gateway.networking.x-k8s.io ones.
func TestChartCRDNames(t *testing.T) {
	std, err := chartCRDNames("../charts/xds-controller", "standard")
	if err != nil {
		t.Fatal(err)
	}
	exp, err := chartCRDNames("../charts/xds-controller", "experimental")
	if err != nil {
		t.Fatal(err)
	}
	if len(std) != 10 || !slices.Contains(std, "httproutes.gateway.networking.k8s.io") {
		t.Errorf("standard: %v", std)
	}
	var extra []string
	for _, n := range exp {
		if !slices.Contains(std, n) {
			extra = append(extra, n)
		}
	}
	if want := []string{"xbackends.gateway.networking.x-k8s.io", "xbackendtrafficpolicies.gateway.networking.x-k8s.io",
		"xmeshes.gateway.networking.x-k8s.io", "xtelemetrypolicies.gateway.networking.x-k8s.io"}; !slices.Equal(extra, want) || len(exp) != 14 {
		t.Errorf("experimental adds %v (of %d), want %v", extra, len(exp), want)
	}
	if _, err := chartCRDNames("../charts/xds-controller", "beta"); err == nil {
		t.Error("no error for a channel the chart lacks")
	}
}

// planCRDSwitch in every direction between the channels and versions that
// meet on the shared local cluster.
func TestPlanCRDSwitch(t *testing.T) {
	std := []string{"gateways.gateway.networking.k8s.io", "httproutes.gateway.networking.k8s.io"}
	exp := append(slices.Clone(std), "xmeshes.gateway.networking.x-k8s.io")
	crds := func(version, channel string, names []string) []gatewayAPICRD {
		var out []gatewayAPICRD
		for _, n := range names {
			out = append(out, gatewayAPICRD{n, version, channel})
		}
		return out
	}
	for _, c := range []struct {
		name          string
		policy        string
		onCluster     []gatewayAPICRD
		channel       string
		wantPolicy    string // a part of the reason; "" for none
		wantDeleteCRD []string
	}{
		{"empty cluster", "", nil, "experimental", "", nil},
		{"standard again", "v1.7.0", crds("v1.7.0", "standard", std), "standard", "", nil},
		{"standard to experimental", "v1.7.0", crds("v1.7.0", "standard", std), "experimental", "refuses experimental CRDs over the cluster's 2 standard ones, gateways.gateway.networking.k8s.io...", nil},
		{"standard CRDs, no policy, to experimental", "", crds("v1.7.0", "standard", std), "experimental", "", nil},
		{"experimental again", "v1.7.0", crds("v1.7.0", "experimental", exp), "experimental", "", nil},
		{"experimental to standard", "v1.7.0", crds("v1.7.0", "experimental", exp), "standard", "", []string{"xmeshes.gateway.networking.x-k8s.io"}},
		{"v1.6.3 standard to experimental", "v1.6.3", crds("v1.6.3", "standard", std), "experimental", "it is v1.6.3's, the chart's CRDs are v1.7.0", nil},
		{"v1.6.3 experimental to standard", "v1.6.3", crds("v1.6.3", "experimental", exp), "standard", "it is v1.6.3's", []string{"xmeshes.gateway.networking.x-k8s.io"}},
	} {
		inChart := std
		if c.channel == "experimental" {
			inChart = exp
		}
		got := planCRDSwitch(c.policy, c.onCluster, "v1.7.0", c.channel, inChart)
		if (c.wantPolicy == "") != (got.policyReason == "") || !strings.Contains(got.policyReason, c.wantPolicy) {
			t.Errorf("%s: policy reason %q, want one with %q", c.name, got.policyReason, c.wantPolicy)
		}
		if !slices.Equal(got.deleteCRDs, c.wantDeleteCRD) {
			t.Errorf("%s: delete CRDs %v, want %v", c.name, got.deleteCRDs, c.wantDeleteCRD)
		}
	}
}
