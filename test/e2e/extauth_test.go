package e2e

// External authorization through the real controller and Envoy: the
// HTTPRoute ExternalAuth filter (GEP-1494) with the real gRPC and HTTP
// auth servers of internal/testservers/extauthz, and a Gateway listener's
// ExternalAuth filter (GatewayListenerFilters). Allow, deny, slow and down
// servers; a service that fails never lets a request through.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xds-controller/xds-controller/internal/testservers/extauthz"
)

// extAuthRoutesYAML: the HTTPRoute auth (auth.example.com, listener http)
// with a GRPC check on /grpc, an HTTP check on /http (path prefix /check,
// request header x-tenant, response header x-user, 16 bytes of body), an
// HTTP check that copies every response header on /http-all, and /open
// without a check; the HTTPRoute shared (shared.example.com) on both the
// listener http and the listener checked, whose listener filter asks the
// gRPC server.
const extAuthRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: auth, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [auth.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /grpc}}]
    filters:
    - type: ExternalAuth
      externalAuth: {protocol: GRPC, backendRef: {name: authz-grpc, port: 80}, grpc: {}}
    backendRefs: [{name: app, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /http-big}}]
    filters:
    - type: ExternalAuth
      externalAuth: {protocol: HTTP, backendRef: {name: authz-http, port: 80}, http: {path: /check}, forwardBody: {maxSize: 1048576}}
    backendRefs: [{name: app, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /http-all}}]
    filters:
    - type: ExternalAuth
      externalAuth: {protocol: HTTP, backendRef: {name: authz-http, port: 80}, http: {path: /check}}
    backendRefs: [{name: app, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /http}}]
    filters:
    - type: ExternalAuth
      externalAuth:
        protocol: HTTP
        backendRef: {name: authz-http, port: 80}
        http: {path: /check, allowedHeaders: [x-tenant], allowedResponseHeaders: [x-user]}
        forwardBody: {maxSize: 16}
    backendRefs: [{name: app, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /open}}]
    backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shared, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: http}, {name: gw, sectionName: checked}]
  hostnames: [shared.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /a}}]
    backendRefs: [{name: app, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /b}}]
    backendRefs: [{name: app, port: 80}]
