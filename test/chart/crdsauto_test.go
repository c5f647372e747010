package chart

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartv2util "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// cluster is what the chart's lookups read, for Helm's template engine
// (engine.ClientProvider): the cluster-scoped Namespaces and
// CustomResourceDefinitions given, in client-go's fake dynamic client. It
// stands in for the API server, which is not what these tests test: they
// test what the chart decides from what it finds.
type cluster struct {
	dyn *dynamicfake.FakeDynamicClient
}

var clusterKinds = map[string]schema.GroupVersionResource{
	"v1/Namespace": {Version: "v1", Resource: "namespaces"},
	"apiextensions.k8s.io/v1/CustomResourceDefinition": {Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
}

// newCluster holds namespace kube-system (every cluster has it: the
// chart's sign that lookup reads a cluster) and the CRDs named, each with
// annotations.
func newCluster(crds map[string]map[string]any) *cluster {
	objs := []runtime.Object{&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "kube-system"}}}}
	for name, ann := range crds {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": name, "annotations": ann}}})
	}
	lists := map[schema.GroupVersionResource]string{}
	for k, gvr := range clusterKinds {
		lists[gvr] = k[strings.LastIndex(k, "/")+1:] + "List"
	}
	return &cluster{dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...)}
}

func (c *cluster) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	gvr, ok := clusterKinds[apiVersion+"/"+kind]
	if !ok {
		return nil, false, fmt.Errorf("the test cluster serves no %s %s", apiVersion, kind)
	}
	return c.dyn.Resource(gvr), false, nil
}

// renderOn renders the chart as release xds-controller in xds-system (an
// upgrade when upgrade is set) with Helm's template engine reading c
// (nil: offline, as `helm template`), and returns the objects of every
// template, hooks included, and NOTES.txt.
func renderOn(t *testing.T, c *cluster, values map[string]any, upgrade bool) ([]object, string) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := chartv2util.ProcessDependencies(ch, values); err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(ch, values,
		common.ReleaseOptions{Name: "xds-controller", Namespace: "xds-system", IsInstall: !upgrade, IsUpgrade: upgrade},
		&common.Capabilities{KubeVersion: *kubeVersion, APIVersions: common.DefaultVersionSet})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if c == nil {
		out, err = engine.Render(ch, vals)
	} else {
		out, err = engine.RenderWithClientProvider(ch, vals, c)
	}
	if err != nil {
		t.Fatal(err)
	}
	var objs []object
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(out[name]), 4096)
		for {
			var o object
			if err := dec.Decode(&o); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if o != nil {
				objs = append(objs, o)
			}
		}
	}
	return objs, out["xds-controller/templates/NOTES.txt"]
}

// ownedBy are Helm's ownership annotations of release name in namespace.
func ownedBy(name, namespace string) map[string]any {
	return map[string]any{"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": namespace}
}

// TestGatewayAPICRDsAuto (issue 26): with gatewayAPI.installCRDs auto, the
// default, `helm install` on a cluster without Gateway API CRDs installs
// them (and the GatewayClass waits for them as a post-install hook); a
// release that installed them keeps them on upgrade; CRDs of anyone else,
// even one of them, mean none is rendered, so nothing is overwritten and
// nothing conflicts; offline (helm template) renders none; false never and
// true always renders them.
func TestGatewayAPICRDsAuto(t *testing.T) {
	var std []string
	for _, p := range standardCRDs {
		std = append(std, p+".gateway.networking.k8s.io")
	}
	experimental := slices.Sorted(slices.Values(append(slices.Clone(std), xK8sIOCRDs...)))
	all := func(ann map[string]any, names ...string) map[string]map[string]any {
		m := map[string]map[string]any{}
		for _, n := range names {
			m[n] = ann
		}
		return m
	}
	ours, theirs := ownedBy("xds-controller", "xds-system"), ownedBy("xds-controller", "elsewhere")
	foreign := map[string]any{"gateway.networking.k8s.io/bundle-version": "v1.5.0"}
	mixed := all(ours, std...)
	mixed["httproutes.gateway.networking.k8s.io"] = foreign
	for _, c := range []struct {
		name     string
		cluster  *cluster // nil: offline
		values   map[string]any
		upgrade  bool
		want     []string
		hook     bool
		notesSay string
	}{
		{"bare cluster", newCluster(nil), nil, false, std, true, "installed by this release"},
		{"bare cluster, experimental", newCluster(nil), map[string]any{"channel": "experimental"}, false, experimental, true, "experimental channel"},
		{"upgrade of the release that installed them", newCluster(all(ours, std...)), nil, true, std, false, "installed by this release"},
		{"reinstall after an uninstall kept them", newCluster(all(ours, std...)), nil, false, std, true, "installed by this release"},
		{"switch to experimental: x-k8s.io CRDs absent", newCluster(all(ours, std...)), map[string]any{"channel": "experimental"}, true, experimental, false, "experimental channel"},
		{"another implementation's CRDs", newCluster(all(foreign, std...)), nil, false, nil, false, "the cluster's own"},
		{"another implementation's CRDs, upgrade", newCluster(all(foreign, std...)), nil, true, nil, false, "the cluster's own"},
		{"a release of the same name elsewhere", newCluster(all(theirs, std...)), nil, false, nil, false, "the cluster's own"},
		{"one CRD of someone else", newCluster(mixed), nil, true, nil, false, "the cluster's own"},
		{"offline (helm template)", nil, nil, false, nil, false, "installCRDs=auto"},
		{"false on a bare cluster", newCluster(nil), map[string]any{"installCRDs": false}, false, nil, false, "installCRDs=false"},
		{"true over another implementation's", newCluster(all(foreign, std...)), map[string]any{"installCRDs": true}, false, std, true, "installed by this release"},
	} {
		values := map[string]any{}
		if c.values != nil {
			values["gatewayAPI"] = c.values
		}
		objs, notes := renderOn(t, c.cluster, values, c.upgrade)
		if got := gatewayAPICRDNames(objs); !slices.Equal(got, c.want) {
			t.Errorf("%s: Gateway API CRDs %v, want %v", c.name, got, c.want)
		}
		if n, want := kinds(objs)["ValidatingAdmissionPolicy"], min(len(c.want), 1); n != want {
			t.Errorf("%s: %d safe-upgrades policies, want %d", c.name, n, want)
		}
		gc := find(objs, "GatewayClass", "xds-controller")
		if hook := str(gc, "metadata", "annotations", "helm.sh/hook") == "post-install"; hook != c.hook || !helmOwned(gc) {
			t.Errorf("%s: GatewayClass post-install hook %v, want %v: %v", c.name, hook, c.hook, gc["metadata"])
		}
		if !strings.Contains(notes, c.notesSay) {
			t.Errorf("%s: NOTES.txt lacks %q:\n%s", c.name, c.notesSay, notes)
		}
	}
}

// TestGatewayAPIInstallCRDsRefused: installCRDs other than true, false or
// auto fails the render, naming the value.
func TestGatewayAPIInstallCRDsRefused(t *testing.T) {
	for _, v := range []any{"yes", "Auto", ""} {
		_, err := renderFor(map[string]any{"gatewayAPI": map[string]any{"installCRDs": v}})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("gatewayAPI.installCRDs must be true, false or auto, not %q", v)) {
			t.Errorf("installCRDs %q: %v, want it refused", v, err)
		}
	}
}
