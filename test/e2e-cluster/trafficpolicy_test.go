package e2ecluster

// TrafficPolicy and ListenerPolicy (gateway.xds-controller.dev/v1alpha1,
// docs/traffic-policy.md) on the local cluster, in both modes: traffic
// through the Gateways' LoadBalancer addresses, statuses read from the API
// server. BackendPolicy is in backendpolicy_test.go.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTrafficPolicyOnTheLocalCluster installs the chart in Shared and in
// Dedicated mode and moves traffic through three TrafficPolicies on one
// HTTPRoute of Gateway web (trafficYAML): a local rate limit per x-user
// value on rule limited (a burst of one user gets 429 with Retry-After
// and the X-RateLimit headers while another user still passes), gzip
// compression on the whole route (a compressed answer decodes to the echo
// of the request; rule limited, whose own policy replaces the route's, is
// not compressed) and a 1Ki body limit on rule upload (413 over it, with a
// Content-Length or chunked; 200 under it).
func TestTrafficPolicyOnTheLocalCluster(t *testing.T) {
	inBothModes(t, func(e *env, mode string) { e.trafficPolicy(e.installExamples(mode)) })
}

// trafficYAML routes traffic.example.com to foo with the rules limited
// (/limited), upload (/upload) and the rest, under the TrafficPolicies
// limited (rule limited: 5 requests per hour per x-user value: no refill
// during a test), upload (rule upload: bodies up to 1Ki) and compress (the
// route: gzip of application/json answers of 100 bytes or more).
const trafficYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: traffic, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [traffic.example.com]
  rules:
  - name: limited
    matches: [{path: {type: PathPrefix, value: /limited}}]
    backendRefs: [{name: foo, port: 80}]
  - name: upload
    matches: [{path: {type: PathPrefix, value: /upload}}]
    backendRefs: [{name: foo, port: 80}]
  - backendRefs: [{name: foo, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: limited, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: traffic, sectionName: limited}]
  rateLimit:
    local:
      rules:
      - {requests: 5, unit: Hour, by: Header, header: x-user}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: upload, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: traffic, sectionName: upload}]
  requestBody: {maxSize: 1Ki}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: compress, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: traffic}]
  compression:
    algorithms: [Gzip]
    contentTypes: [application/json]
    minSize: 100
