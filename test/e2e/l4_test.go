package e2e

// The L4 routes end to end: TLSRoute (Passthrough by SNI, Terminate),
// TCPRoute and UDPRoute through the real controller and Envoy, to servers
// of the test's own on loopback.

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// l4Deadline bounds every wait for the configuration to be served.
const l4Deadline = 30 * time.Second

// poll calls try until it returns nil and returns how long that took; at
// the deadline it fails the test with try's last error.
func poll(t *testing.T, what string, try func() error) time.Duration {
	t.Helper()
	began := time.Now()
	var err error
	for deadline := began.Add(l4Deadline); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err = try(); err == nil {
			return time.Since(began)
		}
	}
	t.Fatalf("%s: not within %s: %v", what, l4Deadline, err)
	return 0
}

// testCert is a self-signed certificate for one DNS name.
type testCert struct {
	tls  tls.Certificate
	leaf *x509.Certificate
	// certPEM and keyPEM are tls.crt and tls.key of a kubernetes.io/tls
	// Secret.
	certPEM, keyPEM []byte
}

// selfSigned makes an ECDSA P-256 certificate for name, signed by its own
// key, with a random serial number.
func selfSigned(t *testing.T, name string) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return newTestCert(t, der, key)
}

// describe names a certificate by its DNS names and serial number.
func describe(c *x509.Certificate) string {
	if c == nil {
		return "no certificate"
	}
	return fmt.Sprintf("certificate for %v, serial %x", c.DNSNames, c.SerialNumber)
}

// serve accepts connections on l until the test ends and hands each to
// handle in its own goroutine.
func serve(t *testing.T, l net.Listener, handle func(net.Conn)) {
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				handle(c)
			}()
		}
	}()
}

func listenTCP(t *testing.T) (net.Listener, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l, l.Addr().(*net.TCPAddr).Port
}

// tlsGreeter is a TLS server with cert that writes "hello from <name>\n"
// on every connection and closes it; handshakes counts the handshakes it
// completed.
func tlsGreeter(t *testing.T, name string, cert testCert) (port int, handshakes *atomic.Int32) {
	l, port := listenTCP(t)
	handshakes = &atomic.Int32{}
	serve(t, tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert.tls}}), func(c net.Conn) {
		if err := c.(*tls.Conn).Handshake(); err != nil {
			return
		}
		handshakes.Add(1)
		fmt.Fprintf(c, "hello from %s\n", name)
	})
	return port, handshakes
}

// tcpEcho is a plain TCP server that echoes what it reads; when a
// connection ends it sends everything it read there on received.
func tcpEcho(t *testing.T) (port int, received chan []byte) {
	l, port := listenTCP(t)
	received = make(chan []byte, 100)
	serve(t, l, func(c net.Conn) {
		var got bytes.Buffer
		_, _ = io.Copy(c, io.TeeReader(c, &got))
		received <- got.Bytes()
	})
	return port, received
}

// tcpNamer is a plain TCP server that writes name on every connection and
// closes it.
func tcpNamer(t *testing.T, name string) int {
	l, port := listenTCP(t)
	serve(t, l, func(c net.Conn) { _, _ = io.WriteString(c, name) })
	return port
}

// udpEcho is a UDP server on loopback that sends every datagram back to
// its sender; from receives each sender's address.
func udpEcho(t *testing.T) (port int, from chan *net.UDPAddr) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	from = make(chan *net.UDPAddr, 1000)
	go func() {
		buf := make([]byte, 65535)
		for {
			n, addr, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			select {
			case from <- addr:
			default:
			}
			_, _ = c.WriteToUDP(buf[:n], addr)
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).Port, from
}

// freeUDPPort is a UDP port on loopback that nothing listens on.
func freeUDPPort(t *testing.T) int {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// l4Config writes gateway.yaml (gatewayYAML with the extra listeners and
// the backends) and routes.yaml (the routes, and whatever else they need)
// into f.dir.
func l4Config(t *testing.T, f *fixture, listeners []string, backends []gatewayBackend, routes string, data any) {
	render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
		"GatewayPort": f.gwPort, "Listeners": listeners, "Backends": backends,
	})
	render(t, filepath.Join(f.dir, "routes.yaml"), routes, data)
}

