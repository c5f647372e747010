package e2e

// ingress-nginx's authentication annotations through the real controller
// and Envoy: auth-url against an auth service in the style of
// oauth2-proxy (a handler of this file: 200 with X-Auth-Request-User and
// X-Auth-Request-Email when the session cookie is present, 401
// otherwise), auth-signin turning its 401 into a redirect carrying the
// original URL, auth-response-headers copied upstream (a client's own
// value replaced); auth-type basic with an htpasswd Secret and a realm.
// XDS_E2E_PROTECTION_REMOVED=1 renames the auth annotations to keys
// nothing reads: the tests then fail.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ingressAuthYAML: IngressClass e2e-auth; Ingress sso (sso.example.com:
// auth-url {{.AuthURL}}, auth-signin, auth-response-headers), Ingress
// basic (basic.example.com: auth-type basic, Secret users, realm) and
// Ingress both (both.example.com: basic auth and auth-url with
// auth-signin), all to Service app; the Secret users ({{.Users}}).
// {{.Prefix}} is the annotations' prefix.
const ingressAuthYAML = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: e2e-auth}
spec: {controller: xds-controller.dev/ingress-controller}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: sso
  namespace: default
  annotations:
    {{.Prefix}}auth-url: {{.AuthURL}}
    {{.Prefix}}auth-signin: https://auth.example.com/oauth2/start
    {{.Prefix}}auth-response-headers: X-Auth-Request-User, X-Auth-Request-Email
spec:
  ingressClassName: e2e-auth
  rules:
  - host: sso.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: basic
  namespace: default
  annotations:
    {{.Prefix}}auth-type: basic
    {{.Prefix}}auth-secret: users
    {{.Prefix}}auth-realm: Basic e2e
spec:
  ingressClassName: e2e-auth
  rules:
  - host: basic.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: both
  namespace: default
  annotations:
    {{.Prefix}}auth-type: basic
    {{.Prefix}}auth-secret: users
    {{.Prefix}}auth-url: {{.AuthURL}}
    {{.Prefix}}auth-signin: https://auth.example.com/oauth2/start
spec:
  ingressClassName: e2e-auth
  rules:
  - host: both.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}
