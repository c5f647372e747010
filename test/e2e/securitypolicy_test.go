package e2e

// SecurityPolicy through the real controller and Envoy: basic auth from an
// htpasswd Secret (ingress-nginx's format) on one rule of a route, API
// keys from a Secret on a route (header, query parameter), the Secrets
// changed while Envoy serves, and a policy whose Secret is missing, which
// must answer 500 and never forward (fail closed).

import (
	"crypto/sha1" //nolint:gosec // htpasswd -s hashes, the format under test
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// securityYAML: HTTPRoute basic (basic.example.com) with rules admin
// (/admin, basic auth: Secret users, realm e2e, the user in x-user) and
// public (/public, no policy); HTTPRoute keys (keys.example.com, API keys
// of Secret keys from header x-api-key or query parameter api_key, the
// client in x-client-id); HTTPRoute broken (broken.example.com), whose
// policy names a Secret that does not exist. {{.Users}} and {{.Keys}} are
// the Secrets' data.
const securityYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: basic, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [basic.example.com]
  rules:
  - name: admin
    matches: [{path: {type: PathPrefix, value: /admin}}]
    backendRefs: [{name: app, port: 80}]
  - name: public
    matches: [{path: {type: PathPrefix, value: /public}}]
    backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: keys, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [keys.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
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
kind: Secret
metadata: {name: users, namespace: default}
data: {auth: {{.Users}}}
---
apiVersion: v1
kind: Secret
metadata: {name: keys, namespace: default}
data: {{.Keys}}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: admin, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: basic, sectionName: {{.Section}}}]
  basicAuth: {users: {name: users}, realm: e2e, forwardUsernameHeader: x-user}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: keys, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {{.KeysRoute}}}]
  apiKeyAuth:
    credentialRefs: [{name: keys}]
    extractFrom: [{header: x-api-key}, {queryParameter: api_key}]
    forwardClientIDHeader: x-client-id
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: broken, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: broken}]
  basicAuth: {users: {name: nowhere}}
