package chart

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	sigsyaml "sigs.k8s.io/yaml"
)

var (
	crdGVR          = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gatewayClassGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
	deploymentGVR   = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// apiServer starts a kube-apiserver and etcd of their own (controller-
// runtime's envtest: no CRD at all, no kubelet, no controllers) and
// returns a kubeconfig file for it and a dynamic client. The binaries come
// from KUBEBUILDER_ASSETS, else `hack/envtest-assets.sh --no-build` (the
// local cluster's kube-apiserver and Debian's etcd); without them the test
// skips, unless CI=true or KUBEBUILDER_ASSETS is set, where it fails.
func apiServer(t *testing.T) (string, dynamic.Interface) {
	t.Helper()
	missing := func(err error) {
		if os.Getenv("CI") == "true" || os.Getenv("KUBEBUILDER_ASSETS") != "" {
			t.Fatalf("no API server for envtest: %v", err)
		}
		t.Skipf("no API server for envtest: %v", err)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		if os.Geteuid() != 0 {
			missing(errors.New("not root, and KUBEBUILDER_ASSETS is unset (the local cluster's build cache is root's)"))
		}
		out, err := exec.Command("../../hack/envtest-assets.sh", "--no-build").Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("hack/envtest-assets.sh --no-build: %s", strings.TrimSpace(string(ee.Stderr)))
		}
		if err != nil {
			missing(err)
		}
		assets = strings.TrimSpace(string(out))
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig, dyn
}

// readmeInstall runs what the README's first screen says, with Helm 4's
// install action set up as its CLI sets it up (helm's cli.EnvSettings: its
// client getter and discovery cache): `helm install xds-controller
// charts/xds-controller -n xds-system --create-namespace --wait`, against
// kubeconfig, with caches of the test's own. --wait is what makes the
// install on a bare cluster deterministic: Helm 4 then waits until the
// release's objects are ready, the Gateway API CRDs Established among them,
// before it runs the post-install hook that creates the GatewayClass;
// without it the hook raced the CRDs (the API server did not serve
// GatewayClass yet: "ensure CRDs are installed first", about one run in
// five on a loaded machine). The envtest API server runs no controllers,
// so the test plays Kubernetes' Deployment controller for the controller's
// Deployment (installed with replicas 0: nothing to schedule) while Helm
// waits (deploymentController); everything else is the README's.
func readmeInstall(t *testing.T, kubeconfig string, dyn dynamic.Interface) *release.Release {
	t.Helper()
	t.Setenv("KUBECONFIG", kubeconfig)
	t.Setenv("KUBECACHEDIR", t.TempDir())
	for _, v := range []string{"HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"} {
		t.Setenv(v, t.TempDir())
	}
	settings := cli.New()
	settings.SetNamespace("xds-system")
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := cfg.Init(settings.RESTClientGetter(), settings.Namespace(), "secret"); err != nil {
		t.Fatal(err)
	}
	ns := settings.Namespace()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace = "xds-controller", ns, true
	in.WaitStrategy = kube.StatusWatcherStrategy // --wait
	in.Timeout = 2 * time.Minute
	stop := deploymentController(t, dyn, ns, "xds-controller")
	defer stop()
	r, err := in.Run(ch, map[string]any{"replicas": 0})
	if err != nil {
		t.Fatalf("helm install xds-controller charts/xds-controller -n xds-system --create-namespace --wait: %v", err)
	}
	return r.(*release.Release)
}

// deploymentController writes, until stop is called, the status that
// Kubernetes' Deployment controller gives Deployment ns/name once its
// replicas are available (observedGeneration, Available, Progressing with
// reason NewReplicaSetAvailable), so that Helm's --wait sees it ready on an
// API server without controllers. It only writes status, once per
// generation.
func deploymentController(t *testing.T, dyn dynamic.Interface, ns, name string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var written int64
		for ctx.Err() == nil {
			d, err := dyn.Resource(deploymentGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && d.GetGeneration() != written {
				now := time.Now().UTC().Format(time.RFC3339)
				cond := func(typ, reason string) map[string]any {
					return map[string]any{"type": typ, "status": "True", "reason": reason, "lastUpdateTime": now, "lastTransitionTime": now}
				}
				d.Object["status"] = map[string]any{
					"observedGeneration": d.GetGeneration(),
					"conditions":         []any{cond("Available", "MinimumReplicasAvailable"), cond("Progressing", "NewReplicaSetAvailable")},
				}
				if _, err := dyn.Resource(deploymentGVR).Namespace(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{}); err == nil {
					written = d.GetGeneration()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// gatewayAPICRDsOn lists the Gateway API CRDs on the API server, name ->
// the CRD.
func gatewayAPICRDsOn(t *testing.T, dyn dynamic.Interface) map[string]*unstructured.Unstructured {
	t.Helper()
	list, err := dyn.Resource(crdGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		if n := list.Items[i].GetName(); strings.Contains(n, ".gateway.networking.") {
			out[n] = &list.Items[i]
		}
	}
	return out
}

// TestREADMEInstallOnABareAPIServer (issue 26): the README's `helm
// install` works as written on a cluster that has nothing yet: the Gateway
// API v1.7.0 standard CRDs come with it (Helm's, kept on uninstall), then
// the GatewayClass (a post-install hook), the controller's Deployment and
// our CRDs.
func TestREADMEInstallOnABareAPIServer(t *testing.T) {
	kubeconfig, dyn := apiServer(t)
	if n := len(gatewayAPICRDsOn(t, dyn)); n != 0 {
		t.Fatalf("the API server has %d Gateway API CRDs before the install", n)
	}
	rel := readmeInstall(t, kubeconfig, dyn)
	t.Logf("NOTES:\n%s", rel.Info.Notes)
	crds := gatewayAPICRDsOn(t, dyn)
	var std []string
	for _, p := range standardCRDs {
		std = append(std, p+".gateway.networking.k8s.io")
	}
	if got := slices.Sorted(maps.Keys(crds)); !slices.Equal(got, std) {
		t.Errorf("Gateway API CRDs after the install: %v, want %v", got, std)
	}
	for n, crd := range crds {
		ann := crd.GetAnnotations()
		if ann["meta.helm.sh/release-name"] != "xds-controller" || ann["helm.sh/resource-policy"] != "keep" || ann["gateway.networking.k8s.io/bundle-version"] != "v1.7.0" {
			t.Errorf("CRD %s annotations %v", n, ann)
		}
	}
	ctx := context.Background()
	gc, err := dyn.Resource(gatewayClassGVR).Get(ctx, "xds-controller", metav1.GetOptions{})
	if err != nil || gc.GetAnnotations()["helm.sh/hook"] != "post-install" {
		t.Errorf("GatewayClass xds-controller: %v %v", err, gc)
	}
	if _, err := dyn.Resource(deploymentGVR).Namespace("xds-system").Get(ctx, "xds-controller", metav1.GetOptions{}); err != nil {
		t.Errorf("Deployment xds-system/xds-controller: %v", err)
	}
	if _, err := dyn.Resource(crdGVR).Get(ctx, "gatewayparameters.gateway.xds-controller.dev", metav1.GetOptions{}); err != nil {
		t.Errorf("our CRD: %v", err)
	}
	if !strings.Contains(rel.Info.Notes, "Gateway API v1.7.0 CRDs (standard channel): installed by this release") {
		t.Errorf("NOTES:\n%s", rel.Info.Notes)
	}
}

// TestREADMEInstallBesideAnotherImplementation (issue 26): on a cluster
// whose Gateway API CRDs someone else installed (another implementation:
// the upstream v1.7.0 bundle applied without Helm), the same `helm install`
// succeeds, leaves every one of those CRDs as it was (same generation,
// annotations and labels, no field of Helm's) and creates the GatewayClass as an
// ordinary release object.
func TestREADMEInstallBesideAnotherImplementation(t *testing.T) {
	kubeconfig, dyn := apiServer(t)
	ctx := context.Background()
	files, _ := filepath.Glob(filepath.Join(gatewayAPIFiles, "standard", "gateway.networking.k8s.io_*.yaml"))
	for _, f := range files {
		if strings.Contains(f, "_vap_") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd unstructured.Unstructured
		if err := sigsyaml.Unmarshal(b, &crd.Object); err != nil {
			t.Fatal(err)
		}
		ann := crd.GetAnnotations()
		ann["owner"] = "another-implementation"
		crd.SetAnnotations(ann)
		if _, err := dyn.Resource(crdGVR).Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := gatewayAPICRDsOn(t, dyn)
	if len(before) != len(standardCRDs) {
		t.Fatalf("%d CRDs created, want %d", len(before), len(standardCRDs))
	}
	rel := readmeInstall(t, kubeconfig, dyn)
	after := gatewayAPICRDsOn(t, dyn)
	for n, crd := range before {
		a := after[n]
		if a == nil {
			t.Errorf("CRD %s gone", n)
			continue
		}
		// Its spec (generation), its annotations and labels as they were,
		// and no field of it Helm's.
		var managers []string
		for _, m := range a.GetManagedFields() {
			managers = append(managers, m.Manager)
		}
		if a.GetGeneration() != crd.GetGeneration() || !maps.Equal(a.GetAnnotations(), crd.GetAnnotations()) ||
			!maps.Equal(a.GetLabels(), crd.GetLabels()) || slices.Contains(managers, "helm") {
			t.Errorf("CRD %s changed by the install: generation %d -> %d, annotations %v -> %v, labels %v, field managers %v",
				n, crd.GetGeneration(), a.GetGeneration(), crd.GetAnnotations(), a.GetAnnotations(), a.GetLabels(), managers)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d Gateway API CRDs after the install, %d before", len(after), len(before))
	}
	if strings.Contains(rel.Manifest, "kind: CustomResourceDefinition") {
		t.Error("the release's manifest holds CRDs")
	}
	gc, err := dyn.Resource(gatewayClassGVR).Get(ctx, "xds-controller", metav1.GetOptions{})
	if err != nil || gc.GetAnnotations()["helm.sh/hook"] != "" || gc.GetAnnotations()["meta.helm.sh/release-name"] != "xds-controller" {
		t.Errorf("GatewayClass xds-controller: %v %v", err, gc)
	}
	if !strings.Contains(rel.Info.Notes, "Gateway API CRDs: the cluster's own") {
		t.Errorf("NOTES:\n%s", rel.Info.Notes)
	}
}
