package e2ecluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRollingRestartUnderLoad (issue 14, item 3): two keep-alive clients
// send requests through the Gateway web while `kubectl rollout restart`
// replaces every Envoy pod of its fleet, in Shared and in Dedicated mode.
// No request may fail: each stopping Envoy leaves the Gateway's endpoints,
// tells its clients to reconnect (`Connection: close`) and closes its
// listeners only after the drain time, before it gets SIGTERM.
//
// With E2E_NO_DRAIN=1 the Envoy pods run without the preStop hook (a pod
// template overlay removes it), as before the drain existed: a measurement
// of what the drain prevents (the test is then expected to fail).
func TestRollingRestartUnderLoad(t *testing.T) {
	inBothModes(t, (*env).rollingRestart)
}

func (e *env) rollingRestart(mode string) {
	t := e.t
	ctx := context.Background()
	e.cleanup()
	if os.Getenv("E2E_NO_DRAIN") != "" {
		t.Log("E2E_NO_DRAIN: the Envoy pods have no preStop hook")
		e.helmInstallWith(mode, map[string]any{"envoy": map[string]any{"podTemplate": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "envoy", "lifecycle": nil}},
		}}}})
	} else {
		e.helmInstall(mode)
	}
	e.applyExamples()
	web := e.gatewayAddress("web", 4*time.Minute)
	e.expectBackend(web, "foo.example.com", "/", "foo", 3*time.Minute)
	fleetNS, fleetName := webFleet(mode)
	e.fleetState(fleetNS, fleetName)
	e.steady(web, "foo.example.com", "/", "foo", 3*time.Second)
	selector := "app.kubernetes.io/name=envoy,app.kubernetes.io/instance=" + fleetName
	oldPods, err := e.kube.CoreV1().Pods(fleetNS).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(oldPods.Items) == 0 {
		t.Fatalf("fleet pods: %v (%d)", err, len(oldPods.Items))
	}
	old := map[string]bool{}
	for _, p := range oldPods.Items {
		old[p.Name] = true
		if os.Getenv("E2E_NO_DRAIN") != "" {
			if l := p.Spec.Containers[0].Lifecycle; l != nil && l.PreStop != nil {
				t.Fatalf("E2E_NO_DRAIN: pod %s still has a preStop hook", p.Name)
			}
			continue
		}
		if g := p.Spec.TerminationGracePeriodSeconds; g == nil || *g < 20 {
			t.Errorf("pod %s: terminationGracePeriodSeconds %v does not cover the drain", p.Name, g)
		}
	}

	clients := []*load{e.startKeepAliveLoad(web, "foo.example.com", "/", "foo"), e.startKeepAliveLoad(web, "foo.example.com", "/", "foo")}
	time.Sleep(3 * time.Second)
	took := e.restartFleet(fleetNS, fleetName)
	time.Sleep(3 * time.Second)
	var sent, failed, closes int64
	for i, c := range clients {
		n, f, cl, errs := c.stop()
		t.Logf("client %d: %d requests sent, %d failed, %d responses with Connection: close; errors: %v", i+1, n, f, cl, errs)
		sent, failed, closes = sent+n, failed+f, closes+cl
		if n == 0 {
			t.Errorf("client %d sent nothing", i+1)
		}
	}
	t.Logf("rolling restart of %s/%s (%s mode) under load: %d requests sent, %d failed, over %s (restart to last old pod gone); %d responses asked the client to reconnect",
		fleetNS, fleetName, mode, sent, failed, took.Round(100*time.Millisecond), closes)
	if failed > 0 {
		e.dumpState()
		t.Errorf("rolling restart: %d of %d requests failed", failed, sent)
	}
	// The drain ran: the stopping Envoys told the keep-alive clients to
	// reconnect, and no preStop hook failed.
	if closes == 0 {
		t.Errorf("no response carried Connection: close: the old Envoy pods were not drained")
	}
	evs, err := e.kube.CoreV1().Events(fleetNS).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedPreStopHook"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs.Items {
		if old[ev.InvolvedObject.Name] {
			t.Errorf("pod %s: %s: %s", ev.InvolvedObject.Name, ev.Reason, ev.Message)
		}
	}
	e.steady(web, "foo.example.com", "/", "foo", 3*time.Second)
}

// restartFleet runs `kubectl rollout restart` of the Envoy fleet
// Deployment ns/name, waits for the rollout and until every old pod is
// gone, and returns how long that took.
func (e *env) restartFleet(ns, name string) time.Duration {
	e.t.Helper()
	ctx := context.Background()
	selector := "app.kubernetes.io/name=envoy,app.kubernetes.io/instance=" + name
	oldPods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(oldPods.Items) == 0 {
		e.t.Fatalf("fleet pods: %v (%d)", err, len(oldPods.Items))
	}
	old := map[string]bool{}
	for _, p := range oldPods.Items {
		old[p.Name] = true
	}
	began := time.Now()
	e.mustKubectl("", "-n", ns, "rollout", "restart", "deployment/"+name)
	e.mustKubectl("", "-n", ns, "rollout", "status", "deployment/"+name, "--timeout=5m")
	e.eventually("every old Envoy pod of "+ns+"/"+name+" gone", 3*time.Minute, func() error {
		pods, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		var left []string
		for _, p := range pods.Items {
			if old[p.Name] {
				left = append(left, p.Name)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("still there: %v", left)
		}
		return nil
	})
	return time.Since(began)
}

// startKeepAliveLoad sends GET http://addr:80path with Host host in a loop,
// 10 ms apart, over one keep-alive connection at a time (HTTP/1.1), and
// counts the requests, those that fail or are not answered by backend, and
// the responses with Connection: close.
func (e *env) startKeepAliveLoad(addr, host, path, backend string) *load {
	c := keepAliveClient()
	return runLoad(10*time.Millisecond, func() (bool, error) {
		return keepAliveGet(c, addr, host, path, backend)
	}, c.CloseIdleConnections)
}

// keepAliveClient is an HTTP/1.1 client of one keep-alive connection at a
// time that dials only addresses of the local cluster (allowedAddress).
func keepAliveClient() *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
				h, _, err := net.SplitHostPort(a)
				if err != nil {
					return nil, err
				}
				if err := allowedAddress(h); err != nil {
					return nil, err
				}
				return dialer.DialContext(ctx, network, a)
			},
			MaxIdleConnsPerHost: 1,
			MaxConnsPerHost:     1,
			IdleConnTimeout:     time.Minute,
		},
	}
}

// keepAliveGet sends one request; closed: the response carried
// Connection: close.
func keepAliveGet(c *http.Client, addr, host, path, backend string) (closed bool, err error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(addr, "80")+path, nil)
	if err != nil {
		return false, err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.Close, fmt.Errorf("reading the body: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.Close, fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var r echoResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return resp.Close, fmt.Errorf("not echo-basic's JSON: %v: %.200s", err, body)
	}
	if !strings.HasPrefix(r.Pod, backend+"-") {
		return resp.Close, fmt.Errorf("answered by %s, want %s-*", r.Pod, backend)
	}
	return resp.Close, nil
}