// dialTLS opens a TLS connection to Envoy's port with sni as its server
// name, verifying the certificate against roots (with no SNI when sni is
// "", and then without verifying), and returns the certificate the server
// presented and all it sent before closing.
func dialTLS(port int, sni string, roots *x509.CertPool) (*x509.Certificate, string, error) {
	d := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{
		ServerName: sni, RootCAs: roots, InsecureSkipVerify: sni == "",
	})
	if err != nil {
		return nil, "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	leaf := conn.ConnectionState().PeerCertificates[0]
	b, err := io.ReadAll(conn)
	return leaf, string(b), err
}

// tlsEcho opens a TLS connection to Envoy's port with sni as its server
// name, verifying the certificate against roots and offering ALPN h2 and
// http/1.1, writes msg and reads as many bytes back; it returns the
// session's state and what it read.
func tlsEcho(port int, sni string, roots *x509.CertPool, msg string) (tls.ConnectionState, string, error) {
	d := &net.Dialer{Timeout: 2 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{
		ServerName: sni, RootCAs: roots, NextProtos: []string{"h2", "http/1.1"},
	})
	if err != nil {
		return tls.ConnectionState{}, "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, msg); err != nil {
		return conn.ConnectionState(), "", err
	}
	echo := make([]byte, len(msg))
	_, err = io.ReadFull(conn, echo)
	return conn.ConnectionState(), string(echo), err
}

// expectGreeting polls dialTLS(port, sni, roots) until a connection
// completes its handshake and reads a greeting, and checks that the
// server presented want's certificate (by serial number) and sent
// greeting.
func expectGreeting(t *testing.T, port int, sni string, roots *x509.CertPool, want testCert, greeting string) {
	t.Helper()
	var leaf *x509.Certificate
	var got string
	took := poll(t, "SNI "+sni, func() error {
		var err error
		leaf, got, err = dialTLS(port, sni, roots)
		if err == nil && got == "" {
			err = errors.New("no greeting")
		}
		return err
	})
	if leaf.SerialNumber.Cmp(want.leaf.SerialNumber) != 0 || got != greeting {
		t.Errorf("SNI %s: %s, greeting %q; want %s, greeting %q", sni, describe(leaf), got, describe(want.leaf), greeting)
	} else {
		t.Logf("SNI %s: %s, greeting %q (served after %s)", sni, describe(leaf), got, took.Round(time.Millisecond))
	}
}

// closedWithoutData says whether conn is closed by its peer before sending
// anything (nil), or else what happened.
func closedWithoutData(conn net.Conn) error {
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(conn)
	var ne net.Error
	switch {
	case len(b) > 0:
		return fmt.Errorf("got %q", b)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("still open after 5s")
	}
	return nil
}

// closedByEnvoy says whether err is what a TLS client sees when Envoy
// accepts its connection and closes it before sending a certificate (nil),
// or else what happened.
func closedByEnvoy(err error) error {
	var verr *tls.CertificateVerificationError
	var oe *net.OpError
	switch {
	case err == nil:
		return errors.New("the handshake completed")
	case errors.As(err, &verr):
		return fmt.Errorf("a certificate was presented: %w", err)
	case errors.As(err, &oe) && oe.Op == "dial":
		return fmt.Errorf("the connection was not accepted: %w", err)
	}
	return nil
}

// secretYAML is the kubernetes.io/tls Secret .Name with .Cert and .Key
// (PEM, base64-encoded as Secret data is).
const secretYAML = `apiVersion: v1
kind: Secret
metadata: {name: {{.Name}}, namespace: default}
type: kubernetes.io/tls
data:
  tls.crt: {{.Cert}}
  tls.key: {{.Key}}
`

