package e2ecluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The test hook (pkg/translate/testhook) of the controller turns every Envoy
// route with exactly this path prefix into the regex "(", past
// pre-validation: Envoy rejects the route configuration.
const (
	nackPrefix   = "/nack-me"
	nackHookEnv  = "XDS_CONTROLLER_TESTHOOK_REJECT_PREFIX"
	controllerLS = "app.kubernetes.io/name=xds-controller"
)

const nackRouteYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: nack-me
  namespace: xds-example
spec:
  parentRefs:
  - name: web
  hostnames: ["nack.example.com"]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /nack-me}
    backendRefs:
    - name: foo
      port: 80
`

// otherNamespace holds the route of another tenant that must serve while
// nackRouteYAML's is refused.
const otherNamespace = "xds-example-other"

// otherRouteYAML is a route of otherNamespace on Gateway web, to the
// Service foo of the example namespace (which a ReferenceGrant allows).
const otherRouteYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata:
  name: from-other
  namespace: xds-example
spec:
  from:
  - {group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: xds-example-other}
  to:
  - {group: "", kind: Service, name: foo}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: other
  namespace: xds-example-other
spec:
  parentRefs:
  - {name: web, namespace: xds-example}
  hostnames: ["other.example.com"]
  rules:
  - backendRefs:
    - {name: foo, namespace: xds-example, port: 80}
`

// TestNackOnTheLocalCluster (issues 7 and 25) runs, with two controller
// replicas (so that proxies connect to the leader and to the follower)
// and the NACK test hook on:
//   - killing every controller pod while a client sends requests through
//     the Gateway fails no request, and Programmed comes back;
//   - a route that Envoy rejects is held back alone: the route gets
//     Accepted=False reason Rejected with Envoy's message, the Gateway
//     stays Programmed, the old routes keep answering, and a route created
//     afterwards in another namespace serves within the usual propagation
//     time;
//   - an Envoy pod started meanwhile serves the newest configuration
//     without the refused route;
//   - the fixed route (a new generation) serves.
func TestNackOnTheLocalCluster(t *testing.T) {
	inBothModes(t, (*env).nack)
}

