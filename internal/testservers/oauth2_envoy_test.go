package testservers_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"

	"github.com/xds-controller/xds-controller/internal/testservers/oidc"
)

// oauth2Bootstrap puts Envoy's OAuth2 filter (OIDC login) in front of the
// backend, against the test's OpenID provider: client web, its secret and
// the HMAC key as static generic secrets, the redirect URI built from the
// request, /callback and /signout handled by the filter, the access token
// forwarded as Authorization: Bearer and the ID token as x-id-token,
// refresh tokens used.
const oauth2Bootstrap = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: {{adminPort}}}}
static_resources:
  secrets:
  - name: client-secret
    generic_secret: {secret: {inline_string: s3cret}}
  - name: hmac
    generic_secret: {secret: {inline_string: 0123456789abcdef0123456789abcdef}}
  listeners:
  - name: oauth2
    address: {socket_address: {address: 127.0.0.1, port_value: {{listenerPort}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: oauth2
          route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: backend}}]}]}
          http_filters:
          - name: envoy.filters.http.oauth2
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.oauth2.v3.OAuth2
              config:
                token_endpoint: {cluster: oidc, uri: "{{tokenURL}}", timeout: 3s}
                authorization_endpoint: "{{authURL}}"
                end_session_endpoint: "{{endSessionURL}}"
                redirect_uri: "%REQ(x-forwarded-proto)%://%REQ(:authority)%/callback"
                redirect_path_matcher: {path: {exact: /callback}}
                signout_path: {path: {exact: /signout}}
                forward_bearer_token: true
                forward_id_token: {header: x-id-token}
                use_refresh_token: true
                auth_scopes: [openid, profile, email, offline_access]
                credentials:
                  client_id: web
                  token_secret: {name: client-secret}
                  hmac_secret: {name: hmac}
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
{{clusters}}
`

// oidcBackend answers 200 "backend", echoing Authorization and x-id-token
// back as "echo-" + name.
func oidcBackend(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("echo-authorization", r.Header.Get("Authorization"))
		w.Header().Set("echo-x-id-token", r.Header.Get("x-id-token"))
		_, _ = io.WriteString(w, "backend")
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// TestOAuth2BehindEnvoy drives an OIDC login through Envoy's OAuth2
// filter against the test provider, as a browser does: an unauthenticated
// request is redirected to the provider, the login form is posted, Envoy
// exchanges the code (client_secret_post, PKCE) and sends the browser back
// to the page it asked for with its cookies; the backend gets the access
// token and the ID token, both verifiable with the provider's JWKS. With
// the cookies no new login happens; once the access token expires Envoy
// refreshes it with the refresh token; a forged cookie sends the browser
// to log in again; /signout clears the cookies and goes to the
// provider's end_session endpoint, which returns to the post-logout URI.
// It runs with the provider on HTTP and on HTTPS (Envoy's token endpoint
// cluster verifying the provider's certificate).
func TestOAuth2BehindEnvoy(t *testing.T) {
	t.Run("http", func(t *testing.T) { testOAuth2BehindEnvoy(t, oidc.Start(t)) })
	t.Run("https", func(t *testing.T) { testOAuth2BehindEnvoy(t, oidc.StartTLS(t)) })
}

func testOAuth2BehindEnvoy(t *testing.T, op *oidc.Provider) {
	ctx := gooidc.ClientContext(context.Background(), op.HTTPClient())
	opCluster := staticCluster("oidc", op.Addr)
	if op.CA != nil {
		opCluster = tlsCluster("oidc", op.Addr, "", op.CA, "IP_ADDRESS", "127.0.0.1")
	}
	op.AddUser(oidc.User{Username: "alice", Password: "wonderland", Email: "alice@example.test"})
	admin, listener := freeAddr(t), freeAddr(t)
	base := "http://" + listener
	op.AddClient(oidc.Client{ID: "web", Secret: "s3cret", RedirectURIs: []string{base + "/callback"}, PostLogoutRedirectURIs: []string{base + "/"}})
	startEnvoy(t, fill(t, oauth2Bootstrap, map[string]string{
		"adminPort": port(admin), "listenerPort": port(listener),
		"tokenURL": op.Issuer + oidc.TokenPath, "authURL": op.Issuer + "/authorize", "endSessionURL": op.Issuer + "/end_session",
		"clusters": staticCluster("backend", oidcBackend(t)) + opCluster,
	}), admin)
	rp, err := gooidc.NewProvider(ctx, op.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	verifier := rp.Verifier(&gooidc.Config{ClientID: "web"})
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	// Without cookies: a redirect to the provider's authorization endpoint.
	resp, err := (&http.Client{CheckRedirect: noRedirect}).Get(base + "/app")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc == nil || !strings.HasPrefix(loc.String(), op.Issuer+"/authorize?") ||
		loc.Query().Get("client_id") != "web" || loc.Query().Get("redirect_uri") != base+"/callback" || loc.Query().Get("code_challenge") == "" {
		t.Fatalf("unauthenticated: %d Location %q; want 302 to the authorization endpoint with client web, our callback and a PKCE challenge", resp.StatusCode, resp.Header.Get("Location"))
	}

	op.SetTokenLifetime(3 * time.Second)
	jar, _ := cookiejar.New(nil)
	browser := op.HTTPClient()
	browser.Jar, browser.Timeout = jar, 10*time.Second
	resp, body, err := oidc.LogIn(browser, base+"/app?x=1", "alice", "wonderland")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || body != "backend" || resp.Request.URL.String() != base+"/app?x=1" {
		t.Fatalf("after login: %d %q at %s; want the backend's 200 at the page first asked for", resp.StatusCode, body, resp.Request.URL)
	}
	access := strings.TrimPrefix(resp.Header.Get("echo-authorization"), "Bearer ")
	if _, err := verifier.Verify(ctx, access); err != nil {
		t.Errorf("forwarded access token %q: %v", access, err)
	}
	idToken, err := verifier.Verify(ctx, resp.Header.Get("echo-x-id-token"))
	if err != nil || idToken.Subject != "alice" {
		t.Errorf("forwarded ID token: %v (%v)", idToken, err)
	}
	reqs := op.TokenRequests()
	if len(reqs) != 1 || reqs[0].GrantType != "authorization_code" || reqs[0].ClientID != "web" || reqs[0].BasicAuth || !reqs[0].CodeVerifier || reqs[0].Status != http.StatusOK {
		t.Fatalf("token requests %+v; want one authorization_code of web, secret in the body, with a PKCE verifier, 200", reqs)
	}
	var names []string
	for _, c := range jar.Cookies(&url.URL{Scheme: "http", Host: listener}) {
		names = append(names, c.Name)
	}
	t.Logf("cookies: %v", names)

	// With the cookies: straight to the backend, no new login.
	r := getWith(t, browser, base+"/again")
	if r.status != http.StatusOK || r.body != "backend" || op.Logins() != 1 {
		t.Errorf("with cookies: %d %q, %d logins; want 200 and no new login", r.status, r.body, op.Logins())
	}

	// After the access token expires, Envoy refreshes it.
	var refreshed string
	loggedIn := time.Now()
	deadline := loggedIn.Add(15 * time.Second)
	for time.Now().Before(deadline) {
		r = getWith(t, browser, base+"/later")
		if a := strings.TrimPrefix(r.headers.Get("echo-authorization"), "Bearer "); r.status == http.StatusOK && a != access {
			refreshed = a
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	reqs = op.TokenRequests()
	t.Logf("refreshed %v after the login; token requests %+v", time.Since(loggedIn).Round(100*time.Millisecond), reqs)
	if refreshed == "" || len(reqs) < 2 || reqs[1].GrantType != "refresh_token" || reqs[1].Status != http.StatusOK || op.Logins() != 1 {
		t.Errorf("refresh: new access token %q, token requests %+v, %d logins; want a refresh_token grant and no new login", refreshed, reqs, op.Logins())
	} else if _, err := verifier.Verify(ctx, refreshed); err != nil {
		t.Errorf("refreshed access token: %v", err)
	}

	// Forged cookies: a changed BearerToken or OauthExpires fails the
	// HMAC. Without a refresh token cookie the browser is sent to log in
	// again; with one, Envoy refreshes and the backend gets a fresh token,
	// never the forged one.
	forged := func(forge string, keepRefresh bool) *http.Response {
		var cookies []string
		for _, c := range jar.Cookies(&url.URL{Scheme: "http", Host: listener}) {
			if c.Name == forge {
				c.Value = "9999999999"
			}
			if c.Name != "RefreshToken" || keepRefresh {
				cookies = append(cookies, c.Name+"="+c.Value)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/forged", nil)
		req.Header.Set("Cookie", strings.Join(cookies, "; "))
		resp, err := (&http.Client{CheckRedirect: noRedirect}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, forge := range []string{"BearerToken", "OauthExpires", "OauthHMAC"} {
		if resp := forged(forge, false); resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), op.Issuer+"/authorize?") {
			t.Errorf("forged %s cookie: %d Location %q; want 302 to the authorization endpoint", forge, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	before := len(op.TokenRequests())
	resp = forged("BearerToken", true)
	got := strings.TrimPrefix(resp.Header.Get("echo-authorization"), "Bearer ")
	if _, err := verifier.Verify(ctx, got); resp.StatusCode != http.StatusOK || err != nil || len(op.TokenRequests()) != before+1 {
		t.Errorf("forged BearerToken with a refresh token: %d, upstream token %q (%v), %d token requests; want 200 after a refresh, a valid token upstream",
			resp.StatusCode, got, err, len(op.TokenRequests())-before)
	}

	// Sign out: cookies cleared, off to the provider's end_session.
	browser.CheckRedirect = noRedirect
	resp, err = browser.Get(base + "/signout")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	endSession, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(endSession.String(), op.Issuer+"/end_session?") || endSession.Query().Get("id_token_hint") == "" {
		t.Fatalf("signout: %d Location %q; want 302 to the end_session endpoint with an id_token_hint", resp.StatusCode, endSession)
	}
	resp, err = browser.Get(endSession.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != base+"/" {
		t.Errorf("end_session: %d Location %q; want 302 to the post-logout URI %s/", resp.StatusCode, resp.Header.Get("Location"), base)
	}
	resp, err = browser.Get(base + "/app")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), op.Issuer+"/authorize?") {
		t.Errorf("after signout: %d Location %q; want 302 to the authorization endpoint", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// getWith GETs url with c.
func getWith(t *testing.T, c *http.Client, url string) response {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, string(b), resp.Header}
}
