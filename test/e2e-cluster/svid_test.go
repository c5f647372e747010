package e2ecluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSVIDsOnTheLocalCluster: with 2-minute SVIDs, in Shared and in
// Dedicated mode, the Envoy pods get their SVIDs from the controller and
// serve; a pod running as another Gateway's ServiceAccount that asks for
// this Gateway's scope is refused with PERMISSION_DENIED; an agent whose
// token has another audience gets no SVID; and traffic keeps answering
// through three rotations without a failed request (and Envoy reconnects
// with its current SVID when the controller restarts).
func TestSVIDsOnTheLocalCluster(t *testing.T) {
	inBothModes(t, (*env).svids)
}

// otherGateway has a fleet of its own in both modes (its own parameters
// say Dedicated): its ServiceAccount, other-xds-controller, is "another
// Gateway's".
const otherGateway = `apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: dedicated, namespace: xds-example}
spec: {mode: Dedicated}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: other, namespace: xds-example}
spec:
  gatewayClassName: xds-controller
  infrastructure:
    parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: dedicated}
  listeners:
  - {name: http, port: 80, protocol: HTTP}
`

func (e *env) svids(mode string) {
	t := e.t
	e.cleanup()
	values := chartValues(mode)
	values["identity"] = map[string]any{"svidLifetime": "2m"}
	e.helmInstallValues(mode, values)
	e.mustKubectl("", "apply", "-f", examplesDir)
	e.mustKubectl(otherGateway, "apply", "-f", "-")
	e.mustKubectl("", "-n", exampleNamespace, "rollout", "status", "deploy/foo", "deploy/bar", "--timeout=120s")

	// Envoy pods get SVIDs and serve.
	web := e.gatewayAddress("web", 4*time.Minute)
	e.expectBackend(web, "foo.example.com", "/", "foo", 3*time.Minute)
	fleetNS, fleetName, fleetSA := releaseNamespace, "envoy-"+className, "envoy-"+className
	if mode == "Dedicated" {
		fleetNS, fleetName, fleetSA = exampleNamespace, "web-"+className, "web-"+className
	}
	e.fleetState(fleetNS, fleetName)
	otherSA := "other-" + className
	e.fleetState(exampleNamespace, otherSA)
	e.onlyTheAgentHasAToken(fleetNS, fleetName)

	// Another Gateway's ServiceAccount asking for web's scope: it gets an
	// SVID (it is a fleet's), and the xDS server refuses the scope.
	e.roguePod("rogue-scope", exampleNamespace, otherSA, "", fleetNS, fleetName)
	want := fmt.Sprintf("peer=spiffe://cluster.local/ns/%s/sa/%s", exampleNamespace, otherSA)
	line := e.waitLog(releaseNamespace, "deploy/xds-controller", "controller", func(l string) bool {
		return strings.Contains(l, "xDS stream refused") && strings.Contains(l, want)
	}, 2*time.Minute)
	t.Logf("controller: %s", line)
	if !strings.Contains(line, "code = PermissionDenied") {
		t.Errorf("refusal is not PERMISSION_DENIED: %s", line)
	}
	// What the refused Envoy says (informative: Envoy's wording may vary).
	if out, err := e.kubectl("", "-n", exampleNamespace, "logs", "rogue-scope", "-c", "envoy", "--tail=2000"); err == nil {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "may not subscribe to proxy scope") {
				t.Logf("rogue Envoy: %s", strings.TrimSpace(l))
				break
			}
		}
	}

	// web's own ServiceAccount with a token for another audience: no SVID.
	e.roguePod("rogue-audience", fleetNS, fleetSA, "not-xds-controller", fleetNS, fleetName)
	line = e.waitLog(fleetNS, "rogue-audience", "svid-agent", func(l string) bool {
		return strings.Contains(l, "SVID renewal failed")
	}, 2*time.Minute)
	t.Logf("agent with a wrong-audience token: %s", line)
	if !strings.Contains(line, "401 Unauthorized") || !strings.Contains(line, `token audiences [\"not-xds-controller\"] is invalid for the target audiences [\"xds-controller-identity\"]`) {
		t.Errorf("wrong-audience refusal: %s", line)
	}
	if out, _ := e.kubectl("", "-n", fleetNS, "logs", "rogue-audience", "-c", "svid-agent"); strings.Contains(out, "SVID written") {
		t.Error("an agent with a wrong-audience token got an SVID")
	}

	// Three rotations of web's fleet under traffic.
	e.rotations(web, fleetNS, fleetName, 3)

	// The controller restarts: Envoy reconnects with the SVID it holds now
	// (the first ones have expired) and receives a route edit.
	e.restartControllerAndEdit(web)
	e.steady(web, "foo.example.com", "/", "foo", 3*time.Second)
}

// onlyTheAgentHasAToken: in the fleet's pods the token volume is mounted by
// the svid-agent container only, and nothing automounts one.
func (e *env) onlyTheAgentHasAToken(ns, fleet string) {
	pods := e.fleetPods(ns, fleet)
	for _, p := range pods {
		if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
			e.t.Errorf("pod %s automounts a ServiceAccount token", p.Name)
		}
		tokenVolumes := map[string]bool{}
		for _, v := range p.Spec.Volumes {
			if v.Projected != nil {
				for _, s := range v.Projected.Sources {
					if s.ServiceAccountToken != nil {
						tokenVolumes[v.Name] = true
					}
				}
			}
		}
		for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			for _, m := range c.VolumeMounts {
				if tokenVolumes[m.Name] && c.Name != "svid-agent" {
					e.t.Errorf("pod %s: container %s mounts the token", p.Name, c.Name)
				}
			}
		}
	}
}