// tlsPassthroughRoutesYAML: two TLSRoutes on the Passthrough listener
// "pass", one per hostname, each to its own TLS backend.
const tlsPassthroughRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: to-a, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: pass}]
  hostnames: [a.example.test]
  rules: [{backendRefs: [{name: tls-a, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: to-b, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: pass}]
  hostnames: [b.example.test]
  rules: [{backendRefs: [{name: tls-b, port: 80}]}]
`

// TestL4TLSRoutePassthroughBySNI shows that a TLS listener in mode
// Passthrough relays each connection, still encrypted, to the backend of
// the TLSRoute whose hostname is the client's SNI: with SNI a.example.test
// the client completes its handshake with backend A (A's own self-signed
// certificate, by DNS name and serial) and reads A's greeting, with
// b.example.test B's. A connection whose SNI no route claims, or that
// sends none, is closed by Envoy without a certificate and reaches no
// backend. Both routes are Accepted with ResolvedRefs, and the listener
// counts them.
func TestL4TLSRoutePassthroughBySNI(t *testing.T) {
	certA, certB := selfSigned(t, "a.example.test"), selfSigned(t, "b.example.test")
	portA, shakesA := tlsGreeter(t, "a", certA)
	portB, shakesB := tlsGreeter(t, "b", certB)
	roots := x509.NewCertPool()
	roots.AddCert(certA.leaf)
	roots.AddCert(certB.leaf)
	pass := freePort(t)
	f := startWith(t, func(f *fixture) {
		l4Config(t, f, []string{fmt.Sprintf("{name: pass, protocol: TLS, port: %d, tls: {mode: Passthrough}}", pass)},
			[]gatewayBackend{{Name: "tls-a", Port: portA}, {Name: "tls-b", Port: portB}},
			tlsPassthroughRoutesYAML, nil)
	})

	expectGreeting(t, pass, "a.example.test", roots, certA, "hello from a\n")
	expectGreeting(t, pass, "b.example.test", roots, certB, "hello from b\n")

	beforeA, beforeB := shakesA.Load(), shakesB.Load()
	for _, sni := range []string{"c.example.test", ""} {
		leaf, got, err := dialTLS(pass, sni, roots)
		if e := closedByEnvoy(err); e != nil {
			t.Errorf("SNI %q: %v (%s, greeting %q); want the connection closed before any certificate", sni, e, describe(leaf), got)
		} else {
			t.Logf("SNI %q: closed by Envoy: %v", sni, err)
		}
	}
	if a, b := shakesA.Load()-beforeA, shakesB.Load()-beforeB; a != 0 || b != 0 {
		t.Errorf("unclaimed SNI reached the backends: %d handshakes on A, %d on B", a, b)
	}

	for _, route := range []string{"to-a", "to-b"} {
		want := "TLSRoute default/" + route + " -> default/gw/pass: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)"
		f.waitOutput(route+" status", 0, regexp.MustCompile(regexp.QuoteMeta(want)), l4Deadline)
	}
	if l := f.lastLine("Gateway default/gw listener pass:"); !strings.Contains(l, "attachedRoutes=2 ") {
		t.Errorf("listener status: %q; want attachedRoutes=2", l)
	}
}

// tlsTerminateRoutesYAML: the listener's Secret and a TLSRoute on the
// Terminate listener "term" to the plain echo backend.
const tlsTerminateRoutesYAML = secretYAML + `---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: terminate, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: term}]
  hostnames: [term.example.test]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
