package e2e

// HTTP/3 through the real controller and Envoy (ListenerPolicy http3): an
// HTTPS listener on loopback answers over HTTPS/1.1 with alt-svc naming
// its port, and a QUIC client (quic-go's http3) gets the same routes over
// HTTP/3 on the same port in UDP, with the same HTTP filters (a
// SecurityPolicy's deny answers 403 there too); a second HTTPS listener
// on the port, with a hostname and a certificate of its own, has its own
// QUIC chain, which the client's SNI selects.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// http3YAML: the TLS Secret of listener https, HTTPRoute app (echo),
// HTTPRoute denied (/denied, a SecurityPolicy that denies everyone) and
// ListenerPolicy h3 on listener https ({{.Policy}}: http3, or with the
// protection removed something else).
const http3YAML = `apiVersion: v1
kind: Secret
metadata: {name: h3-cert, namespace: default}
type: kubernetes.io/tls
data: {tls.crt: {{.Cert}}, tls.key: {{.Key}}}
---
apiVersion: v1
kind: Secret
metadata: {name: other-cert, namespace: default}
type: kubernetes.io/tls
data: {tls.crt: {{.OtherCert}}, tls.key: {{.OtherKey}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: other, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: other}]
  rules:
  - backendRefs: [{name: other, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: https}]
  rules:
  - backendRefs: [{name: echo, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: denied, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: https}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /denied}}]
    backendRefs: [{name: echo, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: denied, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: denied}]
  authorization:
    defaultAction: Deny
    rules:
    - {name: documentation-net, action: Allow, clientCIDRs: [203.0.113.0/24]}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: ListenerPolicy
metadata: {name: h3, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]
  {{.Policy}}
`

// The names of the two listeners' certificates: https (no hostname) and
// other (hostname other.example.test).
const (
	h3Name    = "h3.example.test"
	otherName = "other.example.test"
)

// http3Fixture serves http3YAML: listener https on port https, TCP and
// UDP, of 127.0.0.1.
type http3Fixture struct {
	*fixture
	https int
	roots *x509.CertPool
}

// freeTCPAndUDPPort is a port free on 127.0.0.1 in TCP (freePort) and in
// UDP.
func freeTCPAndUDPPort(t *testing.T) int {
	for range 100 {
		p := freePort(t)
		if c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			c.Close()
			return p
		}
	}
	t.Fatal("no port free in TCP and UDP")
	return 0
}

func startHTTP3(t *testing.T) *http3Fixture {
	cert, other := selfSigned(t, h3Name), selfSigned(t, otherName)
	h := &http3Fixture{https: freeTCPAndUDPPort(t), roots: x509.NewCertPool()}
	h.roots.AddCert(cert.leaf)
	h.roots.AddCert(other.leaf)
	backend := func(name string) int {
		s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s", name, r.URL.Path)
		}), ReadHeaderTimeout: 5 * time.Second}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = s.Serve(lis) }()
		t.Cleanup(func() { _ = s.Close() })
		return lis.Addr().(*net.TCPAddr).Port
	}
	echo, otherBackend := backend("echo"), backend("other")
	// With XDS_E2E_PROTECTION_REMOVED=1 the policy has no http3 (a
	// client IP setting instead): the HTTP/3 test must fail.
	policy := "http3: {}"
	if os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1" {
		policy = "clientIP: {xffNumTrustedHops: 0}"
	}
	h.fixture = startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Listeners": []string{
				fmt.Sprintf("{name: https, protocol: HTTPS, port: %d, tls: {certificateRefs: [{name: h3-cert}]}}", h.https),
				fmt.Sprintf("{name: other, protocol: HTTPS, port: %d, hostname: %s, tls: {certificateRefs: [{name: other-cert}]}}", h.https, otherName),
			},
			"Backends": []gatewayBackend{{Name: "echo", Port: echo}, {Name: "other", Port: otherBackend}},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), http3YAML, map[string]string{
			"Cert":      base64.StdEncoding.EncodeToString(cert.certPEM),
			"Key":       base64.StdEncoding.EncodeToString(cert.keyPEM),
			"OtherCert": base64.StdEncoding.EncodeToString(other.certPEM),
			"OtherKey":  base64.StdEncoding.EncodeToString(other.keyPEM),
			"Policy":    policy,
		})
	})
	took := poll(t, "listener https served over TCP", func() error {
		resp, _, err := h.tcpGet("/ready")
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	t.Logf("listener https served after %s", took.Round(time.Millisecond))
	return h
}

// tcpGet sends GET path to listener https over TLS and HTTP/1.1.
func (h *http3Fixture) tcpGet(path string) (*http.Response, string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{ServerName: h3Name, RootCAs: h.roots},
		DisableKeepAlives: true,
	}}
	resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d%s", h.https, path))
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), nil
}

