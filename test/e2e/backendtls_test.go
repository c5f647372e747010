package e2e

// TLS end to end beyond the L4 routes: BackendTLSPolicy (Envoy originates
// TLS to an HTTPS backend of the test's own, verifying it with a CA from a
// ConfigMap) and 421 Misdirected Request on HTTPS listeners sharing a port
// (HTTP/2 connection coalescing), through the real controller and Envoy.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testCA is a certificate authority the test generates: its certificate,
// its key and the certificate as PEM (a ConfigMap's ca.crt).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// newKey is an ECDSA P-256 key and a random serial number.
func newKey(t *testing.T) (*ecdsa.PrivateKey, *big.Int) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	return key, serial
}

// newCA makes a self-signed CA certificate with common name cn.
func newCA(t *testing.T, cn string) testCA {
	t.Helper()
	key, serial := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue makes a server certificate for the DNS names, signed by the CA.
func (ca testCA) issue(t *testing.T, names ...string) testCert {
	t.Helper()
	return ca.sign(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: names[0]},
		DNSNames:    names,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// sign gives tmpl a new key, a random serial number, key usage digital
// signature and a day's validity around now, and signs it with the CA.
func (ca testCA) sign(t *testing.T, tmpl *x509.Certificate) testCert {
	t.Helper()
	key, serial := newKey(t)
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return newTestCert(t, der, key)
}

// firstByteListener hands out connections that count, on plaintext, the
// connections whose first byte is not that of a TLS handshake record
// (0x16): a client speaking plain HTTP to a TLS server.
type firstByteListener struct {
	net.Listener
	plaintext *atomic.Int32
}

func (l firstByteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &firstByteConn{Conn: c, plaintext: l.plaintext}, nil
}

type firstByteConn struct {
	net.Conn
	plaintext *atomic.Int32
	once      sync.Once
}

func (c *firstByteConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.once.Do(func() {
			if b[0] != 0x16 {
				c.plaintext.Add(1)
			}
		})
	}
	return n, err
}

// tlsBackend is an HTTPS server (net/http, HTTP/1.1) on loopback that
// answers "<name> <path> sni=<server name>" with the response header
// x-backend, and records what reached it.
type tlsBackend struct {
	name string
	port int
	// plaintext counts the connections that did not start with a TLS
	// handshake.
	plaintext atomic.Int32

	mu sync.Mutex
	// hellos is the SNI of every ClientHello, requests the SNI of every
	// request the handler served, and handshakeErrors the server's
	// "TLS handshake error" log lines.
	hellos, requests, handshakeErrors []string
	// clients is the common name of the client certificate of every
	// request the handler served ("" for none).
	clients []string
	// oneRequestPerConnection, when set, closes every connection after
	// its response (Connection: close), so that each request comes with
	// a new handshake.
	oneRequestPerConnection atomic.Bool
}

// startTLSBackend serves a tlsBackend with cert until the test ends;
// configure, if any, changes its tls.Config first (to require client
// certificates, say).
func startTLSBackend(t *testing.T, name string, cert testCert, configure ...func(*tls.Config)) *tlsBackend {
	l, port := listenTCP(t)
	b := &tlsBackend{name: name, port: port}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert.tls},
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.hellos = append(b.hellos, h.ServerName)
			return nil, nil
		},
	}
	for _, c := range configure {
		c(cfg)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sni := "(no TLS)"
			if r.TLS != nil {
				sni = r.TLS.ServerName
			}
			client := ""
			if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
				client = r.TLS.PeerCertificates[0].Subject.CommonName
			}
			b.mu.Lock()
			b.requests = append(b.requests, sni)
			b.clients = append(b.clients, client)
			b.mu.Unlock()
			if b.oneRequestPerConnection.Load() {
				w.Header().Set("Connection", "close")
			}
			w.Header().Set("x-backend", name)
			fmt.Fprintf(w, "%s %s sni=%s", name, r.URL.Path, sni)
		}),
		ErrorLog:          log.New(logSink(b.logged), "", 0),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(tls.NewListener(firstByteListener{Listener: l, plaintext: &b.plaintext}, cfg)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return b
}

func (b *tlsBackend) logged(line string) {
	if strings.Contains(line, "TLS handshake error") {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.handshakeErrors = append(b.handshakeErrors, strings.TrimSpace(line))
	}
}

// seen returns copies of what the backend recorded.
func (b *tlsBackend) seen() (hellos, requests, handshakeErrors []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.hellos), slices.Clone(b.requests), slices.Clone(b.handshakeErrors)
}