`

// TestPoliciesOnTheLocalCluster runs the scenarios of
// TestTrafficPolicyOnTheLocalCluster, TestListenerPolicyOnTheLocalCluster
// and TestBackendPolicyOnTheLocalCluster (which run them alone) on one
// installation per mode: what CI runs (.ci/run), saving two clean-ups
// and installations per mode.
func TestPoliciesOnTheLocalCluster(t *testing.T) {
	inBothModes(t, func(e *env, mode string) {
		web := e.installExamples(mode)
		e.trafficPolicy(web)
		e.listenerPolicy()
		e.backendPolicy(web)
	})
}

// installExamples is a mode's start on a clean cluster: the chart
// installed, examples/ applied; it returns Gateway web's address.
func (e *env) installExamples(mode string) string {
	e.t.Helper()
	e.cleanup()
	e.helmInstall(mode)
	e.applyExamples()
	return e.gatewayAddress("web", 4*time.Minute)
}

// trafficPolicy is the scenario of TestTrafficPolicyOnTheLocalCluster,
// through Gateway web at address web.
func (e *env) trafficPolicy(web string) {
	e.mustKubectl(trafficYAML, "apply", "-f", "-")
	for _, p := range []string{"limited", "upload", "compress"} {
		e.policyAccepted("trafficpolicy", p, "web")
	}
	e.trafficRateLimit(web)
	e.trafficCompression(web)
	e.trafficBodySize(web)
}

// trafficRateLimit sends a burst of 12 requests of user alice on one
// keep-alive connection (one Envoy replica: a bucket is per Envoy process)
// and checks that 5 pass and 7 get 429 local_rate_limited with
// Retry-After and X-RateLimit-Limit 5, Remaining 0; then user bob passes 3
// times on the same connection.
func (e *env) trafficRateLimit(web string) {
	t := e.t
	const host, limit, burst = "traffic.example.com", 5, 12
	c := keepAliveClient()
	tr := c.Transport.(*http.Transport)
	var dials atomic.Int32
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, addr)
	}
	defer tr.CloseIdleConnections()
	user := func(u string) http.Header { return http.Header{"X-User": {u}} }
	// A user of its own until the policy shows (its headers), so that
	// alice's bucket is full when her burst starts.
	e.eventually("rule limited: X-RateLimit-Limit 5 on the pinned connection", 2*time.Minute, func() error {
		status, _, h, err := e.do(c, http.MethodGet, web, host, "/limited", user("probe"), nil)
		if err == nil && (status != http.StatusOK || h.Get("X-Ratelimit-Limit") != "5") {
			err = fmt.Errorf("status %d, X-RateLimit-Limit %q", status, h.Get("X-Ratelimit-Limit"))
		}
		return err
	})
	conns := dials.Load()
	passed, refused := 0, 0
	var refusal string
	for i := range burst {
		status, body, h, err := e.do(c, http.MethodGet, web, host, "/limited", user("alice"), nil)
		if err != nil {
			t.Fatalf("alice's request %d: %v", i+1, err)
		}
		switch status {
		case http.StatusOK:
			passed++
		case http.StatusTooManyRequests:
			refused++
			if string(body) != "local_rate_limited" || h.Get("Retry-After") == "" || h.Get("X-Ratelimit-Limit") != "5" ||
				h.Get("X-Ratelimit-Remaining") != "0" || h.Get("X-Ratelimit-Reset") == "" {
				t.Fatalf("a 429 without the rate-limit headers: %q %v", body, h)
			}
			refusal = fmt.Sprintf("429 %q retry-after=%q x-ratelimit-limit=%q x-ratelimit-remaining=%q x-ratelimit-reset=%q",
				body, h.Get("Retry-After"), h.Get("X-Ratelimit-Limit"), h.Get("X-Ratelimit-Remaining"), h.Get("X-Ratelimit-Reset"))
		default:
			t.Fatalf("alice's request %d: status %d %.100q", i+1, status, body)
		}
	}
	bob := 0
	for range 3 {
		if status, body, _, err := e.do(c, http.MethodGet, web, host, "/limited", user("bob"), nil); err != nil || status != http.StatusOK {
			t.Fatalf("bob after alice's burst: %d %.100q (%v), want 200", status, body, err)
		}
		bob++
	}
	// One connection, one Envoy: exactly the limit passes. Should Envoy
	// have closed it, each new one may reach another replica's buckets.
	if n := dials.Load() - conns + 1; n != 1 {
		t.Logf("the burst used %d connections", n)
		if passed < limit || passed > limit*int(n) {
			t.Fatalf("alice: %d x 200, %d x 429 over %d connections, want %d to %d passed", passed, refused, n, limit, limit*int(n))
		}
	} else if passed != limit || refused != burst-limit {
		t.Fatalf("alice on one connection: %d x 200, %d x 429, want %d and %d", passed, refused, limit, burst-limit)
	}
	t.Logf("rate limit 5 per hour per x-user: alice %d requests: %d x 200, %d x 429; then bob %d x 200\n  a refusal: %s", burst, passed, refused, bob, refusal)
}

// trafficCompression checks the route's gzip: an answer of foo (echo-basic's
// JSON, padded by a 2804-byte header it echoes) comes gzip-encoded with
// Vary: Accept-Encoding and decodes to the echo of this request; without
// Accept-Encoding it is not encoded, and on rule limited (whose own policy
// replaces the route's) neither.
func (e *env) trafficCompression(web string) {
	t := e.t
	const host = "traffic.example.com"
	pad := strings.Repeat("compress me, ", 200) + "done" // no space at the ends: a header value is trimmed
	gz := http.Header{"Accept-Encoding": {"gzip"}, "X-Pad": {pad}}
	var wire, plain int
	e.eventually("the route's answers gzip-encoded, decoding to the echo", time.Minute, func() error {
		status, body, h, err := e.do(e.http, http.MethodGet, web, host, "/compressed", gz, nil)
		if err != nil {
			return err
		}
		if status != http.StatusOK || h.Get("Content-Encoding") != "gzip" {
			return fmt.Errorf("status %d Content-Encoding %q", status, h.Get("Content-Encoding"))
		}
		if h.Get("Vary") != "Accept-Encoding" || h.Get("Content-Length") != "" {
			return fmt.Errorf("a compressed answer with Vary %q Content-Length %q", h.Get("Vary"), h.Get("Content-Length"))
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("not gzip: %w", err)
		}
		decoded, err := io.ReadAll(zr)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		r, err := decodeEcho(decoded)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(r.Pod, "foo-") || r.Path != "/compressed" || strings.Join(r.Headers["X-Pad"], ",") != pad {
			return fmt.Errorf("decoded: pod %s path %s, X-Pad of %d bytes (want %d)", r.Pod, r.Path, len(strings.Join(r.Headers["X-Pad"], ",")), len(pad))
		}
		wire, plain = len(body), len(decoded)
		return nil
	})
	for _, c := range []struct {
		what, path string
		header     http.Header
	}{
		{"without Accept-Encoding", "/compressed", http.Header{"X-Pad": {pad}}},
		{"on rule limited (its policy replaces the route's)", "/limited", http.Header{"Accept-Encoding": {"gzip"}, "X-Pad": {pad}, "X-User": {"compression"}}},
	} {
		status, body, h, err := e.do(e.http, http.MethodGet, web, host, c.path, c.header, nil)
		if err != nil || status != http.StatusOK || h.Get("Content-Encoding") != "" {
			t.Fatalf("%s: %d Content-Encoding %q (%v), want 200 not encoded", c.what, status, h.Get("Content-Encoding"), err)
		}
		if _, err := decodeEcho(body); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
	}
	t.Logf("compression gzip: %d bytes on the wire decoded to foo's %d-byte echo of the request; not encoded without Accept-Encoding nor on rule limited", wire, plain)
}

// trafficBodySize checks rule upload's 1Ki limit: 1025 bytes, with a
// Content-Length or chunked, get 413; 1024 bytes reach foo.
func (e *env) trafficBodySize(web string) {
	t := e.t
	const host = "traffic.example.com"
	post := func(n int, chunked bool) (int, string, error) {
		var body io.Reader = bytes.NewReader(bytes.Repeat([]byte("b"), n))
		if chunked {
			body = io.MultiReader(body) // unknown length: Transfer-Encoding chunked
		}
		status, b, _, err := e.do(e.http, http.MethodPost, web, host, "/upload", nil, body)
		return status, string(b), err
	}
	e.eventually("rule upload: 1025 bytes get 413", time.Minute, func() error {
		status, body, err := post(1025, false)
		if err == nil && status != http.StatusRequestEntityTooLarge {
			err = fmt.Errorf("status %d %.100q", status, body)
		}
		return err
	})
	var got []string
	for _, c := range []struct {
		n       int
		chunked bool
		want    int
	}{{1025, true, 413}, {64 << 10, true, 413}, {1024, false, 200}, {1024, true, 200}} {
		status, body, err := post(c.n, c.chunked)
		if err != nil || status != c.want {
			t.Fatalf("POST %d bytes (chunked %v): %d %.100q (%v), want %d", c.n, c.chunked, status, body, err, c.want)
		}
		if status == http.StatusOK {
			if r, err := decodeEcho([]byte(body)); err != nil || !strings.HasPrefix(r.Pod, "foo-") {
				t.Fatalf("POST %d bytes: not foo's echo: %v %.100q", c.n, err, body)
			}
		}
		got = append(got, fmt.Sprintf("%d bytes chunked=%v: %d", c.n, c.chunked, status))
	}
	t.Logf("request body limit 1Ki: 1025 bytes: 413; %s", strings.Join(got, "; "))
}

// policyAccepted waits until the policy kind/name (a kubectl resource
// name) of the example namespace lists exactly the Gateways ancestors in
// status.ancestors, each Accepted=True, as the API server holds it.
func (e *env) policyAccepted(kind, name string, ancestors ...string) {
	e.t.Helper()
	var want []string
	for _, a := range ancestors {
		want = append(want, a+"=True")
	}
	e.eventually(fmt.Sprintf("%s %s Accepted by %v", kind, name, ancestors), time.Minute, func() error {
		out, err := e.kubectl("", "-n", exampleNamespace, "get", kind, name, "-o",
			`jsonpath={range .status.ancestors[*]}{.ancestorRef.name}={.conditions[?(@.type=="Accepted")].status}{" "}{end}`)
		if err == nil && strings.TrimSpace(out) != strings.Join(want, " ") {
			err = fmt.Errorf("status.ancestors %q, want %q", out, strings.Join(want, " "))
		}
		return err
	})
}

// TestListenerPolicyOnTheLocalCluster installs the chart in Shared and in
// Dedicated mode and checks a ListenerPolicy with tls.minVersion 1.3 on
// one HTTPS listener of a Gateway (listenerYAML): a TLS 1.2 client is
// refused there while a TLS 1.3 client reaches foo, and the Gateway's
// other HTTPS listener, without the policy, still serves TLS 1.2; the
// policy is Accepted in the API server.
func TestListenerPolicyOnTheLocalCluster(t *testing.T) {
	inBothModes(t, func(e *env, mode string) {
		e.installExamples(mode)
		e.listenerPolicy()
	})
}

// listenerYAML is Gateway secure with two HTTPS listeners for
// shop.example.com (the example Secret example-tls): modern on port 443,
// under ListenerPolicy modern-tls (TLS 1.3 at least), and legacy on port
// 8443 without a policy; both route to foo.
const listenerYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: secure, namespace: xds-example}
spec:
  gatewayClassName: xds-controller
  listeners:
  - name: modern
    protocol: HTTPS
    port: 443
    hostname: shop.example.com
    tls: {certificateRefs: [{name: example-tls}]}
  - name: legacy
    protocol: HTTPS
    port: 8443
    hostname: shop.example.com
    tls: {certificateRefs: [{name: example-tls}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: secure, namespace: xds-example}
spec:
  parentRefs: [{name: secure}]
  hostnames: [shop.example.com]
  rules:
  - backendRefs: [{name: foo, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: modern-tls, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: secure, sectionName: modern}]
  tls: {minVersion: "1.3"}
`

