package testservers_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xds-controller/xds-controller/internal/testenvoy"
	"github.com/xds-controller/xds-controller/internal/testservers/extauthz"
	"github.com/xds-controller/xds-controller/internal/testservers/otlp"
)

// bootstrap is a static Envoy bootstrap: listener "grpc" runs ext_authz
// against the gRPC server, listener "http" against the HTTP auth server
// (path_prefix /auth); both fail closed (failure_mode_allow false) after
// a 500ms check timeout, forward the body, trace every request to the OTLP
// receiver and route to the backend. The runtime keys make the
// OpenTelemetry tracer flush each span at once instead of every 5s.
const bootstrap = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: {{admin}}}}
layered_runtime:
  layers:
  - name: static
    static_layer:
      tracing.opentelemetry.flush_interval_ms: 100
      tracing.opentelemetry.min_flush_spans: 1
static_resources:
  listeners:
  - name: grpc
    address: {socket_address: {address: 127.0.0.1, port_value: {{grpcListener}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: grpc
{{tracing}}
          route_config: {{routes}}
          http_filters:
          - name: envoy.filters.http.ext_authz
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz
              transport_api_version: V3
              failure_mode_allow: false
              with_request_body: {max_request_bytes: 1024, allow_partial_message: true}
              grpc_service: {envoy_grpc: {cluster_name: authz_grpc}, timeout: 0.5s}
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  - name: http
    address: {socket_address: {address: 127.0.0.1, port_value: {{httpListener}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: http
{{tracing}}
          route_config: {{routes}}
          http_filters:
          - name: envoy.filters.http.ext_authz
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz
              transport_api_version: V3
              failure_mode_allow: false
              with_request_body: {max_request_bytes: 1024, allow_partial_message: true}
              allowed_headers: {patterns: [{exact: x-case}]}
              http_service:
                server_uri: {uri: "http://{{authzHTTP}}", cluster: authz_http, timeout: 0.5s}
                path_prefix: /auth
                authorization_response:
                  allowed_upstream_headers: {patterns: [{prefix: x-authz-}]}
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
{{cluster backend http1 backend}}
{{cluster authz_grpc http2 authzGRPC}}
{{cluster authz_http http1 authzHTTP}}
{{cluster otlp http2 otlp}}
`

const tracing = `          tracing:
            random_sampling: {value: 100}
            provider:
              name: envoy.tracers.opentelemetry
              typed_config:
                "@type": type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig
                grpc_service: {envoy_grpc: {cluster_name: otlp}, timeout: 1s}
                service_name: testservers-envoy`

const routes = `{virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: backend}}]}]}`

// render fills the bootstrap: {{name}} takes addrs[name] ("host:port"; its
// port for listener and admin names), {{cluster NAME PROTO ADDR}} a STATIC
// cluster.
func render(t *testing.T, addrs map[string]string) string {
	t.Helper()
	out := strings.ReplaceAll(bootstrap, "{{tracing}}", tracing)
	out = strings.ReplaceAll(out, "{{routes}}", routes)
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(strings.Trim(strings.TrimSpace(line), "{}")); len(f) == 4 && f[0] == "cluster" {
			host, port, _ := net.SplitHostPort(addrs[f[3]])
			opts := ""
			if f[2] == "http2" {
				opts = `
    typed_extension_protocol_options:
      envoy.extensions.upstreams.http.v3.HttpProtocolOptions:
        "@type": type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions
        explicit_http_config: {http2_protocol_options: {}}`
			}
			line = fmt.Sprintf(`  - name: %s
    type: STATIC
    connect_timeout: 0.25s%s
    load_assignment:
      cluster_name: %s
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: %s, port_value: %s}}}}]}]`, f[1], opts, f[1], host, port)
		}
		lines = append(lines, line)
	}
	out = strings.Join(lines, "\n")
	for name, addr := range addrs {
		_, port, _ := net.SplitHostPort(addr)
		out = strings.ReplaceAll(out, "port_value: {{"+name+"}}", "port_value: "+port)
		out = strings.ReplaceAll(out, "{{"+name+"}}", addr)
	}
	if strings.Contains(out, "{{") {
		t.Fatalf("bootstrap has unfilled placeholders:\n%s", out)
	}
	return out
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startEnvoy runs Envoy on config until t ends and waits for /ready.
func startEnvoy(t *testing.T, config, admin string) {
	t.Helper()
	bin := testenvoy.Path(t)
	path := filepath.Join(t.TempDir(), "envoy.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	cmd := exec.CommandContext(ctx, bin, "-c", path, "--disable-hot-restart", "--concurrency", "1", "-l", "warning")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("envoy output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + admin + "/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			t.Fatalf("envoy exited:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("envoy not ready after 20s:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// response is what the client got back.
type response struct {
	status  int
	body    string
	headers http.Header
}

func do(t *testing.T, method, url, body string, headers map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, string(b), resp.Header}
}

// backend answers 200 "backend", echoing each request header named
// x-authz-* or traceparent back as "echo-" + name.
func backend(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range r.Header {
			if k = strings.ToLower(k); strings.HasPrefix(k, "x-authz-") || k == "traceparent" {
				w.Header().Set("echo-"+k, strings.Join(v, ","))
			}
		}
		_, _ = io.WriteString(w, "backend")
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// TestServersBehindEnvoy drives both ext_authz servers and the OTLP
// receiver through a real Envoy: allow adds a header upstream, deny sends
// the server's status, body and headers, a check slower than the filter's
// timeout and a stopped server both fail closed with 403, and the spans
// of a request that carried a traceparent arrive as children of it.
func TestServersBehindEnvoy(t *testing.T) {
	grpcAuthz := extauthz.StartGRPC(t)
	httpAuthz := extauthz.StartHTTP(t, "/auth")
	recv := otlp.Start(t)
	addrs := map[string]string{
		"admin": freeAddr(t), "grpcListener": freeAddr(t), "httpListener": freeAddr(t),
		"backend": backend(t), "authzGRPC": grpcAuthz.Addr, "authzHTTP": httpAuthz.Addr, "otlp": recv.Addr,
	}
	startEnvoy(t, render(t, addrs), addrs["admin"])
	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	var upstreamTraceparent string

	for _, tc := range []struct {
		name     string
		server   *extauthz.Server
		listener string
	}{
		{"grpc", grpcAuthz, addrs["grpcListener"]},
		{"http", httpAuthz, addrs["httpListener"]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, base := tc.server, "http://"+tc.listener
			s.On(extauthz.Match{PathPrefix: "/deny"}, extauthz.Deny(http.StatusTeapot, "no tea for you", map[string]string{"x-denied-by": "test-" + tc.name}))
			s.On(extauthz.Match{Header: "x-case", Value: "slow"}, extauthz.Decision{Delay: 2 * time.Second})
			s.On(extauthz.Match{PathPrefix: "/allow"}, extauthz.Allow(map[string]string{"x-authz-user": "alice"}))

			r := do(t, http.MethodPost, base+"/allow/x?q=1", "hello", map[string]string{"x-case": "allow"})
			if r.status != http.StatusOK || r.body != "backend" || r.headers.Get("echo-x-authz-user") != "alice" {
				t.Errorf("allow: got %d %q, upstream x-authz-user %q; want 200 \"backend\" and alice", r.status, r.body, r.headers.Get("echo-x-authz-user"))
			}
			checks := s.Checks()
			if len(checks) != 1 {
				t.Fatalf("allow: the server saw %d checks, want 1: %+v", len(checks), checks)
			}
			c := checks[0]
			if c.Method != http.MethodPost || c.Path != "/allow/x?q=1" || c.Headers["x-case"] != "allow" || c.Body != "hello" || !c.Decision.Allowed() {
				t.Errorf("allow: check = %+v; want POST /allow/x?q=1, x-case allow, body hello, allowed", c)
			}
			if tc.name == "http" && c.AuthPath != "/auth/allow/x?q=1" {
				t.Errorf("http auth path = %q, want the configured prefix /auth before the original path", c.AuthPath)
			}

			if tc.name == "grpc" {
				r = do(t, http.MethodGet, base+"/allow/traced", "", map[string]string{"traceparent": "00-" + traceID + "-" + clientSpan + "-01"})
				if r.status != http.StatusOK || !strings.Contains(r.headers.Get("echo-traceparent"), traceID) {
					t.Errorf("traced allow: got %d, upstream traceparent %q; want 200 and trace %s", r.status, r.headers.Get("echo-traceparent"), traceID)
				}
				upstreamTraceparent = r.headers.Get("echo-traceparent")
			}

			r = do(t, http.MethodGet, base+"/deny", "", nil)
			if r.status != http.StatusTeapot || r.body != "no tea for you" || r.headers.Get("x-denied-by") != "test-"+tc.name {
				t.Errorf("deny: got %d %q x-denied-by=%q; want 418 \"no tea for you\" test-%s", r.status, r.body, r.headers.Get("x-denied-by"), tc.name)
			}

			r = do(t, http.MethodGet, base+"/allow/slow", "", map[string]string{"x-case": "slow"})
			if r.status != http.StatusForbidden || r.body == "backend" {
				t.Errorf("slow beyond the 500ms filter timeout: got %d %q, want 403 (fail closed)", r.status, r.body)
			}

			s.Stop()
			r = do(t, http.MethodGet, base+"/allow/down", "", nil)
			if r.status != http.StatusForbidden || r.body == "backend" {
				t.Errorf("server down: got %d %q, want 403 (fail closed)", r.status, r.body)
			}
			if _, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
				t.Errorf("stopped server %s still accepts connections", s.Addr)
			}
		})
	}

	t.Run("tracing", func(t *testing.T) {
		// 9 requests went through Envoy (5 on grpc, 4 on http), all
		// sampled (random_sampling 100): one ingress span each.
		const requests = 9
		ingress := func(spans []otlp.Span) (n int, traced *otlp.Span) {
			for i, s := range spans {
				if s.Name == "ingress" {
					n++
					if s.TraceID == traceID {
						traced = &spans[i]
					}
				}
			}
			return n, traced
		}
		spans, err := recv.Wait(10*time.Second, func(spans []otlp.Span) bool {
			n, traced := ingress(spans)
			return n >= requests && traced != nil
		})
		if err != nil {
			t.Fatal(err)
		}
		n, root := ingress(spans)
		if n != requests {
			t.Errorf("%d ingress spans, want %d (every request sampled)", n, requests)
		}
		if root.ParentSpanID != clientSpan || root.Kind != "SPAN_KIND_SERVER" || root.Attributes["http.url"] != "http://"+addrs["grpcListener"]+"/allow/traced" || root.Service != "testservers-envoy" {
			t.Errorf("traced ingress span = %+v; want a SERVER span of testservers-envoy, child of the client's span %s, for /allow/traced", *root, clientSpan)
		}
		if want := "00-" + traceID + "-" + root.SpanID + "-01"; upstreamTraceparent != want {
			t.Errorf("upstream traceparent = %q, want %q (Envoy's ingress span as parent)", upstreamTraceparent, want)
		}
		var check *otlp.Span
		for i, s := range spans {
			if s.TraceID == traceID && s.Name == "async envoy.service.auth.v3.Authorization.Check egress" {
				check = &spans[i]
			}
		}
		if check == nil || check.ParentSpanID != root.SpanID || check.Kind != "SPAN_KIND_CLIENT" || check.Attributes["ext_authz_status"] != "ext_authz_ok" {
			t.Errorf("ext_authz check span = %+v; want a CLIENT span, child of the ingress span %s, ext_authz_ok", check, root.SpanID)
		}
	})
}
