package e2ecluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"html"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestSecurityPolicyOIDCOnTheLocalCluster installs the chart in Shared and
// in Dedicated mode and logs a browser in through a SecurityPolicy oidc:
// the OpenID provider runs in the cluster (the test servers' image with
// -oidc: internal/testservers/oidc, zitadel's op) at the issuer
// https://idp.xds-example.svc.cluster.local:8443, its serving certificate
// issued by a CA the test makes (the CA in ConfigMap idp-ca, named by the
// policy's caCertificateRefs); the controller discovers its endpoints and
// Envoy's OAuth2 filter exchanges the code there, both through cluster
// DNS. The test client reaches the same URL through the provider's
// LoadBalancer Service (securityOIDC).
func TestSecurityPolicyOIDCOnTheLocalCluster(t *testing.T) {
	inBothModes(t, (*env).securityOIDC)
}

const (
	// oidcIssuer is the in-cluster provider's issuer URL.
	oidcIssuer = "https://idp.xds-example.svc.cluster.local:8443"
	// oidcHost is the route's host name. A name under localhost: Envoy
	// marks its session cookies Secure even on plain HTTP, and Go's
	// cookie jar, like browsers, sends Secure cookies over HTTP to
	// localhost names only (Gateway web has no HTTPS listener).
	oidcHost = "oidc.localhost"
	// oidcCallback is the redirect URI Envoy sends for oidcHost (the
	// policy's default redirectPath), registered at the provider.
	oidcCallback = "http://" + oidcHost + "/oauth2/callback"
)

// oidcYAML runs the provider (Deployment and LoadBalancer Service idp, the
// test servers' image with -oidc: client web with secret s3cret, user
// alice with password wonderland; its certificate and key from Secret
// idp-tls), routes oidcHost to foo under SecurityPolicy login (oidc,
// the ID token forwarded in x-id-token) and elsewhere.localhost to foo
// without a policy. The policy targets route {{target}}: oidc, or
// elsewhere when XDS_E2E_PROTECTION_REMOVED=1.
func oidcYAML(caPEM, certPEM, keyPEM []byte, target string) string {
	block := func(b []byte) string { return strings.TrimSpace(indent(string(b), "    ")) }
	return `apiVersion: v1
kind: Secret
metadata: {name: idp-tls, namespace: xds-example}
type: kubernetes.io/tls
stringData:
  tls.crt: |
    ` + block(certPEM) + `
  tls.key: |
    ` + block(keyPEM) + `
---
apiVersion: v1
kind: ConfigMap
metadata: {name: idp-ca, namespace: xds-example}
data:
  ca.crt: |
    ` + block(caPEM) + `
---
apiVersion: v1
kind: Secret
metadata: {name: oidc-client, namespace: xds-example}
stringData: {client-secret: s3cret}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: idp, namespace: xds-example, labels: {app: idp}}
spec:
  replicas: 1
  selector: {matchLabels: {app: idp}}
  template:
    metadata: {labels: {app: idp}}
    spec:
      containers:
      - name: idp
        image: ghcr.io/xds-controller/xds-testservers:e2e
        imagePullPolicy: IfNotPresent
        args: ["-oidc=:8443", "-oidc-issuer=` + oidcIssuer + `", "-oidc-tls-dir=/tls", "-oidc-client=web:s3cret",
          "-oidc-redirect-uris=` + oidcCallback + `", "-oidc-user=alice:wonderland"]
        ports: [{containerPort: 8443}, {containerPort: 8080}]
        readinessProbe: {tcpSocket: {port: 8443}, periodSeconds: 2}
        volumeMounts: [{name: tls, mountPath: /tls, readOnly: true}]
      volumes: [{name: tls, secret: {secretName: idp-tls}}]
---
apiVersion: v1
kind: Service
metadata: {name: idp, namespace: xds-example}
spec:
  type: LoadBalancer
  selector: {app: idp}
  ports: [{name: https, port: 8443, targetPort: 8443}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: oidc, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [` + oidcHost + `]
  rules:
  - backendRefs: [{name: foo, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: elsewhere, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [elsewhere.localhost]
  rules:
  - backendRefs: [{name: foo, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: login, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: ` + target + `}]
  oidc:
    issuer: ` + oidcIssuer + `
    clientID: web
    clientSecret: {name: oidc-client}
    caCertificateRefs: [{group: "", kind: ConfigMap, name: idp-ca}]
    scopes: [profile, email]
    forwardIDTokenHeader: x-id-token
`
}

