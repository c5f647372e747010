package e2e

// Frontend client certificate validation end to end (Gateway
// spec.tls.frontend): Envoy terminates TLS on two HTTPS listeners and
// checks the client certificates against a CA the test generates, kept in
// a ConfigMap, through the real controller and Envoy.

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// issueClient makes a client certificate (extended key usage client
// authentication) with common name cn, signed by the CA.
func (ca testCA) issueClient(t *testing.T, cn string) testCert {
	t.Helper()
	return ca.sign(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// pathBackend is a plain HTTP server that answers "<name> <path>" and
// records the path of every request it serves.
type pathBackend struct {
	srv   *httptest.Server
	mu    sync.Mutex
	paths []string
}

func startPathBackend(t *testing.T, name string) *pathBackend {
	b := &pathBackend{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.paths = append(b.paths, r.URL.Path)
		b.mu.Unlock()
		fmt.Fprintf(w, "%s %s", name, r.URL.Path)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// seen returns a copy of the paths the backend served.
func (b *pathBackend) seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.paths)
}

// clientCertRoutesYAML: the listeners' kubernetes.io/tls Secret
// listener-cert (.Cert, .Key: base64 PEM), the ConfigMap client-ca with
// the CA client certificates must chain to (.CA, a Go-quoted PEM string),
// and an HTTPRoute from every listener of gw to the Service echo.
const clientCertRoutesYAML = `apiVersion: v1
kind: Secret
metadata: {name: listener-cert, namespace: default}
type: kubernetes.io/tls
data:
  tls.crt: {{.Cert}}
  tls.key: {{.Key}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: client-ca, namespace: default}
data:
  ca.crt: {{printf "%q" .CA}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: echo, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
`

// clientCertSNI is the server name the clients send, in the listeners'
// certificate.
const clientCertSNI = "gw.example.test"

// certClient is a TLS client identity: the certificate it presents when
// Envoy asks for one (none when cert is nil).
type certClient struct {
	name string
	cert *testCert
}

// certResult is what one request of a certClient got: the response
// (status -1 when there was none), whether Envoy asked for a client
// certificate and the CA names it listed, and the request's error.
type certResult struct {
	status    int
	body      string
	requested bool
	caNames   []string
	err       error
}

func (r certResult) String() string {
	if r.err != nil {
		return fmt.Sprintf("error %v (certificate requested %v)", r.err, r.requested)
	}
	return fmt.Sprintf("%d %q (certificate requested %v)", r.status, r.body, r.requested)
}

// get sends GET path to Envoy's port on a new connection with SNI
// clientCertSNI and TLS version at most maxVersion, verifying Envoy's
// certificate against roots.
func (c certClient) get(port int, path string, roots *x509.CertPool, maxVersion uint16) certResult {
	var r certResult
	tr := &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{
			ServerName: clientCertSNI,
			RootCAs:    roots,
			MaxVersion: maxVersion,
			GetClientCertificate: func(info *tls.CertificateRequestInfo) (*tls.Certificate, error) {
				r.requested = true
				for _, dn := range info.AcceptableCAs {
					var name pkix.RDNSequence
					if _, err := asn1.Unmarshal(dn, &name); err == nil {
						var n pkix.Name
						n.FillFromRDNSequence(&name)
						r.caNames = append(r.caNames, n.CommonName)
					}
				}
				if c.cert == nil {
					return &tls.Certificate{}, nil
				}
				return &c.cert.tls, nil
			},
		},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d%s", port, path))
	if err != nil {
		r.status, r.err = -1, err
		return r
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	r.status, r.body, r.err = resp.StatusCode, string(b), err
	return r
}

// refusedByEnvoy says whether err is what a client sees when Envoy refuses
// it during or right after the TLS handshake (nil): a TLS alert from Envoy,
// or the connection closed or reset before any response (in TLS 1.3 the
// client may still be writing its request when Envoy closes, which it
// sees as a broken pipe); else what happened.
func refusedByEnvoy(err error) error {
	var oe *net.OpError
	switch {
	case err == nil:
		return errors.New("a response came back")
	case errors.As(err, &oe) && oe.Op == "remote error":
		return nil
	case errors.As(err, &oe) && oe.Op == "dial":
		return fmt.Errorf("the connection was not accepted: %w", err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return nil
	}
	return err
}

// clientCertGatewayTLS is the Gateway's spec.tls: client certificates
// checked against the ConfigMap client-ca on every TLS-terminating
// listener (mode unset: AllowValidOnly) and, when fallback is not 0, in
// mode AllowInsecureFallback on port fallback.
func clientCertGatewayTLS(fallback int) string {
	const validation = `validation: {caCertificateRefs: [{group: "", kind: ConfigMap, name: client-ca}]}`
	if fallback == 0 {
		return "{frontend: {default: {" + validation + "}}}"
	}
	return fmt.Sprintf(`{frontend: {default: {%s}, perPort: [{port: %d, tls: {validation: {mode: AllowInsecureFallback, caCertificateRefs: [{group: "", kind: ConfigMap, name: client-ca}]}}}]}}`,
		validation, fallback)
}

// clientCertVersions are the versions every client tries, with their
// names in request paths. In TLS 1.2 Envoy refuses a client certificate
// within the handshake; in TLS 1.3 the client's side of the handshake
// completes before Envoy has checked it, and the refusal comes as an
// alert instead of the response.
var clientCertVersions = []struct {
	version uint16
	name    string
}{{tls.VersionTLS12, "tls12"}, {tls.VersionTLS13, "tls13"}}

// TestClientCertValidation shows that Gateway spec.tls.frontend makes
// Envoy check client certificates on HTTPS listeners against the CA of a
// ConfigMap, in the mode of the listener's port. The Gateway has two
// HTTPS listeners with the same server certificate: strict (the default
// entry, mode unset: AllowValidOnly) and fallback (a perPort entry in mode
// AllowInsecureFallback), and an HTTPRoute from both to a plain HTTP
// backend that records the paths it serves. Three clients, each over TLS
// 1.2 and 1.3 on a new connection, are asked for a certificate by both
// listeners:
//   - strict: the client with a certificate from the ConfigMap's CA gets
//     200 from the backend; the one without a certificate and the one
//     with a certificate from another CA are refused by Envoy with a TLS
//     alert (or a closed connection), and the backend sees none of their
//     requests. Envoy counts them in ssl.fail_verify_no_cert and
//     ssl.fail_verify_error;
//   - fallback: all three get 200 from the backend; Envoy still checked
//     the certificates (ssl.no_certificate, ssl.fail_verify_error);
//   - the Gateway reports InsecureFrontendValidationMode=True
//     (ConfigurationChanged) in the standalone status output, both
//     listeners Accepted, ResolvedRefs and Programmed.
//
// The plain HTTP listener of the same Gateway is not affected. Once the
// perPort entry is removed from the file, the fallback port validates as
// strict does and the condition is gone.
func TestClientCertValidation(t *testing.T) {
	serverCA := newCA(t, "e2e listener CA")
	clientCA := newCA(t, "e2e client CA")
	otherCA := newCA(t, "e2e other CA")
	listenerCert := serverCA.issue(t, clientCertSNI)
	valid, foreign := clientCA.issueClient(t, "valid client"), otherCA.issueClient(t, "foreign client")
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.cert)
	echo := startPathBackend(t, "echo")
	strict, fallback := freePort(t), freePort(t)
	gateway := func(f *fixture, fallbackPort int) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Listeners": []string{
				fmt.Sprintf("{name: strict, protocol: HTTPS, port: %d, tls: {certificateRefs: [{name: listener-cert}]}}", strict),
				fmt.Sprintf("{name: fallback, protocol: HTTPS, port: %d, tls: {certificateRefs: [{name: listener-cert}]}}", fallback),
			},
			"TLS":      clientCertGatewayTLS(fallbackPort),
			"Backends": []gatewayBackend{{Name: "echo", Port: portOf(echo.srv)}},
		})
	}
	f := startWith(t, func(f *fixture) {
		gateway(f, fallback)
		render(t, filepath.Join(f.dir, "routes.yaml"), clientCertRoutesYAML, map[string]string{
			"Cert": base64.StdEncoding.EncodeToString(listenerCert.certPEM),
			"Key":  base64.StdEncoding.EncodeToString(listenerCert.keyPEM),
			"CA":   string(clientCA.pem),
		})
	})
	clients := []certClient{{"valid", &valid}, {"none", nil}, {"foreign", &foreign}}

	for _, l := range []struct {
		name string
		port int
	}{{"strict", strict}, {"fallback", fallback}} {
		took := poll(t, "listener "+l.name+" with a valid client certificate", func() error {
			if r := clients[0].get(l.port, "/poll", roots, tls.VersionTLS13); r.err != nil || r.status != 200 {
				return fmt.Errorf("%s", r)
			}
			return nil
		})
		t.Logf("listener %s served after %s", l.name, took.Round(time.Millisecond))
	}
	if code, body := f.get("plain.example.test", "/plain"); code != 200 || body != "echo /plain" {
		t.Errorf("plain HTTP listener: %d %q; want 200 %q", code, body, "echo /plain")
	}

	// Every client over both versions on both listeners; what reached the
	// backend is checked after.
	var wantSeen []string
	for _, l := range []struct {
		name    string
		port    int
		refused map[string]bool
	}{
		{"strict", strict, map[string]bool{"none": true, "foreign": true}},
		{"fallback", fallback, nil},
	} {
		for _, v := range clientCertVersions {
			for _, c := range clients {
				path := "/" + l.name + "/" + c.name + "/" + v.name
				r := c.get(l.port, path, roots, v.version)
				what := fmt.Sprintf("listener %s, %s, client certificate %s", l.name, tls.VersionName(v.version), c.name)
				if !r.requested {
					t.Errorf("%s: Envoy did not ask for a client certificate", what)
				}
				if l.refused[c.name] {
					if e := refusedByEnvoy(r.err); e != nil {
						t.Errorf("%s: %s: %v; want refused by Envoy", what, r, e)
					}
				} else {
					wantSeen = append(wantSeen, path)
					if r.err != nil || r.status != 200 || r.body != "echo "+path {
						t.Errorf("%s: %s; want 200 %q", what, r, "echo "+path)
					}
				}
				t.Logf("%s: %s, CAs named in the request %q", what, r, r.caNames)
			}
		}
	}
	seen := slices.DeleteFunc(echo.seen(), func(p string) bool { return p == "/poll" || p == "/plain" })
	if !slices.Equal(seen, wantSeen) {
		t.Errorf("the backend served %q; want %q (and nothing of the refused clients)", seen, wantSeen)
	}

	// Envoy's own account: one failed verification per refused or
	// unverified handshake (two of each kind: TLS 1.2 and 1.3).
	for _, c := range []struct {
		port int
		stat string
	}{
		{strict, "fail_verify_no_cert"}, {strict, "fail_verify_error"},
		{fallback, "no_certificate"}, {fallback, "fail_verify_error"},
	} {
		// The Envoy listener of Gateway default/gw's port (docs/metrics.md).
		name := fmt.Sprintf("listener.default/gw/port=%d.ssl.%s", c.port, c.stat)
		poll(t, name, func() error {
			n, err := envoyCounter(f.admin, name)
			if err == nil && n != len(clientCertVersions) {
				err = fmt.Errorf("%s = %d, want %d", name, n, len(clientCertVersions))
			}
			return err
		})
	}

	// The status: the Gateway warns of the fallback; both listeners serve.
	gw, _ := f.waitOutput("Gateway status", 0, regexp.MustCompile(
		`Gateway default/gw: Accepted=True\(Accepted\) Programmed=True\(Programmed\)[^\n]* InsecureFrontendValidationMode=True\(ConfigurationChanged\)[^\n]*`), l4Deadline)
	t.Logf("status: %s", gw)
	for _, n := range []string{"strict", "fallback"} {
		l := f.lastLine("Gateway default/gw listener " + n + ":")
		for _, want := range []string{"attachedRoutes=1 ", "Accepted=True(Accepted)", "ResolvedRefs=True(ResolvedRefs)", "Programmed=True(Programmed)"} {
			if !strings.Contains(l, want) {
				t.Errorf("listener %s status %q lacks %q", n, l, want)
			}
		}
	}

	// Without the perPort entry the fallback port validates as strict
	// does, and the Gateway no longer warns.
	gateway(f, 0)
	took := poll(t, "the fallback port refusing a client without a certificate", func() error {
		r := clients[1].get(fallback, "/edit-poll", roots, tls.VersionTLS13)
		return refusedByEnvoy(r.err)
	})
	t.Logf("the fallback port refused clients without a certificate %s after the edit", took.Round(time.Millisecond))
	before := len(echo.seen())
	for _, c := range clients {
		path := "/after/" + c.name
		r := c.get(fallback, path, roots, tls.VersionTLS13)
		if c.name == "valid" {
			if r.err != nil || r.status != 200 || r.body != "echo "+path {
				t.Errorf("after the edit, client certificate %s: %s; want 200 %q", c.name, r, "echo "+path)
			}
		} else if e := refusedByEnvoy(r.err); e != nil {
			t.Errorf("after the edit, client certificate %s: %s: %v; want refused by Envoy", c.name, r, e)
		}
	}
	if seen := echo.seen()[before:]; !slices.Equal(seen, []string{"/after/valid"}) {
		t.Errorf("after the edit the backend served %q; want only /after/valid", seen)
	}
	poll(t, "the Gateway status without InsecureFrontendValidationMode", func() error {
		if l := f.lastLine("Gateway default/gw:"); strings.Contains(l, "InsecureFrontendValidationMode") || !strings.Contains(l, "Programmed=True(Programmed)") {
			return fmt.Errorf("%s", l)
		}
		return nil
	})
	t.Logf("status: %s", f.lastLine("Gateway default/gw:"))
}
