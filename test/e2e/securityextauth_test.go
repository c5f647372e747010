package e2e

// SecurityPolicy extAuth through the real controller and Envoy, with the
// real gRPC and HTTP auth servers of internal/testservers/extauthz: a
// policy on the Gateway asks the HTTP server about every route of the
// Gateway; a policy on HTTPRoute rpc asks the gRPC server instead (the
// route wins over the Gateway); a rule with its own ExternalAuth filter
// (gRPC) under the Gateway's policy is asked by both, and a request must
// pass both. A server that is down denies (403): never forwarded.
// XDS_E2E_PROTECTION_REMOVED=1 retargets the policies at nothing: the
// tests then fail.

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xds-controller/xds-controller/internal/testservers/extauthz"
)

// securityExtAuthYAML: HTTPRoute site (site.example.com) with rule own
// (/own, its own gRPC ExternalAuth filter) and rule open (/); HTTPRoute
// rpc (rpc.example.com); policy gateway-check on Gateway gw (HTTP, path
// /check, x-tenant sent, x-user copied upstream); policy rpc-check on
// HTTPRoute rpc (gRPC).
const securityExtAuthYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: site, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [site.example.com]
  rules:
  - name: own
    matches: [{path: {type: PathPrefix, value: /own}}]
    filters:
    - type: ExternalAuth
      externalAuth: {protocol: GRPC, backendRef: {name: authz-grpc, port: 80}, grpc: {}}
    backendRefs: [{name: app, port: 80}]
  - name: open
    backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: rpc, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [rpc.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: gateway-check, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: {{.Gateway}}}]
  extAuth:
    protocol: HTTP
    backendRef: {name: authz-http, port: 80}
    http: {path: /check, allowedHeaders: [x-tenant], allowedResponseHeaders: [x-user]}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: rpc-check, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {{.Route}}}]
  extAuth: {protocol: GRPC, backendRef: {name: authz-grpc, port: 80}, grpc: {}}
