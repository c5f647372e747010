package chart

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/kube"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestRateLimitConfigMapKeepsTheControllersData: on a real API server
// (envtest), the chart with rateLimit.enabled installs (the API server
// accepts each of the service's objects); the data the controller writes
// into the ConfigMap (server-side apply, field manager xds-controller, as
// pkg/ratelimitconfig does) survives a `helm upgrade` that changes values,
// with Helm's server-side apply (Helm 4's default) and with its
// client-side three-way merge (releases installed with
// --server-side=false, or by Helm 3), since the chart's manifest has no
// data; and `helm uninstall` removes the ConfigMap.
func TestRateLimitConfigMapKeepsTheControllersData(t *testing.T) {
	for _, serverSide := range []bool{true, false} {
		t.Run(fmt.Sprintf("server-side=%v", serverSide), func(t *testing.T) {
			kubeconfig, dyn := apiServer(t)
			t.Setenv("KUBECONFIG", kubeconfig)
			t.Setenv("KUBECACHEDIR", t.TempDir())
			for _, v := range []string{"HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"} {
				t.Setenv(v, t.TempDir())
			}
			const ns = "xds-system"
			settings := cli.New()
			settings.SetNamespace(ns)
			cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})))
			if err := cfg.Init(settings.RESTClientGetter(), ns, "secret"); err != nil {
				t.Fatal(err)
			}
			ch, err := loader.Load(chartDir)
			if err != nil {
				t.Fatal(err)
			}
			// No Gateway API CRDs and no GatewayClass: what is tested is
			// the rate-limit service's objects; no Deployment has to
			// become ready (no --wait: the API server runs no controllers).
			values := func(logLevel string) map[string]any {
				return map[string]any{
					"replicas": 0, "gatewayAPI": map[string]any{"installCRDs": false}, "gatewayClass": map[string]any{"create": false},
					"rateLimit": map[string]any{"enabled": true, "logLevel": logLevel},
				}
			}
			in := action.NewInstall(cfg)
			in.ReleaseName, in.Namespace, in.CreateNamespace = "xds-controller", ns, true
			in.ServerSideApply = serverSide
			in.WaitStrategy, in.Timeout = kube.HookOnlyStrategy, time.Minute
			if _, err := in.Run(ch, values("warn")); err != nil {
				t.Fatalf("helm install: %v", err)
			}

			ctx := context.Background()
			cms := dyn.Resource(configMapGVR).Namespace(ns)
			written := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": rateLimitName, "namespace": ns},
				"data":     map[string]any{"gateway.apps.web.yaml": "domain: gateway.apps.web\n"},
			}}
			if _, err := cms.Apply(ctx, rateLimitName, written, metav1.ApplyOptions{FieldManager: "xds-controller", Force: true}); err != nil {
				t.Fatalf("the controller's write: %v", err)
			}

			up := action.NewUpgrade(cfg)
			up.Namespace = ns
			up.WaitStrategy, up.Timeout = kube.HookOnlyStrategy, time.Minute
			if _, err := up.Run("xds-controller", ch, values("debug")); err != nil {
				t.Fatalf("helm upgrade: %v", err)
			}
			cm, err := cms.Get(ctx, rateLimitName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if data, _, _ := unstructured.NestedStringMap(cm.Object, "data"); data["gateway.apps.web.yaml"] != "domain: gateway.apps.web\n" || len(data) != 1 {
				t.Errorf("after helm upgrade: data %v, want the controller's", data)
			}
			if cm.GetLabels()["app.kubernetes.io/component"] != "ratelimit" {
				t.Errorf("after helm upgrade: labels %v", cm.GetLabels())
			}
			// The upgrade did happen.
			dep, err := dyn.Resource(deploymentGVR).Namespace(ns).Get(ctx, rateLimitName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
			if e := env(containers[0].(map[string]any)); e["LOG_LEVEL"] != "debug" {
				t.Errorf("after helm upgrade: LOG_LEVEL %q, want debug", e["LOG_LEVEL"])
			}

			un := action.NewUninstall(cfg)
			un.WaitStrategy, un.Timeout = kube.HookOnlyStrategy, time.Minute
			if _, err := un.Run("xds-controller"); err != nil {
				t.Fatalf("helm uninstall: %v", err)
			}
			if _, err := cms.Get(ctx, rateLimitName, metav1.GetOptions{}); err == nil {
				t.Error("the ConfigMap outlives helm uninstall")
			}
		})
	}
}
