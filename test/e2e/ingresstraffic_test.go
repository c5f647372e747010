package e2e

// ingress-nginx's traffic annotations through the real controller and
// Envoy (standalone, loopback): limit-rps refuses a burst over its bucket
// with 429 while another client address is still served, limit-whitelist
// exempts a client address, proxy-body-size
// refuses a larger body with 413, affinity: cookie keeps a client on one
// of two replicas, permanent-redirect answers 301 with its Location,
// app-root redirects "/". XDS_E2E_PROTECTION_REMOVED=1 renames the
// annotations to keys nothing reads: the limit, body, affinity and
// redirect tests then fail.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ingressTrafficYAML: IngressClass e2e-traffic; Ingresses to Service app
// (replica one) or pair (both replicas), one per annotation under test.
// {{.Prefix}} is the annotations' prefix.
const ingressTrafficYAML = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: e2e-traffic}
spec: {controller: xds-controller.dev/ingress-controller}
{{range .Ingresses}}---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{.Name}}
  namespace: default
  annotations:{{range $k, $v := .Annotations}}
    {{$.Prefix}}{{$k}}: "{{$v}}"{{end}}
spec:
  ingressClassName: e2e-traffic
  rules:
  - host: {{.Name}}.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: {{.Service}}, port: {number: 80}}}}
{{end}}`

type trafficIngress struct {
	Name, Service string
	Annotations   map[string]string
}

func TestIngressTrafficAnnotations(t *testing.T) {
	rs, port := startReplicas(t)
	prefix := "nginx.ingress.kubernetes.io/"
	if os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1" {
		prefix = "protection-removed.example/"
	}
	ingresses := []trafficIngress{
		{"limited", "app", map[string]string{"limit-rps": "2", "limit-burst-multiplier": "2"}},
		{"exempt", "app", map[string]string{"limit-rpm": "1", "limit-burst-multiplier": "1", "limit-whitelist": "127.0.0.2"}},
		{"body", "app", map[string]string{"proxy-body-size": "1k"}},
		{"sticky", "pair", map[string]string{"affinity": "cookie", "session-cookie-name": "route"}},
		{"moved", "app", map[string]string{"permanent-redirect": "https://new.example.com/docs"}},
		{"root", "app", map[string]string{"app-root": "/portal"}},
	}
	httpPort := freePort(t)
	startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort, "Backends": []gatewayBackend{
				{Name: "app", Port: port, Addresses: []string{rs[0].addr}},
				{Name: "pair", Port: port, Addresses: []string{rs[0].addr, rs[1].addr}},
			},
		})
		render(t, filepath.Join(f.dir, "ingress.yaml"), ingressTrafficYAML, map[string]any{"Prefix": prefix, "Ingresses": ingresses})
		f.args = append(f.args, "--ingress-http-address", fmt.Sprintf("127.0.0.1:%d", httpPort), "--ingress-https-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	})
	// clientFrom sends from local address ip (Envoy's client address).
	clientFrom := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		return &http.Client{Timeout: 20 * time.Second,
			Transport:     &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) { return d.DialContext(ctx, n, a) }},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	client, other := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	do := func(c *http.Client, method, host, path, body string, headers ...string) reply {
		req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", httpPort, path), strings.NewReader(body))
		req.Host = host
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		return exchange(c, req)
	}
	took := poll(t, "the Ingresses served", func() error {
		for _, ing := range ingresses[2:] {
			if r := do(client, http.MethodGet, ing.Name+".example.com", "/ready", ""); r.status < 200 || r.status >= 400 {
				return fmt.Errorf("%s: %d %q", ing.Name, r.status, r.body)
			}
		}
		return nil
	})
	t.Logf("Ingresses answered after %s", took.Round(time.Millisecond))

	t.Run("limit-rps: 429 after the burst, another client served", func(t *testing.T) {
		// 2 per second, a bucket of 2 x 2 = 4: of 12 requests sent at
		// once, 4 pass (5 if a token is added meanwhile), the rest 429.
		var codes []int
		var refused reply
		for range 12 {
			r := do(client, http.MethodGet, "limited.example.com", "/x", "")
			codes = append(codes, r.status)
			if r.status == http.StatusTooManyRequests && refused.status == 0 {
				refused = r
			}
		}
		passed := 0
		for _, c := range codes {
			if c == 200 {
				passed++
			}
		}
		if passed < 4 || passed > 5 || refused.status != http.StatusTooManyRequests {
			t.Fatalf("statuses %v: want 4 (or 5) 200s, then 429", codes)
		}
		if refused.header.Get("Retry-After") == "" || refused.header.Get("X-RateLimit-Limit") == "" {
			t.Errorf("429 headers %v: want Retry-After and X-RateLimit-*", refused.header)
		}
		if r := do(other, http.MethodGet, "limited.example.com", "/x", ""); r.status != 200 {
			t.Errorf("another client address (127.0.0.2): %d %q; want 200 (a bucket per client)", r.status, r.body)
		}
		t.Logf("statuses %v; 429 Retry-After %s X-RateLimit-Limit %q; 127.0.0.2 still served", codes, refused.header.Get("Retry-After"), refused.header.Get("X-RateLimit-Limit"))
	})
	t.Run("limit-whitelist: an exempt client is never limited", func(t *testing.T) {
		// One request per minute, a bucket of 1: 127.0.0.1 gets 429 on
		// its second request, 127.0.0.2 (limit-whitelist) never.
		var limited, exempt []int
		for range 6 {
			limited = append(limited, do(client, http.MethodGet, "exempt.example.com", "/x", "").status)
			exempt = append(exempt, do(other, http.MethodGet, "exempt.example.com", "/x", "").status)
		}
		if limited[0] != 200 || limited[1] != http.StatusTooManyRequests {
			t.Errorf("127.0.0.1: %v; want 200, then 429", limited)
		}
		for _, c := range exempt {
			if c != 200 {
				t.Errorf("127.0.0.2 (limit-whitelist): %v; want every request 200", exempt)
				break
			}
		}
		t.Logf("127.0.0.1: %v; 127.0.0.2 (exempt): %v", limited, exempt)
	})
	t.Run("proxy-body-size: 413 over 1k", func(t *testing.T) {
		small, big := strings.Repeat("a", 1000), strings.Repeat("a", 1025)
		if r := do(client, http.MethodPost, "body.example.com", "/up", small); r.status != 200 {
			t.Errorf("1000 bytes: %d %q; want 200", r.status, r.body)
		}
		r := do(client, http.MethodPost, "body.example.com", "/up", big)
		if r.status != http.StatusRequestEntityTooLarge {
			t.Errorf("1025 bytes: %d %q; want 413", r.status, r.body)
		}
		t.Logf("1000 bytes: 200; 1025 bytes: %d", r.status)
	})
	t.Run("affinity cookie keeps a client on one replica", func(t *testing.T) {
		first := do(client, http.MethodGet, "sticky.example.com", "/s", "")
		var cookie *http.Cookie
		for _, c := range (&http.Response{Header: first.header}).Cookies() {
			if c.Name == "route" {
				cookie = c
			}
		}
		if first.status != 200 || cookie == nil {
			t.Fatalf("first request: %d %q, Set-Cookie %q; want 200 with cookie route", first.status, first.body, first.header.Values("Set-Cookie"))
		}
		seen := map[string]int{}
		for range sessionRequests {
			r := do(client, http.MethodGet, "sticky.example.com", "/s", "", "cookie", "route="+cookie.Value)
			seen[r.body]++
		}
		if len(seen) != 1 || seen[first.body] != sessionRequests {
			t.Errorf("with the cookie: %v; want all %d on %s", seen, sessionRequests, first.body)
		}
		without := map[string]int{}
		for range sessionRequests {
			without[do(client, http.MethodGet, "sticky.example.com", "/s", "").body]++
		}
		if len(without) != 2 {
			t.Errorf("without the cookie: %v; want both replicas", without)
		}
		t.Logf("Set-Cookie %s; with it %v; without %v", first.header.Get("Set-Cookie"), seen, without)
	})
	t.Run("permanent-redirect: 301 with Location", func(t *testing.T) {
		// Envoy writes the scheme's port (:443) as in every redirect of
		// ours (the Gateway API's RequestRedirect rendering).
		r := do(client, http.MethodGet, "moved.example.com", "/old/page", "")
		u, err := url.Parse(r.header.Get("Location"))
		if r.status != http.StatusMovedPermanently || err != nil || u.Scheme != "https" || u.Hostname() != "new.example.com" ||
			(u.Port() != "" && u.Port() != "443") || u.RequestURI() != "/docs" {
			t.Errorf("got %d Location %q; want 301 https://new.example.com/docs", r.status, r.header.Get("Location"))
		}
		t.Logf("%d Location %s", r.status, r.header.Get("Location"))
	})
	t.Run("app-root redirects /", func(t *testing.T) {
		// The host and port are the listener's (as a RequestRedirect
		// without them): here the port standalone binds.
		r := do(client, http.MethodGet, "root.example.com", "/", "")
		u, err := url.Parse(r.header.Get("Location"))
		if r.status != http.StatusFound || err != nil || u.Hostname() != "root.example.com" || u.RequestURI() != "/portal" {
			t.Errorf("GET /: %d Location %q; want 302 to root.example.com/portal", r.status, r.header.Get("Location"))
		}
		if r2 := do(client, http.MethodGet, "root.example.com", "/portal", ""); r2.status != 200 {
			t.Errorf("GET /portal: %d %q; want 200 (served by the path)", r2.status, r2.body)
		}
		t.Logf("GET /: %d Location %s", r.status, r.header.Get("Location"))
	})
}

// ingressPassthroughYAML: IngressClass e2e-pass; Ingress vault passes the
// TLS of vault.example.test through to Service vault (a TLS server of its
// own); Ingress shop terminates TLS for shop.example.test (Secret
// shop-cert: {{.Cert}}, {{.Key}}) and forwards to Service app.
// {{.Prefix}} is the annotations' prefix.
const ingressPassthroughYAML = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: e2e-pass}
spec: {controller: xds-controller.dev/ingress-controller}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: vault
  namespace: default
  annotations: {"{{.Prefix}}ssl-passthrough": "true"}
spec:
  ingressClassName: e2e-pass
  rules:
  - host: vault.example.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: vault, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: default}
spec:
  ingressClassName: e2e-pass
  tls: [{hosts: [shop.example.test], secretName: shop-cert}]
  rules:
  - host: shop.example.test
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}
---
apiVersion: v1
kind: Secret
metadata: {name: shop-cert, namespace: default}
type: kubernetes.io/tls
data:
  tls.crt: {{.Cert}}
  tls.key: {{.Key}}
`

