package e2ecluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	toolscache "k8s.io/client-go/tools/cache"
)

// controllerName is ours (gatewayapi.ControllerName).
const controllerName = "xds-controller.dev/gateway-controller"

var httpRouteGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}

// routed reports whether Envoy at addr:80 has a route for host: any answer
// but 404 (Envoy's answer for a host no virtual host matches; the
// benchmark's backends have no endpoints, so a routed request gets 503).
func routed(c *http.Client, addr, host string) bool {
	return routedAt(c, net.JoinHostPort(addr, "80"), host)
}

// routedAt is routed for the Envoy at hostport.
func routedAt(c *http.Client, hostport, host string) bool {
	code, err := probe(c, hostport, host)
	return err == nil && code != http.StatusNotFound
}

// probe sends GET http://hostport/ with Host host and returns the answer's
// status code.
func probe(c *http.Client, hostport, host string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+hostport+"/", nil)
	if err != nil {
		return 0, err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// waitRouted polls every 5 ms until host is routed at addr, and returns
// how long that took from start; it fails after timeout.
func (e *env) waitRouted(addr, host string, start time.Time, timeout time.Duration) time.Duration {
	e.t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	for !routed(c, addr, host) {
		if time.Since(start) > timeout {
			e.dumpState()
			e.t.Fatalf("host %s not routed at %s after %s", host, addr, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// waitRoutedAt is waitRouted for the Envoy pod at hostport (a pod IP and
// its listener's port).
func (e *env) waitRoutedAt(hostport, host string, start time.Time, timeout time.Duration) time.Duration {
	c := &http.Client{Timeout: 2 * time.Second}
	for !routedAt(c, hostport, host) {
		if time.Since(start) > timeout {
			return timeout
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// gatewayEndpoints returns the ready endpoints (pod IP:port) behind port
// of the Service whose load balancer address is addr: the Envoy pods that
// serve that Gateway.
func (e *env) gatewayEndpoints(addr string, port int32) []string {
	e.t.Helper()
	ctx := context.Background()
	svcs, err := e.kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, svc := range svcs.Items {
		if len(svc.Status.LoadBalancer.Ingress) == 0 || svc.Status.LoadBalancer.Ingress[0].IP != addr {
			continue
		}
		var portName string
		for _, p := range svc.Spec.Ports {
			if p.Port == port {
				portName = p.Name
			}
		}
		eps, err := e.kube.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + svc.Name})
		if err != nil {
			e.t.Fatal(err)
		}
		var out []string
		for _, es := range eps.Items {
			for _, p := range es.Ports {
				if p.Name == nil || *p.Name != portName || p.Port == nil {
					continue
				}
				for _, ep := range es.Endpoints {
					if ep.Conditions.Ready != nil && *ep.Conditions.Ready && len(ep.Addresses) > 0 && allowedAddress(ep.Addresses[0]) == nil {
						out = append(out, net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(*p.Port))))
					}
				}
			}
		}
		return out
	}
	e.t.Fatalf("no Service has the load balancer address %s", addr)
	return nil
}

// firstTimes records when each of a set of keys was first seen: the bulk
// phase's Accepted routes and answering hosts. Safe for concurrent use.
type firstTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

// see records at for key unless key was seen before, and returns how many
// keys were seen.
func (f *firstTimes) see(key string, at time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at == nil {
		f.at = map[string]time.Time{}
	}
	if _, seen := f.at[key]; !seen {
		f.at[key] = at
	}
	return len(f.at)
}

// seen reports whether key was seen.
func (f *firstTimes) seen(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.at[key]
	return ok
}

// waitFor polls every 50 ms until n keys were seen and returns the latest
// of their first times; past deadline it returns ok false and how many
// were seen.
func (f *firstTimes) waitFor(n int, deadline time.Time) (last time.Time, count int, ok bool) {
	for {
		f.mu.Lock()
		count = len(f.at)
		if count >= n {
			for _, at := range f.at {
				if at.After(last) {
					last = at
				}
			}
		}
		f.mu.Unlock()
		if count >= n {
			return last, count, true
		}
		if time.Now().After(deadline) {
			return time.Time{}, count, false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// acceptedWatch watches the HTTPRoutes of namespace default (an
// informer, started before the routes are created) and records when each
// route named route-* first had a parent entry of ours with Accepted=True
// for its current generation, as the watch event arrived: no poll of
// thousands of routes between the status write and the record.
type acceptedWatch struct {
	accepted firstTimes
	stop     chan struct{}
}

// watchAccepted starts an acceptedWatch; it fails the test if the
// informer does not sync within a minute.
func (e *env) watchAccepted() *acceptedWatch {
	e.t.Helper()
	w := &acceptedWatch{stop: make(chan struct{})}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(e.dyn, 0, "default", nil)
	inf := f.ForResource(httpRouteGVR).Informer()
	record := func(obj any) {
		if r, ok := obj.(*unstructured.Unstructured); ok && strings.HasPrefix(r.GetName(), "route-") && acceptedByUs(r) {
			w.accepted.see(r.GetName(), time.Now())
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		e.t.Fatal(err)
	}
	f.Start(w.stop)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		close(w.stop)
		e.t.Fatal("HTTPRoute informer did not sync in a minute")
	}
	return w
}

// wait returns, once n routes were Accepted, how long after since the
// last of them was; it stops the watch, and fails the test after timeout.
func (w *acceptedWatch) wait(e *env, n int, since time.Time, timeout time.Duration) time.Duration {
	e.t.Helper()
	defer close(w.stop)
	last, count, ok := w.accepted.waitFor(n, since.Add(timeout))
	if !ok {
		e.t.Fatalf("%d of %d routes Accepted after %s", count, n, timeout)
	}
	return last.Sub(since)
}

// acceptedByUs reports whether route has a status.parents entry of our
// controller with Accepted=True observed at its generation.
func acceptedByUs(route *unstructured.Unstructured) bool {
	parents, _, _ := unstructured.NestedSlice(route.Object, "status", "parents")
	for _, p := range parents {
		pm, _ := p.(map[string]any)
		if pm["controllerName"] != controllerName {
			continue
		}
		conds, _ := pm["conditions"].([]any)
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == "Accepted" && cm["status"] == "True" && fmt.Sprint(cm["observedGeneration"]) == strconv.FormatInt(route.GetGeneration(), 10) {
				return true
			}
		}
	}
	return false
}

// benchInput is gen-routes.py n without the Services' fixed clusterIPs.
func (e *env) benchInput(n int) string {
	e.t.Helper()
	out, err := exec.Command("python3", repoRoot+"/../shared/bench/gen-routes.py", strconv.Itoa(n)).Output()
	if err != nil {
		e.t.Skipf("../shared/bench/gen-routes.py: %v", err)
	}
	return regexp.MustCompile(`(?m)^\s*clusterIP: .*\n`).ReplaceAllString(string(out), "")
}