// logSink is an io.Writer that hands each write (a log line) to a func.
type logSink func(string)

func (s logSink) Write(p []byte) (int, error) { s(string(p)); return len(p), nil }

// backendTLSRoutesYAML: an HTTPRoute for backends.example.test with one
// rule per TLS backend, a BackendTLSPolicy for each, and the ConfigMap
// test-ca with the CA (.CA, a Go-quoted PEM string, valid YAML). secure
// (targeted by its port's name) and mismatch share the CA; mismatch's
// hostname is not in its certificate; no-ca's ConfigMap absent-ca does
// not exist.
const backendTLSRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: tls-backends, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [backends.example.test]
  rules:
  - matches: [{path: {type: PathPrefix, value: /secure}}]
    backendRefs: [{name: secure, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /mismatch}}]
    backendRefs: [{name: mismatch, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /no-ca}}]
    backendRefs: [{name: no-ca, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: secure, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: secure, sectionName: http}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: test-ca}]
    hostname: secure.example.test
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: mismatch, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: mismatch}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: test-ca}]
    hostname: mismatch.example.test
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: no-ca, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: no-ca}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: absent-ca}]
    hostname: secure.example.test
---
apiVersion: v1
kind: ConfigMap
metadata: {name: test-ca, namespace: default}
data:
  ca.crt: {{printf "%q" .CA}}
`

// caConfigMapYAML is the ConfigMap .Name with the CA (.CA) in ca.crt.
const caConfigMapYAML = `apiVersion: v1
kind: ConfigMap
metadata: {name: {{.Name}}, namespace: default}
data:
  ca.crt: {{printf "%q" .CA}}
