package e2e

// XBackend of type ExternalHostname end to end: Envoy resolves the
// XBackend's host name through a DNS server the test runs on loopback
// (--dns-resolvers), connects to the loopback server behind that name, and
// originates TLS where the XBackend says so, verifying the server's
// certificate against the CA of the XBackend's validation.

import (
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// testDNS is a DNS server on loopback (UDP) that answers A queries for
// names under zone with 127.0.0.1 and NXDOMAIN for others, and records
// the names it was asked.
type testDNS struct {
	addr string
	mu   sync.Mutex
	seen []string
}

// startDNS serves a testDNS for zone ("xbackend.test.") until the test
// ends.
func startDNS(t *testing.T, zone string) *testDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &testDNS{addr: pc.LocalAddr().String()}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		for _, qq := range q.Question {
			d.mu.Lock()
			d.seen = append(d.seen, qq.Name)
			d.mu.Unlock()
			switch {
			case !dns.IsSubDomain(zone, qq.Name):
				m.Rcode = dns.RcodeNameError
			case qq.Qtype == dns.TypeA:
				m.Answer = append(m.Answer, &dns.A{
					Hdr: dns.RR_Header{Name: qq.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5},
					A:   net.IPv4(127, 0, 0, 1),
				})
			}
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return d
}

// asked says whether the server was asked name (a FQDN with its dot).
func (d *testDNS) asked(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Contains(d.seen, name)
}

// xbackendRoutesYAML: an HTTPRoute for xbackend.example.test with one rule
// per XBackend (plain: HTTP; secure: TLS verified with the CA of
// ConfigMap test-ca; wrong-ca: TLS to the same server verified with
// another CA, other-ca), a TCPRoute on the tcp listener to greeter (TLS,
// test-ca), and the two CA ConfigMaps. The XBackends' host names are under
// xbackend.test, which only the test's DNS server knows.
const xbackendRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: external, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [xbackend.example.test]
  rules:
  - matches: [{path: {type: PathPrefix, value: /plain}}]
    backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: plain}]
  - matches: [{path: {type: PathPrefix, value: /secure}}]
    backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: secure}]
  - matches: [{path: {type: PathPrefix, value: /wrong-ca}}]
    backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: wrong-ca}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: greeter, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: tcp}]
  rules:
  - backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: greeter}]
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: plain, namespace: default}
spec:
  type: ExternalHostname
  port: {number: {{.PlainPort}}}
  externalHostname: {hostname: plain.xbackend.test}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: secure, namespace: default}
spec:
  type: ExternalHostname
  port: {number: {{.SecurePort}}}
  externalHostname: {hostname: secure.xbackend.test}
  tls:
    mode: ServerOnly
    validation:
      caCertificateRefs: [{group: "", kind: ConfigMap, name: test-ca}]
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: wrong-ca, namespace: default}
spec:
  type: ExternalHostname
  port: {number: {{.SecurePort}}}
  externalHostname: {hostname: secure.xbackend.test}
  tls:
    mode: ServerOnly
    validation:
      caCertificateRefs: [{group: "", kind: ConfigMap, name: other-ca}]
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: greeter, namespace: default}
spec:
  type: ExternalHostname
  port: {number: {{.GreeterPort}}}
  externalHostname: {hostname: greeter.xbackend.test}
  tls:
    mode: ServerOnly
    validation:
      caCertificateRefs: [{group: "", kind: ConfigMap, name: test-ca}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: test-ca, namespace: default}
data:
  ca.crt: {{printf "%q" .CA}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other-ca, namespace: default}
data:
  ca.crt: {{printf "%q" .OtherCA}}
