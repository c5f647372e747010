package e2e

// Ingress end to end: one Envoy serves a Gateway's HTTPRoute and the
// Ingresses of our IngressClass side by side, the Ingresses on
// --ingress-http-address and, for their spec.tls, --ingress-https-address;
// the Ingress API's path, host and default backend rules hold on the wire,
// and a broken Ingress is reported without disturbing anything else.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ingressYAML: IngressClass e2e-ingress (ours), Ingress shop (host
// shop.example.com: Prefix /api -> beta, Exact /exact -> beta; host
// *.wild.example.com: Prefix / -> beta; default backend alpha; spec.tls
// for shop.example.com), the Secret of its certificate, and Ingress broken
// (a Service that does not exist, on its own host).
const ingressYAML = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: e2e-ingress}
spec: {controller: xds-controller.dev/ingress-controller}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: default}
spec:
  ingressClassName: e2e-ingress
  defaultBackend: {service: {name: alpha, port: {number: 80}}}
  tls: [{hosts: [shop.example.com], secretName: shop-cert}]
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /api, pathType: Prefix, backend: {service: {name: beta, port: {name: http}}}}
      - {path: /exact, pathType: Exact, backend: {service: {name: beta, port: {number: 80}}}}
  - host: "*.wild.example.com"
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: beta, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: broken, namespace: default}
spec:
  ingressClassName: e2e-ingress
  rules:
  - host: broken.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: nowhere, port: {number: 80}}}}
---
apiVersion: v1
kind: Secret
metadata: {name: shop-cert, namespace: default}
type: kubernetes.io/tls
data:
  tls.crt: {{.Cert}}
  tls.key: {{.Key}}
`

// startIngress starts standalone mode on gatewayYAML and routesYAML (see
// start) and the Ingress YAML text (its {{.Cert}} and {{.Key}} are
// cert's), serving Ingresses on two fresh loopback ports, which it returns.
func startIngress(t *testing.T, text string, cert testCert) (f *fixture, httpPort, httpsPort int) {
	httpPort, httpsPort = freePort(t), freePort(t)
	f = start(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "ingress.yaml"), text, map[string]any{
			"Cert": base64.StdEncoding.EncodeToString(cert.certPEM), "Key": base64.StdEncoding.EncodeToString(cert.keyPEM),
		})
		f.args = append(f.args, "--ingress-http-address", fmt.Sprintf("127.0.0.1:%d", httpPort),
			"--ingress-https-address", fmt.Sprintf("127.0.0.1:%d", httpsPort))
	})
	return f, httpPort, httpsPort
}

func TestIngressBesideHTTPRoute(t *testing.T) {
	ca := newCA(t, "ingress e2e CA")
	f, httpPort, httpsPort := startIngress(t, ingressYAML, ca.issue(t, "shop.example.com"))
	took := poll(t, "the Ingress's HTTP listener", func() error {
		if code, body := f.getOn(httpPort, "shop.example.com", "/api/users"); code != 200 || !strings.HasPrefix(body, "beta /api/users") {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	t.Logf("the Ingress answered %s after start", took.Round(time.Millisecond))

	for _, c := range []struct {
		name       string
		port       int
		host, path string
		status     int
		body       string
	}{
		{"the HTTPRoute on the Gateway's port", f.gwPort, "a.example.com", "/x", 200, "alpha /x"},
		{"the Ingress's host is not on the Gateway's port", f.gwPort, "shop.example.com", "/api", 404, ""},
		{"Prefix matches by path element", httpPort, "shop.example.com", "/api", 200, "beta /api"},
		{"a longer last element is no match: default backend", httpPort, "shop.example.com", "/apiary", 200, "alpha /apiary"},
		{"Exact", httpPort, "shop.example.com", "/exact", 200, "beta /exact"},
		{"Exact is exact: default backend", httpPort, "shop.example.com", "/exact/", 200, "alpha /exact/"},
		{"a wildcard host matches one label", httpPort, "one.wild.example.com", "/w", 200, "beta /w"},
		{"and not two: default backend", httpPort, "two.one.wild.example.com", "/w", 200, "alpha /w"},
		{"another host: default backend", httpPort, "elsewhere.example.com", "/", 200, "alpha /"},
		{"the broken Ingress's path answers 503", httpPort, "broken.example.com", "/", 503, ""},
		{"the HTTPRoute's host is not on the Ingress port: default backend", httpPort, "a.example.com", "/x", 200, "alpha /x"},
	} {
		if code, body := f.getOn(c.port, c.host, c.path); code != c.status || !strings.HasPrefix(body, c.body) {
			t.Errorf("%s: %s:%d%s = %d %q, want %d %q...", c.name, c.host, c.port, c.path, code, body, c.status, c.body)
		}
	}

	// HTTPS with the Secret's certificate, chosen by SNI.
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "shop.example.com"}}}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/api/secure", httpsPort), nil)
	req.Host = "shop.example.com"
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("HTTPS: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(b), "beta /api/secure") || resp.TLS.PeerCertificates[0].Subject.CommonName != "shop.example.com" {
		t.Errorf("HTTPS: %d %q, want 200 beta with the shop.example.com certificate", resp.StatusCode, b)
	}

	from := 0
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`Ingress default/shop: class=e2e-ingress on http 127\.0\.0\.1:\d+, https 127\.0\.0\.1:\d+\n`),
		regexp.MustCompile(`Ingress default/broken: class=e2e-ingress on .*BackendNotFound: spec\.rules\[0\]\.http\.paths\[0\]\.backend: Service default/nowhere not found; it answers 503`),
		regexp.MustCompile(`HTTPRoute default/by-host -> default/gw: Accepted=True\(Accepted\)`),
	} {
		f.waitOutput(re.String(), from, re, 10*time.Second)
	}
}

// annotationsYAML: IngressClass e2e-ann (ours) and Ingresses using
// ingress-nginx's annotations, read as ours: rewrite-target with a regex
// capture, ssl-redirect for the TLS host, a source range that excludes
// loopback, a canary by header, and a response header of our own.
const annotationsYAML = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: e2e-ann}
spec: {controller: xds-controller.dev/ingress-controller}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: rewrite
  namespace: default
  annotations:
    nginx.ingress.kubernetes.io/rewrite-target: /$2
    xds-controller.dev/response-headers-set: "X-Via: ingress"
spec:
  ingressClassName: e2e-ann
  rules:
  - host: rw.example.com
    http:
      paths:
      - {path: /app(/|$)(.*), pathType: ImplementationSpecific, backend: {service: {name: alpha, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: secure
  namespace: default
  annotations:
    nginx.ingress.kubernetes.io/ssl-redirect: "true"
spec:
  ingressClassName: e2e-ann
  tls: [{hosts: [secure.example.com], secretName: ann-cert}]
  rules:
  - host: secure.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: beta, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: guarded
  namespace: default
  annotations:
    nginx.ingress.kubernetes.io/whitelist-source-range: 192.0.2.0/24
spec:
  ingressClassName: e2e-ann
  rules:
  - host: guarded.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: alpha, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: canary
  namespace: default
  annotations:
    nginx.ingress.kubernetes.io/canary: "true"
    nginx.ingress.kubernetes.io/canary-by-header: X-Canary
spec:
  ingressClassName: e2e-ann
  rules:
  - host: rw.example.com
    http:
      paths:
      - {path: /app(/|$)(.*), pathType: ImplementationSpecific, backend: {service: {name: beta, port: {number: 80}}}}
---
apiVersion: v1
kind: Secret
metadata: {name: ann-cert, namespace: default}
type: kubernetes.io/tls
data:
  tls.crt: {{.Cert}}
  tls.key: {{.Key}}
`

