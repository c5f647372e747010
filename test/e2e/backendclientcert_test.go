package e2e

// The Gateway's backend client certificate end to end (Gateway spec.tls.backend
// clientCertificateRef): Envoy presents it when it originates TLS to a
// backend of a BackendTLSPolicy, through the real controller and Envoy.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// backendClientCertRoutesYAML: the Gateway plain (no backend client
// certificate) with an HTTP listener on .PlainPort, an HTTPRoute from both
// gw and plain to the Service mtls, the BackendTLSPolicy of mtls (hostname
// mtls.example.test, CA from the ConfigMap server-ca: .CA, a Go-quoted PEM
// string).
const backendClientCertRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: plain, namespace: default}
spec:
  gatewayClassName: e2e
  addresses: [{type: IPAddress, value: 127.0.0.1}]
  listeners:
  - {name: http, protocol: HTTP, port: {{.PlainPort}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: mtls, namespace: default}
spec:
  parentRefs: [{name: gw}, {name: plain}]
  hostnames: [mtls.example.test]
  rules:
  - backendRefs: [{name: mtls, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: mtls, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: mtls}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: server-ca}]
    hostname: mtls.example.test
---
apiVersion: v1
kind: ConfigMap
metadata: {name: server-ca, namespace: default}
data:
  ca.crt: {{printf "%q" .CA}}
