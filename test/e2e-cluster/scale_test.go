package e2ecluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controllerMemory is the working set of the controller container in
// bytes, as the kubelet's summary API reports it (the figure the OOM killer
// and `kubectl top` go by).
func (e *env) controllerMemory() uint64 {
	e.t.Helper()
	ctx := context.Background()
	pods, err := e.kube.CoreV1().Pods(releaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=xds-controller"})
	if err != nil || len(pods.Items) == 0 {
		e.t.Fatalf("controller pods: %v (%d)", err, len(pods.Items))
	}
	pod := pods.Items[0]
	raw, err := e.kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", pod.Spec.NodeName, "proxy/stats/summary").DoRaw(ctx)
	if err != nil {
		e.t.Fatalf("kubelet summary: %v", err)
	}
	var summary struct {
		Pods []struct {
			PodRef struct {
				Name, Namespace string
			} `json:"podRef"`
			Containers []struct {
				Name   string `json:"name"`
				Memory struct {
					WorkingSetBytes *uint64 `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"containers"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(raw, &summary); err != nil {
		e.t.Fatal(err)
	}
	for _, p := range summary.Pods {
		if p.PodRef.Namespace != pod.Namespace || p.PodRef.Name != pod.Name {
			continue
		}
		for _, c := range p.Containers {
			if c.Memory.WorkingSetBytes != nil {
				return *c.Memory.WorkingSetBytes
			}
		}
	}
	e.t.Fatalf("no memory figure for pod %s/%s in the kubelet summary", pod.Namespace, pod.Name)
	return 0
}

// TestManySecrets checks that Secrets the controller does not use cost it
// little memory (issue 4: "a cluster with 30,000 Secrets must not blow up
// memory"): Secrets are watched as metadata only and only the referenced
// ones are read in full. E2E_SECRETS=N creates N Secrets of 4 KiB each in
// a namespace of their own; the controller's working set may grow by less
// than half of the data it would hold if it cached them. Skipped without
// E2E_SECRETS (creating 30,000 Secrets takes minutes):
//
//	make e2e E2E_RUN=TestManySecrets E2E_SECRETS=30000
func TestManySecrets(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("E2E_SECRETS"))
	if n <= 0 {
		t.Skip("set E2E_SECRETS=N to create N Secrets")
	}
	const secretsNamespace = "xds-many-secrets"
	const dataBytes = 4096
	e := setup(t)
	e.cleanup()
	ctx := context.Background()
	deleteSecrets := func() {
		_ = e.kube.CoreV1().Namespaces().Delete(ctx, secretsNamespace, metav1.DeleteOptions{})
		e.waitNamespaceGone(secretsNamespace)
	}
	deleteSecrets()
	if os.Getenv("E2E_KEEP") == "" {
		t.Cleanup(func() { deleteSecrets(); e.cleanup() })
	}
	e.helmInstall("Shared")
	e.mustKubectl("", "apply", "-f", examplesDir)
	web := e.gatewayAddress("web", 4*time.Minute)
	e.expectBackend(web, "foo.example.com", "/", "foo", 3*time.Minute)
	time.Sleep(10 * time.Second) // let the controller settle
	before := e.controllerMemory()

	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretsNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	data := []byte(strings.Repeat("x", dataBytes))
	var next, failed atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i), Namespace: secretsNamespace},
					Data: map[string][]byte{"blob": data}}
				if _, err := e.kube.CoreV1().Secrets(secretsNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d Secrets were not created", f, n)
	}
	t.Logf("created %d Secrets of %d bytes in %s", n, dataBytes, time.Since(start).Round(time.Second))
	time.Sleep(20 * time.Second) // the watch delivers them; let the controller settle
	after := e.controllerMemory()
	growth := int64(after) - int64(before)
	t.Logf("controller working set: %.1f MiB before, %.1f MiB after %d Secrets (%+.1f MiB; their data is %.1f MiB)",
		float64(before)/(1<<20), float64(after)/(1<<20), n, float64(growth)/(1<<20), float64(n*dataBytes)/(1<<20))
	if limit := int64(n * dataBytes / 2); growth > limit {
		t.Errorf("the controller grew by %d bytes, more than half of the Secrets' data (%d bytes): are Secrets cached in full?", growth, limit)
	}
	// The controller still serves changes.
	e.mustKubectl(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: foo
  namespace: xds-example
spec:
  parentRefs:
  - name: web
  hostnames: ["after-secrets.example.com"]
  rules:
  - backendRefs:
    - name: bar
      port: 80
`, "apply", "-f", "-")
	e.expectBackend(web, "after-secrets.example.com", "/", "bar", 30*time.Second)
}