// TestIngressAnnotations: ingress-nginx's annotations on the wire, served
// by one Envoy beside the Gateway's HTTPRoutes.
func TestIngressAnnotations(t *testing.T) {
	f, httpPort, httpsPort := startIngress(t, annotationsYAML, newCA(t, "annotations CA").issue(t, "secure.example.com"))
	poll(t, "the rewritten path", func() error {
		if code, body := f.getOn(httpPort, "rw.example.com", "/app/users/7"); code != 200 || !strings.HasPrefix(body, "alpha /users/7") {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	noRedirect := &http.Client{Timeout: 2 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(host, path string, headers ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", httpPort, path), nil)
		req.Host = host
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatalf("%s%s: %v", host, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := do("rw.example.com", "/APP"); resp.StatusCode != 200 || !strings.HasPrefix(body, "alpha / ") || resp.Header.Get("X-Via") != "ingress" {
		t.Errorf("/APP (case-insensitive; $2 empty): %d %q X-Via %q, want 200 alpha / with X-Via: ingress", resp.StatusCode, body, resp.Header.Get("X-Via"))
	}
	if resp, body := do("rw.example.com", "/app/x", "X-Canary", "always"); resp.StatusCode != 200 || !strings.HasPrefix(body, "beta /x") {
		t.Errorf("canary by header: %d %q, want beta /x", resp.StatusCode, body)
	}
	if resp, _ := do("secure.example.com", "/pay?x=1"); resp.StatusCode != 308 || resp.Header.Get("Location") != fmt.Sprintf("https://secure.example.com:%d/pay?x=1", httpsPort) {
		t.Errorf("ssl-redirect: %d Location %q, want 308 to the HTTPS port", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := do("guarded.example.com", "/"); resp.StatusCode != 403 {
		t.Errorf("a client outside the allowed source ranges: %d, want 403", resp.StatusCode)
	}
	if code, body := f.get("a.example.com", "/x"); code != 200 || !strings.HasPrefix(body, "alpha /x") {
		t.Errorf("the HTTPRoute beside: %d %q", code, body)
	}
}
