package e2ecluster

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestExperimentalChannelOnTheLocalCluster installs the chart with the
// Gateway API experimental channel's CRDs (gatewayAPI.channel=experimental)
// in Shared and in Dedicated mode, and moves traffic through the
// experimental fields: HTTPRoute rule sessionPersistence (GEP-1619) and
// an XBackendTrafficPolicy's across two echo replicas, and an
// XTelemetryPolicy's spans at an OTLP receiver, and an HTTPRoute
// ExternalAuth filter of each protocol against real auth services, an
// EndpointSelector XBackend (xBackend); then
// address routability, default Gateways and ClusterTrustBundle
// (gatewayFields).
func TestExperimentalChannelOnTheLocalCluster(t *testing.T) {
	inBothModes(t, (*env).experimental)
}

// experimental is one mode's scenario of TestExperimentalChannelOnTheLocalCluster.
func (e *env) experimental(mode string) {
	e.cleanup()
	// The v1.7.0 safe-upgrades policy refuses experimental CRDs over
	// standard ones (the chart's values.yaml says so): the earlier tests of
	// a run installed the standard channel. The install brings the
	// experimental channel's own policy back.
	e.mustKubectl("", "delete", "--ignore-not-found",
		"validatingadmissionpolicybinding,validatingadmissionpolicy", "safe-upgrades.gateway.networking.k8s.io")
	e.helmInstallWith(mode, map[string]any{
		"gatewayAPI": map[string]any{"installCRDs": true, "channel": "experimental"},
	})
	e.applyExamples()
	e.mustKubectl("", "-n", exampleNamespace, "scale", "deploy/foo", "deploy/bar", "--replicas=2")
	e.mustKubectl("", "-n", exampleNamespace, "rollout", "status", "deploy/foo", "deploy/bar", "--timeout=120s")
	web := e.gatewayAddress("web", 4*time.Minute)
	e.sessionPersistence(web, "sticky.example.com", "foo", "xds-session", `    sessionPersistence:
      type: Cookie
      cookie: {name: xds-session}
`)
	// The same through an XBackendTrafficPolicy on the Service bar.
	e.mustKubectl(`apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackendTrafficPolicy
metadata:
  name: bar-sessions
  namespace: xds-example
spec:
  targetRefs: [{group: "", kind: Service, name: bar}]
  sessionPersistence:
    type: Cookie
    cookie: {name: bar-session}
`, "apply", "-f", "-")
	e.sessionPersistence(web, "sticky-policy.example.com", "bar", "bar-session", "")
	e.eventually("XBackendTrafficPolicy bar-sessions Accepted by Gateway web", time.Minute, func() error {
		out, err := e.kubectl("", "-n", exampleNamespace, "get", "xbackendtrafficpolicy", "bar-sessions", "-o",
			`jsonpath={range .status.ancestors[*]}{.ancestorRef.name}={.conditions[?(@.type=="Accepted")].status}{" "}{end}`)
		if err == nil && !strings.Contains(out, "web=True") {
			err = fmt.Errorf("status.ancestors: %q", out)
		}
		return err
	})
	// XTelemetryPolicy: spans of web's requests reach the test servers'
	// OTLP receiver (telemetry_test.go).
	e.tracing(web)
	e.extAuth(web)
	e.xBackend(web)
	e.gatewayFields()
}

// sessionPersistence routes host to the two replicas of backend with a
// rule whose YAML ends with rule (its sessionPersistence, if any), and
// checks that a client sending the cookie named cookieName keeps the
// replica that answered first, while clients without it reach both.
func (e *env) sessionPersistence(web, host, backend, cookieName, rule string) {
	t := e.t
	e.mustKubectl(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: `+backend+`-sticky
  namespace: xds-example
spec:
  parentRefs:
  - name: web
  hostnames: ["`+host+`"]
  rules:
  - backendRefs:
    - name: `+backend+`
      port: 80
`+rule, "apply", "-f", "-")
	e.expectBackend(web, host, "/", backend, 2*time.Minute)

	// Without the cookie both replicas answer (round robin: 40 requests
	// would all land on one with probability 2^-39).
	seen := map[string]int{}
	var cookie string
	for i := 0; i < 40; i++ {
		pod, setCookie, err := e.getSticky(web, host, "")
		if err != nil {
			t.Fatalf("request %d without a session cookie: %v", i+1, err)
		}
		seen[pod]++
		if cookie == "" {
			cookie = setCookie
		}
	}
	if len(seen) != 2 {
		t.Fatalf("%s: without a session cookie 40 requests reached %v, want both replicas of %s", host, seen, backend)
	}
	if !strings.HasPrefix(cookie, cookieName+"=") {
		t.Fatalf("%s: no Set-Cookie %s from the gateway, got %q", host, cookieName, cookie)
	}
	// With the cookie every request reaches one replica.
	first := ""
	for i := 0; i < 30; i++ {
		pod, _, err := e.getSticky(web, host, cookie)
		if err != nil {
			t.Fatalf("request %d with the session cookie: %v", i+1, err)
		}
		if first == "" {
			first = pod
		} else if pod != first {
			t.Fatalf("request %d with the session cookie reached %s, the first reached %s", i+1, pod, first)
		}
	}
	t.Logf("%s sessionPersistence: without a cookie %v; with %s 30 of 30 requests on %s", host, seen, cookie, first)
}

// getSticky sends GET http://web/ with Host host and, when cookie is not
// empty, that Cookie header; it returns the echo pod that answered and the
// name=value of the response's first Set-Cookie.
func (e *env) getSticky(web, host, cookie string) (pod, setCookie string, err error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(web, "80")+"/", nil)
	if err != nil {
		return "", "", err
	}
	req.Host = host
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
	if c := resp.Cookies(); len(c) > 0 {
		setCookie = c[0].Name + "=" + c[0].Value
	}
	r, err := decodeEcho(body)
	if err != nil {
		return "", "", err
	}
	return r.Pod, setCookie, nil
}
