package e2e

// SecurityPolicy oidc through the real controller and Envoy against a
// real OpenID provider on loopback (internal/testservers/oidc, zitadel's
// op, over TLS with its CA in a ConfigMap): the controller discovers the
// issuer's endpoints, Envoy's OAuth2 filter logs a browser in (the test
// client follows the redirects and posts the login form), the backend
// gets the ID token; a session outlives a restart of the controller and
// Envoy (the HMAC key is derived from the CA, not random); a forged
// cookie and a logout send the browser back
// to the provider; the client secret changed in its Secret is the one
// Envoy uses; an issuer whose discovery fails is reported on the policy
// and its routes answer 500.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"

	"github.com/xds-controller/xds-controller/internal/testservers/jwt"
	"github.com/xds-controller/xds-controller/internal/testservers/oidc"
	"github.com/xds-controller/xds-controller/internal/xdstest"
)

// oidcYAML: HTTPRoute app (every host) with rules app (/, the login of
// policy login) and public (/public, no policy); HTTPRoute broken
// (broken.example.com), whose policy's issuer does not answer. The CA
// of the provider is in ConfigMap idp-ca, the client secret in Secret
// oidc-client ({{.Secret}}).
const oidcYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
  - name: app
    backendRefs: [{name: app, port: 80}]
  - name: public
    matches: [{path: {type: PathPrefix, value: /public}}]
    backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: broken, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [broken.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: idp-ca, namespace: default}
data:
  ca.crt: |
{{.CA}}
---
apiVersion: v1
kind: Secret
metadata: {name: oidc-client, namespace: default}
stringData: {client-secret: {{.Secret}}}
---
apiVersion: v1
kind: Secret
metadata: {name: gw-cert, namespace: default}
type: kubernetes.io/tls
data: {tls.crt: {{.GatewayCert}}, tls.key: {{.GatewayKey}}}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: login, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: app, sectionName: {{.Section}}}]
  oidc:
    issuer: {{.Issuer}}
    clientID: web
    clientSecret: {name: oidc-client}
    caCertificateRefs: [{group: "", kind: ConfigMap, name: idp-ca}]
    scopes: [profile, email, offline_access]
    forwardIDTokenHeader: x-id-token
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: broken, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: broken}]
  oidc:
    issuer: {{.DeadIssuer}}
    clientID: web
    clientSecret: {name: oidc-client}
    caCertificateRefs: [{group: "", kind: ConfigMap, name: idp-ca}]