// TestIngressSSLPassthrough: on the class's HTTPS port, the TLS of
// vault.example.test reaches the vault server undecrypted (its own
// certificate, its greeting), while shop.example.test is terminated by
// Envoy with the Ingress's certificate. With the annotation renamed,
// vault.example.test gets Envoy's certificate instead.
func TestIngressSSLPassthrough(t *testing.T) {
	vaultCert, shopCert := selfSigned(t, "vault.example.test"), selfSigned(t, "shop.example.test")
	vaultPort, handshakes := tlsGreeter(t, "vault", vaultCert)
	rs, port := startReplicas(t)
	roots := x509.NewCertPool()
	roots.AddCert(vaultCert.leaf)
	roots.AddCert(shopCert.leaf)
	prefix := "nginx.ingress.kubernetes.io/"
	if os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1" {
		prefix = "protection-removed.example/"
	}
	httpsPort := freePort(t)
	startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort, "Backends": []gatewayBackend{
				{Name: "app", Port: port, Addresses: []string{rs[0].addr}},
				{Name: "vault", Port: vaultPort},
			},
		})
		render(t, filepath.Join(f.dir, "ingress.yaml"), ingressPassthroughYAML, map[string]any{"Prefix": prefix,
			"Cert": base64.StdEncoding.EncodeToString(shopCert.certPEM), "Key": base64.StdEncoding.EncodeToString(shopCert.keyPEM)})
		f.args = append(f.args, "--ingress-http-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--ingress-https-address", fmt.Sprintf("127.0.0.1:%d", httpsPort))
	})
	expectGreeting(t, httpsPort, "vault.example.test", roots, vaultCert, "hello from vault\n")
	if n := handshakes.Load(); n < 1 {
		t.Errorf("the vault server completed %d handshakes; want the client's", n)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	var r reply
	poll(t, "shop.example.test over HTTPS", func() error {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://shop.example.test:%d/x", httpsPort), nil)
		client.Transport.(*http.Transport).DialContext = func(ctx context.Context, n, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, n, fmt.Sprintf("127.0.0.1:%d", httpsPort))
		}
		if r = exchange(client, req); r.status != 200 {
			return fmt.Errorf("%d %q", r.status, r.body)
		}
		return nil
	})
	t.Logf("shop.example.test terminated by Envoy: %d %q", r.status, r.body)
}