`

// TestBackendTLSPolicy shows that a BackendTLSPolicy makes Envoy originate
// TLS to the Services it targets, verifying them with the CA of its
// ConfigMap, while the client speaks plain HTTP to the gateway. Three
// HTTPS backends of the test's own each present a certificate for
// secure.example.test signed by a CA the test generates:
//   - secure (policy hostname secure.example.test, targeted by port name):
//     the request answers 200 from the backend, which saw TLS with SNI
//     secure.example.test and no plaintext connection;
//   - mismatch (policy hostname mismatch.example.test): Envoy sends SNI
//     mismatch.example.test, refuses the certificate (an alert in every
//     handshake; Envoy counts each in ssl.fail_verify_san) and answers
//     503; the backend serves no request and sees no plaintext;
//   - no-ca (its CA ConfigMap is missing): Envoy answers 500 itself and
//     never connects to the backend; the policy's status says
//     Accepted=False(NoValidCACertificate) and
//     ResolvedRefs=False(InvalidCACertificateRef). Once the ConfigMap is
//     created, the same backend answers 200 over verified TLS and the
//     policy is Accepted.
func TestBackendTLSPolicy(t *testing.T) {
	ca := newCA(t, "e2e backend CA")
	cert := ca.issue(t, "secure.example.test")
	secure := startTLSBackend(t, "secure", cert)
	mismatch := startTLSBackend(t, "mismatch", cert)
	noCA := startTLSBackend(t, "no-ca", cert)
	f := startWith(t, func(f *fixture) {
		l4Config(t, f, nil, []gatewayBackend{
			{Name: "secure", Port: secure.port},
			{Name: "mismatch", Port: mismatch.port},
			{Name: "no-ca", Port: noCA.port},
		}, backendTLSRoutesYAML, map[string]string{"CA": string(ca.pem)})
	})
	const host = "backends.example.test"

	// secure: 200 from the backend over TLS with the policy's SNI.
	var code int
	var body string
	took := poll(t, "/secure through the BackendTLSPolicy", func() error {
		code, body = f.get(host, "/secure/x")
		if code != 200 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	t.Logf("/secure answered after %s: %d %q", took.Round(time.Millisecond), code, body)
	if want := "secure /secure/x sni=secure.example.test"; body != want {
		t.Errorf("/secure/x: body %q, want %q", body, want)
	}
	hellos, requests, _ := secure.seen()
	notSecure := func(s string) bool { return s != "secure.example.test" }
	if len(requests) == 0 || slices.ContainsFunc(requests, notSecure) || slices.ContainsFunc(hellos, notSecure) {
		t.Errorf("secure backend: ClientHello SNIs %q, requests with SNI %q; want all secure.example.test", hellos, requests)
	}
	if n := secure.plaintext.Load(); n != 0 {
		t.Errorf("secure backend: %d plaintext connections", n)
	}
	t.Logf("secure backend: ClientHello SNIs %q, requests with SNI %q", hellos, requests)

	// mismatch: Envoy tries TLS with the policy's SNI, rejects the
	// certificate (it names secure.example.test only) and answers 503.
	poll(t, "/mismatch configured", func() error {
		code, body = f.get(host, "/mismatch")
		if code == 404 || code == -1 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	for i := range 3 {
		if i > 0 {
			code, body = f.get(host, "/mismatch")
		}
		if code != 503 || !strings.HasPrefix(body, "upstream connect error") {
			t.Errorf("/mismatch attempt %d: %d %q; want Envoy's 503 upstream connect error", i, code, body)
		}
	}
	t.Logf("/mismatch: %d %q", code, body)
	// Every connection Envoy opened to the backend ended in Envoy's
	// alert during the handshake, counted by Envoy as a SAN failure.
	const sanFailures = "cluster.service/default/mismatch/80.ssl.fail_verify_san"
	var errs []string
	var failures int
	poll(t, "the mismatch backend's failed handshakes", func() error {
		hellos, requests, errs = mismatch.seen()
		var err error
		if failures, err = envoyCounter(f.admin, sanFailures); err != nil {
			return err
		}
		if len(hellos) < 3 || len(errs) != len(hellos) || failures != len(hellos) {
			return fmt.Errorf("%d ClientHellos, %d handshake errors, %s %d", len(hellos), len(errs), sanFailures, failures)
		}
		return nil
	})
	if len(requests) != 0 {
		t.Errorf("mismatch backend served %d requests (SNI %q); want none", len(requests), requests)
	}
	if n := mismatch.plaintext.Load(); n != 0 {
		t.Errorf("mismatch backend: %d plaintext connections; want none", n)
	}
	if slices.ContainsFunc(hellos, func(s string) bool { return s != "mismatch.example.test" }) {
		t.Errorf("mismatch backend: ClientHello SNIs %q; want all mismatch.example.test", hellos)
	}
	if slices.ContainsFunc(errs, func(s string) bool { return !strings.Contains(s, "remote error: tls:") }) {
		t.Errorf("mismatch backend: handshake errors %q; want each an alert from Envoy", errs)
	}
	t.Logf("mismatch backend: ClientHello SNIs %q, no request, handshake errors %q; %s %d", hellos, errs, sanFailures, failures)

	// no-ca: the rule answers 500; Envoy never connects to the backend.
	poll(t, "/no-ca answers 500", func() error {
		code, body = f.get(host, "/no-ca")
		if code != 500 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	if hellos, requests, _ := noCA.seen(); len(hellos) != 0 || len(requests) != 0 || noCA.plaintext.Load() != 0 {
		t.Errorf("no-ca backend: ClientHellos %q, requests %q, %d plaintext connections; want nothing", hellos, requests, noCA.plaintext.Load())
	}
	const noCAStatus = `BackendTLSPolicy default/no-ca -> default/gw: `
	line, _ := f.waitOutput("no-ca policy status", 0, regexp.MustCompile(regexp.QuoteMeta(noCAStatus)+`[^\n]*`), l4Deadline)
	if !strings.Contains(line, "Accepted=False(NoValidCACertificate)") || !strings.Contains(line, "ResolvedRefs=False(InvalidCACertificateRef)") ||
		!strings.Contains(line, "absent-ca") {
		t.Errorf("no-ca policy status: %s; want Accepted=False(NoValidCACertificate) ResolvedRefs=False(InvalidCACertificateRef) naming absent-ca", line)
	} else {
		t.Logf("status: %s", line)
	}
	for _, p := range []string{"secure", "mismatch"} {
		want := "BackendTLSPolicy default/" + p + " -> default/gw: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)"
		f.waitOutput(p+" policy status", 0, regexp.MustCompile(regexp.QuoteMeta(want)), l4Deadline)
	}
	t.Logf("route status: %s", f.lastLine("HTTPRoute default/tls-backends -> default/gw:"))

	// The missing ConfigMap created: no-ca is served over verified TLS.
	from := f.mark()
	render(t, filepath.Join(f.dir, "absent-ca.yaml"), caConfigMapYAML, map[string]string{"Name": "absent-ca", "CA": string(ca.pem)})
	took = poll(t, "/no-ca once its ConfigMap exists", func() error {
		code, body = f.get(host, "/no-ca")
		if code != 200 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	if want := "no-ca /no-ca sni=secure.example.test"; body != want {
		t.Errorf("/no-ca after the ConfigMap: body %q, want %q", body, want)
	} else {
		t.Logf("/no-ca answered %q %s after its ConfigMap was written", body, took.Round(time.Millisecond))
	}
	if n := noCA.plaintext.Load(); n != 0 {
		t.Errorf("no-ca backend: %d plaintext connections", n)
	}
	f.waitOutput("no-ca policy accepted", from, regexp.MustCompile(regexp.QuoteMeta(
		noCAStatus+"Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)")), l4Deadline)
}

// envoyCounter reads the counter name from Envoy's admin /stats (0 when
// Envoy has not created it yet).
func envoyCounter(admin int, name string) (int, error) {
	out, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/stats?filter=%s", admin, url.QueryEscape("^"+regexp.QuoteMeta(name)+"$")))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, name+": "); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, nil
}

// countingBackend is backend (a plain HTTP server answering "<name>
// <path>" with x-backend) that also counts its requests.
func countingBackend(t *testing.T, name string) (*httptest.Server, *atomic.Int32) {
	n := &atomic.Int32{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("x-backend", name)
		fmt.Fprintf(w, "%s %s", name, r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s, n
}

// misdirectedRoutesYAML: for each entry n of the map it is rendered with
// (n to base64 tls.crt and tls.key), the listener's Secret cert-n and the
// HTTPRoute to-n on listener https-n to the Service site-n.
const misdirectedRoutesYAML = `{{range $name, $c := .}}apiVersion: v1
kind: Secret
metadata: {name: cert-{{$name}}, namespace: default}
type: kubernetes.io/tls
data:
  tls.crt: {{index $c 0}}
  tls.key: {{index $c 1}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: to-{{$name}}, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: https-{{$name}}}]
  rules: [{backendRefs: [{name: site-{{$name}}, port: 80}]}]