`

// oidcFixture serves oidcYAML with a provider whose issuer is
// https://localhost:<port> (a host name: Envoy verifies the token
// endpoint's certificate for it); app echoes the Authorization and
// x-id-token headers and counts its requests.
type oidcFixture struct {
	*fixture
	op        *oidc.Provider
	base      string
	hits      atomic.Int64
	deadIssue string
	// httpsBase is the Gateway's HTTPS listener, https://localhost:<port>,
	// whose certificate is gwCert (key gwKey).
	httpsBase     string
	gwCert, gwKey []byte
}

// startOIDCProvider runs the test provider over TLS for the name
// localhost, with user alice and client web (secret s3cret).
func startOIDCProvider(t *testing.T) *oidc.Provider {
	certPEM, keyPEM := xdstest.Cert("localhost")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	op, err := oidc.Serve(tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}),
		fmt.Sprintf("https://localhost:%d", port), jwt.NewKeySet(jwt.NewRSA(t, "key-1")))
	if err != nil {
		t.Fatal(err)
	}
	op.CA = certPEM
	t.Cleanup(op.Stop)
	op.AddUser(oidc.User{Username: "alice", Password: "wonderland", Email: "alice@example.test"})
	return op
}

func (s *oidcFixture) write(t *testing.T, secret string) {
	section := "app"
	if os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1" {
		section = "elsewhere"
	}
	ca := "    " + strings.ReplaceAll(strings.TrimSpace(string(s.op.CA)), "\n", "\n    ")
	render(t, filepath.Join(s.dir, "oidc.yaml"), oidcYAML, map[string]any{
		"CA": ca, "Secret": secret, "Section": section, "Issuer": s.op.Issuer, "DeadIssuer": s.deadIssue,
		"GatewayCert": base64.StdEncoding.EncodeToString(s.gwCert), "GatewayKey": base64.StdEncoding.EncodeToString(s.gwKey),
	})
}

func startOIDC(t *testing.T) *oidcFixture {
	s := &oidcFixture{op: startOIDCProvider(t)}
	s.gwCert, s.gwKey = xdstest.Cert("localhost")
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.deadIssue = fmt.Sprintf("https://localhost:%d", dead.Addr().(*net.TCPAddr).Port)
	dead.Close() // nothing answers there
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		w.Header().Set("echo-authorization", r.Header.Get("Authorization"))
		w.Header().Set("echo-x-id-token", r.Header.Get("x-id-token"))
		fmt.Fprintf(w, "app %s", r.URL.Path)
	}), ReadHeaderTimeout: 5 * time.Second}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Serve(lis) }()
	t.Cleanup(func() { _ = app.Close() })
	s.fixture = startWith(t, func(f *fixture) {
		httpsPort := freePort(t)
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Listeners":   []string{fmt.Sprintf("{name: https, protocol: HTTPS, port: %d, tls: {certificateRefs: [{name: gw-cert}]}}", httpsPort)},
			"Backends":    []gatewayBackend{{Name: "app", Port: lis.Addr().(*net.TCPAddr).Port}},
		})
		s.fixture = f
		s.base = fmt.Sprintf("http://127.0.0.1:%d", f.gwPort)
		s.httpsBase = fmt.Sprintf("https://localhost:%d", httpsPort)
		s.addClient("s3cret")
		s.write(t, "s3cret")
	})
	took := poll(t, "routes served", func() error {
		if r := s.get(t, nil, "/public/x"); r.status != 200 {
			return fmt.Errorf("/public: %d %q", r.status, r.body)
		}
		return nil
	})
	t.Logf("routes answered after %s", took.Round(time.Millisecond))
	return s
}

// addClient registers client web at the provider with secret, both
// listeners' callbacks and post-logout URIs.
func (s *oidcFixture) addClient(secret string) {
	s.op.AddClient(oidc.Client{ID: "web", Secret: secret,
		RedirectURIs:           []string{s.base + "/oauth2/callback", s.httpsBase + "/oauth2/callback"},
		PostLogoutRedirectURIs: []string{s.base + "/", s.httpsBase + "/"}})
}

// setCookies records the Set-Cookie headers of every response.
type setCookies struct {
	mu   sync.Mutex
	seen []string
	next http.RoundTripper
}

func (s *setCookies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(r)
	if err == nil && (r.URL.Scheme == "http" || r.URL.Hostname() == "localhost" && r.URL.Port() != "" && !strings.HasPrefix(r.URL.Path, "/authorize") && !strings.HasPrefix(r.URL.Path, "/login")) {
		s.mu.Lock()
		s.seen = append(s.seen, resp.Header.Values("Set-Cookie")...)
		s.mu.Unlock()
	}
	return resp, err
}

// browser is a client with a cookie jar that trusts the provider and
// follows redirects; rec records Envoy's Set-Cookie headers.
func (s *oidcFixture) browser() (*http.Client, *setCookies) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.op.CA)
	pool.AppendCertsFromPEM(s.gwCert)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	rec := &setCookies{next: c.Transport}
	jar, _ := cookiejar.New(nil)
	c.Transport, c.Jar, c.Timeout = rec, jar, 20*time.Second
	return c, rec
}

// get GETs path at Envoy with c (nil: a client that neither follows
// redirects nor keeps cookies), with the cookie header given if any.
func (s *oidcFixture) get(t *testing.T, c *http.Client, path string, cookie ...string) reply {
	t.Helper()
	if c == nil {
		c = &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	req, _ := http.NewRequest(http.MethodGet, s.base+path, nil)
	if len(cookie) > 0 {
		req.Header.Set("Cookie", cookie[0])
	}
	return exchange(c, req)
}

// toProvider asserts that r is a redirect to the provider's
// authorization endpoint for client web, back to our callback, with a
// PKCE challenge.
func (s *oidcFixture) toProvider(t *testing.T, what string, r reply) {
	t.Helper()
	loc, _ := url.Parse(r.header.Get("Location"))
	if r.status != http.StatusFound || loc == nil || !strings.HasPrefix(loc.String(), s.op.Issuer+"/authorize?") ||
		loc.Query().Get("client_id") != "web" || loc.Query().Get("redirect_uri") != s.base+"/oauth2/callback" || loc.Query().Get("code_challenge") == "" {
		t.Errorf("%s: %d Location %q; want 302 to the authorization endpoint with client web, our callback and a PKCE challenge", what, r.status, r.header.Get("Location"))
	}
}

func TestSecurityPolicyOIDC(t *testing.T) {
	s := startOIDC(t)
	ctx := gooidc.ClientContext(context.Background(), s.op.HTTPClient())
	rp, err := gooidc.NewProvider(ctx, s.op.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	verifier := rp.Verifier(&gooidc.Config{ClientID: "web"})
	browser, rec := s.browser()

	t.Run("unauthenticated is redirected", func(t *testing.T) {
		before := s.hits.Load()
		r := s.get(t, nil, "/app")
		s.toProvider(t, "no session", r)
		if n := s.hits.Load() - before; n != 0 {
			t.Errorf("app got %d requests", n)
		}
		t.Logf("no session: %d Location %s", r.status, r.header.Get("Location"))
	})
	t.Run("login", func(t *testing.T) {
		resp, body, err := oidc.LogIn(browser, s.base+"/app?x=1", "alice", "wonderland")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || body != "app /app" || resp.Request.URL.String() != s.base+"/app?x=1" {
			t.Fatalf("after login: %d %q at %s; want app's 200 at the page first asked for", resp.StatusCode, body, resp.Request.URL)
		}
		id, err := verifier.Verify(ctx, resp.Header.Get("echo-x-id-token"))
		if err != nil || id.Subject != "alice" {
			t.Fatalf("ID token at the backend: %v (%v)", id, err)
		}
		if _, err := verifier.Verify(ctx, strings.TrimPrefix(resp.Header.Get("echo-authorization"), "Bearer ")); err != nil {
			t.Errorf("access token at the backend: %v", err)
		}
		rec.mu.Lock()
		t.Logf("logged in; Envoy's Set-Cookie: %q", rec.seen)
		rec.mu.Unlock()
		if r := s.get(t, browser, "/again"); r.status != 200 || s.op.Logins() != 1 {
			t.Errorf("with the session: %d %q, %d logins; want 200 and no new login", r.status, r.body, s.op.Logins())
		}
		// A client's own x-id-token and Authorization never reach the
		// backend: the session's tokens replace them.
		req, _ := http.NewRequest(http.MethodGet, s.base+"/spoof", nil)
		req.Header.Set("x-id-token", "forged")
		req.Header.Set("Authorization", "Bearer forged")
		sp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sp.Body.Close()
		if got := sp.Header.Get("echo-x-id-token"); sp.StatusCode != 200 || got == "forged" || sp.Header.Get("echo-authorization") == "Bearer forged" {
			t.Errorf("spoofed headers: %d, backend saw x-id-token %q and %q", sp.StatusCode, got, sp.Header.Get("echo-authorization"))
		} else if _, err := verifier.Verify(ctx, got); err != nil {
			t.Errorf("spoofed headers: the backend's ID token does not verify: %v", err)
		}
	})
	t.Run("other rule open", func(t *testing.T) {
		if r := s.get(t, nil, "/public/y"); r.status != 200 || r.header.Get("echo-x-id-token") != "" {
			t.Errorf("/public without a session: %d %q", r.status, r.body)
		}
	})
	t.Run("session survives a restart", func(t *testing.T) {
		// The controller and its Envoy start again from the same state
		// folder (the same CA): the HMAC key derived anew is the same,
		// and the session cookie still opens the app, without a login
		// or a refresh at the provider.
		logins, tokens := s.op.Logins(), len(s.op.TokenRequests())
		s.stop()
		s.launch()
		took := poll(t, "served after the restart", func() error {
			if r := s.get(t, nil, "/public/z"); r.status != 200 {
				return fmt.Errorf("/public: %d %q", r.status, r.body)
			}
			return nil
		})
		nofollow := *browser
		nofollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		r := s.get(t, &nofollow, "/after-restart")
		if r.status != 200 || r.body != "app /after-restart" || s.op.Logins() != logins || len(s.op.TokenRequests()) != tokens {
			t.Fatalf("after the restart: %d %q Location %q, %d logins and %d token requests since; want 200 with the old session, none",
				r.status, r.body, r.header.Get("Location"), s.op.Logins()-logins, len(s.op.TokenRequests())-tokens)
		}
		t.Logf("served again %s after the restart; the session cookie still opens the app", took.Round(time.Millisecond))
	})
	t.Run("forged cookie", func(t *testing.T) {
		u, _ := url.Parse(s.base)
		var cookies []string
		forged := ""
		for _, c := range browser.Jar.Cookies(u) {
			if strings.HasPrefix(c.Name, "RefreshToken") {
				continue // else Envoy refreshes and sets a new session
			}
			if strings.HasPrefix(c.Name, "OauthExpires") {
				c.Value, forged = "9999999999", c.Name
			}
			cookies = append(cookies, c.Name+"="+c.Value)
		}
		if forged == "" {
			t.Fatalf("no OauthExpires cookie among %v", cookies)
		}
		before := s.hits.Load()
		r := s.get(t, nil, "/forged", strings.Join(cookies, "; "))
		s.toProvider(t, "forged "+forged, r)
		if n := s.hits.Load() - before; n != 0 {
			t.Errorf("app got %d requests with a forged cookie", n)
		}
		t.Logf("forged %s: %d to the provider", forged, r.status)
	})
	t.Run("logout", func(t *testing.T) {
		nofollow := *browser
		nofollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		r := s.get(t, &nofollow, "/logout")
		loc, _ := url.Parse(r.header.Get("Location"))
		if r.status != 302 || loc == nil || !strings.HasPrefix(loc.String(), s.op.Issuer+"/end_session?") || loc.Query().Get("id_token_hint") == "" {
			t.Fatalf("logout: %d Location %q; want 302 to the end_session endpoint with an id_token_hint", r.status, r.header.Get("Location"))
		}
		t.Logf("logout: %d to %s; Set-Cookie %q", r.status, loc.Path, r.header.Values("Set-Cookie"))
		s.toProvider(t, "after logout", s.get(t, &nofollow, "/app"))
	})
	t.Run("client secret changed", func(t *testing.T) {
		// The provider knows the new secret only: a login with the old
		// one fails at the code exchange (Envoy answers 401).
		s.addClient("n3w-secret")
		fresh, _ := s.browser()
		resp, body, err := oidc.LogIn(fresh, s.base+"/app", "alice", "wonderland")
		if err != nil || resp.StatusCode != 401 {
			t.Fatalf("login with the old secret: %v %d %q; want 401", err, resp.StatusCode, body)
		}
		s.write(t, "n3w-secret")
		took := poll(t, "login with the new secret", func() error {
			fresh, _ := s.browser()
			resp, body, err := oidc.LogIn(fresh, s.base+"/app", "alice", "wonderland")
			if err != nil || resp.StatusCode != 200 || body != "app /app" {
				return fmt.Errorf("%v %q", err, body)
			}
			return nil
		})
		t.Logf("old secret: 401 at the callback; the new one logs in %s after the Secret changed", took.Round(time.Millisecond))
	})
	t.Run("login on an HTTPS listener", func(t *testing.T) {
		// x-forwarded-proto is https (Envoy sets it from the
		// connection): the redirect URI is https, and the session
		// cookies come back Secure (as they do on HTTP: Envoy always
		// marks them so).
		c, rec := s.browser()
		nofollow := *c
		nofollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := nofollow.Get(s.httpsBase + "/app")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != 302 || loc == nil || loc.Query().Get("redirect_uri") != s.httpsBase+"/oauth2/callback" {
			t.Fatalf("no session over HTTPS: %d Location %q; want a redirect_uri of %s/oauth2/callback", resp.StatusCode, resp.Header.Get("Location"), s.httpsBase)
		}
		resp, body, err := oidc.LogIn(c, s.httpsBase+"/app", "alice", "wonderland")
		if err != nil || resp.StatusCode != 200 || body != "app /app" {
			t.Fatalf("login over HTTPS: %v %d %q", err, resp.StatusCode, body)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var session []string
		for _, c := range rec.seen {
			if strings.HasPrefix(c, "OauthHMAC-") || strings.HasPrefix(c, "BearerToken-") {
				session = append(session, c[:strings.Index(c, "=")]+"=...;"+c[strings.Index(c, ";")+1:])
				if !strings.Contains(c, ";secure") || !strings.Contains(c, ";HttpOnly") {
					t.Errorf("session cookie %q is not Secure and HttpOnly", c)
				}
			}
		}
		if len(session) == 0 {
			t.Errorf("no session cookie among %q", rec.seen)
		}
		t.Logf("HTTPS: redirect_uri %s; session cookies %q", loc.Query().Get("redirect_uri"), session)
	})
	t.Run("refresh", func(t *testing.T) {
		// Access tokens of 3 s (whole seconds: Envoy may see one expire up to a
		// second early): once the session's expires, Envoy
		// renews it with the refresh token (a refresh_token grant at
		// the provider), without a new login.
		s.op.SetTokenLifetime(3 * time.Second)
		c, _ := s.browser()
		resp, body, err := oidc.LogIn(c, s.base+"/app", "alice", "wonderland")
		if err != nil || resp.StatusCode != 200 || body != "app /app" {
			t.Fatalf("login: %v %d %q", err, resp.StatusCode, body)
		}
		first, logins, tokens := resp.Header.Get("echo-authorization"), s.op.Logins(), len(s.op.TokenRequests())
		took := poll(t, "a refreshed access token", func() error {
			r := s.get(t, c, "/later")
			if r.status != 200 || r.body != "app /later" || r.header.Get("echo-authorization") == first {
				return fmt.Errorf("%d %q, same token %t", r.status, r.body, r.header.Get("echo-authorization") == first)
			}
			return nil
		})
		reqs := s.op.TokenRequests()[tokens:]
		if s.op.Logins() != logins || len(reqs) == 0 || reqs[0].GrantType != "refresh_token" || reqs[0].Status != 200 {
			t.Errorf("after the refresh: %d new logins, token requests %+v; want none and a refresh_token grant", s.op.Logins()-logins, reqs)
		}
		t.Logf("a new access token %s after the login, by a %s grant, no new login", took.Round(100*time.Millisecond), reqs[0].GrantType)
	})
	t.Run("discovery failure", func(t *testing.T) {
		line, _ := s.waitOutput("broken policy status", 0, regexp.MustCompile(`SecurityPolicy default/broken[^\n]*ResolvedRefs=False\(DiscoveryFailed\)[^\n]*`), l4Deadline)
		before := s.hits.Load()
		req, _ := http.NewRequest(http.MethodGet, s.base+"/", nil)
		req.Host = "broken.example.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 500 || s.hits.Load() != before {
			t.Errorf("broken: %d, app hits %d; want 500, nothing forwarded", resp.StatusCode, s.hits.Load()-before)
		}
		t.Logf("status: %s; request: %d", line, resp.StatusCode)
	})
}
