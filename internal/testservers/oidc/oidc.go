// Package oidc is a real OpenID provider for tests: zitadel/oidc's op
// package (an OpenID Certified provider library) over an in-memory
// storage, on loopback (HTTP, or HTTPS with StartTLS). It serves discovery
// (/.well-known/openid-configuration), the authorization endpoint
// (/authorize) with an HTML login form (username and password, POSTed to
// /login), the token endpoint (/oauth/token: authorization_code with
// optional PKCE, refresh_token with rotation), userinfo, revocation,
// end_session and the JWKS (/keys). ID tokens and, by default, access
// tokens are JWTs signed by the current key of a jwt.KeySet; Rotate adds
// a new signing key and keeps the old ones in the JWKS until RemoveOld.
//
// A test registers clients (AddClient) and users (AddUser), points a
// relying party at Issuer, and reads back the token requests the provider
// answered (TokenRequests).
//
// What it does not do: consent screens, sessions across authorization
// requests (every
// /authorize shows the login form), implicit and hybrid flows, client
// credentials, device, JWT profile and token exchange grants, dynamic
// client registration, persistence. It is not hardened: secrets and
// passwords are compared plainly and nothing is rate limited.
package oidc

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"html"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"

	"github.com/xds-controller/xds-controller/internal/testservers/jwt"
	"github.com/xds-controller/xds-controller/internal/xdstest"
)

// Paths the provider serves besides op's defaults.
const (
	// loginPath shows (GET) and checks (POST) the login form.
	loginPath = "/login"
	// TokenPath is op's token endpoint path, as discovery announces it.
	TokenPath = "/oauth/token"
)

// User is an account that can log in with the form.
type User struct {
	// Username is the login name and the "sub" of the user's tokens.
	Username string
	// Password is checked by the login form; empty never logs in.
	Password string
	// Name and Email go into the ID token and userinfo with the profile
	// and email scopes.
	Name, Email string
	// Claims are added to the ID token, userinfo and JWT access tokens
	// (for example "groups").
	Claims map[string]any
}

// TokenRequest records one request to the token endpoint.
type TokenRequest struct {
	// GrantType is the grant_type form field.
	GrantType string
	// ClientID is from HTTP basic auth or the client_id form field.
	ClientID string
	// BasicAuth is true when the client authenticated with HTTP basic
	// auth (client_secret_basic), false for form fields or none.
	BasicAuth bool
	// CodeVerifier is true when a PKCE code_verifier was sent.
	CodeVerifier bool
	// Status is the HTTP status the provider answered.
	Status int
}

// Provider is a running OpenID provider.
type Provider struct {
	// Issuer is the issuer URL, "http://127.0.0.1:port" for Start; the
	// discovery document is at Issuer + "/.well-known/openid-configuration".
	Issuer string
	// Addr is the listen address.
	Addr string
	// Keys signs tokens (its current key) and is published at the JWKS
	// endpoint (all its keys). Start makes it with one RSA key "key-1".
	Keys *jwt.KeySet
	// CA is, for StartTLS, the PEM certificate the provider serves (it is
	// self-signed, for the IP SAN 127.0.0.1): what clients trust.
	CA []byte

	mu            sync.Mutex
	clients       map[string]Client
	users         map[string]User
	authRequests  map[string]*authRequest
	codes         map[string]string // code -> auth request ID
	refreshTokens map[string]*refreshToken
	accessTokens  map[string]*accessToken
	tokenRequests []TokenRequest
	logins        int
	tokenTTL      time.Duration
	rotations     int

	srv *http.Server
}