`

// htpasswdSHA is an htpasswd -s file of the users and passwords given
// (name, password pairs), base64 for a Secret's data.
func htpasswdSHA(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		h := sha1.Sum([]byte(pairs[i+1])) //nolint:gosec // htpasswd -s
		fmt.Fprintf(&b, "%s:{SHA}%s\n", pairs[i], base64.StdEncoding.EncodeToString(h[:]))
	}
	return base64.StdEncoding.EncodeToString([]byte(b.String()))
}

// keysData is a Secret's data map of client ids and keys (pairs).
func keysData(pairs ...string) string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		parts = append(parts, pairs[i]+": "+base64.StdEncoding.EncodeToString([]byte(pairs[i+1])))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// securityFixture serves securityYAML; app echoes the path and query
// it got, the headers x-user, x-client-id, x-api-key and whether an
// Authorization header came, and counts its requests.
type securityFixture struct {
	*fixture
	hits   atomic.Int64
	client *http.Client
}

// write (re)writes the routes, Secrets and policies. With
// XDS_E2E_PROTECTION_REMOVED=1 in the environment the policies target a
// rule and a route that do not exist: the tests' protection removed, to
// show that they fail then.
func (s *securityFixture) write(t *testing.T, users, keys string) {
	section, keysRoute := "admin", "keys"
	if os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1" {
		section, keysRoute = "elsewhere", "elsewhere"
	}
	render(t, filepath.Join(s.dir, "security.yaml"), securityYAML, map[string]any{"Users": users, "Keys": keys, "Section": section, "KeysRoute": keysRoute})
}

func startSecurity(t *testing.T) *securityFixture {
	s := &securityFixture{client: &http.Client{Timeout: 20 * time.Second}}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		fmt.Fprintf(w, "app %s?%s x-user=%s x-client-id=%s x-api-key=%s authorization=%t",
			r.URL.Path, r.URL.RawQuery, r.Header.Get("x-user"), r.Header.Get("x-client-id"), r.Header.Get("x-api-key"), r.Header.Get("authorization") != "")
	}), ReadHeaderTimeout: 5 * time.Second}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Serve(lis) }()
	t.Cleanup(func() { _ = app.Close() })
	s.fixture = startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends":    []gatewayBackend{{Name: "app", Port: lis.Addr().(*net.TCPAddr).Port}},
		})
		s.fixture = f
		s.write(t, htpasswdSHA("bob", "builder", "alice", "wonderland"), keysData("acme", "acme-key-1", "globex", "globex-key-2"))
	})
	took := poll(t, "routes served", func() error {
		if r := s.do("basic.example.com", "/public"); r.status != 200 {
			return fmt.Errorf("/public: %d %q", r.status, r.body)
		}
		if r := s.do("keys.example.com", "/k?api_key=acme-key-1"); r.status != 200 {
			return fmt.Errorf("keys: %d %q", r.status, r.body)
		}
		return nil
	})
	t.Logf("routes answered after %s", took.Round(time.Millisecond))
	return s
}

// do sends GET path to host through Envoy with the headers given (name,
// value pairs); "basic" as a name sets HTTP Basic credentials from
// "user:password".
func (s *securityFixture) do(host, path string, headers ...string) reply {
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", s.gwPort, path), nil)
	req.Host = host
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "basic" {
			u, p, _ := strings.Cut(headers[i+1], ":")
			req.SetBasicAuth(u, p)
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	return exchange(s.client, req)
}

// denied asserts that r is a 401 that never reached app.
func (s *securityFixture) denied(t *testing.T, what string, before int64, r reply) {
	t.Helper()
	if r.status != 401 {
		t.Errorf("%s: got %d %q; want 401", what, r.status, r.body)
	}
	if n := s.hits.Load() - before; n != 0 {
		t.Errorf("%s: app got %d requests", what, n)
	}
}

func TestSecurityPolicyBasicAuth(t *testing.T) {
	s := startSecurity(t)
	t.Run("right", func(t *testing.T) {
		r := s.do("basic.example.com", "/admin/x", "basic", "bob:builder")
		if r.status != 200 || !strings.HasPrefix(r.body, "app /admin/x? x-user=bob ") {
			t.Fatalf("got %d %q; want 200 from app with x-user=bob", r.status, r.body)
		}
		t.Logf("right password: %d %q", r.status, r.body)
	})
	t.Run("wrong", func(t *testing.T) {
		before := s.hits.Load()
		r := s.do("basic.example.com", "/admin/x", "basic", "bob:wrong")
		s.denied(t, "wrong password", before, r)
		if got := r.header.Get("www-authenticate"); got != `Basic realm="e2e"` {
			t.Errorf("WWW-Authenticate %q, want Basic realm=\"e2e\"", got)
		}
		r2 := s.do("basic.example.com", "/admin/x", "basic", "mallory:builder")
		s.denied(t, "unknown user", before, r2)
		t.Logf("wrong password: %d %q www-authenticate=%q; unknown user: %d", r.status, r.body, r.header.Get("www-authenticate"), r2.status)
	})
	t.Run("missing", func(t *testing.T) {
		before := s.hits.Load()
		r := s.do("basic.example.com", "/admin/x", "x-user", "bob")
		s.denied(t, "no credentials", before, r)
		t.Logf("no credentials: %d %q", r.status, r.body)
	})
	t.Run("spoofed user header is replaced", func(t *testing.T) {
		r := s.do("basic.example.com", "/admin/y", "basic", "alice:wonderland", "x-user", "bob")
		if r.status != 200 || !strings.Contains(r.body, " x-user=alice ") {
			t.Fatalf("got %d %q; want x-user=alice only", r.status, r.body)
		}
	})
	t.Run("other rule open", func(t *testing.T) {
		if r := s.do("basic.example.com", "/public"); r.status != 200 || strings.Contains(r.body, "x-user=bob") {
			t.Fatalf("got %d %q", r.status, r.body)
		}
	})
	t.Run("fail closed", func(t *testing.T) {
		before := s.hits.Load()
		r := s.do("broken.example.com", "/", "basic", "bob:builder")
		if r.status != 500 || s.hits.Load() != before {
			t.Fatalf("got %d %q, app hits %d; want 500 and nothing forwarded (its Secret is missing)", r.status, r.body, s.hits.Load()-before)
		}
		t.Logf("policy with a missing Secret: %d %q", r.status, r.body)
	})
	t.Run("Secret changed", func(t *testing.T) {
		s.write(t, htpasswdSHA("bob", "rebuilt"), keysData("acme", "acme-key-1", "globex", "globex-key-2"))
		took := poll(t, "new password", func() error {
			if r := s.do("basic.example.com", "/admin/z", "basic", "bob:rebuilt"); r.status != 200 {
				return fmt.Errorf("new password: %d %q", r.status, r.body)
			}
			return nil
		})
		before := s.hits.Load()
		s.denied(t, "old password after the change", before, s.do("basic.example.com", "/admin/z", "basic", "bob:builder"))
		s.denied(t, "removed user after the change", before, s.do("basic.example.com", "/admin/z", "basic", "alice:wonderland"))
		t.Logf("new password accepted %s after the Secret changed; the old one and the removed user get 401", took.Round(time.Millisecond))
	})
}

func TestSecurityPolicyAPIKeys(t *testing.T) {
	s := startSecurity(t)
	t.Run("right key in header", func(t *testing.T) {
		r := s.do("keys.example.com", "/k", "x-api-key", "globex-key-2")
		if r.status != 200 || r.body != "app /k? x-user= x-client-id=globex x-api-key= authorization=false" {
			t.Fatalf("got %d %q; want 200 with x-client-id=globex and no key", r.status, r.body)
		}
		t.Logf("header key: %d %q", r.status, r.body)
	})
	t.Run("right key in query", func(t *testing.T) {
		r := s.do("keys.example.com", "/k?api_key=acme-key-1&page=2")
		if r.status != 200 || !strings.HasPrefix(r.body, "app /k?page=2 x-user= x-client-id=acme ") || strings.Contains(r.body, "acme-key-1") {
			t.Fatalf("got %d %q; want 200 with x-client-id=acme and the key removed from the query", r.status, r.body)
		}
		t.Logf("query key: %d %q", r.status, r.body)
	})
	t.Run("bearer", func(t *testing.T) {
		if r := s.do("keys.example.com", "/k", "x-api-key", "Bearer acme-key-1"); r.status != 200 || !strings.Contains(r.body, "x-client-id=acme ") {
			t.Fatalf("got %d %q", r.status, r.body)
		}
	})
	t.Run("spoofed client id is replaced", func(t *testing.T) {
		r := s.do("keys.example.com", "/k", "x-api-key", "acme-key-1", "x-client-id", "globex")
		if r.status != 200 || !strings.Contains(r.body, " x-client-id=acme ") {
			t.Fatalf("got %d %q", r.status, r.body)
		}
	})
	t.Run("wrong and missing", func(t *testing.T) {
		before := s.hits.Load()
		w := s.do("keys.example.com", "/k", "x-api-key", "acme-key-2")
		s.denied(t, "wrong key", before, w)
		m := s.do("keys.example.com", "/k", "x-client-id", "acme")
		s.denied(t, "no key", before, m)
		t.Logf("wrong key: %d %q; no key: %d %q", w.status, w.body, m.status, m.body)
	})
	t.Run("Secret changed", func(t *testing.T) {
		s.write(t, htpasswdSHA("bob", "builder"), keysData("acme", "acme-key-rotated"))
		took := poll(t, "rotated key", func() error {
			if r := s.do("keys.example.com", "/k", "x-api-key", "acme-key-rotated"); r.status != 200 {
				return fmt.Errorf("rotated key: %d %q", r.status, r.body)
			}
			return nil
		})
		before := s.hits.Load()
		s.denied(t, "old key after rotation", before, s.do("keys.example.com", "/k", "x-api-key", "acme-key-1"))
		s.denied(t, "removed client after rotation", before, s.do("keys.example.com", "/k", "x-api-key", "globex-key-2"))
		t.Logf("rotated key accepted %s after the Secret changed; old and removed keys get 401", took.Round(time.Millisecond))
	})
}