// listenerPolicy is the scenario of TestListenerPolicyOnTheLocalCluster.
func (e *env) listenerPolicy() {
	t := e.t
	e.mustKubectl(listenerYAML, "apply", "-f", "-")
	addr := e.gatewayAddress("secure", 4*time.Minute)
	secret, err := e.kube.CoreV1().Secrets(exampleNamespace).Get(context.Background(), "example-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data["tls.crt"]) {
		t.Fatal("the example Secret's tls.crt is not PEM")
	}
	const host = "shop.example.com"
	e.policyAccepted("listenerpolicy", "modern-tls", "secure")
	e.eventually("listener modern refuses TLS 1.2", 2*time.Minute, func() error {
		v, err := tlsHandshake(addr, "443", host, tls.VersionTLS12, roots)
		if err == nil {
			return fmt.Errorf("TLS 1.2 client served (%s)", tls.VersionName(v))
		}
		if !strings.Contains(err.Error(), "protocol version") {
			return fmt.Errorf("TLS 1.2 client: %v, want a protocol version alert", err)
		}
		return nil
	})
	_, refused := tlsHandshake(addr, "443", host, tls.VersionTLS12, roots)
	v13, err := tlsHandshake(addr, "443", host, tls.VersionTLS13, roots)
	if err != nil || v13 != tls.VersionTLS13 {
		t.Fatalf("listener modern, TLS 1.3 client: %s (%v)", tls.VersionName(v13), err)
	}
	e.eventually("https://"+addr+"/ SNI "+host+" -> foo (TLS 1.3)", time.Minute, func() error {
		return e.httpsBackend(addr, host, "/", "foo", roots)
	})
	v12, err := tlsHandshake(addr, "8443", host, tls.VersionTLS12, roots)
	if err != nil || v12 != tls.VersionTLS12 {
		t.Fatalf("listener legacy (no policy), TLS 1.2 client: %s (%v), want served", tls.VersionName(v12), err)
	}
	t.Logf("ListenerPolicy tls.minVersion 1.3 on listener modern: a TLS 1.2 client gets %q, TLS 1.3 reaches foo; listener legacy serves TLS 1.2", refused)
}

// tlsHandshake opens a TLS connection to addr:port with SNI host, offering
// TLS 1.2 up to maxVersion and verifying the server against roots; it
// returns the version agreed.
func tlsHandshake(addr, port, host string, maxVersion uint16, roots *x509.CertPool) (uint16, error) {
	if err := allowedAddress(addr); err != nil {
		return 0, err
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(addr, port), &tls.Config{
		ServerName: host, RootCAs: roots, MinVersion: tls.VersionTLS12, MaxVersion: maxVersion,
	})
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	return conn.ConnectionState().Version, nil
}