---
apiVersion: v1
kind: Secret
metadata: {name: users, namespace: default}
data: {auth: {{.Users}}}
`

// oauth2ProxyStyle is an auth service in the style of oauth2-proxy's
// /oauth2/auth: 200 with X-Auth-Request-User and X-Auth-Request-Email when
// the cookie _oauth2_proxy is "alice", 403 when it is "banned", 202 (what
// oauth2-proxy itself answers) when it is "accepted", 401 otherwise. It
// records each request's method, path and headers.
type oauth2ProxyStyle struct {
	mu   sync.Mutex
	seen []*http.Request
	srv  *http.Server
	addr string
}

func startOAuth2ProxyStyle(t *testing.T) *oauth2ProxyStyle {
	o := &oauth2ProxyStyle{}
	o.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.seen = append(o.seen, r.Clone(r.Context()))
		o.mu.Unlock()
		c, _ := r.Cookie("_oauth2_proxy")
		switch {
		case r.URL.Path != "/oauth2/auth":
			w.WriteHeader(http.StatusNotFound)
		case c != nil && c.Value == "alice":
			w.Header().Set("X-Auth-Request-User", "alice")
			w.Header().Set("X-Auth-Request-Email", "alice@example.com")
			w.WriteHeader(http.StatusOK)
		case c != nil && c.Value == "banned":
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, "banned")
		case c != nil && c.Value == "accepted":
			w.Header().Set("X-Auth-Request-User", "alice")
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "Unauthorized")
		}
	}), ReadHeaderTimeout: 5 * time.Second}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.addr = lis.Addr().String()
	go func() { _ = o.srv.Serve(lis) }()
	t.Cleanup(func() { _ = o.srv.Close() })
	return o
}

// last is the last request the service saw.
func (o *oauth2ProxyStyle) last(t *testing.T) *http.Request {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) == 0 {
		t.Fatal("the auth service saw no request")
	}
	return o.seen[len(o.seen)-1]
}

func TestIngressAuth(t *testing.T) {
	auth := startOAuth2ProxyStyle(t)
	var hits atomic.Int64
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/app-401" {
			w.WriteHeader(http.StatusUnauthorized) // the backend's own 401: never a sign-in redirect
		}
		fmt.Fprintf(w, "app %s user=%s email=%s", r.URL.Path, r.Header.Get("X-Auth-Request-User"), r.Header.Get("X-Auth-Request-Email"))
	}), ReadHeaderTimeout: 5 * time.Second}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Serve(lis) }()
	t.Cleanup(func() { _ = app.Close() })
	prefix := "nginx.ingress.kubernetes.io/"
	if os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1" {
		prefix = "protection-removed.example/"
	}
	httpPort := freePort(t)
	f := startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort, "Backends": []gatewayBackend{{Name: "app", Port: lis.Addr().(*net.TCPAddr).Port}},
		})
		render(t, filepath.Join(f.dir, "ingress.yaml"), ingressAuthYAML, map[string]any{
			"Prefix": prefix, "AuthURL": "http://" + auth.addr + "/oauth2/auth", "Users": htpasswdSHA("bob", "builder"),
		})
		f.args = append(f.args, "--ingress-http-address", fmt.Sprintf("127.0.0.1:%d", httpPort), "--ingress-https-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	})
	client := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(host, path string, headers ...string) reply {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", httpPort, path), nil)
		req.Host = host
		for i := 0; i+1 < len(headers); i += 2 {
			if headers[i] == "basic" {
				user, pass, _ := strings.Cut(headers[i+1], ":")
				req.SetBasicAuth(user, pass)
				continue
			}
			req.Header.Set(headers[i], headers[i+1])
		}
		return exchange(client, req)
	}
	took := poll(t, "the Ingresses served", func() error {
		if r := do("sso.example.com", "/ready", "cookie", "_oauth2_proxy=alice"); r.status != 200 {
			return fmt.Errorf("sso: %d %q", r.status, r.body)
		}
		if r := do("basic.example.com", "/ready", "basic", "bob:builder"); r.status != 200 {
			return fmt.Errorf("basic: %d %q", r.status, r.body)
		}
		return nil
	})
	t.Logf("Ingresses answered after %s", took.Round(time.Millisecond))
	// refused asserts that r has status and that app got nothing.
	refused := func(t *testing.T, what string, before int64, r reply, status int) {
		t.Helper()
		if r.status != status {
			t.Errorf("%s: got %d %q; want %d", what, r.status, r.body, status)
		}
		if n := hits.Load() - before; n != 0 {
			t.Errorf("%s: app got %d requests", what, n)
		}
	}
	t.Run("auth-url allows, response headers copied upstream", func(t *testing.T) {
		r := do("sso.example.com", "/private/page?x=1", "cookie", "_oauth2_proxy=alice", "x-auth-request-user", "mallory")
		if r.status != 200 || r.body != "app /private/page user=alice email=alice@example.com" {
			t.Fatalf("got %d %q; want 200 with the auth service's user and email (the client's x-auth-request-user replaced)", r.status, r.body)
		}
		got := auth.last(t)
		if got.URL.RequestURI() != "/oauth2/auth" || got.Method != http.MethodGet {
			t.Errorf("the check asked %s %s; want GET /oauth2/auth exactly (auth-url's path)", got.Method, got.URL.RequestURI())
		}
		t.Logf("allowed: %d %q; the check: %s %s cookie=%q x-original-url=%q x-original-method=%q", r.status, r.body, got.Method, got.URL.RequestURI(),
			got.Header.Get("cookie"), got.Header.Get("x-original-url"), got.Header.Get("x-original-method"))
	})
	t.Run("auth-signin redirects a 401", func(t *testing.T) {
		before := hits.Load()
		r := do("sso.example.com", "/private/page?x=1")
		refused(t, "no session cookie", before, r, http.StatusFound)
		if loc, want := r.header.Get("Location"), "https://auth.example.com/oauth2/start?rd=http://sso.example.com/private/page?x=1"; loc != want {
			t.Errorf("Location %q, want %q", loc, want)
		}
		t.Logf("no session: %d Location %s", r.status, r.header.Get("Location"))
	})
	t.Run("other denials are relayed", func(t *testing.T) {
		before := hits.Load()
		r := do("sso.example.com", "/x", "cookie", "_oauth2_proxy=banned")
		refused(t, "banned", before, r, http.StatusForbidden)
		r2 := do("sso.example.com", "/x", "cookie", "_oauth2_proxy=accepted")
		refused(t, "202 (Envoy's ext_authz allows only 200)", before, r2, http.StatusAccepted)
		t.Logf("403 relayed: %d %q; a 202 answer is a denial: %d", r.status, r.body, r2.status)
	})
	t.Run("the backend's own 401 is not redirected", func(t *testing.T) {
		r := do("sso.example.com", "/app-401", "cookie", "_oauth2_proxy=alice")
		if r.status != http.StatusUnauthorized || r.header.Get("Location") != "" {
			t.Errorf("got %d Location %q; want the backend's 401 as it is", r.status, r.header.Get("Location"))
		}
	})
	t.Run("basic right, wrong, missing", func(t *testing.T) {
		if r := do("basic.example.com", "/b", "basic", "bob:builder"); r.status != 200 || !strings.HasPrefix(r.body, "app /b") {
			t.Fatalf("right password: %d %q", r.status, r.body)
		}
		before := hits.Load()
		r := do("basic.example.com", "/b", "basic", "bob:wrong")
		refused(t, "wrong password", before, r, http.StatusUnauthorized)
		if got := r.header.Get("WWW-Authenticate"); got != `Basic realm="Basic e2e"` {
			t.Errorf("WWW-Authenticate %q, want the realm of auth-realm", got)
		}
		r2 := do("basic.example.com", "/b")
		refused(t, "no credentials", before, r2, http.StatusUnauthorized)
		t.Logf("wrong: %d WWW-Authenticate %q; missing: %d", r.status, r.header.Get("WWW-Authenticate"), r2.status)
	})
	t.Run("basic and auth-url: both required", func(t *testing.T) {
		if r := do("both.example.com", "/z", "basic", "bob:builder", "cookie", "_oauth2_proxy=alice"); r.status != 200 || r.body != "app /z user=alice email=alice@example.com" {
			t.Fatalf("both passed: %d %q", r.status, r.body)
		}
		before := hits.Load()
		r := do("both.example.com", "/z", "basic", "bob:builder")
		refused(t, "basic passed, no session", before, r, http.StatusFound)
		// basic_auth's own 401 is a local reply too, which custom_response
		// sees (Envoy sends a local reply through every encoder filter):
		// redirected as well, as ingress-nginx's error_page 401 catches
		// auth_basic's 401 in the same location.
		r2 := do("both.example.com", "/z", "cookie", "_oauth2_proxy=alice")
		refused(t, "session, no basic credentials", before, r2, http.StatusFound)
		t.Logf("basic only: %d Location %q; session only: %d Location %q WWW-Authenticate %q", r.status, r.header.Get("Location"),
			r2.status, r2.header.Get("Location"), r2.header.Get("WWW-Authenticate"))
	})
	t.Run("Secret changed", func(t *testing.T) {
		render(t, filepath.Join(f.dir, "ingress.yaml"), ingressAuthYAML, map[string]any{
			"Prefix": prefix, "AuthURL": "http://" + auth.addr + "/oauth2/auth", "Users": htpasswdSHA("bob", "rebuilt"),
		})
		took := poll(t, "the new password", func() error {
			if r := do("basic.example.com", "/c", "basic", "bob:rebuilt"); r.status != 200 {
				return fmt.Errorf("%d %q", r.status, r.body)
			}
			return nil
		})
		before := hits.Load()
		refused(t, "the old password after the change", before, do("basic.example.com", "/c", "basic", "bob:builder"), http.StatusUnauthorized)
		t.Logf("new password accepted %s after the Secret changed; the old one gets 401", took.Round(time.Millisecond))
	})
	t.Run("auth service down denies", func(t *testing.T) {
		_ = auth.srv.Close()
		before := hits.Load()
		r := do("sso.example.com", "/x", "cookie", "_oauth2_proxy=alice")
		refused(t, "auth service down", before, r, http.StatusForbidden)
		t.Logf("auth service down: %d %q", r.status, r.body)
	})
}