func (e *env) nack(mode string) {
	t := e.t
	ctx := context.Background()
	e.cleanup()
	e.helmInstallWith(mode, map[string]any{
		"replicas": 2,
		"extraEnv": []any{map[string]any{"name": nackHookEnv, "value": nackPrefix}},
	})
	e.applyExamples()
	web := e.gatewayAddress("web", 4*time.Minute)
	e.expectBackend(web, "foo.example.com", "/", "foo", 3*time.Minute)
	e.expectBackend(web, "bar.example.com", "/api/users", "bar", time.Minute)
	fleetNS, fleetName := webFleet(mode)
	e.fleetState(fleetNS, fleetName)
	e.logReports()

	// 1. Every controller pod killed under load: no request fails.
	load := e.startLoad(web, "foo.example.com", "/", "foo")
	time.Sleep(2 * time.Second)
	began := time.Now()
	killed := e.controllerPods()
	e.mustKubectl("", "-n", releaseNamespace, "delete", "pod", "-l", controllerLS, "--grace-period=0", "--force", "--wait=false")
	e.eventually("two new controller pods Ready", 3*time.Minute, func() error {
		ready := 0
		for name, ok := range e.controllerPods() {
			if killed[name] {
				return fmt.Errorf("pod %s still there", name)
			}
			if ok {
				ready++
			}
		}
		if ready != 2 {
			return fmt.Errorf("%d ready", ready)
		}
		return nil
	})
	e.eventually("every Envoy pod reconnected to a new controller pod", 3*time.Minute, func() error {
		envoys := 0
		for _, ns := range []string{releaseNamespace, exampleNamespace} {
			pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=envoy"})
			if err != nil {
				return err
			}
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
					envoys++
				}
			}
		}
		reported := e.reportedProxies(killed)
		if envoys == 0 || len(reported) != envoys {
			return fmt.Errorf("%d Envoy pods, reported proxies %v", envoys, reported)
		}
		return nil
	})
	e.eventually("web Programmed=True again after the controller pods were killed", 3*time.Minute, e.gatewayCondition("web", "Programmed", "True", "Programmed", ""))
	t.Logf("controller pods replaced and web Programmed again %s after the kill", time.Since(began).Round(100*time.Millisecond))
	time.Sleep(3 * time.Second)
	n, failed, _, errs := load.stop()
	t.Logf("controller kill under load: %d requests through web, %d failed %v", n, failed, errs)
	if failed > 0 || n == 0 {
		t.Errorf("killing the controller: %d of %d requests failed: %v", failed, n, errs)
	}
	e.logReports()

	// 2. A route that Envoy rejects, in the example namespace; web lets
	// routes of every namespace attach.
	e.mustKubectl("", "-n", exampleNamespace, "patch", "gateway", "web", "--type=json",
		"-p", `[{"op":"replace","path":"/spec/listeners/0/allowedRoutes/namespaces/from","value":"All"}]`)
	e.mustKubectl("apiVersion: v1\nkind: Namespace\nmetadata: {name: "+otherNamespace+"}\n", "apply", "-f", "-")
	t.Cleanup(func() { _, _ = e.kubectl("", "delete", "namespace", otherNamespace, "--wait=false") })
	defer func() {
		e.mustKubectl("", "delete", "namespace", otherNamespace)
		e.waitNamespaceGone(otherNamespace)
	}()
	e.eventually("web Programmed=True after the patch", 2*time.Minute, e.gatewayCondition("web", "Programmed", "True", "Programmed", ""))
	began = time.Now()
	e.mustKubectl(nackRouteYAML, "apply", "-f", "-")
	rejected := e.routeCondition(exampleNamespace, "nack-me", "Accepted", "False", "Rejected", "missing )")
	for err := rejected(); err != nil; err = rejected() {
		if time.Since(began) > 2*time.Minute {
			e.dumpState()
			t.Fatalf("route nack-me not Accepted=False reason Rejected: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the refused route was marked %s after `kubectl apply`", time.Since(began).Round(100*time.Millisecond))
	t.Logf("kubectl get httproute nack-me -n %s -o yaml:\n%s", exampleNamespace,
		e.mustKubectl("", "-n", exampleNamespace, "get", "httproute", "nack-me", "-o", "yaml"))

	// A route created afterwards in another namespace serves.
	began = time.Now()
	e.mustKubectl(otherRouteYAML, "apply", "-f", "-")
	e.expectBackend(web, "other.example.com", "/", "foo", time.Minute)
	t.Logf("a route of namespace %s created after the NACK answered %s after `kubectl apply`", otherNamespace, time.Since(began).Round(10*time.Millisecond))

	// The Gateway stays Programmed; the old routes keep answering; the
	// refused one does not.
	if err := e.gatewayCondition("web", "Programmed", "True", "Programmed", "")(); err != nil {
		t.Errorf("web while the refused route is held: %v", err)
	}
	t.Logf("kubectl get gateway web -n %s -o yaml while the refused route is held:\n%s", exampleNamespace,
		e.mustKubectl("", "-n", exampleNamespace, "get", "gateway", "web", "-o", "yaml"))
	e.logReports()
	e.steady(web, "foo.example.com", "/", "foo", 5*time.Second)
	e.expectBackend(web, "bar.example.com", "/api/users", "bar", 10*time.Second)
	if r, err := e.get(web, "nack.example.com", nackPrefix); err == nil {
		t.Errorf("the rejected route answers: %+v", r)
	}

	// 3. A new Envoy pod serves the newest configuration without the
	// refused route.
	pods, err := e.kube.CoreV1().Pods(fleetNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=envoy,app.kubernetes.io/instance=" + fleetName})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("fleet pods: %v %d", err, len(pods.Items))
	}
	old := map[string]bool{}
	for _, p := range pods.Items {
		old[p.Name] = true
	}
	if err := e.kube.CoreV1().Pods(fleetNS).Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var fresh *corev1.Pod
	e.eventually("a new Envoy pod Ready", 2*time.Minute, func() error {
		pods, err := e.kube.CoreV1().Pods(fleetNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=envoy,app.kubernetes.io/instance=" + fleetName})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if !old[p.Name] && p.DeletionTimestamp == nil && podReady(&p) {
				fresh = &p
				return nil
			}
		}
		return errors.New("none yet")
	})
	svc, err := e.kube.CoreV1().Services(exampleNamespace).Get(ctx, "web-"+className, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podAddr := net.JoinHostPort(fresh.Status.PodIP, fmt.Sprint(svc.Spec.Ports[0].TargetPort.IntValue()))
	e.eventually("the new Envoy pod "+fresh.Name+" ("+podAddr+") serves foo.example.com", time.Minute, func() error {
		r, err := e.getAt(podAddr, "foo.example.com", "/")
		if err != nil {
			return err
		}
		if !strings.HasPrefix(r.Pod, "foo-") {
			return fmt.Errorf("answered by %s", r.Pod)
		}
		return nil
	})
	if r, err := e.getAt(podAddr, "bar.example.com", "/api/users"); err != nil || !strings.HasPrefix(r.Pod, "bar-") {
		t.Errorf("the new Envoy pod: bar.example.com/api/users: %+v %v", r, err)
	}
	if r, err := e.getAt(podAddr, "other.example.com", "/"); err != nil || !strings.HasPrefix(r.Pod, "foo-") {
		t.Errorf("the new Envoy pod: other.example.com/: %+v %v", r, err)
	}
	if r, err := e.getAt(podAddr, "nack.example.com", nackPrefix); err == nil {
		t.Errorf("the new Envoy pod serves the rejected route: %+v", r)
	}
	if err := rejected(); err != nil {
		t.Errorf("route nack-me after the new Envoy pod: %v", err)
	}

	// 4. The fixed route (a new generation) is tried again and serves.
	began = time.Now()
	e.mustKubectl(strings.ReplaceAll(nackRouteYAML, nackPrefix, "/fixed"), "apply", "-f", "-")
	e.expectBackend(web, "nack.example.com", "/fixed", "foo", time.Minute)
	e.eventually("route nack-me Accepted=True after the fix", time.Minute, e.routeCondition(exampleNamespace, "nack-me", "Accepted", "True", "Accepted", ""))
	t.Logf("the fixed route answered %s after `kubectl apply`", time.Since(began).Round(10*time.Millisecond))
	e.mustKubectl("", "-n", exampleNamespace, "delete", "httproute", "nack-me")
	e.eventually("web Programmed=True at the end", 2*time.Minute, e.gatewayCondition("web", "Programmed", "True", "Programmed", ""))
	e.steady(web, "foo.example.com", "/", "foo", 3*time.Second)
}

// routeCondition returns a check that HTTPRoute ns/name has, for its
// parent of our controller, condition typ with status, reason and a
// message containing msg.
func (e *env) routeCondition(ns, name, typ, status, reason, msg string) func() error {
	return func() error {
		hr, err := e.dyn.Resource(httpRouteGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		parents, _, _ := unstructured.NestedSlice(hr.Object, "status", "parents")
		for _, p := range parents {
			pm, _ := p.(map[string]any)
			conds, _ := pm["conditions"].([]any)
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				m, _ := cm["message"].(string)
				if cm["type"] == typ && cm["status"] == status && cm["reason"] == reason && strings.Contains(m, msg) {
					return nil
				}
			}
		}
		return fmt.Errorf("%s: no parent with %s=%s reason %s %q: %v", name, typ, status, reason, msg, parents)
	}
}

// gatewayCondition returns a check that Gateway name (example namespace)
// has condition typ with status, reason and a message containing msg.
func (e *env) gatewayCondition(name, typ, status, reason, msg string) func() error {
	return func() error {
		gw, err := e.dyn.Resource(gatewayGVR).Namespace(exampleNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := condition(gw, typ)
		m, _ := c["message"].(string)
		if c == nil || c["status"] != status || c["reason"] != reason || !strings.Contains(m, msg) {
			return fmt.Errorf("%s: %v", typ, c)
		}
		return nil
	}
}

// logReports logs the controller replicas' data-plane reports.
func (e *env) logReports() {
	out, _ := e.kubectl("", "-n", releaseNamespace, "get", "configmaps", "-l", "xds-controller.dev/dataplane-report=true",
		"-o", `jsonpath={range .items[*]}{.metadata.name}: {.data.report\.json}{"\n"}{end}`)
	e.t.Logf("data-plane reports:\n%s", out)
}

// controllerPods maps the controller's pods to their readiness.
func (e *env) controllerPods() map[string]bool {
	e.t.Helper()
	pods, err := e.kube.CoreV1().Pods(releaseNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: controllerLS})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		out[p.Name] = p.DeletionTimestamp == nil && podReady(&p)
	}
	return out
}

