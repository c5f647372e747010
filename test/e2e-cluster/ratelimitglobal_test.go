package e2ecluster

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// globalYAML routes global.example.com to foo under the TrafficPolicy
// global: 6 requests an hour per x-user value, counted by the rate-limit
// service for the whole fleet (no refill during a test).
const globalYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: global, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [global.example.com]
  rules:
  - backendRefs: [{name: foo, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: global, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: global}]
  rateLimit:
    global:
      rules:
      - {requests: 6, unit: Hour, by: Header, header: x-user}
`

// TestGlobalRateLimitOnTheLocalCluster, in both modes: the chart with
// rateLimit.enabled (the service's two replicas and Redis); a
// TrafficPolicy's global rule reaches the service through the
// controller's ConfigMap (pkg/ratelimitconfig) and holds over the
// fleet's Envoy replicas: 16 requests of one user, each on a new
// connection to the Gateway's address (spread by the Service over the
// fleet's replicas), get exactly 6 x 200 and 10 x 429; another user
// still passes.
func TestGlobalRateLimitOnTheLocalCluster(t *testing.T) {
	inBothModes(t, func(e *env, mode string) {
		e.cleanup()
		e.helmInstallWith(mode, map[string]any{"rateLimit": map[string]any{"enabled": true}})
		e.applyExamples()
		e.globalRateLimit(e.gatewayAddress("web", 4*time.Minute))
	})
}

// globalRateLimit is the scenario of TestGlobalRateLimitOnTheLocalCluster
// through Gateway web at address web.
func (e *env) globalRateLimit(web string) {
	t := e.t
	e.mustKubectl(globalYAML, "apply", "-f", "-")
	e.policyAccepted("trafficpolicy", "global", "web")
	const host, limit, burst = "global.example.com", 6, 16
	// A new connection per request (keepAliveClient's dialer checks the
	// address is the cluster's).
	fresh := keepAliveClient()
	fresh.Transport.(*http.Transport).DisableKeepAlives = true
	user := func(u string) http.Header { return http.Header{"X-User": {u}} }
	// Until the rule is loaded by the service (the kubelet refreshes the
	// ConfigMap's volume, then the service reloads): ten probes in a row,
	// each of a user of its own, carry the rule's limit.
	start, probe, inRow := time.Now(), 0, 0
	e.eventually("the global rule on ten requests in a row", 4*time.Minute, func() error {
		for inRow < 10 {
			probe++
			status, _, h, err := e.do(fresh, http.MethodGet, web, host, "/", user(fmt.Sprintf("probe-%d", probe)), nil)
			if err != nil {
				inRow = 0
				return err
			}
			if status != http.StatusOK || h.Get("X-Ratelimit-Limit") == "" {
				inRow = 0
				return fmt.Errorf("status %d, X-RateLimit-Limit %q", status, h.Get("X-Ratelimit-Limit"))
			}
			inRow++
		}
		return nil
	})
	t.Logf("the global rule served %s after the policy was Accepted", time.Since(start).Round(time.Second))
	passed, refused := 0, 0
	for i := range burst {
		status, body, h, err := e.do(fresh, http.MethodGet, web, host, "/", user("alice"), nil)
		if err != nil {
			t.Fatalf("alice's request %d: %v", i+1, err)
		}
		switch status {
		case http.StatusOK:
			passed++
		case http.StatusTooManyRequests:
			refused++
			if h.Get("X-Ratelimit-Limit") == "" {
				t.Errorf("a 429 without X-RateLimit-Limit: %q %v", body, h)
			}
		default:
			t.Fatalf("alice's request %d: status %d %.100q", i+1, status, body)
		}
	}
	t.Logf("global limit 6 per hour per x-user, %d requests on %d connections: %d x 200, %d x 429", burst, burst, passed, refused)
	if passed != limit || refused != burst-limit {
		t.Errorf("alice: %d x 200, %d x 429, want %d and %d (one counter for the fleet)", passed, refused, limit, burst-limit)
	}
	if status, body, _, err := e.do(fresh, http.MethodGet, web, host, "/", user("bob"), nil); err != nil || status != http.StatusOK {
		t.Errorf("bob after alice's burst: %d %.100q (%v), want 200", status, body, err)
	}
}