`

// TestXBackendExternalHostname routes to XBackends of type
// ExternalHostname whose names only the test's DNS server resolves (to
// 127.0.0.1), given to the controller with --dns-resolvers:
//   - plain (HTTP): 200 from the loopback HTTP server, and the DNS server
//     was asked plain.xbackend.test;
//   - secure (tls ServerOnly, the CA that signed the server's
//     certificate): 200 from the HTTPS server, which saw TLS with SNI
//     secure.xbackend.test (externalHostname) and no plaintext connection;
//   - wrong-ca (the same server, verified with another CA): Envoy refuses
//     the certificate and answers 503; the server serves no request of it;
//   - a TCPRoute to greeter (tls ServerOnly): a plain TCP client of the
//     gateway reads the greeting the TLS server wrote over the TLS Envoy
//     originated.
func TestXBackendExternalHostname(t *testing.T) {
	ca := newCA(t, "e2e xbackend CA")
	other := newCA(t, "e2e other CA")
	resolver := startDNS(t, "xbackend.test.")
	plain := backend(t, "plain")
	secure := startTLSBackend(t, "secure", ca.issue(t, "secure.xbackend.test"))
	greeterPort, handshakes := tlsGreeter(t, "greeter", ca.issue(t, "greeter.xbackend.test"))
	var tcpPort int
	f := startWith(t, func(f *fixture) {
		tcpPort = freePort(t)
		l4Config(t, f, []string{fmt.Sprintf("{name: tcp, protocol: TCP, port: %d}", tcpPort)}, nil, xbackendRoutesYAML, map[string]any{
			"PlainPort": portOf(plain), "SecurePort": secure.port, "GreeterPort": greeterPort,
			"CA": string(ca.pem), "OtherCA": string(other.pem),
		})
	}, func(f *fixture) { f.args = append(f.args, "--dns-resolvers", resolver.addr) })
	const host = "xbackend.example.test"

	f.await(host, "/plain", 200, "plain /plain")
	if !resolver.asked("plain.xbackend.test.") {
		t.Errorf("the test's DNS server was not asked plain.xbackend.test: Envoy resolved it another way")
	}

	f.await(host, "/secure", 200, "secure /secure sni=secure.xbackend.test")
	if n := secure.plaintext.Load(); n != 0 {
		t.Errorf("secure: %d plaintext connections reached the TLS server", n)
	}

	_, before, _ := secure.seen()
	var code int
	var body string
	for range 3 {
		code, body = f.get(host, "/wrong-ca")
		if code != 503 {
			break
		}
	}
	if code != 503 || !strings.HasPrefix(body, "upstream connect error") {
		t.Errorf("wrong-ca: got %d %q, want 503 upstream connect error (the server's certificate is not signed by other-ca)", code, body)
	}
	if _, after, _ := secure.seen(); len(after) != len(before) {
		t.Errorf("wrong-ca: the server served %d requests through a certificate Envoy should have refused", len(after)-len(before))
	}
	_, _, handshakeErrors := secure.seen()
	t.Logf("wrong-ca: %d %q; server handshake errors: %v", code, body, handshakeErrors)

	deadline := time.Now().Add(30 * time.Second)
	var got string
	var err error
	for time.Now().Before(deadline) {
		got, err = readTCP(tcpPort)
		if got == "hello from greeter\n" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got != "hello from greeter\n" {
		t.Fatalf("TCPRoute to greeter: read %q (%v), want the greeting", got, err)
	}
	if handshakes.Load() == 0 {
		t.Errorf("greeter: no TLS handshake completed")
	}
}

// readTCP connects to Envoy's port in plain TCP and returns all it reads.
func readTCP(port int) (string, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

// xbackendAdminYAML: an HTTPRoute to an XBackend whose host name (only the
// test's DNS server knows it) resolves to 127.0.0.1, at the port of
// Envoy's admin interface (.AdminPort).
const xbackendAdminYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: sneaky, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [sneaky.example.test]
  rules:
  - backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: admin}]
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: admin, namespace: default}
spec:
  type: ExternalHostname
  port: {number: {{.AdminPort}}}
  externalHostname: {hostname: admin.xbackend.test}
`

// TestXBackendCannotReachEnvoyAdmin: a tenant's XBackend whose name
// resolves to the loopback, at the port of Envoy's own admin interface
// (standalone: --admin-port), must not turn the gateway into a proxy to
// that admin (config_dump, quitquitquit): the XBackend is refused
// (gatewayapi.Options.ProxyPorts), the route answers 500, and Envoy's
// /server_info never reaches the client.
func TestXBackendCannotReachEnvoyAdmin(t *testing.T) {
	resolver := startDNS(t, "xbackend.test.")
	f := startWith(t, func(f *fixture) {
		l4Config(t, f, nil, nil, xbackendAdminYAML, map[string]any{"AdminPort": f.admin})
	}, func(f *fixture) { f.args = append(f.args, "--dns-resolvers", resolver.addr) })
	deadline := time.Now().Add(30 * time.Second)
	for code, body := f.get("sneaky.example.test", "/server_info"); code != 500; code, body = f.get("sneaky.example.test", "/server_info") {
		if strings.Contains(body, "command_line_options") {
			t.Fatalf("got %d %.200q: Envoy's admin answered through the gateway", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d %.200q, want 500", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 5 {
		code, body := f.get("sneaky.example.test", "/server_info")
		if code != 500 || strings.Contains(body, "command_line_options") {
			t.Fatalf("got %d %.200q: Envoy's admin answered through the gateway", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
