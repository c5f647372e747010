package oidc_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/xds-controller/xds-controller/internal/testservers/oidc"
)

// callback is a relying party's redirect endpoint: it records the query
// the provider redirected the browser with.
type callback struct {
	URL   string
	query chan url.Values
}

func startCallback(t *testing.T) *callback {
	t.Helper()
	c := &callback{query: make(chan url.Values, 10)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.query <- r.URL.Query()
		_, _ = io.WriteString(w, "callback")
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL + "/callback"
	return c
}

// browserLogin logs in with oidc.LogIn and a fresh browser (a client
// with a cookie jar that follows redirects); it returns the last status
// and body.
func browserLogin(t *testing.T, authURL, username, password string) (int, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	resp, body, err := oidc.LogIn(&http.Client{Jar: jar}, authURL, username, password)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// TestLoginFlow drives the authorization code flow as a browser and a
// relying party would: discovery, the login form (a wrong password is
// refused), the code exchange with x/oauth2 (with and without PKCE),
// ID token verification with coreos/go-oidc against the provider's JWKS,
// userinfo, refresh with rotation, and key rotation.
func TestLoginFlow(t *testing.T) {
	ctx := context.Background()
	p := oidc.Start(t)
	cb := startCallback(t)
	p.AddClient(oidc.Client{ID: "web", Secret: "s3cret", RedirectURIs: []string{cb.URL}})
	p.AddClient(oidc.Client{ID: "native", RedirectURIs: []string{cb.URL}})
	p.AddUser(oidc.User{Username: "alice", Password: "wonderland", Name: "Alice", Email: "alice@example.test", Claims: map[string]any{"groups": []string{"dev"}}})

	rp, err := gooidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var disco struct {
		JWKS     string   `json:"jwks_uri"`
		Token    string   `json:"token_endpoint"`
		PKCE     []string `json:"code_challenge_methods_supported"`
		Userinfo string   `json:"userinfo_endpoint"`
	}
	if err := rp.Claims(&disco); err != nil {
		t.Fatal(err)
	}
	if disco.JWKS != p.Issuer+"/keys" || disco.Token != p.Issuer+oidc.TokenPath || len(disco.PKCE) == 0 {
		t.Errorf("discovery = %+v", disco)
	}
	verifier := rp.Verifier(&gooidc.Config{ClientID: "web"})

	conf := oauth2.Config{ClientID: "web", ClientSecret: "s3cret", Endpoint: rp.Endpoint(), RedirectURL: cb.URL,
		Scopes: []string{gooidc.ScopeOpenID, "profile", "email", gooidc.ScopeOfflineAccess}}

	// A wrong password shows the form again with 401 and no code.
	status, body := browserLogin(t, conf.AuthCodeURL("st-0"), "alice", "wrong")
	if status != http.StatusUnauthorized || !strings.Contains(body, "wrong username or password") || len(cb.query) != 0 {
		t.Fatalf("wrong password: %d %q, %d callbacks; want 401, the form again, no callback", status, body, len(cb.query))
	}

	// The right password redirects to the client with a code and the state.
	status, body = browserLogin(t, conf.AuthCodeURL("st-1", oauth2.SetAuthURLParam("nonce", "n-1")), "alice", "wonderland")
	if status != http.StatusOK || body != "callback" {
		t.Fatalf("login: %d %q, want the callback's 200", status, body)
	}
	q := <-cb.query
	if q.Get("state") != "st-1" || q.Get("code") == "" {
		t.Fatalf("callback query %v, want state st-1 and a code", q)
	}
	tok, err := conf.Exchange(ctx, q.Get("code"))
	if err != nil {
		t.Fatalf("code exchange: %v", err)
	}
	if _, err := conf.Exchange(ctx, q.Get("code")); err == nil {
		t.Errorf("the code was accepted twice")
	}
	rawID, _ := tok.Extra("id_token").(string)
	idToken, err := verifier.Verify(ctx, rawID)
	if err != nil {
		t.Fatalf("ID token does not verify: %v", err)
	}
	var claims struct {
		Email  string   `json:"email"`
		Name   string   `json:"name"`
		Groups []string `json:"groups"`
	}
	if err := idToken.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if idToken.Subject != "alice" || idToken.Nonce != "n-1" || idToken.Issuer != p.Issuer || claims.Email != "alice@example.test" || claims.Name != "Alice" || len(claims.Groups) != 1 {
		t.Errorf("ID token: sub %q nonce %q iss %q claims %+v", idToken.Subject, idToken.Nonce, idToken.Issuer, claims)
	}
	if tok.RefreshToken == "" || tok.AccessToken == "" {
		t.Fatalf("token response lacks a refresh or access token: %+v", tok)
	}
	// The access token is a JWT of the same issuer, audience the client.
	if _, err := rp.Verifier(&gooidc.Config{ClientID: "web"}).Verify(ctx, tok.AccessToken); err != nil {
		t.Errorf("JWT access token does not verify: %v", err)
	}
	info, err := rp.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil || info.Subject != "alice" || info.Email != "alice@example.test" {
		t.Errorf("userinfo: %+v, %v", info, err)
	}

	// Refresh: new tokens, and the spent refresh token is refused.
	tok.Expiry = tok.Expiry.Add(-24 * 3600e9) // make x/oauth2 refresh
	refreshed, err := conf.TokenSource(ctx, tok).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if refreshed.AccessToken == tok.AccessToken || refreshed.RefreshToken == "" || refreshed.RefreshToken == tok.RefreshToken {
		t.Errorf("refresh gave the same tokens")
	}
	if rawID, _ := refreshed.Extra("id_token").(string); rawID == "" {
		t.Errorf("refresh gave no ID token")
	} else if _, err := verifier.Verify(ctx, rawID); err != nil {
		t.Errorf("refreshed ID token: %v", err)
	}
	if _, err := conf.TokenSource(ctx, tok).Token(); err == nil {
		t.Errorf("a spent refresh token was accepted again")
	}
	bad := conf
	bad.ClientSecret = "wrong"
	if _, err := bad.TokenSource(ctx, &oauth2.Token{RefreshToken: refreshed.RefreshToken}).Token(); err == nil {
		t.Errorf("refresh with a wrong client secret was accepted")
	}

	// A public client must use PKCE; with it the exchange works.
	// (AuthStyleInParams: x/oauth2's auto-detection would send every
	// request twice, first with basic auth and an empty secret.)
	nativeEndpoint := rp.Endpoint()
	nativeEndpoint.AuthStyle = oauth2.AuthStyleInParams
	native := oauth2.Config{ClientID: "native", Endpoint: nativeEndpoint, RedirectURL: cb.URL, Scopes: []string{gooidc.ScopeOpenID}}
	pkce := oauth2.GenerateVerifier()
	browserLogin(t, native.AuthCodeURL("st-2", oauth2.S256ChallengeOption(pkce)), "alice", "wonderland")
	code := (<-cb.query).Get("code")
	if _, err := native.Exchange(ctx, code, oauth2.VerifierOption("not-the-verifier-"+pkce)); err == nil {
		t.Errorf("a wrong PKCE verifier was accepted")
	}
	browserLogin(t, native.AuthCodeURL("st-3", oauth2.S256ChallengeOption(pkce)), "alice", "wonderland")
	code = (<-cb.query).Get("code")
	if ntok, err := native.Exchange(ctx, code, oauth2.VerifierOption(pkce)); err != nil {
		t.Errorf("PKCE exchange: %v", err)
	} else if _, err := rp.Verifier(&gooidc.Config{ClientID: "native"}).Verify(ctx, ntok.Extra("id_token").(string)); err != nil {
		t.Errorf("native ID token: %v", err)
	}

	// Rotation: new tokens carry the new kid; old ones still verify while
	// the old key is published, and no longer after RemoveOld.
	newKey := p.Rotate(t)
	browserLogin(t, conf.AuthCodeURL("st-4"), "alice", "wonderland")
	rotated, err := conf.Exchange(ctx, (<-cb.query).Get("code"))
	if err != nil {
		t.Fatal(err)
	}
	fresh := gooidc.NewVerifier(p.Issuer, gooidc.NewRemoteKeySet(ctx, disco.JWKS), &gooidc.Config{ClientID: "web"})
	if _, err := fresh.Verify(ctx, rotated.Extra("id_token").(string)); err != nil {
		t.Errorf("token of the rotated key: %v", err)
	}
	if !strings.Contains(string(p.Keys.JWKS()), `"kid":"key-1"`) || !strings.Contains(string(p.Keys.JWKS()), `"kid":"`+newKey.ID+`"`) {
		t.Errorf("JWKS after Rotate: %s", p.Keys.JWKS())
	}
	if _, err := fresh.Verify(ctx, rawID); err != nil {
		t.Errorf("token of the old key while it is still published: %v", err)
	}
	p.RemoveOld()
	fresh = gooidc.NewVerifier(p.Issuer, gooidc.NewRemoteKeySet(ctx, disco.JWKS), &gooidc.Config{ClientID: "web"})
	if _, err := fresh.Verify(ctx, rawID); err == nil {
		t.Errorf("a token of a removed key still verifies")
	}

	var grants []string
	for _, r := range p.TokenRequests() {
		grants = append(grants, r.GrantType+"/"+r.ClientID+"/"+http.StatusText(r.Status))
	}
	want := "authorization_code/web/OK authorization_code/web/Bad Request refresh_token/web/OK refresh_token/web/Bad Request refresh_token/web/Unauthorized " +
		"authorization_code/native/Bad Request authorization_code/native/OK authorization_code/web/OK"
	if got := strings.Join(grants, " "); got != want {
		t.Errorf("token requests:\n got %s\nwant %s", got, want)
	}
	if p.Logins() != 4 {
		t.Errorf("logins = %d, want 4 (the wrong password not counted)", p.Logins())
	}
}

// TestLoginFlowTLS runs discovery, the login and the code exchange against
// a provider served over HTTPS, trusting only its CA.
func TestLoginFlowTLS(t *testing.T) {
	p := oidc.StartTLS(t)
	cb := startCallback(t)
	p.AddClient(oidc.Client{ID: "web", Secret: "s3cret", RedirectURIs: []string{cb.URL}})
	p.AddUser(oidc.User{Username: "alice", Password: "wonderland"})
	if !strings.HasPrefix(p.Issuer, "https://127.0.0.1:") {
		t.Fatalf("issuer %q", p.Issuer)
	}
	if _, err := gooidc.NewProvider(context.Background(), p.Issuer); err == nil {
		t.Fatalf("discovery succeeded without trusting the provider's CA")
	}
	ctx := gooidc.ClientContext(context.Background(), p.HTTPClient())
	rp, err := gooidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		t.Fatalf("discovery over TLS: %v", err)
	}
	conf := oauth2.Config{ClientID: "web", ClientSecret: "s3cret", Endpoint: rp.Endpoint(), RedirectURL: cb.URL, Scopes: []string{gooidc.ScopeOpenID}}
	browser := p.HTTPClient()
	browser.Jar, _ = cookiejar.New(nil)
	if _, _, err := oidc.LogIn(browser, conf.AuthCodeURL("st"), "alice", "wonderland"); err != nil {
		t.Fatal(err)
	}
	tok, err := conf.Exchange(ctx, (<-cb.query).Get("code"))
	if err != nil {
		t.Fatalf("code exchange over TLS: %v", err)
	}
	if id, err := rp.Verifier(&gooidc.Config{ClientID: "web"}).Verify(ctx, tok.Extra("id_token").(string)); err != nil || id.Issuer != p.Issuer {
		t.Errorf("ID token over TLS: %v, %v", id, err)
	}
}