// h3Get sends GET path to listener https over QUIC and HTTP/3, on a new
// connection.
func (h *http3Fixture) h3Get(path string) (*http.Response, string, error) {
	return h.h3GetAs(h3Name, "", path)
}

// h3GetAs is h3Get with SNI sni and, when set, Host host.
func (h *http3Fixture) h3GetAs(sni, host, path string) (*http.Response, string, error) {
	tr := &http3.Transport{TLSClientConfig: &tls.Config{ServerName: sni, RootCAs: h.roots}}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", h.https, path), nil)
	if err != nil {
		return nil, "", err
	}
	req.Host = host
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), nil
}

func TestHTTP3(t *testing.T) {
	h := startHTTP3(t)
	want := fmt.Sprintf(`h3=":%d"; ma=86400`, h.https)
	resp, body, err := h.tcpGet("/tcp")
	if err != nil || resp.StatusCode != 200 || body != "echo /tcp" {
		t.Fatalf("HTTPS/1.1: %v %q %v", resp, body, err)
	}
	if got := resp.Header.Get("alt-svc"); got != want {
		t.Fatalf("HTTPS/1.1 alt-svc %q; want %q", got, want)
	}
	t.Logf("HTTPS/1.1: %s %d %q, alt-svc %s", resp.Proto, resp.StatusCode, body, resp.Header.Get("alt-svc"))

	// The QUIC listener comes with the same snapshot; a first attempt may
	// still race its start.
	var h3 *http.Response
	poll(t, "a response over HTTP/3", func() error {
		r, b, err := h.h3Get("/quic")
		if err != nil {
			return err
		}
		if r.StatusCode != 200 || b != "echo /quic" {
			return fmt.Errorf("%d %q", r.StatusCode, b)
		}
		h3, body = r, b
		return nil
	})
	if h3.Proto != "HTTP/3.0" {
		t.Fatalf("proto %q; want HTTP/3.0", h3.Proto)
	}
	t.Logf("HTTP/3: %s %d %q, alt-svc %s", h3.Proto, h3.StatusCode, body, h3.Header.Get("alt-svc"))

	// The same HTTP filters: the SecurityPolicy's RBAC denies /denied on
	// both.
	for name, get := range map[string]func(string) (*http.Response, string, error){"HTTPS/1.1": h.tcpGet, "HTTP/3": h.h3Get} {
		r, b, err := get("/denied")
		if err != nil || r.StatusCode != 403 {
			t.Errorf("%s /denied: %v %q %v; want 403", name, r, b, err)
			continue
		}
		t.Logf("%s /denied: %d", name, r.StatusCode)
	}
	// Listener other's QUIC chain, chosen by SNI, with its certificate
	// (the client checks it is other.example.test's) and its routes.
	r, b, err := h.h3GetAs(otherName, otherName, "/by-sni")
	if err != nil || r.StatusCode != 200 || b != "other /by-sni" {
		t.Fatalf("HTTP/3 with SNI %s: %v %q %v; want 200 from other", otherName, r, b, err)
	}
	if cn := r.TLS.PeerCertificates[0].Subject.CommonName; cn != otherName {
		t.Fatalf("HTTP/3 with SNI %s: certificate of %s", otherName, cn)
	}
	t.Logf("HTTP/3 with SNI %s: %s %d %q, certificate %s, alt-svc %s", otherName, r.Proto, r.StatusCode, b, otherName, r.Header.Get("alt-svc"))

	// Envoy counts the HTTP/3 requests of the listener's connection
	// manager (its TCP and QUIC chains share the stat prefix).
	const counter = "http.default/gw/https.downstream_rq_http3_total"
	if n, err := envoyCounter(h.admin, counter); err != nil || n < 2 {
		t.Errorf("%s = %d, %v; want 2 at least", counter, n, err)
	} else {
		t.Logf("Envoy: %s = %d", counter, n)
	}
}