`

// extAuthFixture serves extAuthRoutesYAML: app echoes what it got (path,
// the headers x-user and x-other, the body's length and Content-Type) and
// counts its requests.
type extAuthFixture struct {
	*fixture
	grpc, http *extauthz.Server
	// checked is the port of the listener checked.
	checked int
	hits    atomic.Int64
	client  *http.Client
}

func startExtAuth(t *testing.T) *extAuthFixture {
	x := &extAuthFixture{grpc: extauthz.StartGRPC(t), http: extauthz.StartHTTP(t, "/check"), checked: freePort(t),
		client: &http.Client{Timeout: 20 * time.Second}}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "app %s x-user=%s x-other=%s body=%d type=%s host=%s", r.URL.Path, r.Header.Get("x-user"), r.Header.Get("x-other"), len(b), r.Header.Get("content-type"), r.Host)
	}), ReadHeaderTimeout: 5 * time.Second}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	appPort := lis.Addr().(*net.TCPAddr).Port
	go func() { _ = app.Serve(lis) }()
	t.Cleanup(func() { _ = app.Close() })
	x.fixture = startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Listeners": []string{fmt.Sprintf("{name: checked, protocol: HTTP, port: %d, filters: {requests: ["+
				"{type: ExternalAuth, externalAuth: {protocol: GRPC, backendRef: {name: authz-grpc, port: 80}, grpc: {}}}]}}", x.checked)},
			"Backends": []gatewayBackend{
				{Name: "app", Port: appPort},
				{Name: "authz-grpc", Port: portOfAddr(t, x.grpc.Addr)},
				{Name: "authz-http", Port: portOfAddr(t, x.http.Addr)},
			},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), extAuthRoutesYAML, nil)
	})
	took := poll(t, "auth.example.com served", func() error {
		if r := x.do(x.gwPort, "GET", "auth.example.com", "/open", ""); r.status != 200 || !strings.HasPrefix(r.body, "app /open") {
			return fmt.Errorf("%d %q", r.status, r.body)
		}
		if r := x.do(x.gwPort, "GET", "auth.example.com", "/grpc/ready", ""); r.status != 200 {
			return fmt.Errorf("/grpc/ready: %d %q", r.status, r.body)
		}
		if r := x.do(x.checked, "GET", "shared.example.com", "/a", ""); r.status != 200 {
			return fmt.Errorf("listener checked: %d %q", r.status, r.body)
		}
		return nil
	})
	t.Logf("routes answered after %s", took.Round(time.Millisecond))
	return x
}

// do sends method with body (none when "") and the headers given (name,
// value pairs) through Envoy's port.
func (x *extAuthFixture) do(port int, method, host, path, body string, headers ...string) reply {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), rd)
	req.Host = host
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return exchange(x.client, req)
}

// lastCheck is the last check s saw for path, and how many it saw.
func lastCheck(t *testing.T, s *extauthz.Server, path string) (extauthz.Check, int) {
	t.Helper()
	n, last := 0, extauthz.Check{}
	for _, c := range s.Checks() {
		if c.Path == path {
			n++
			last = c
		}
	}
	if n == 0 {
		t.Fatalf("no check for %s among %d", path, len(s.Checks()))
	}
	return last, n
}

func TestExtAuth(t *testing.T) {
	x := startExtAuth(t)
	x.grpc.On(extauthz.Match{Header: "x-deny", Value: "1"}, extauthz.Deny(401, "grpc says no", map[string]string{"www-authenticate": "Bearer realm=e2e"}))
	x.grpc.On(extauthz.Match{PathPrefix: "/grpc/slow"}, extauthz.Decision{Delay: 8 * time.Second})
	x.grpc.On(extauthz.Match{PathPrefix: "/grpc"}, extauthz.Allow(map[string]string{"x-user": "alice"}))
	x.grpc.On(extauthz.Match{PathPrefix: "/b/host"}, extauthz.Allow(map[string]string{"host": "auth.example.com", "x-user": "mallory"}))
	// The HTTP check of /http sends x-tenant (allowedHeaders), not x-deny.
	x.http.On(extauthz.Match{Header: "x-tenant", Value: "deny"}, extauthz.Deny(403, "http says no", map[string]string{"x-reason": "denied by e2e"}))
	x.http.On(extauthz.Match{PathPrefix: "/http"}, extauthz.Allow(map[string]string{"x-user": "bob", "x-other": "leaked", "content-type": "text/evil"}))

	t.Run("grpc allow", func(t *testing.T) {
		r := x.do(x.gwPort, "GET", "auth.example.com", "/grpc/x", "", "x-tenant", "t1")
		if r.status != 200 || !strings.HasPrefix(r.body, "app /grpc/x x-user=alice ") {
			t.Fatalf("got %d %q; want 200 from app with the header the auth server added", r.status, r.body)
		}
		c, _ := lastCheck(t, x.grpc, "/grpc/x")
		if c.Headers["x-tenant"] != "t1" || c.Host != "auth.example.com" || c.Method != "GET" {
			t.Errorf("check %+v: want every request header (grpc.allowedHeaders empty), host and method", c)
		}
		t.Logf("gRPC check saw %s %s %s x-tenant=%s", c.Method, c.Host, c.Path, c.Headers["x-tenant"])
	})
	t.Run("grpc deny", func(t *testing.T) {
		before := x.hits.Load()
		r := x.do(x.gwPort, "GET", "auth.example.com", "/grpc/y", "", "x-deny", "1")
		if r.status != 401 || r.body != "grpc says no" || r.header.Get("www-authenticate") != "Bearer realm=e2e" {
			t.Fatalf("got %d %q %v; want the denial's 401, body and header", r.status, r.body, r.header)
		}
		if n := x.hits.Load() - before; n != 0 {
			t.Errorf("the backend got %d requests on a denial", n)
		}
		t.Logf("denied: %d %q www-authenticate=%q", r.status, r.body, r.header.Get("www-authenticate"))
	})
	t.Run("http allow with path, headers, body", func(t *testing.T) {
		body := "0123456789abcdefXYZ" // 19 bytes, forwardBody.maxSize 16
		r := x.do(x.gwPort, "POST", "auth.example.com", "/http/y", body, "x-tenant", "t2", "x-secret", "s", "authorization", "Bearer tok", "content-type", "text/plain")
		want := "app /http/y x-user=bob x-other= body=19 type=text/plain host=auth.example.com"
		if r.status != 200 || r.body != want {
			t.Fatalf("got %d %q; want %q (x-user allowed, x-other not, the body and its type intact)", r.status, r.body, want)
		}
		c, _ := lastCheck(t, x.http, "/http/y")
		if c.AuthPath != "/check/http/y" || c.Method != "POST" {
			t.Errorf("auth request %s %s; want POST /check/http/y", c.Method, c.AuthPath)
		}
		if c.Headers["x-tenant"] != "t2" || c.Headers["authorization"] != "Bearer tok" || c.Headers["x-secret"] != "" {
			t.Errorf("auth request headers %v; want x-tenant and authorization, not x-secret", c.Headers)
		}
		if c.Body != body[:16] {
			t.Errorf("auth request body %q; want the first 16 bytes %q", c.Body, body[:16])
		}
		t.Logf("HTTP check: %s %s x-tenant=%q authorization=%q x-secret=%q body=%q", c.Method, c.AuthPath, c.Headers["x-tenant"], c.Headers["authorization"], c.Headers["x-secret"], c.Body)
	})
	t.Run("http every response header", func(t *testing.T) {
		body := "hello"
		r := x.do(x.gwPort, "POST", "auth.example.com", "/http-all/z", body, "content-type", "text/plain")
		want := "app /http-all/z x-user=bob x-other=leaked body=5 type=text/plain host=auth.example.com"
		if r.status != 200 || r.body != want {
			t.Fatalf("got %d %q; want %q (every header of the answer but Content-Type and Content-Length)", r.status, r.body, want)
		}
	})
	t.Run("http body of 1 MiB", func(t *testing.T) {
		// Beyond the listener's 32 KiB connection buffer: the filter
		// holds the body up to maxSize for the check.
		body := strings.Repeat("b", 1<<20)
		r := x.do(x.gwPort, "POST", "auth.example.com", "/http-big/1", body)
		if r.status != 200 || !strings.Contains(r.body, " body=1048576 ") {
			t.Fatalf("got %d %.200q; want 200 and the whole body at the backend", r.status, r.body)
		}
		c, _ := lastCheck(t, x.http, "/http-big/1")
		if len(c.Body) != len(body) {
			t.Errorf("the auth server got %d bytes of body, want %d", len(c.Body), len(body))
		}
		t.Logf("1 MiB body: backend %d, auth server got %d bytes", r.status, len(c.Body))
	})
	t.Run("http deny", func(t *testing.T) {
		before := x.hits.Load()
		r := x.do(x.gwPort, "GET", "auth.example.com", "/http/z", "", "x-tenant", "deny")
		if r.status != 403 || r.body != "http says no" || r.header.Get("x-reason") != "denied by e2e" {
			t.Fatalf("got %d %q %v; want the denial's 403, body and header", r.status, r.body, r.header)
		}
		if n := x.hits.Load() - before; n != 0 {
			t.Errorf("the backend got %d requests on a denial", n)
		}
	})
	t.Run("slow fails closed", func(t *testing.T) {
		before := x.hits.Load()
		began := time.Now()
		r := x.do(x.gwPort, "GET", "auth.example.com", "/grpc/slow", "")
		if r.status != 403 {
			t.Fatalf("got %d %q; want 403 when the auth server does not answer in time", r.status, r.body)
		}
		if n := x.hits.Load() - before; n != 0 {
			t.Errorf("the backend got %d requests", n)
		}
		t.Logf("slow auth server: %d after %s", r.status, time.Since(began).Round(100*time.Millisecond))
	})
	t.Run("listener filter", func(t *testing.T) {
		before := len(x.grpc.Checks())
		for _, p := range []string{"/a/1", "/b/2"} {
			if r := x.do(x.checked, "GET", "shared.example.com", p, ""); r.status != 200 || !strings.HasPrefix(r.body, "app "+p+" x-user=") {
				t.Fatalf("listener checked %s: got %d %q", p, r.status, r.body)
			}
			lastCheck(t, x.grpc, p)
		}
		if r := x.do(x.checked, "GET", "shared.example.com", "/a/3", "", "x-deny", "1"); r.status != 401 || r.body != "grpc says no" {
			t.Fatalf("listener checked, denied: got %d %q", r.status, r.body)
		}
		// The check cannot change the Host route matching reads: the
		// header is ignored (decoder_header_mutation_rules), the route of
		// shared.example.com serves, and the backend sees the original.
		if r := x.do(x.checked, "GET", "shared.example.com", "/b/host", ""); r.status != 200 || !strings.HasSuffix(r.body, "x-user=mallory x-other= body=0 type= host=shared.example.com") {
			t.Fatalf("listener check setting Host: got %d %q; want the original host", r.status, r.body)
		}
		seen := len(x.grpc.Checks())
		if seen-before != 4 {
			t.Errorf("%d checks for 4 requests on the listener checked", seen-before)
		}
		// The same route through the listener http: not checked.
		if r := x.do(x.gwPort, "GET", "shared.example.com", "/a/4", "", "x-deny", "1"); r.status != 200 {
			t.Fatalf("listener http: got %d %q; want 200 (no listener filter)", r.status, r.body)
		}
		if n := len(x.grpc.Checks()); n != seen {
			t.Errorf("the listener http made %d checks", n-seen)
		}
	})
	t.Run("down fails closed", func(t *testing.T) {
		x.grpc.Stop()
		x.http.Stop()
		before := x.hits.Load()
		for _, c := range []struct {
			port       int
			host, path string
		}{{x.gwPort, "auth.example.com", "/grpc/down"}, {x.gwPort, "auth.example.com", "/http/down"}, {x.checked, "shared.example.com", "/a/down"}} {
			r := x.do(c.port, "GET", c.host, c.path, "")
			if r.status != 403 {
				t.Errorf("%s%s with the auth server down: got %d %q; want 403", c.host, c.path, r.status, r.body)
			}
			t.Logf("auth server down: %s%s -> %d", c.host, c.path, r.status)
		}
		if n := x.hits.Load() - before; n != 0 {
			t.Errorf("the backend got %d requests while the auth servers were down", n)
		}
		if r := x.do(x.gwPort, "GET", "auth.example.com", "/open/x", ""); r.status != 200 {
			t.Errorf("/open: got %d %q", r.status, r.body)
		}
	})
}