`

// TestL4TLSRouteTerminate shows that a TLS listener in mode Terminate
// completes the handshake itself, with the certificate of its
// kubernetes.io/tls Secret (by DNS name and serial) and no ALPN protocol
// though the client offers h2 and http/1.1, and relays the decrypted
// stream of the TLSRoute's hostname to a plain TCP backend: the backend
// receives exactly the bytes the client wrote, unencrypted, and its echo
// comes back through the TLS session. An SNI the route does not list is
// closed by Envoy and reaches no backend.
func TestL4TLSRouteTerminate(t *testing.T) {
	cert := selfSigned(t, "term.example.test")
	roots := x509.NewCertPool()
	roots.AddCert(cert.leaf)
	echoPort, received := tcpEcho(t)
	term := freePort(t)
	f := startWith(t, func(f *fixture) {
		l4Config(t, f, []string{fmt.Sprintf("{name: term, protocol: TLS, port: %d, tls: {mode: Terminate, certificateRefs: [{name: term-cert}]}}", term)},
			[]gatewayBackend{{Name: "echo", Port: echoPort}}, tlsTerminateRoutesYAML, map[string]string{
				"Name": "term-cert",
				"Cert": base64.StdEncoding.EncodeToString(cert.certPEM),
				"Key":  base64.StdEncoding.EncodeToString(cert.keyPEM),
			})
	})

	exchange := func(sni, msg string) (tls.ConnectionState, string, error) { return tlsEcho(term, sni, roots, msg) }

	took := poll(t, "terminated TLS to the echo backend", func() error {
		_, echo, err := exchange("term.example.test", "ping\n")
		if err == nil && echo != "ping\n" {
			err = fmt.Errorf("echo %q", echo)
		}
		return err
	})
	t.Logf("Terminate listener served after %s", took.Round(time.Millisecond))

	// One connection more, with what the backend saw on it, once the
	// backend has seen the polling connection end.
	for drained := false; !drained; {
		select {
		case got := <-received:
			drained = string(got) == "ping\n" && len(received) == 0
		case <-time.After(10 * time.Second):
			t.Fatal("the backend's polling connection did not end within 10s")
		}
	}
	const msg = "plain bytes, encrypted only between the client and Envoy\n"
	st, echo, err := exchange("term.example.test", msg)
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	leaf := st.PeerCertificates[0]
	if leaf.SerialNumber.Cmp(cert.leaf.SerialNumber) != 0 || len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != "term.example.test" {
		t.Errorf("the client saw %s; want the listener's %s", describe(leaf), describe(cert.leaf))
	}
	if st.NegotiatedProtocol != "" {
		t.Errorf("ALPN: Envoy chose %q; want none", st.NegotiatedProtocol)
	}
	if echo != msg {
		t.Errorf("echo %q, want %q", echo, msg)
	}
	select {
	case got := <-received:
		if string(got) != msg {
			t.Errorf("the backend received %q; want the client's plain bytes %q", got, msg)
		} else {
			t.Logf("client saw %s (ALPN %q); the backend received %q", describe(leaf), st.NegotiatedProtocol, got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the backend's connection did not end within 10s")
	}

	// An SNI the route does not list.
	_, _, err = exchange("other.example.test", "x")
	if e := closedByEnvoy(err); e != nil {
		t.Errorf("SNI other.example.test: %v; want the connection closed before any certificate", e)
	} else {
		t.Logf("SNI other.example.test: closed by Envoy: %v", err)
	}
	select {
	case got := <-received:
		t.Errorf("SNI other.example.test reached the backend, which received %q", got)
	case <-time.After(200 * time.Millisecond):
	}

	f.waitOutput("terminate status", 0, regexp.MustCompile(regexp.QuoteMeta(
		"TLSRoute default/terminate -> default/gw/term: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)")), l4Deadline)
}

// tcpRoutesYAML: a TCPRoute splitting listener "tcp" 1:1 between two
// backends, and one on listener "broken" to a Service that does not exist.
const tcpRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: split, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: tcp}]
  rules:
  - backendRefs:
    - {name: tcp-a, port: 80, weight: 1}
    - {name: tcp-b, port: 80, weight: 1}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: to-nowhere, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: broken}]
  rules: [{backendRefs: [{name: does-not-exist, port: 80}]}]
`

// TestL4TCPRouteWeightsAndMissingBackend shows that a TCPRoute with two
// backendRefs of weight 1 spreads connections over both (each gets 35-65 %
// of 200, every connection reaching one of them), and that a TCPRoute on
// another listener whose only backendRef names a missing Service has its
// connections accepted and closed without data, is reported as
// ResolvedRefs=False(BackendNotFound), and leaves the first listener
// serving every connection.
func TestL4TCPRouteWeightsAndMissingBackend(t *testing.T) {
	tcp, broken := freePort(t), freePort(t)
	f := startWith(t, func(f *fixture) {
		l4Config(t, f, []string{
			fmt.Sprintf("{name: tcp, protocol: TCP, port: %d}", tcp),
			fmt.Sprintf("{name: broken, protocol: TCP, port: %d}", broken),
		}, []gatewayBackend{{Name: "tcp-a", Port: tcpNamer(t, "tcp-a")}, {Name: "tcp-b", Port: tcpNamer(t, "tcp-b")}},
			tcpRoutesYAML, nil)
	})

	// get reads what one connection to port receives until it closes.
	get := func(port int) (string, error) {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
		if err != nil {
			return "", err
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(conn)
		return string(b), err
	}
	took := poll(t, "TCPRoute split", func() error {
		got, err := get(tcp)
		if err == nil && got != "tcp-a" && got != "tcp-b" {
			err = fmt.Errorf("got %q", got)
		}
		return err
	})
	t.Logf("TCP listener served after %s", took.Round(time.Millisecond))

	// The listener of the missing Service: Envoy accepts (once it has the
	// listener) and closes without data.
	var conn net.Conn
	poll(t, "the listener of the missing Service", func() error {
		var err error
		conn, err = net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", broken), 2*time.Second)
		return err
	})
	conns := []net.Conn{conn}
	for range 4 {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", broken), 2*time.Second)
		if err != nil {
			t.Fatalf("the listener of the missing Service: %v", err)
		}
		conns = append(conns, c)
	}
	for i, c := range conns {
		if err := closedWithoutData(c); err != nil {
			t.Errorf("connection %d to the missing Service: %v; want it closed without data", i, err)
		}
		c.Close()
	}
	if !t.Failed() {
		t.Logf("the missing Service's listener closed %d connections without data", len(conns))
	}

	const n = 200
	counts := map[string]int{}
	for range n {
		got, err := get(tcp)
		if err != nil {
			got = "error: " + err.Error()
		}
		counts[got]++
	}
	t.Logf("%d connections: %v", n, counts)
	for _, name := range []string{"tcp-a", "tcp-b"} {
		if share := 100 * float64(counts[name]) / n; share < 35 || share > 65 {
			t.Errorf("%s got %.1f %% of the connections; want 35-65 %%", name, share)
		}
	}
	if counts["tcp-a"]+counts["tcp-b"] != n {
		t.Errorf("%d of %d connections reached neither backend: %v", n-counts["tcp-a"]-counts["tcp-b"], n, counts)
	}

	for _, want := range []string{
		"TCPRoute default/split -> default/gw/tcp: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)",
		"TCPRoute default/to-nowhere -> default/gw/broken: Accepted=True(Accepted) ResolvedRefs=False(BackendNotFound)",
	} {
		f.waitOutput("TCPRoute status", 0, regexp.MustCompile(regexp.QuoteMeta(want)), l4Deadline)
	}
}

// udpRoutesYAML: a UDPRoute on listener "udp" to the echo Service's UDP
// port.
const udpRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: UDPRoute
metadata: {name: echo, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: udp}]
  rules: [{backendRefs: [{name: udp-echo, port: 80}]}]