// securityOIDC is one mode's scenario of
// TestSecurityPolicyOIDCOnTheLocalCluster: the policy is Accepted and
// ResolvedRefs; a request without a session is redirected (302) to the
// provider's authorization endpoint for client web and the gateway's
// callback; the browser follows, posts the login form, comes back through
// the callback to the page it asked for, which foo answers with a
// verified ID token of alice in x-id-token (a forged one replaced); the
// session opens another page; a request without cookies is redirected
// again.
func (e *env) securityOIDC(mode string) {
	t := e.t
	start := time.Now()
	e.cleanup()
	e.helmInstall(mode)
	e.applyExamples()
	web := e.gatewayAddress("web", 4*time.Minute)
	caPEM, certPEM, keyPEM := servingCert(t, "idp.xds-example.svc.cluster.local")
	target := "oidc"
	if os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1" {
		target = "elsewhere"
	}
	e.mustKubectl(oidcYAML(caPEM, certPEM, keyPEM, target), "apply", "-f", "-")
	e.mustKubectl("", "-n", exampleNamespace, "rollout", "status", "deploy/idp", "--timeout=120s")
	var idp string
	e.eventually("Service idp has a LoadBalancer address", 2*time.Minute, func() error {
		out, err := e.kubectl("", "-n", exampleNamespace, "get", "service", "idp", "-o", "jsonpath={.status.loadBalancer.ingress[0].ip}")
		if err != nil {
			return err
		}
		idp = out
		return fromLBPool(out)
	})
	browser, nofollow := oidcBrowser(t, caPEM, map[string]string{
		strings.TrimPrefix(oidcIssuer, "https://"): net.JoinHostPort(idp, "8443"),
		oidcHost + ":80": net.JoinHostPort(web, "80"),
	})
	e.eventually("SecurityPolicy login Accepted and ResolvedRefs on Gateway web", 2*time.Minute, func() error {
		out, err := e.kubectl("", "-n", exampleNamespace, "get", "securitypolicy", "login", "-o",
			`jsonpath={.status.ancestors[0].ancestorRef.name}:{.status.ancestors[0].conditions[?(@.type=="Accepted")].status}/{.status.ancestors[0].conditions[?(@.type=="ResolvedRefs")].status}`)
		if err == nil && out != "web:True/True" {
			err = fmt.Errorf("status %q, want web:True/True", out)
		}
		return err
	})
	var first string
	e.eventually("no session: 302 to the provider", 2*time.Minute, func() error {
		loc, err := toOIDCProvider(nofollow, "/app")
		first = loc
		return err
	})

	// The login, as a person at a browser: the login form, then back
	// through the callback to the page first asked for.
	var resp *http.Response
	var body string
	e.eventually("login through the provider's form", time.Minute, func() error {
		var err error
		resp, body, err = oidcLogIn(browser, "http://"+oidcHost+"/app?x=1", "alice", "wonderland")
		if err == nil && (resp.StatusCode != http.StatusOK || resp.Request.URL.String() != "http://"+oidcHost+"/app?x=1") {
			err = fmt.Errorf("after the login: %d at %s: %.200s", resp.StatusCode, resp.Request.URL, body)
		}
		return err
	})
	r, err := decodeEcho([]byte(body))
	if err != nil || !strings.HasPrefix(r.Pod, "foo-") {
		t.Fatalf("after the login: %v %+v, want foo's echo", err, r)
	}
	claims := verifyIDToken(t, browser, strings.Join(r.Headers["X-Id-Token"], ","))

	// The session opens another page; a client's own x-id-token is
	// replaced by the session's.
	req, _ := http.NewRequest(http.MethodGet, "http://"+oidcHost+"/again", nil)
	req.Header.Set("X-Id-Token", "forged")
	again, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	againBody, _ := io.ReadAll(io.LimitReader(again.Body, 1<<20))
	again.Body.Close()
	r2, err := decodeEcho(againBody)
	if again.StatusCode != http.StatusOK || err != nil || r2.Path != "/again" || strings.Join(r2.Headers["X-Id-Token"], ",") != strings.Join(r.Headers["X-Id-Token"], ",") {
		t.Fatalf("with the session: %d %.200s (%v); want foo's 200 with the session's ID token", again.StatusCode, againBody, err)
	}
	// Without cookies: to the provider again.
	if _, err := toOIDCProvider(nofollow, "/again"); err != nil {
		t.Fatalf("without cookies after the login: %v", err)
	}
	u, _ := url.Parse("http://" + oidcHost + "/")
	var names []string
	for _, c := range browser.Jar.Cookies(u) {
		names = append(names, c.Name)
	}
	t.Logf("%s: no session 302 to %.120s...; logged in as %s (iss %s, aud %v) with cookies %v; without cookies 302 again; %s in all",
		mode, first, claims.Subject, claims.Issuer, claims.Audience, names, time.Since(start).Round(time.Second))
}