func (e *env) fleetPods(ns, fleet string) []corev1.Pod {
	e.t.Helper()
	l, err := e.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=envoy,app.kubernetes.io/instance=" + fleet})
	if err != nil || len(l.Items) == 0 {
		e.t.Fatalf("pods of fleet %s/%s: %v (%d)", ns, fleet, err, len(l.Items))
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// roguePod runs, in ns as ServiceAccount sa, a copy of the pod of fleet
// targetNS/targetFleet (its bootstrap, so its scope, copied into ns),
// with audience as its token's audience when not empty. It carries none
// of the fleet's labels: no Service sends it traffic.
func (e *env) roguePod(name, ns, sa, audience, targetNS, targetFleet string) {
	e.t.Helper()
	ctx := context.Background()
	dep, err := e.kube.AppsV1().Deployments(targetNS).Get(ctx, targetFleet, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	cm, err := e.kube.CoreV1().ConfigMaps(targetNS).Get(ctx, targetFleet, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	copyCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-bootstrap", Namespace: ns}, Data: cm.Data}
	if _, err := e.kube.CoreV1().ConfigMaps(ns).Create(ctx, copyCM, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	spec := *dep.Spec.Template.Spec.DeepCopy()
	spec.ServiceAccountName = sa
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.ConfigMap != nil && v.ConfigMap.Name == targetFleet {
			v.ConfigMap.Name = copyCM.Name
		}
		if v.Projected != nil && audience != "" {
			for _, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					s.ServiceAccountToken.Audience = audience
				}
			}
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "xds-e2e-rogue"}}, Spec: spec}
	if _, err := e.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.kube.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = e.kube.CoreV1().ConfigMaps(ns).Delete(context.Background(), copyCM.Name, metav1.DeleteOptions{})
	})
}

// waitLog waits until a line of `kubectl logs target -c container` in ns
// satisfies match, and returns it.
func (e *env) waitLog(ns, target, container string, match func(string) bool, timeout time.Duration) string {
	e.t.Helper()
	var found string
	e.eventually(fmt.Sprintf("log of %s/%s -c %s", ns, target, container), timeout, func() error {
		out, err := e.kubectl("", "-n", ns, "logs", target, "-c", container, "--tail=2000")
		if err != nil {
			return err
		}
		for _, l := range strings.Split(out, "\n") {
			if match(l) {
				found = strings.TrimSpace(l)
				return nil
			}
		}
		return fmt.Errorf("no matching line in %d lines", strings.Count(out, "\n"))
	})
	return found
}

// svidsWritten counts each fleet pod's "SVID written" lines (its agent's
// rotations, the first issue included).
func (e *env) svidsWritten(ns, fleet string) map[string]int {
	out := map[string]int{}
	for _, p := range e.fleetPods(ns, fleet) {
		logs, err := e.kubectl("", "-n", ns, "logs", p.Name, "-c", "svid-agent", "--tail=10000")
		if err != nil {
			e.t.Fatal(err)
		}
		out[p.Name] = strings.Count(logs, "SVID written")
	}
	return out
}

// rotations sends GET http://addr/ (Host foo.example.com) every 250 ms
// until every pod of the fleet has renewed its SVID n more times, and
// fails on any failed request.
func (e *env) rotations(addr, ns, fleet string, n int) {
	t := e.t
	start := e.svidsWritten(ns, fleet)
	t.Logf("SVIDs written so far per pod: %v", start)
	deadline := time.Now().Add(time.Duration(n+2) * 90 * time.Second)
	requests, failures := 0, 0
	var firstFailure error
	lastCheck := time.Now()
	began := time.Now()
	for {
		r, err := e.get(addr, "foo.example.com", "/")
		requests++
		if err == nil && !strings.HasPrefix(r.Pod, "foo-") {
			err = fmt.Errorf("answered by %s", r.Pod)
		}
		if err != nil {
			failures++
			if firstFailure == nil {
				firstFailure = fmt.Errorf("request %d at %s: %w", requests, time.Since(began).Round(time.Second), err)
			}
		}
		if time.Since(lastCheck) > 5*time.Second {
			lastCheck = time.Now()
			now := e.svidsWritten(ns, fleet)
			done := len(now) == len(start)
			for pod, c := range now {
				if c < start[pod]+n {
					done = false
				}
			}
			if done {
				t.Logf("rotations: %v -> %v SVIDs written per pod in %s; %d requests, %d failed",
					start, now, time.Since(began).Round(time.Second), requests, failures)
				break
			}
			if time.Now().After(deadline) {
				e.dumpState()
				t.Fatalf("not %d rotations after %s: %v -> %v (%d requests, %d failed)", n, time.Since(began).Round(time.Second), start, now, requests, failures)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	if failures > 0 {
		t.Errorf("%d of %d requests failed during the rotations; first: %v", failures, requests, firstFailure)
	}
}

// restartControllerAndEdit restarts every controller replica (each Envoy
// then reconnects with the SVID and trust bundle it holds now), adds the
// host rotated.example.com to the example route foo, and waits until web
// serves it: the reconnected Envoys receive configuration again.
func (e *env) restartControllerAndEdit(web string) {
	e.mustKubectl("", "-n", releaseNamespace, "rollout", "restart", "deploy/xds-controller")
	e.mustKubectl("", "-n", releaseNamespace, "rollout", "status", "deploy/xds-controller", "--timeout=180s")
	e.mustKubectl(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: foo
  namespace: xds-example
spec:
  parentRefs:
  - name: web
  hostnames: ["foo.example.com", "rotated.example.com"]
  rules:
  - backendRefs:
    - name: foo
      port: 80
`, "apply", "-f", "-")
	e.expectBackend(web, "rotated.example.com", "/", "foo", 2*time.Minute)
}