// reportedProxies lists the proxies (node ids) in the data-plane reports
// of the controller pods not in except.
func (e *env) reportedProxies(except map[string]bool) []string {
	cms, err := e.kube.CoreV1().ConfigMaps(releaseNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "xds-controller.dev/dataplane-report=true"})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, cm := range cms.Items {
		if except[strings.TrimPrefix(cm.Name, "xds-controller-dataplane-")] {
			continue
		}
		var r struct {
			Proxies []struct {
				Node string `json:"node"`
			} `json:"proxies"`
		}
		if err := json.Unmarshal([]byte(cm.Data["report.json"]), &r); err != nil {
			continue
		}
		for _, p := range r.Proxies {
			out = append(out, p.Node)
		}
	}
	return out
}

// getAt sends GET http://addrpath (addr host:port) with Host host.
func (e *env) getAt(addr, host, path string) (*echoResponse, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	return e.getPort(h, p, host, path)
}

// load sends requests one after the other until stop.
type load struct {
	n, failed, closes atomic.Int64
	mu                sync.Mutex
	errs              []string
	done              chan struct{}
	wg                sync.WaitGroup
}

// runLoad calls send in a loop, pause apart, until stop, and counts the
// requests, those that fail (send's error) and the responses with
// Connection: close (send's closed); after runs once the loop ends.
func runLoad(pause time.Duration, send func() (closed bool, err error), after func()) *load {
	l := &load{done: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer after()
		for {
			select {
			case <-l.done:
				return
			default:
			}
			closed, err := send()
			l.n.Add(1)
			if closed {
				l.closes.Add(1)
			}
			if err != nil {
				l.failed.Add(1)
				l.mu.Lock()
				if len(l.errs) < 5 {
					l.errs = append(l.errs, time.Now().Format("15:04:05.000")+" "+err.Error())
				}
				l.mu.Unlock()
			}
			time.Sleep(pause)
		}
	}()
	return l
}

// startLoad sends GET addr host path in a loop (a new connection each,
// 20 ms apart) and counts the requests that fail or are not answered by
// backend.
func (e *env) startLoad(addr, host, path, backend string) *load {
	return runLoad(20*time.Millisecond, func() (bool, error) {
		r, err := e.get(addr, host, path)
		if err == nil && !strings.HasPrefix(r.Pod, backend+"-") {
			err = fmt.Errorf("answered by %s", r.Pod)
		}
		return false, err
	}, func() {})
}

// stop ends the load and returns the requests sent, those that failed,
// the responses with Connection: close and the first few errors.
func (l *load) stop() (n, failed, closes int64, errs []string) {
	close(l.done)
	l.wg.Wait()
	return l.n.Load(), l.failed.Load(), l.closes.Load(), l.errs
}