---
{{end}}`

// h2Conn is an HTTP/2 client whose every connection goes to Envoy's port
// with TLS server name sni (whatever the request's host), verified
// against roots; dials counts its connections.
type h2Conn struct {
	client *http.Client
	port   int
	dials  atomic.Int32
}

func newH2Conn(t *testing.T, port int, sni string, roots *x509.CertPool) *h2Conn {
	c := &h2Conn{port: port}
	tr := &http.Transport{
		ForceAttemptHTTP2: true,
		DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c.dials.Add(1)
			d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second},
				Config: &tls.Config{ServerName: sni, RootCAs: roots, NextProtos: []string{"h2"}}}
			return d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		},
	}
	c.client = &http.Client{Transport: tr, Timeout: 5 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return c
}

// h2Result is one response on an h2Conn and the connection it used.
type h2Result struct {
	status      int
	proto, body string
	backend     string
	server      string
	serial      *big.Int
	local       string
	reused      bool
}

func (r h2Result) String() string {
	return fmt.Sprintf("%d %s %q x-backend %q server %q (connection %s, reused %v)", r.status, r.proto, r.body, r.backend, r.server, r.local, r.reused)
}

// get sends GET / with host as :authority.
func (c *h2Conn) get(host string) (h2Result, error) {
	var info httptrace.GotConnInfo
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { info = i }})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/", c.port), nil)
	if err != nil {
		return h2Result{}, err
	}
	req.Host = host
	resp, err := c.client.Do(req)
	if err != nil {
		return h2Result{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	r := h2Result{status: resp.StatusCode, proto: resp.Proto, body: string(b), backend: resp.Header.Get("x-backend"),
		server: resp.Header.Get("server"), reused: info.Reused}
	if info.Conn != nil {
		r.local = info.Conn.LocalAddr().String()
	}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		r.serial = resp.TLS.PeerCertificates[0].SerialNumber
	}
	return r, err
}

// TestMisdirectedRequest shows that HTTPS listeners sharing a port answer
// 421 Misdirected Request for a host the TLS handshake did not select, as
// an HTTP/2 client that coalesces connections sends it. Listeners https-a
// (hostname a.example.test) and https-b (b.example.test) on one port each
// have their own certificate, both valid for both names (so coalescing is
// legitimate), and an HTTPRoute to their own backend. On ONE HTTP/2
// connection with SNI a.example.test (listener a's certificate, by
// serial): Host a.example.test answers 200 from site-a; Host b.example.test
// answers 421 from Envoy and site-b sees no request; Host c.example.test
// (no listener's) answers 421 too. The same from the other side with SNI
// b.example.test. Every request after the first reports its connection
// reused, from the same local address, and each client dialled once.
func TestMisdirectedRequest(t *testing.T) {
	ca := newCA(t, "e2e listener CA")
	certs := map[string]testCert{
		"a": ca.issue(t, "a.example.test", "b.example.test"),
		"b": ca.issue(t, "a.example.test", "b.example.test"),
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	siteA, countA := countingBackend(t, "site-a")
	siteB, countB := countingBackend(t, "site-b")
	counts := map[string]*atomic.Int32{"a": countA, "b": countB}
	port := freePort(t)
	f := startWith(t, func(f *fixture) {
		var listeners []string
		secrets := map[string][2]string{}
		for _, n := range []string{"a", "b"} {
			listeners = append(listeners, fmt.Sprintf("{name: https-%s, protocol: HTTPS, port: %d, hostname: %s.example.test, tls: {mode: Terminate, certificateRefs: [{name: cert-%s}]}}", n, port, n, n))
			secrets[n] = [2]string{base64.StdEncoding.EncodeToString(certs[n].certPEM), base64.StdEncoding.EncodeToString(certs[n].keyPEM)}
		}
		l4Config(t, f, listeners, []gatewayBackend{{Name: "site-a", Port: portOf(siteA)}, {Name: "site-b", Port: portOf(siteB)}},
			misdirectedRoutesYAML, secrets)
	})

	// Wait until both listeners serve their own host on a fresh connection.
	for _, n := range []string{"a", "b"} {
		host := n + ".example.test"
		took := poll(t, "listener https-"+n, func() error {
			c := newH2Conn(t, port, host, roots)
			defer c.client.CloseIdleConnections()
			r, err := c.get(host)
			if err == nil && (r.status != 200 || r.backend != "site-"+n) {
				err = fmt.Errorf("%s", r)
			}
			return err
		})
		t.Logf("listener https-%s served %s after %s", n, host, took.Round(time.Millisecond))
	}

	for _, c := range []struct{ sni, other string }{{"a", "b"}, {"b", "a"}} {
		sni := c.sni + ".example.test"
		conn := newH2Conn(t, port, sni, roots)
		before := map[string]int32{"a": countA.Load(), "b": countB.Load()}
		var results []h2Result
		for i, req := range []struct {
			host    string
			status  int
			backend string
		}{
			{sni, 200, "site-" + c.sni},
			{c.other + ".example.test", 421, ""},
			{"c.example.test", 421, ""},
			{sni, 200, "site-" + c.sni},
		} {
			r, err := conn.get(req.host)
			if err != nil {
				t.Fatalf("SNI %s, Host %s: %v", sni, req.host, err)
			}
			t.Logf("SNI %s, Host %s: %s", sni, req.host, r)
			if r.status != req.status || r.backend != req.backend || r.proto != "HTTP/2.0" {
				t.Errorf("SNI %s, Host %s: %s; want %d HTTP/2.0 from %q", sni, req.host, r, req.status, req.backend)
			}
			if req.status == 421 && r.server != "envoy" {
				t.Errorf("SNI %s, Host %s: the 421 is not Envoy's own (server %q)", sni, req.host, r.server)
			}
			if r.serial == nil || r.serial.Cmp(certs[c.sni].leaf.SerialNumber) != 0 {
				t.Errorf("SNI %s: the connection presented serial %x; want listener https-%s's %x", sni, r.serial, c.sni, certs[c.sni].leaf.SerialNumber)
			}
			if i > 0 && (!r.reused || r.local != results[0].local) {
				t.Errorf("SNI %s, Host %s: connection %s (reused %v); want the first request's %s, reused", sni, req.host, r.local, r.reused, results[0].local)
			}
			results = append(results, r)
		}
		if n := conn.dials.Load(); n != 1 {
			t.Errorf("SNI %s: %d connections dialled; want 1", sni, n)
		}
		if got := counts[c.sni].Load() - before[c.sni]; got != 2 {
			t.Errorf("SNI %s: site-%s served %d requests; want 2", sni, c.sni, got)
		}
		if got := counts[c.other].Load() - before[c.other]; got != 0 {
			t.Errorf("SNI %s: site-%s served %d misdirected requests; want none", sni, c.other, got)
		}
	}

	for _, n := range []string{"a", "b"} {
		want := "HTTPRoute default/to-" + n + " -> default/gw/https-" + n + ": Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)"
		f.waitOutput("to-"+n+" status", 0, regexp.MustCompile(regexp.QuoteMeta(want)), l4Deadline)
		if l := f.lastLine("Gateway default/gw listener https-" + n + ":"); !strings.Contains(l, "attachedRoutes=1 ") || strings.Contains(l, "Conflicted=True") {
			t.Errorf("listener https-%s status: %q; want attachedRoutes=1, not Conflicted", n, l)
		}
	}
}