// toOIDCProvider GETs http://oidcHost/path with c (which must not follow
// redirects) and checks the answer is a 302 to the provider's
// authorization endpoint for client web, the gateway's callback and a PKCE
// challenge; it returns the Location.
func toOIDCProvider(c *http.Client, path string) (string, error) {
	resp, err := c.Get("http://" + oidcHost + path)
	if err != nil {
		return "", err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), oidcIssuer+"/authorize?") ||
		loc.Query().Get("client_id") != "web" || loc.Query().Get("redirect_uri") != oidcCallback || loc.Query().Get("code_challenge") == "" {
		return "", fmt.Errorf("%d Location %q %.200s; want 302 to %s/authorize for client web, redirect_uri %s, a PKCE challenge",
			resp.StatusCode, resp.Header.Get("Location"), body, oidcIssuer, oidcCallback)
	}
	return loc.String(), nil
}

// oidcBrowser returns a browser (cookie jar, follows redirects) and the
// same without redirects and cookies, both trusting caPEM and dialing
// only the host:port keys of dial, to their values (addresses the test
// created: the gateway's and the provider's LoadBalancer addresses).
func oidcBrowser(t *testing.T, caPEM []byte, dial map[string]string) (browser, nofollow *http.Client) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("bad CA PEM")
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			to, ok := dial[addr]
			if !ok {
				return nil, fmt.Errorf("refusing to dial %s: not an address of this test", addr)
			}
			host, _, _ := net.SplitHostPort(to)
			if err := allowedAddress(host); err != nil {
				return nil, err
			}
			return dialer.DialContext(ctx, network, to)
		},
		DisableKeepAlives: true,
	}
	jar, _ := cookiejar.New(nil)
	browser = &http.Client{Transport: tr, Jar: jar, Timeout: 20 * time.Second}
	nofollow = &http.Client{Transport: tr, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return browser, nofollow
}

var (
	oidcFormActionRE = regexp.MustCompile(`<form method="POST" action="([^"]+)">`)
	oidcFormIDRE     = regexp.MustCompile(`name="authRequestID" value="([^"]+)"`)
)

// oidcLogIn is internal/testservers/oidc's LogIn (this module cannot
// import it): GET startURL with browser until the provider's login form
// shows, post username and password, follow the redirects; it returns
// the last response and its body (at most 1 MiB).
func oidcLogIn(browser *http.Client, startURL, username, password string) (*http.Response, string, error) {
	resp, err := browser.Get(startURL)
	if err != nil {
		return nil, "", err
	}
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	action, id := oidcFormActionRE.FindSubmatch(page), oidcFormIDRE.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || action == nil || id == nil {
		return resp, string(page), fmt.Errorf("no login form at the end of %s (at %s): %d %.300q", startURL, resp.Request.URL, resp.StatusCode, page)
	}
	resp, err = browser.PostForm(html.UnescapeString(string(action[1])), url.Values{
		"authRequestID": {html.UnescapeString(string(id[1]))}, "username": {username}, "password": {password}})
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(b), err
}

// verifyIDToken checks tok's signature against the provider's JWKS (from
// its discovery document, fetched with c) and its iss, aud (web), sub
// (alice) and expiry; it returns the claims.
func verifyIDToken(t *testing.T, c *http.Client, tok string) jwt.Claims {
	t.Helper()
	getJSON := func(u string, v any) {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
	}
	var disc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	getJSON(oidcIssuer+"/.well-known/openid-configuration", &disc)
	var keys jose.JSONWebKeySet
	getJSON(disc.JWKSURI, &keys)
	parsed, err := jwt.ParseSigned(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatalf("x-id-token %.40q at foo: %v", tok, err)
	}
	var claims jwt.Claims
	if err := parsed.Claims(keys, &claims); err != nil {
		t.Fatalf("the ID token's signature: %v", err)
	}
	if err := claims.Validate(jwt.Expected{Issuer: oidcIssuer, AnyAudience: jwt.Audience{"web"}, Subject: "alice"}); err != nil {
		t.Fatalf("the ID token's claims %+v: %v", claims, err)
	}
	return claims
}

// servingCert makes a CA and a certificate it signs for the DNS name
// name (ECDSA P-256, valid for a day): the CA's certificate, the serving
// certificate and its key, PEM.
func servingCert(t *testing.T, name string) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "xds e2e OpenID provider CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}
