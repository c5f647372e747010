package e2ecluster

// The Gateway scenarios beyond the examples: a static address, and a
// Gateway moved between the Shared and the Dedicated fleet.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// staticAddress checks that a Gateway requesting an address in
// spec.addresses gets it from the load balancer, reports it in
// status.addresses and answers on it; then deletes that Gateway.
func (e *env) staticAddress() {
	const want = "10.244.1.240"
	e.mustKubectl(`apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: static
  namespace: xds-example
spec:
  gatewayClassName: xds-controller
  addresses:
  - value: `+want+`
  listeners:
  - name: http
    protocol: HTTP
    port: 80
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: static
  namespace: xds-example
spec:
  parentRefs:
  - name: static
  rules:
  - backendRefs:
    - name: bar
      port: 80
`, "apply", "-f", "-")
	if got := e.gatewayAddress("static", 3*time.Minute); got != want {
		e.t.Errorf("Gateway static: status.addresses[0] = %s, want the requested %s", got, want)
	}
	e.expectBackend(want, "any.example.com", "/", "bar", 2*time.Minute)
	e.mustKubectl("", "-n", exampleNamespace, "delete", "httproute/static", "gateway/static", "--wait=true")
}

// switchModes moves the class's Gateways (web is left) from Shared to
// Dedicated mode and back by editing the chart's GatewayParameters: each
// time the new fleet serves web, the old one is deleted, and web's Service
// keeps only endpoints that answer.
func (e *env) switchModes(web string) {
	ctx := context.Background()
	setMode := func(m string) {
		e.mustKubectl("", "-n", releaseNamespace, "patch", "gatewayparameters", "xds-controller-defaults", "--type=merge", "-p", `{"spec":{"mode":"`+m+`"}}`)
	}
	deploymentGone := func(ns, name string) func() error {
		return func() error {
			_, err := e.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			return errors.New("still there")
		}
	}
	webService := "web-" + className

	setMode("Dedicated")
	e.fleetState(exampleNamespace, webService)
	e.eventually("shared fleet deleted after the switch to Dedicated", time.Minute, deploymentGone(releaseNamespace, "envoy-"+className))
	e.expectBackend(web, "foo.example.com", "/", "foo", time.Minute)
	e.steady(web, "foo.example.com", "/", "foo", 3*time.Second)

	setMode("Shared")
	e.fleetState(releaseNamespace, "envoy-"+className)
	e.eventually("dedicated fleet deleted after the switch to Shared", time.Minute, deploymentGone(exampleNamespace, webService))
	e.eventually("web's Service has only the controller's EndpointSlices", time.Minute, func() error {
		l, err := e.kube.DiscoveryV1().EndpointSlices(exampleNamespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + webService})
		if err != nil {
			return err
		}
		for _, s := range l.Items {
			if m := s.Labels["endpointslice.kubernetes.io/managed-by"]; m != "provisioner.xds-controller.dev" {
				return fmt.Errorf("EndpointSlice %s managed by %q", s.Name, m)
			}
		}
		return nil
	})
	e.expectBackend(web, "foo.example.com", "/", "foo", time.Minute)
	e.steady(web, "foo.example.com", "/", "foo", 5*time.Second)
}

type fleetState struct {
	generation   int64
	templateHash string
	pods         string // sorted "name/uid/restarts" of the fleet's pods
}

func (e *env) fleetState(ns, name string) fleetState {
	e.t.Helper()
	ctx := context.Background()
	var dep *appsv1.Deployment
	e.eventually("Envoy Deployment "+ns+"/"+name+" rolled out", 2*time.Minute, func() error {
		d, err := e.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != want || d.Status.ReadyReplicas != want || d.Status.Replicas != want {
			return fmt.Errorf("status %+v", d.Status)
		}
		dep = d
		return nil
	})
	pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=envoy,app.kubernetes.io/instance=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	var ps []string
	for _, p := range pods.Items {
		ps = append(ps, fmt.Sprintf("%s/%s/%d", p.Name, p.UID, restarts(&p)))
	}
	slices.Sort(ps)
	return fleetState{
		generation:   dep.Generation,
		templateHash: dep.Spec.Template.Annotations["xds-controller.dev/pod-template-hash"],
		pods:         strings.Join(ps, ","),
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}