`

// TestL4UDPRouteEcho shows that a UDP listener relays datagrams to the
// UDPRoute's backend (a Service port with protocol UDP) and the replies
// back: each datagram sent to Envoy's UDP port comes back byte for byte,
// and the echo server sees it from Envoy, not from the client.
func TestL4UDPRouteEcho(t *testing.T) {
	echoPort, from := udpEcho(t)
	udp := freeUDPPort(t)
	f := startWith(t, func(f *fixture) {
		l4Config(t, f, []string{fmt.Sprintf("{name: udp, protocol: UDP, port: %d}", udp)},
			[]gatewayBackend{{Name: "udp-echo", Port: echoPort, Protocol: "UDP"}}, udpRoutesYAML, nil)
	})
	conn, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: udp})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// roundTrip sends msg and waits a moment for its echo; datagrams may be
	// lost, and before the listener exists the port refuses them.
	buf := make([]byte, 2048)
	roundTrip := func(msg string) error {
		if _, err := conn.Write([]byte(msg)); err != nil {
			return err
		}
		_ = conn.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return err
			}
			if string(buf[:n]) == msg {
				return nil
			}
			// An echo of an earlier attempt: read on.
		}
	}
	attempt := 0
	took := poll(t, "UDP echo through Envoy", func() error {
		attempt++
		return roundTrip(fmt.Sprintf("ping %d", attempt))
	})
	t.Logf("UDP listener echoed after %s (%d datagrams sent)", took.Round(time.Millisecond), attempt)

	for len(from) > 0 {
		<-from
	}
	for i := range 5 {
		msg := fmt.Sprintf("datagram %d: %s", i, strings.Repeat("x", 100*i))
		tries := 0
		var err error
		for tries < 5 {
			tries++
			if err = roundTrip(msg); err == nil {
				break
			}
		}
		if err != nil {
			t.Errorf("%q: no echo in %d tries: %v", msg[:11], tries, err)
		}
	}
	client := conn.LocalAddr().(*net.UDPAddr)
	select {
	case src := <-from:
		if !src.IP.IsLoopback() || src.Port == client.Port || src.Port == udp {
			t.Errorf("the echo server saw a datagram from %s; the client is %s, Envoy's listener port %d", src, client, udp)
		} else {
			t.Logf("the echo server saw the datagrams from %s (the client is %s)", src, client)
		}
	default:
		t.Error("the echo server saw no datagram")
	}

	f.waitOutput("UDPRoute status", 0, regexp.MustCompile(regexp.QuoteMeta(
		"UDPRoute default/echo -> default/gw/udp: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)")), l4Deadline)
}

// newTestCert wraps a DER certificate and its key as a testCert: the
// tls.Certificate a server presents, the parsed leaf, and both as PEM.
func newTestCert(t *testing.T, der []byte, key crypto.Signer) testCert {
	t.Helper()
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return testCert{
		tls:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		leaf:    leaf,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}),
	}
}
