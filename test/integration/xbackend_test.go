package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// installXBackendCRD installs the experimental channel's XBackend CRD of
// the gateway-api module (the suite's API server has the standard
// channel's only) and waits until it is served.
func installXBackendCRD(t *testing.T) {
	t.Helper()
	std, err := gatewayAPICRDs()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(filepath.Dir(std), "experimental", "gateway.networking.x-k8s.io_xbackends.yaml")
	if _, err := envtest.InstallCRDs(restConfig, envtest.CRDInstallOptions{Paths: []string{path}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
}

// snapshotPods records the Pods and XBackends of the snapshots the
// pipeline translates (through its Resolve hook).
type snapshotPods struct {
	mu        sync.Mutex
	pods      []*corev1.Pod
	xbackends int
}

func (s *snapshotPods) resolve(_ context.Context, _ client.Reader, res *resources.Resources) (kubernetes.Resolver, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods, s.xbackends = res.Pods, len(res.XBackends)
	return kubernetes.SharedResolver{}, nil
}

func (s *snapshotPods) pod(ns, name string) (*corev1.Pod, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pods {
		if p.Namespace == ns && p.Name == name {
			return p, s.xbackends
		}
	}
	return nil, s.xbackends
}

// TestXBackendEndpointSelectorPods runs the controller against a real API
// server with the XBackend CRD: the snapshot it translates holds the
// XBackend and the Pods of every namespace (the pod cache of its own,
// pods.go), each stripped to labels, IPs and the Ready condition, and
// follows a Pod's readiness; an HTTPRoute to the EndpointSelector
// XBackend resolves (ResolvedRefs=True), the XBackend's status.ancestors
// names the route's Gateway with Accepted=True, and loses it when the
// route is deleted.
func TestXBackendEndpointSelectorPods(t *testing.T) {
	requireAPIServer(t)
	installXBackendCRD(t)
	ctx := context.Background()
	const ns = "xbackend-pods"
	if err := ensureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	seen := &snapshotPods{}
	startReplica(t, replicaOptions{identity: "xbackend", hooks: kubernetes.Hooks{Resolve: seen.resolve}})

	applyYAML(t, fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: xbackend-pods}
spec: {controllerName: xds-controller.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: %[1]s}
spec:
  gatewayClassName: xbackend-pods
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: %[1]s}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: web}]
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: web, namespace: %[1]s}
spec:
  type: EndpointSelector
  port: {number: 8080}
  endpointSelector:
    matchLabels: {app: web}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: %[1]s, labels: {app: web}, annotations: {note: dropped}}
spec:
  containers: [{name: app, image: example.invalid/app, env: [{name: A, value: b}]}]
`, ns))
	pod := &corev1.Pod{}
	if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-1"}, pod); err != nil {
		t.Fatal(err)
	}
	setReady := func(ready corev1.ConditionStatus) {
		t.Helper()
		pod.Status.PodIP = "10.244.7.9"
		pod.Status.PodIPs = []corev1.PodIP{{IP: "10.244.7.9"}}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Now()}}
		if err := k8sClient.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	setReady(corev1.ConditionTrue)
	eventually(t, 15*time.Second, "the ready Pod, stripped, and the XBackend in the snapshot", func() error {
		p, xbs := seen.pod(ns, "web-1")
		switch {
		case xbs == 0:
			return fmt.Errorf("no XBackend in the snapshot")
		case p == nil:
			return fmt.Errorf("no Pod %s/web-1 in the snapshot", ns)
		case p.Status.PodIP != "10.244.7.9" || len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Status != corev1.ConditionTrue:
			return fmt.Errorf("pod status %+v", p.Status)
		case len(p.Spec.Containers) != 0 || len(p.Annotations) != 0 || p.Labels["app"] != "web" || !p.Status.Conditions[0].LastTransitionTime.IsZero():
			return fmt.Errorf("pod not stripped to labels, IPs and readiness: %+v", p)
		}
		return nil
	})
	setReady(corev1.ConditionFalse)
	eventually(t, 15*time.Second, "the Pod's readiness change in the snapshot", func() error {
		if p, _ := seen.pod(ns, "web-1"); p == nil || p.Status.Conditions[0].Status != corev1.ConditionFalse {
			return fmt.Errorf("pod %+v", p)
		}
		return nil
	})
	eventually(t, 15*time.Second, "the route's backendRef to the XBackend resolved", func() error {
		var r gwapiv1.HTTPRoute
		if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app"}, &r); err != nil {
			return err
		}
		for _, p := range r.Status.Parents {
			for _, c := range p.Conditions {
				if c.Type == string(gwapiv1.RouteConditionResolvedRefs) {
					if c.Status != metav1.ConditionTrue {
						return fmt.Errorf("ResolvedRefs %s %s: %s", c.Status, c.Reason, c.Message)
					}
					return nil
				}
			}
		}
		return fmt.Errorf("no ResolvedRefs yet: %s", strings.TrimSpace(toYAML(r.Status)))
	})
	eventually(t, 15*time.Second, "the XBackend's status.ancestors: the Gateway, Accepted", func() error {
		var xb gwapixv1alpha1.XBackend
		if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &xb); err != nil {
			return err
		}
		as := xb.Status.Ancestors
		if len(as) != 1 || as[0].AncestorRef.Name != "gw" || len(as[0].Conditions) != 1 ||
			as[0].Conditions[0].Type != "Accepted" || as[0].Conditions[0].Status != metav1.ConditionTrue {
			return fmt.Errorf("status %s", strings.TrimSpace(toYAML(xb.Status)))
		}
		return nil
	})
	// The route goes: our ancestor entry goes with it.
	if err := k8sClient.Delete(ctx, &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the XBackend's ancestors emptied", func() error {
		var xb gwapixv1alpha1.XBackend
		if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &xb); err != nil {
			return err
		}
		if len(xb.Status.Ancestors) != 0 {
			return fmt.Errorf("status %s", strings.TrimSpace(toYAML(xb.Status)))
		}
		return nil
	})
}
