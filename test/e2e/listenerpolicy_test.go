package e2e

// ListenerPolicy through the real controller and Envoy: a listener with
// TLS 1.3 at least refuses a TLS 1.2 client and serves a TLS 1.3 one; a
// listener reading PROXY protocol takes the client address from the
// header the test client sends (the backend sees it in X-Forwarded-For)
// and closes a connection without one; one trusted X-Forwarded-For hop
// decides the client address that a SecurityPolicy's clientCIDRs rule
// sees (the listener without the policy does not trust the header); and
// that listener's access log is JSON with the fields asked for.

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// listenerPolicyYAML: the TLS Secret of listener https, HTTPRoute app
// (every listener of gw, echo), HTTPRoute guarded (guarded.example.test on
// listeners http and xff) with a SecurityPolicy that lets 203.0.113.0/24
// in and denies the rest, and the ListenerPolicies: https TLS 1.3 at least
// ({{.MinVersion}}), pp PROXY protocol, xff one trusted hop and a JSON
// access log.
const listenerPolicyYAML = `apiVersion: v1
kind: Secret
metadata: {name: listener-cert, namespace: default}
type: kubernetes.io/tls
data: {tls.crt: {{.Cert}}, tls.key: {{.Key}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: echo, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: guarded, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: http}, {name: gw, sectionName: xff}]
  hostnames: [guarded.example.test]
  rules:
  - backendRefs: [{name: echo, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: guarded, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: guarded}]
  authorization:
    defaultAction: Deny
    rules:
    - {name: documentation-net, action: Allow, clientCIDRs: [203.0.113.0/24]}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: https, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw, sectionName: https}]
  tls: {minVersion: "{{.MinVersion}}"}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: pp, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw, sectionName: pp}]
  proxyProtocol: {}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: xff, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw, sectionName: xff}]
  clientIP: {xffNumTrustedHops: 1}
  accessLog:
    json:
      path: "%REQ(:PATH)%"
      status: "%RESPONSE_CODE%"
      client: "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"
      agent: "%REQ(USER-AGENT)%"
`

// listenerFixture serves listenerPolicyYAML: Gateway gw's listeners http
// (gwPort, no policy), https, pp and xff; echo answers the path and the
// X-Forwarded-For header it got.
type listenerFixture struct {
	*fixture
	https, pp, xff int
	roots          *x509.CertPool
}

func startListenerPolicy(t *testing.T) *listenerFixture {
	const sni = "tls.example.test"
	cert := selfSigned(t, sni)
	l := &listenerFixture{https: freePort(t), pp: freePort(t), xff: freePort(t), roots: x509.NewCertPool()}
	l.roots.AddCert(cert.leaf)
	echo := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "echo %s xff=%s", r.URL.Path, r.Header.Get("x-forwarded-for"))
	}), ReadHeaderTimeout: 5 * time.Second}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = echo.Serve(lis) }()
	t.Cleanup(func() { _ = echo.Close() })
	// With XDS_E2E_PROTECTION_REMOVED=1 the https listener's policy asks
	// for TLS 1.2 at least (Envoy's default): the TLS test must fail.
	minVersion := "1.3"
	if os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1" {
		minVersion = "1.2"
	}
	l.fixture = startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Listeners": []string{
				fmt.Sprintf("{name: https, protocol: HTTPS, port: %d, tls: {certificateRefs: [{name: listener-cert}]}}", l.https),
				fmt.Sprintf("{name: pp, protocol: HTTP, port: %d}", l.pp),
				fmt.Sprintf("{name: xff, protocol: HTTP, port: %d}", l.xff),
			},
			"Backends": []gatewayBackend{{Name: "echo", Port: lis.Addr().(*net.TCPAddr).Port}},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), listenerPolicyYAML, map[string]string{
			"Cert":       base64.StdEncoding.EncodeToString(cert.certPEM),
			"Key":        base64.StdEncoding.EncodeToString(cert.keyPEM),
			"MinVersion": minVersion,
		})
	})
	took := poll(t, "every listener served", func() error {
		if r := l.send(l.xff, "app.example.test", "/ready"); r.status != 200 {
			return fmt.Errorf("xff: %d %q", r.status, r.body)
		}
		if st, body, err := l.proxied(l.pp, "203.0.113.1", "/ready"); err != nil || st != 200 {
			return fmt.Errorf("pp: %d %q %v", st, body, err)
		}
		if code, body, err := l.tlsGet(tls.VersionTLS13, "/ready"); err != nil || code != 200 {
			return fmt.Errorf("https: %d %q %v", code, body, err)
		}
		return nil
	})
	t.Logf("listeners served after %s", took.Round(time.Millisecond))
	return l
}