`

// clientNames returns a copy of the client certificate common names of the
// requests the backend served.
func (b *tlsBackend) clientNames() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.clients)
}

// TestBackendClientCertificate shows that Gateway spec.tls.backend
// clientCertificateRef makes Envoy present the Gateway's certificate to a
// TLS backend, and only for that Gateway. The backend mtls (HTTPS, Go's
// crypto/tls) requires a client certificate signed by a client CA the test
// generates. Gateways gw (clientCertificateRef: the Secret gateway-client,
// signed by that CA) and plain (none) share one Envoy and one HTTPRoute to
// mtls, with a BackendTLSPolicy:
//   - through gw the request answers 200 from the backend, which saw the
//     certificate gateway-1.example.test; Envoy's cluster is
//     "service/default/mtls/80/client-certificate/default/gateway-client";
//     the Gateway is ResolvedRefs=True;
//   - through plain, whose cluster "service/default/mtls/80" presents no
//     certificate, the backend refuses the handshake and Envoy answers 503:
//     the backend serves no request without a certificate and sees no
//     plaintext;
//   - the Secret rewritten with a new certificate (gateway-2.example.test):
//     the backend sees it on new connections, through the same cluster
//     (SDS);
//   - the Secret removed: gw is ResolvedRefs=False
//     (InvalidClientCertificateRef) and answers 500 itself without
//     connecting to the backend, while it stays Programmed.
func TestBackendClientCertificate(t *testing.T) {
	serverCA, clientCA := newCA(t, "e2e backend CA"), newCA(t, "e2e gateway client CA")
	clients := x509.NewCertPool()
	clients.AddCert(clientCA.cert)
	backend := startTLSBackend(t, "mtls", serverCA.issue(t, "mtls.example.test"), func(c *tls.Config) {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, clients
	})
	plainPort := freePort(t)
	writeSecret := func(f *fixture, cn string) {
		c := clientCA.issueClient(t, cn)
		render(t, filepath.Join(f.dir, "client-secret.yaml"), secretYAML, map[string]string{"Name": "gateway-client",
			"Cert": base64.StdEncoding.EncodeToString(c.certPEM), "Key": base64.StdEncoding.EncodeToString(c.keyPEM)})
	}
	f := startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort, "Backends": []gatewayBackend{{Name: "mtls", Port: backend.port}},
			"TLS": "{backend: {clientCertificateRef: {name: gateway-client}}}",
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), backendClientCertRoutesYAML, map[string]any{"PlainPort": plainPort, "CA": string(serverCA.pem)})
		writeSecret(f, "gateway-1.example.test")
	})
	const host = "mtls.example.test"
	const withCert = "service/default/mtls/80/client-certificate/default/gateway-client"

	// gw: 200 from the backend, which saw the Gateway's certificate.
	var code int
	var body string
	took := poll(t, "gw through the backend client certificate", func() error {
		if code, body = f.get(host, "/x"); code != 200 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	t.Logf("gw answered after %s: %d %q", took.Round(time.Millisecond), code, body)
	if want := "mtls /x sni=mtls.example.test"; body != want {
		t.Errorf("gw: body %q, want %q", body, want)
	}
	if names := backend.clientNames(); len(names) == 0 || slices.ContainsFunc(names, func(n string) bool { return n != "gateway-1.example.test" }) {
		t.Errorf("backend: client certificates %q; want all gateway-1.example.test", names)
	}
	if n, err := envoyCounter(f.admin, "cluster."+withCert+".upstream_rq_200"); err != nil || n == 0 {
		t.Errorf("cluster %s: upstream_rq_200 %d (%v); want the request to have gone through it", withCert, n, err)
	}
	f.waitOutput("gw status", 0, regexp.MustCompile(`Gateway default/gw: [^\n]*ResolvedRefs=True\(ResolvedRefs\)`), l4Deadline)

	// plain: the same route, without a certificate: the backend refuses
	// the handshake, Envoy answers 503.
	served := len(backend.clientNames())
	poll(t, "plain configured", func() error {
		if code, body = f.getOn(plainPort, host, "/x"); code == 404 || code == -1 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	for i := range 3 {
		if i > 0 {
			code, body = f.getOn(plainPort, host, "/x")
		}
		if code != 503 || !strings.HasPrefix(body, "upstream connect error") {
			t.Errorf("plain attempt %d: %d %q; want Envoy's 503 upstream connect error", i, code, body)
		}
	}
	t.Logf("plain: %d %q", code, body)
	var refused []string
	poll(t, "the backend's refused handshakes", func() error {
		_, _, errs := backend.seen()
		refused = slices.DeleteFunc(errs, func(e string) bool { return !strings.Contains(e, "didn't provide a certificate") })
		if len(refused) < 3 {
			return fmt.Errorf("handshake errors %q", errs)
		}
		return nil
	})
	t.Logf("backend refused %d handshakes without a client certificate, e.g. %q", len(refused), refused[0])
	if got := backend.clientNames()[served:]; len(got) != 0 {
		t.Errorf("backend served %d requests through plain (client certificates %q); want none", len(got), got)
	}
	if n := backend.plaintext.Load(); n != 0 {
		t.Errorf("backend: %d plaintext connections", n)
	}
	if l := f.lastLine("Gateway default/plain:"); strings.Contains(l, "ResolvedRefs") || !strings.Contains(l, "Programmed=True") {
		t.Errorf("plain status %q; want Programmed and no ResolvedRefs (it has no backend client certificate)", l)
	}

	// The Secret rotated: new connections present the new certificate
	// (Envoy may keep using a connection opened before, so the backend
	// closes each after one request).
	backend.oneRequestPerConnection.Store(true)
	rotated := f.mark()
	writeSecret(f, "gateway-2.example.test")
	f.waitOutput("the rotated Secret published", rotated, regexp.MustCompile(`configuration published`), l4Deadline)
	took = poll(t, "the rotated client certificate", func() error {
		code, body = f.get(host, "/rotated")
		names := backend.clientNames()
		if code != 200 || names[len(names)-1] != "gateway-2.example.test" {
			return fmt.Errorf("%d %q, last client certificate %q", code, body, names[len(names)-1])
		}
		return nil
	})
	t.Logf("the backend saw gateway-2.example.test %s after the Secret was rewritten", took.Round(time.Millisecond))

	// The Secret removed: gw answers 500 itself, still Programmed.
	from := f.mark()
	if err := os.Remove(filepath.Join(f.dir, "client-secret.yaml")); err != nil {
		t.Fatal(err)
	}
	line, _ := f.waitOutput("gw ResolvedRefs=False", from, regexp.MustCompile(
		`Gateway default/gw: [^\n]*ResolvedRefs=False\(InvalidClientCertificateRef\)[^\n]*`), l4Deadline)
	if !strings.Contains(line, "Programmed=True(Programmed)") {
		t.Errorf("gw status %q; want it still Programmed", line)
	}
	poll(t, "gw answers 500", func() error {
		if code, body = f.get(host, "/x"); code != 500 {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	hellos, _, _ := backend.seen()
	for range 3 {
		if code, body = f.get(host, "/x"); code != 500 {
			t.Errorf("gw without its Secret: %d %q; want 500", code, body)
		}
	}
	if now, _, _ := backend.seen(); len(now) != len(hellos) {
		t.Errorf("backend: %d new ClientHellos while gw answers 500; want none (Envoy must not connect without the certificate)", len(now)-len(hellos))
	}
	t.Logf("gw without its Secret: %d %q; status: %s", code, body, line)
}
