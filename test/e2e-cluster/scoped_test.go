package e2ecluster

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// unwatchedNamespace holds a Gateway that the namespace-scoped controller
// must leave alone.
const unwatchedNamespace = "xds-unwatched"

// TestScopedRBACOnTheLocalCluster installs the chart with
// watchNamespaces: [xds-example] (Roles in xds-example and the release
// namespace instead of the ClusterRole's namespaced rules; the controller
// runs with --watch-namespaces) in both modes, and the example Gateways
// serve their routes. The controller's ServiceAccount cannot read Secrets
// elsewhere, and a Gateway of the class in another namespace gets neither
// status nor a Service.
func TestScopedRBACOnTheLocalCluster(t *testing.T) {
	inBothModes(t, func(e *env, mode string) {
		ctx := context.Background()
		e.cleanup()
		e.t.Cleanup(func() {
			_ = e.kube.CoreV1().Namespaces().Delete(context.Background(), unwatchedNamespace, metav1.DeleteOptions{})
		})
		// Helm creates the Roles in the watched namespace: it must exist.
		e.mustKubectl("", "apply", "-f", examplesDir+"/00-namespace.yaml")
		if out, err := e.kubectl("", "create", "namespace", unwatchedNamespace); err != nil && !strings.Contains(out, "AlreadyExists") {
			e.t.Fatal(err)
		}
		e.helmInstallWith(mode, map[string]any{"watchNamespaces": []any{exampleNamespace}})

		sa := "--as=system:serviceaccount:" + releaseNamespace + ":" + releaseName
		for ns, want := range map[string]string{exampleNamespace: "yes", releaseNamespace: "yes", unwatchedNamespace: "no", "default": "no"} {
			out, _ := e.kubectl("", "auth", "can-i", "list", "secrets", "-n", ns, sa)
			if got := strings.TrimSpace(out); got != want {
				e.t.Errorf("can the controller list Secrets in %s? %q, want %q", ns, got, want)
			}
		}
		if out, _ := e.kubectl("", "auth", "can-i", "create", "deployments", "-A", sa); strings.TrimSpace(out) != "no" {
			e.t.Errorf("the controller may create Deployments in every namespace: %q", out)
		}

		// What the type field selector of the controller's Secret watch
		// leaves out, on this cluster.
		all, err := e.kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		tls, err := e.kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{FieldSelector: "type=kubernetes.io/tls"})
		if err != nil {
			e.t.Fatal(err)
		}
		e.t.Logf("Secrets in the cluster: %d; of type kubernetes.io/tls (what the controller's watch may see): %d", len(all.Items), len(tls.Items))

		e.mustKubectl(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: outside, namespace: `+unwatchedNamespace+`}
spec:
  gatewayClassName: `+className+`
  listeners: [{name: http, protocol: HTTP, port: 80}]
`, "apply", "-f", "-")

		e.applyExamples()
		web := e.gatewayAddress("web", 4*time.Minute)
		internal := e.gatewayAddress("internal", 2*time.Minute)
		e.expectBackend(web, "foo.example.com", "/", "foo", 3*time.Minute)
		e.expectBackend(web, "bar.example.com", "/api/users", "bar", time.Minute)
		e.expectBackend(internal, "anything.example.com", "/", "bar", 2*time.Minute)
		e.steady(web, "foo.example.com", "/", "foo", 3*time.Second)

		// The Gateway of the unwatched namespace, created before the
		// examples: untouched.
		gw, err := e.dyn.Resource(gatewayGVR).Namespace(unwatchedNamespace).Get(ctx, "outside", metav1.GetOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		if c := condition(gw, "Accepted"); c != nil && c["reason"] != "Pending" {
			e.t.Errorf("Gateway %s/outside: Accepted %v, want the CRD's default (Pending)", unwatchedNamespace, c)
		}
		if _, err := e.kube.CoreV1().Services(unwatchedNamespace).Get(ctx, "outside-"+className, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			e.t.Errorf("Service %s/outside-%s: %v, want not found", unwatchedNamespace, className, err)
		}
	})
}