`

func TestSecurityPolicyExtAuth(t *testing.T) {
	grpcSrv, httpSrv := extauthz.StartGRPC(t), extauthz.StartHTTP(t, "/check")
	var hits atomic.Int64
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "app %s x-user=%s", r.URL.Path, r.Header.Get("x-user"))
	}), ReadHeaderTimeout: 5 * time.Second}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Serve(lis) }()
	t.Cleanup(func() { _ = app.Close() })
	f := startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends": []gatewayBackend{
				{Name: "app", Port: lis.Addr().(*net.TCPAddr).Port},
				{Name: "authz-grpc", Port: portOfAddr(t, grpcSrv.Addr)},
				{Name: "authz-http", Port: portOfAddr(t, httpSrv.Addr)},
			},
		})
		targets := map[string]string{"Gateway": "gw", "Route": "rpc"}
		if os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1" {
			targets = map[string]string{"Gateway": "nothing", "Route": "nothing"}
		}
		render(t, filepath.Join(f.dir, "routes.yaml"), securityExtAuthYAML, targets)
	})
	client := &http.Client{Timeout: 20 * time.Second}
	do := func(host, path string, headers ...string) reply {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", f.gwPort, path), nil)
		req.Host = host
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		return exchange(client, req)
	}
	httpSrv.On(extauthz.Match{Header: "x-tenant", Value: "deny"}, extauthz.Deny(403, "http says no", nil))
	httpSrv.On(extauthz.Match{}, extauthz.Allow(map[string]string{"x-user": "alice"}))
	grpcSrv.On(extauthz.Match{Header: "x-deny", Value: "1"}, extauthz.Deny(401, "grpc says no", nil))
	took := poll(t, "the routes served", func() error {
		if r := do("site.example.com", "/page"); r.status != 200 || !strings.HasPrefix(r.body, "app /page") {
			return fmt.Errorf("%d %q", r.status, r.body)
		}
		if r := do("rpc.example.com", "/r"); r.status != 200 {
			return fmt.Errorf("rpc: %d %q", r.status, r.body)
		}
		return nil
	})
	t.Logf("routes answered after %s", took.Round(time.Millisecond))
	// deniedBy asserts that r was refused with status and body and that
	// app got nothing.
	deniedBy := func(t *testing.T, what string, before int64, r reply, status int, body string) {
		t.Helper()
		if r.status != status || (body != "" && r.body != body) {
			t.Errorf("%s: got %d %q; want %d %q", what, r.status, r.body, status, body)
		}
		if n := hits.Load() - before; n != 0 {
			t.Errorf("%s: app got %d requests", what, n)
		}
	}
	t.Run("gateway policy allows", func(t *testing.T) {
		r := do("site.example.com", "/page", "x-tenant", "t1", "x-user", "mallory")
		if r.status != 200 || r.body != "app /page x-user=alice" {
			t.Fatalf("got %d %q; want 200 with the x-user the auth server set", r.status, r.body)
		}
		c, _ := lastCheck(t, httpSrv, "/page")
		if c.Headers["x-tenant"] != "t1" || c.AuthPath != "/check/page" {
			t.Errorf("check %+v: want x-tenant and path /check/page", c)
		}
		t.Logf("allowed: %d %q; the HTTP check asked %s x-tenant=%s", r.status, r.body, c.AuthPath, c.Headers["x-tenant"])
	})
	t.Run("gateway policy denies", func(t *testing.T) {
		before := hits.Load()
		r := do("site.example.com", "/page", "x-tenant", "deny")
		deniedBy(t, "denied by the Gateway's policy", before, r, 403, "http says no")
		t.Logf("denied: %d %q", r.status, r.body)
	})
	t.Run("rule filter and policy: both must pass", func(t *testing.T) {
		if r := do("site.example.com", "/own/a"); r.status != 200 || r.body != "app /own/a x-user=alice" {
			t.Fatalf("both allow: got %d %q", r.status, r.body)
		}
		_, nh := lastCheck(t, httpSrv, "/own/a")
		_, ng := lastCheck(t, grpcSrv, "/own/a")
		before := hits.Load()
		r := do("site.example.com", "/own/b", "x-deny", "1")
		deniedBy(t, "the rule's own check denies, the policy's allows", before, r, 401, "grpc says no")
		r2 := do("site.example.com", "/own/c", "x-tenant", "deny")
		deniedBy(t, "the policy's check denies, the rule's would allow", before, r2, 403, "http says no")
		t.Logf("both asked (%d HTTP, %d gRPC check for /own/a); rule denies: %d %q; policy denies: %d %q", nh, ng, r.status, r.body, r2.status, r2.body)
	})
	t.Run("route policy wins over the gateway's", func(t *testing.T) {
		before := len(httpSrv.Checks())
		if r := do("rpc.example.com", "/r"); r.status != 200 || r.body != "app /r x-user=" {
			t.Fatalf("got %d %q; want 200 without the HTTP check's x-user", r.status, r.body)
		}
		lastCheck(t, grpcSrv, "/r")
		if n := len(httpSrv.Checks()) - before; n != 0 {
			t.Errorf("the Gateway's HTTP check was asked %d times for a route whose own policy replaces it", n)
		}
		b := hits.Load()
		deniedBy(t, "denied by the route's gRPC policy", b, do("rpc.example.com", "/r", "x-deny", "1"), 401, "grpc says no")
	})
	t.Run("service down denies", func(t *testing.T) {
		httpSrv.Stop()
		grpcSrv.Stop()
		before := hits.Load()
		r := do("site.example.com", "/page")
		deniedBy(t, "HTTP auth server down", before, r, 403, "")
		r2 := do("rpc.example.com", "/r")
		deniedBy(t, "gRPC auth server down", before, r2, 403, "")
		t.Logf("servers down: Gateway policy %d %q, route policy %d %q", r.status, strings.TrimSpace(r.body), r2.status, strings.TrimSpace(r2.body))
	})
}