// Start runs a provider on 127.0.0.1:0 until t ends, with one RSA signing
// key and no clients or users.
func Start(t testing.TB) *Provider {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Serve(l, "http://"+l.Addr().String(), jwt.NewKeySet(jwt.NewRSA(t, "key-1")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// StartTLS is Start over HTTPS: the issuer is "https://127.0.0.1:port",
// the certificate a fresh self-signed one (xdstest.Cert) in Provider.CA;
// Provider.HTTPClient trusts it.
func StartTLS(t testing.TB) *Provider {
	t.Helper()
	certPEM, keyPEM := xdstest.Cert("127.0.0.1")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tl := tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	p, err := Serve(tl, "https://"+l.Addr().String(), jwt.NewKeySet(jwt.NewRSA(t, "key-1")))
	if err != nil {
		t.Fatal(err)
	}
	p.CA = certPEM
	t.Cleanup(p.Stop)
	return p
}

// HTTPClient returns a client that trusts the provider's CA (for
// StartTLS; for Start any client will do). It does not keep cookies.
func (p *Provider) HTTPClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.CA)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// Serve runs a provider with issuer URL issuer (no trailing slash; what
// clients reach it at) on l until Stop, signing with keys (which must
// hold a key). It returns op's configuration errors.
func Serve(l net.Listener, issuer string, keys *jwt.KeySet) (*Provider, error) {
	p := &Provider{
		Issuer: strings.TrimSuffix(issuer, "/"), Addr: l.Addr().String(), Keys: keys,
		clients: map[string]Client{}, users: map[string]User{},
		authRequests: map[string]*authRequest{}, codes: map[string]string{},
		refreshTokens: map[string]*refreshToken{}, accessTokens: map[string]*accessToken{},
		tokenTTL: 5 * time.Minute,
	}
	var cryptoKey [32]byte // encrypts opaque access tokens
	_, _ = rand.Read(cryptoKey[:])
	config := &op.Config{
		CryptoKey:             cryptoKey,
		CodeMethodS256:        true,
		AuthMethodPost:        true,
		GrantTypeRefreshToken: true,
		SupportedUILocales:    []language.Tag{language.English},
	}
	opts := []op.Option{}
	if strings.HasPrefix(p.Issuer, "http://") {
		opts = append(opts, op.WithAllowInsecure())
	}
	provider, err := op.NewProvider(config, storage{p}, op.StaticIssuer(p.Issuer), opts...)
	if err != nil {
		return nil, fmt.Errorf("openid provider: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", provider)
	mux.HandleFunc(loginPath, p.login(provider))
	p.srv = &http.Server{Handler: p.recordTokens(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// Stop closes the listener and every connection.
func (p *Provider) Stop() { _ = p.srv.Close() }

// AddClient registers c, replacing a client with the same ID.
func (p *Provider) AddClient(c Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clients[c.ID] = c
}

// AddUser registers u, replacing a user with the same username.
func (p *Provider) AddUser(u User) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.users[u.Username] = u
}

// SetTokenLifetime sets how long access and ID tokens issued from now on
// live (5 minutes by default): short ones make relying parties refresh.
func (p *Provider) SetTokenLifetime(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokenTTL = d
}

// Rotate makes a fresh RSA key ("rotated-N") the signing key and returns
// it; the previous keys stay in the JWKS until RemoveOld, so tokens they
// signed still verify.
func (p *Provider) Rotate(t testing.TB) *jwt.Key {
	t.Helper()
	p.mu.Lock()
	p.rotations++
	id := fmt.Sprintf("rotated-%d", p.rotations)
	p.mu.Unlock()
	k := jwt.NewRSA(t, id)
	p.Keys.Rotate(k)
	return k
}

// RemoveOld removes every key but the signing one from the JWKS.
func (p *Provider) RemoveOld() { p.Keys.RemoveOld() }

// TokenRequests returns the token endpoint requests answered so far, in
// order.
func (p *Provider) TokenRequests() []TokenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]TokenRequest(nil), p.tokenRequests...)
}

// Logins returns how many times the login form accepted a password.
func (p *Provider) Logins() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logins
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// recordTokens records each POST to the token endpoint. It parses the
// form first; op parses it again from r.PostForm, which ParseForm keeps.
func (p *Provider) recordTokens(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != TokenPath {
			next.ServeHTTP(w, r)
			return
		}
		_ = r.ParseForm()
		rec := TokenRequest{GrantType: r.PostForm.Get("grant_type"), ClientID: r.PostForm.Get("client_id"), CodeVerifier: r.PostForm.Get("code_verifier") != ""}
		if id, _, ok := r.BasicAuth(); ok {
			rec.ClientID, rec.BasicAuth = id, true
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		rec.Status = sw.status
		p.mu.Lock()
		p.tokenRequests = append(p.tokenRequests, rec)
		p.mu.Unlock()
	})
}

// loginForm is the login page. Its form has the fields "authRequestID",
// "username" and "password" and POSTs to the login path.
var loginForm = template.Must(template.New("login").Parse(`<!DOCTYPE html>
<html><head><title>Log in</title></head><body>
<h1>Log in</h1>
{{if .Error}}<p id="error">{{.Error}}</p>{{end}}
<form method="POST" action="{{.Action}}">
<input type="hidden" name="authRequestID" value="{{.ID}}">
<label>Username <input type="text" name="username"></label>
<label>Password <input type="password" name="password"></label>
<button type="submit">Log in</button>
</form></body></html>
`))

// login serves the login form: GET shows it for the authorization request
// in ?authRequestID; POST checks username and password, marks the request
// done and redirects to op's callback, which redirects to the client with
// the code. A wrong password shows the form again with 401.
func (p *Provider) login(provider *op.Provider) http.HandlerFunc {
	callback := op.AuthCallbackURL(provider)
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := r.Form.Get("authRequestID")
		p.mu.Lock()
		a, ok := p.authRequests[id]
		p.mu.Unlock()
		if !ok {
			http.Error(w, "unknown authorization request", http.StatusBadRequest)
			return
		}
		show := func(status int, msg string) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(status)
			_ = loginForm.Execute(w, map[string]string{"Action": p.Issuer + loginPath, "ID": id, "Error": msg})
		}
		switch r.Method {
		case http.MethodGet:
			show(http.StatusOK, "")
		case http.MethodPost:
			u, ok := p.checkPassword(r.PostForm.Get("username"), r.PostForm.Get("password"))
			if !ok {
				show(http.StatusUnauthorized, "wrong username or password")
				return
			}
			p.mu.Lock()
			a.userID, a.authTime, a.done = u.Username, time.Now(), true
			p.logins++
			p.mu.Unlock()
			http.Redirect(w, r, callback(op.ContextWithIssuer(r.Context(), p.Issuer), id), http.StatusFound)
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	}
}

var (
	formActionRE = regexp.MustCompile(`<form method="POST" action="([^"]+)">`)
	formIDRE     = regexp.MustCompile(`name="authRequestID" value="([^"]+)"`)
)

// LogIn does what a person at a browser does: GET startURL with browser
// (which must follow redirects and should have a cookie jar) until a
// login form of this package's provider shows, fill in username and
// password, POST it and follow the redirects. startURL may be the
// provider's authorization URL or a page of a relying party (such as
// Envoy's oauth2 filter) that redirects there. It returns the last
// response, its body read into body, or an error when no login form
// shows up (the page's status and body are in the error).
func LogIn(browser *http.Client, startURL, username, password string) (resp *http.Response, body string, err error) {
	resp, err = browser.Get(startURL)
	if err != nil {
		return nil, "", err
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	action, id := formActionRE.FindSubmatch(page), formIDRE.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || action == nil || id == nil {
		return resp, string(page), fmt.Errorf("no login form at the end of %s: %d %q", startURL, resp.StatusCode, page)
	}
	resp, err = browser.PostForm(html.UnescapeString(string(action[1])), url.Values{
		"authRequestID": {html.UnescapeString(string(id[1]))}, "username": {username}, "password": {password}})
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}