// tlsGet sends GET path to listener https over TLS of version at most
// maxVersion (and at least 1.2), and returns the status and body, or the
// handshake's or the request's error.
func (l *listenerFixture) tlsGet(maxVersion uint16, path string) (int, string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{ServerName: "tls.example.test", RootCAs: l.roots, MinVersion: tls.VersionTLS12, MaxVersion: maxVersion},
		DisableKeepAlives: true,
	}}
	resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d%s", l.https, path))
	if err != nil {
		return -1, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// proxied sends GET path to port over a connection that starts with a
// PROXY protocol v1 header naming source as the client (no header when
// source is ""), and returns the status and body.
func (l *listenerFixture) proxied(port int, source, path string) (int, string, error) {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
	if err != nil {
		return -1, "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	if source != "" {
		fmt.Fprintf(&b, "PROXY TCP4 %s 127.0.0.1 40000 %d\r\n", source, port)
	}
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: app.example.test\r\nConnection: close\r\n\r\n", path)
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return -1, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return -1, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

func TestListenerPolicyTLSMinVersion(t *testing.T) {
	l := startListenerPolicy(t)
	code, body, err := l.tlsGet(tls.VersionTLS12, "/old")
	if err == nil {
		t.Fatalf("a TLS 1.2 client got %d %q; want its handshake refused (minVersion 1.3)", code, body)
	}
	t.Logf("TLS 1.2 client: %v", err)
	code, body, err = l.tlsGet(tls.VersionTLS13, "/new")
	if err != nil || code != 200 || !strings.HasPrefix(body, "echo /new ") {
		t.Fatalf("a TLS 1.3 client: %d %q %v; want 200 from echo", code, body, err)
	}
	t.Logf("TLS 1.3 client: %d %q", code, body)
}

func TestListenerPolicyProxyProtocol(t *testing.T) {
	l := startListenerPolicy(t)
	code, body, err := l.proxied(l.pp, "198.51.100.23", "/pp")
	if err != nil || code != 200 || body != "echo /pp xff=198.51.100.23" {
		t.Fatalf("with a PROXY header from 198.51.100.23: %d %q %v; want the backend to see that address", code, body, err)
	}
	t.Logf("with a PROXY header: %d %q", code, body)
	if code, body, err := l.proxied(l.pp, "", "/plain"); err == nil {
		t.Errorf("without a PROXY header: %d %q; want the connection closed (the header is required)", code, body)
	} else {
		t.Logf("without a PROXY header: %v", err)
	}
	// The listener without the policy reads the header as a bad request.
	if code, body, _ := l.proxied(l.gwPort, "198.51.100.23", "/other"); code == 200 {
		t.Errorf("listener http (no policy) served a PROXY header: %d %q", code, body)
	}
}

func TestListenerPolicyClientIPAndAccessLog(t *testing.T) {
	l := startListenerPolicy(t)
	const via = "203.0.113.9"
	// On xff, one trusted hop: the client is the header's last entry.
	if r := l.send(l.xff, "guarded.example.test", "/guarded", "x-forwarded-for", via); r.status != 200 {
		t.Errorf("xff listener, X-Forwarded-For %s: %d %q; want 200 (the CIDR rule sees %s)", via, r.status, r.body, via)
	} else {
		t.Logf("xff listener, X-Forwarded-For %s: %d %q", via, r.status, r.body)
	}
	if r := l.send(l.xff, "guarded.example.test", "/guarded"); r.status != 403 {
		t.Errorf("xff listener without X-Forwarded-For: %d %q; want 403 (the client is 127.0.0.1)", r.status, r.body)
	}
	// On http, no policy: the header is not trusted.
	if r := l.send(l.gwPort, "guarded.example.test", "/guarded", "x-forwarded-for", via); r.status != 403 {
		t.Errorf("http listener, X-Forwarded-For %s: %d %q; want 403 (no trusted hop)", via, r.status, r.body)
	} else {
		t.Logf("http listener (no policy), X-Forwarded-For %s: %d", via, r.status)
	}

	path := fmt.Sprintf("/logged-%d", time.Now().UnixNano())
	if r := l.send(l.xff, "app.example.test", path, "x-forwarded-for", via, "user-agent", "e2e-agent"); r.status != 200 {
		t.Fatalf("%s: %d %q", path, r.status, r.body)
	}
	var entry map[string]any
	poll(t, "the access log line of "+path, func() error {
		b, err := os.ReadFile(filepath.Join(l.state, "envoy.log"))
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "{") && strings.Contains(line, path) {
				entry = nil
				if err := json.Unmarshal([]byte(line), &entry); err != nil {
					return fmt.Errorf("%q: %v", line, err)
				}
				t.Logf("access log: %s", line)
				return nil
			}
		}
		return fmt.Errorf("no JSON line with %s yet", path)
	})
	want := map[string]any{"path": path, "status": float64(200), "client": via, "agent": "e2e-agent"}
	if len(entry) != len(want) {
		t.Errorf("access log fields %v; want exactly %v", entry, want)
	}
	for k, v := range want {
		if entry[k] != v {
			t.Errorf("access log %s = %#v; want %#v", k, entry[k], v)
		}
	}
}
