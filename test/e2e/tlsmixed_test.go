package e2e

// TLS listeners of both modes on one port (Gateway API v1.7.0 standard:
// TLSRouteModeMixed) through the real controller and Envoy.

import (
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"regexp"
	"testing"
	"time"
)

// tlsMixedRoutesYAML: tlsTerminateRoutesYAML (the Secret of the Terminate
// listener term and its TLSRoute terminate for term.example.test to the
// plain echo backend); on the Passthrough listener pass (*.example.test),
// the older TLSRoute wide (*.example.test) to TLS backend A and the newer
// narrow (abc.example.test) to TLS backend B.
const tlsMixedRoutesYAML = tlsTerminateRoutesYAML + `---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: wide, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: pass}]
  hostnames: ["*.example.test"]
  rules: [{backendRefs: [{name: tls-a, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: narrow, namespace: default, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: pass}]
  hostnames: [abc.example.test]
  rules: [{backendRefs: [{name: tls-b, port: 80}]}]
`

// TestTLSRouteModeMixed shows that a Terminate listener
// (term.example.test) and a Passthrough listener (*.example.test) share
// one port, each connection going by its SNI:
//   - term.example.test, which both listeners' hostnames cover, is
//     terminated by Envoy with the Terminate listener's certificate, and
//     the plain TCP backend receives the client's bytes unencrypted; no
//     passthrough backend sees a handshake;
//   - abc.example.test is relayed, still encrypted, to backend B, whose
//     own certificate the client sees: the TLSRoute for abc.example.test
//     owns it, though it is newer than the *.example.test route
//     (GatewayRouteHostnameIntersectionPrecedence);
//   - other.example.test is relayed to backend A (the *.example.test
//     route);
//   - an SNI neither listener covers is closed by Envoy.
//
// Both listeners are Accepted (no ProtocolConflict) and count their routes.
func TestTLSRouteModeMixed(t *testing.T) {
	termCert := selfSigned(t, "term.example.test")
	certA, certB := selfSigned(t, "*.example.test"), selfSigned(t, "abc.example.test")
	roots := x509.NewCertPool()
	for _, c := range []testCert{termCert, certA, certB} {
		roots.AddCert(c.leaf)
	}
	echoPort, received := tcpEcho(t)
	portA, shakesA := tlsGreeter(t, "a", certA)
	portB, shakesB := tlsGreeter(t, "b", certB)
	port := freePort(t)
	f := startWith(t, func(f *fixture) {
		l4Config(t, f, []string{
			fmt.Sprintf("{name: term, protocol: TLS, port: %d, hostname: term.example.test, tls: {mode: Terminate, certificateRefs: [{name: term-cert}]}}", port),
			fmt.Sprintf(`{name: pass, protocol: TLS, port: %d, hostname: "*.example.test", tls: {mode: Passthrough}}`, port),
		}, []gatewayBackend{{Name: "echo", Port: echoPort}, {Name: "tls-a", Port: portA}, {Name: "tls-b", Port: portB}},
			tlsMixedRoutesYAML, map[string]string{
				"Name": "term-cert",
				"Cert": base64.StdEncoding.EncodeToString(termCert.certPEM),
				"Key":  base64.StdEncoding.EncodeToString(termCert.keyPEM),
			})
	})

	took := poll(t, "terminated TLS to the echo backend", func() error {
		_, echo, err := tlsEcho(port, "term.example.test", roots, "ping\n")
		if err == nil && echo != "ping\n" {
			err = fmt.Errorf("echo %q", echo)
		}
		return err
	})
	t.Logf("the Terminate listener served after %s", took.Round(time.Millisecond))

	beforeA, beforeB := shakesA.Load(), shakesB.Load()
	const msg = "plain bytes, encrypted only between the client and Envoy\n"
	st, echo, err := tlsEcho(port, "term.example.test", roots, msg)
	if err != nil {
		t.Fatalf("term.example.test: %v", err)
	}
	if leaf := st.PeerCertificates[0]; leaf.SerialNumber.Cmp(termCert.leaf.SerialNumber) != 0 || echo != msg {
		t.Errorf("term.example.test: %s, echo %q; want the listener's %s, echo %q", describe(leaf), echo, describe(termCert.leaf), msg)
	}
	// The backend reports each connection when it ends: the polling
	// connections' "ping\n", then this one's.
	for got := ""; got != msg; {
		select {
		case b := <-received:
			if got = string(b); got != msg && got != "ping\n" {
				t.Fatalf("the echo backend received %q; want the client's plain bytes %q", got, msg)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the echo backend did not report the connection within 10s")
		}
	}
	if a, b := shakesA.Load()-beforeA, shakesB.Load()-beforeB; a != 0 || b != 0 {
		t.Errorf("term.example.test reached the passthrough backends: %d handshakes on A, %d on B", a, b)
	}
	t.Logf("term.example.test: terminated with %s, the backend received the plain bytes", describe(termCert.leaf))

	expectGreeting(t, port, "abc.example.test", roots, certB, "hello from b\n")
	expectGreeting(t, port, "other.example.test", roots, certA, "hello from a\n")

	beforeA, beforeB = shakesA.Load(), shakesB.Load()
	if leaf, got, err := dialTLS(port, "nothing.invalid", roots); closedByEnvoy(err) != nil {
		t.Errorf("SNI nothing.invalid: %v (%s, greeting %q); want the connection closed before any certificate", closedByEnvoy(err), describe(leaf), got)
	}
	if a, b := shakesA.Load()-beforeA, shakesB.Load()-beforeB; a != 0 || b != 0 {
		t.Errorf("SNI nothing.invalid reached the backends: %d handshakes on A, %d on B", a, b)
	}

	for _, want := range []string{
		"TLSRoute default/terminate -> default/gw/term: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)",
		"TLSRoute default/wide -> default/gw/pass: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)",
		"TLSRoute default/narrow -> default/gw/pass: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)",
	} {
		f.waitOutput("TLSRoute status", 0, regexp.MustCompile(regexp.QuoteMeta(want)), l4Deadline)
	}
	for l, n := range map[string]int{"term": 1, "pass": 2} {
		f.waitOutput("listener "+l+" status", 0, regexp.MustCompile(regexp.QuoteMeta(
			fmt.Sprintf("Gateway default/gw listener %s: attachedRoutes=%d Accepted=True(Accepted) Programmed=True(Programmed)", l, n))), l4Deadline)
	}
}
