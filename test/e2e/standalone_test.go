// Package e2e runs the real xds-controller binary in standalone mode with
// the real Envoy, and sends HTTP through Envoy to backends on loopback.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/xds-controller/xds-controller/internal/testenvoy"
)

// backend answers "<name> <path> <x-routed-by>", with the response headers
// x-backend (name) and x-host (the request's Host), so a test sees which
// backend a request reached and what Envoy added or rewrote.
func backend(t testing.TB, name string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-backend", name)
		w.Header().Set("x-host", r.Host)
		fmt.Fprintf(w, "%s %s %s", name, r.URL.Path, r.Header.Get("x-routed-by"))
	}))
	t.Cleanup(s.Close)
	return s
}

// handedOut are the ports freePort returned in this process: two of a
// test's ports (a listener and Envoy's admin) must differ.
var handedOut sync.Map

// freePort returns a loopback TCP port that was free a moment ago and that
// no earlier call returned. It is drawn below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range, 32768 and up by default), which the
// kernel never hands out by itself: a port taken from ":0" and closed can
// be given, before the test binds it again, to any outgoing connection as
// its source port (Envoy's, the test client's), which failed the bind
// ("address already in use") now and then.
func freePort(t testing.TB) int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 12000 {
				low = n
			}
		}
	}
	for range 1000 {
		port := 10000 + rand.IntN(low-10000)
		if _, taken := handedOut.LoadOrStore(port, true); taken {
			continue
		}
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("no free port below the ephemeral range")
	return 0
}

func portOf(s *httptest.Server) int { return s.Listener.Addr().(*net.TCPAddr).Port }

// syncBuffer is a bytes.Buffer safe for the process's writer and the test.
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

// gatewayBackend is one Service of gatewayYAML, with an EndpointSlice of
// one endpoint per address of Addresses (127.0.0.1 when empty), each at
// Port; AppProtocol, when set, is its port's appProtocol, and Protocol,
// when set, its port's protocol (TCP when unset).
type gatewayBackend struct {
	Name        string
	Port        int
	AppProtocol string
	Protocol    string
	Addresses   []string
}

// Endpoints are the addresses of the backend's endpoints.
func (b gatewayBackend) Endpoints() []string {
	if len(b.Addresses) == 0 {
		return []string{"127.0.0.1"}
	}
	return b.Addresses
}

// gatewayYAML is the GatewayClass, the Gateway "gw" with one HTTP listener
// on GatewayPort (and, after it, each entry of Listeners: a listener as a
// YAML flow mapping) and, when TLS is set, TLS as its spec.tls (a YAML
// flow mapping too), and a Service per gatewayBackend in Backends.
const gatewayYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: e2e}
spec: {controllerName: xds-controller.dev/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: e2e
  addresses: [{type: IPAddress, value: 127.0.0.1}]
  listeners:
  - {name: http, protocol: HTTP, port: {{.GatewayPort}}}
{{range .Listeners}}  - {{.}}
{{end}}{{with .TLS}}  tls: {{.}}
{{end}}{{range .Backends}}---
apiVersion: v1
kind: Service
metadata: {name: {{.Name}}, namespace: default}
spec:
  ports: [{name: http, port: 80, targetPort: {{.Port}}{{with .AppProtocol}}, appProtocol: {{.}}{{end}}{{with .Protocol}}, protocol: {{.}}{{end}}}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: {{.Name}}-1
  namespace: default
  labels: {kubernetes.io/service-name: {{.Name}}}
addressType: IPv4
ports: [{name: http, port: {{.Port}}{{with .Protocol}}, protocol: {{.}}{{end}}}]
endpoints:{{range .Endpoints}}
- addresses: ["{{.}}"]{{end}}
{{end}}`

const routesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: by-host, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [a.example.com]
  rules:
  - backendRefs: [{name: {{.HostABackend}}, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: by-path-and-header, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [b.example.com]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /api}
      headers: [{name: x-pick, value: alpha}]
    backendRefs: [{name: alpha, port: 80}]
  - matches:
    - path: {type: PathPrefix, value: /api}
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{name: x-routed-by, value: xds-controller}]
    backendRefs: [{name: beta, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: half-broken, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [c.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /broken}}]
    backendRefs: [{name: does-not-exist, port: 80}]
  - backendRefs: [{name: alpha, port: 80}]
`

type fixture struct {
	t       testing.TB
	dir     string
	gwPort  int
	out     *syncBuffer
	client  *http.Client
	admin   int
	vals    map[string]any
	cancel  context.CancelFunc
	stopped chan struct{}

	// bin is the built binary, state its state folder, xds its xDS
	// address, envoy the Envoy binary.
	bin, state, xds, envoy string
	// env are extra environment variables and args extra arguments of
	// the controller process; noEnvoy runs it with --no-envoy.
	env, args []string
	noEnvoy   bool
	// proc is the running controller process.
	proc *exec.Cmd
}

func render(t testing.TB, path, text string, data any) {
	t.Helper()
	var b bytes.Buffer
	if err := template.Must(template.New("").Parse(text)).Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	// Write then rename, as editors do, so the watcher never reads half a file.
	tmp := path + ".tmp~"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// start runs `serve standalone` on gatewayYAML and routesYAML, with the
// HTTP backends alpha and beta; setup may change the fixture first (env,
// args, noEnvoy).
func start(t *testing.T, setup ...func(*fixture)) *fixture {
	return startWith(t, func(f *fixture) {
		alpha, beta := backend(t, "alpha"), backend(t, "beta")
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends":    []gatewayBackend{{Name: "alpha", Port: portOf(alpha)}, {Name: "beta", Port: portOf(beta)}},
		})
		f.vals = map[string]any{"HostABackend": "alpha"}
		render(t, filepath.Join(f.dir, "routes.yaml"), routesYAML, f.vals)
	}, setup...)
}

// startWith builds the binary (once per test run), lets config write the
// input files into f.dir (and start the backends they point at), lets
// setup change the fixture, and starts `serve standalone`.
func startWith(t testing.TB, config func(*fixture), setup ...func(*fixture)) *fixture {
	envoy := testenvoy.Path(t)
	buildOnce.Do(func() {
		// XDS_E2E_BIN runs another build (a benchmark's "before").
		if builtBin = os.Getenv("XDS_E2E_BIN"); builtBin != "" {
			return
		}
		dir, err := os.MkdirTemp("", "xds-controller-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "xds-controller")
		if out, err := exec.Command("go", "build", "-o", builtBin, "../../cmd/xds-controller").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	f := &fixture{t: t, dir: t.TempDir(), gwPort: freePort(t), out: &syncBuffer{}, admin: freePort(t),
		bin: builtBin, state: t.TempDir(), xds: fmt.Sprintf("127.0.0.1:%d", freePort(t)), envoy: envoy}
	f.client = &http.Client{Timeout: 2 * time.Second}
	config(f)
	for _, s := range setup {
		s(f)
	}
	f.launch()
	t.Cleanup(func() {
		f.stop()
		if t.Failed() {
			t.Logf("controller output:\n%s", f.out.String())
		}
	})
	return f
}

// launch starts the controller process.
func (f *fixture) launch() {
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.stopped = make(chan struct{})
	args := []string{"serve", "standalone", "--config", f.dir, "--state-dir", f.state, "--xds-address", f.xds,
		"--admin-port", fmt.Sprint(f.admin), "--readiness-port", fmt.Sprint(freePort(f.t))}
	if f.noEnvoy {
		args = append(args, "--no-envoy")
	} else {
		args = append(args, "--envoy-path", f.envoy)
	}
	cmd := exec.CommandContext(ctx, f.bin, append(args, f.args...)...)
	cmd.Env = append(os.Environ(), f.env...)
	cmd.Stdout, cmd.Stderr = f.out, f.out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.proc = cmd
	stopped := f.stopped
	go func() { _ = cmd.Wait(); close(stopped) }()
}

// stop ends the controller process (SIGINT) and waits for it.
func (f *fixture) stop() {
	f.cancel()
	<-f.stopped
}

// get sends a request for host and path through Envoy, with extra headers
// as name, value pairs. It returns the status and body, or -1 when the
// request failed.
func (f *fixture) get(host, path string, headers ...string) (int, string) {
	return f.getOn(f.gwPort, host, path, headers...)
}

// getOn is get through Envoy's port port (another Gateway's listener).
func (f *fixture) getOn(port int, host, path string, headers ...string) (int, string) {
	r := f.send(port, host, path, headers...)
	return r.status, r.body
}

// reply is what one request through Envoy gave: the status (-1 when the
// request failed), the body (the error when it failed) and the response
// headers.
type reply struct {
	status int
	body   string
	header http.Header
}

// exchange sends req with c and reads the whole answer (-1 and the error
// when the request failed).
func exchange(c *http.Client, req *http.Request) reply {
	resp, err := c.Do(req)
	if err != nil {
		return reply{status: -1, body: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: string(b), header: resp.Header}
}

// send is getOn with the response headers too.
func (f *fixture) send(port int, host, path string, headers ...string) reply {
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", port, path), nil)
	req.Host = host
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return exchange(f.client, req)
}

// await polls until a request for host and path answers with status and a
// body starting with prefix, and returns how long that took.
func (f *fixture) await(host, path string, status int, prefix string) time.Duration {
	f.t.Helper()
	began := time.Now()
	deadline := began.Add(30 * time.Second)
	var code int
	var body string
	for time.Now().Before(deadline) {
		code, body = f.get(host, path)
		if code == status && strings.HasPrefix(body, prefix) {
			return time.Since(began)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.t.Fatalf("%s%s: got %d %q, want %d %q...", host, path, code, body, status, prefix)
	return 0
}

func TestStandaloneRoutesTraffic(t *testing.T) {
	f := start(t)
	ready := f.await("a.example.com", "/", 200, "alpha /")
	t.Logf("first route answered %s after start", ready.Round(time.Millisecond))

	for _, c := range []struct {
		name, host, path string
		headers          []string
		status           int
		body             string
	}{
		{"by host", "a.example.com", "/x", nil, 200, "alpha /x "},
		{"by path", "b.example.com", "/api/users", nil, 200, "beta /api/users xds-controller"},
		{"by header", "b.example.com", "/api/users", []string{"x-pick", "alpha"}, 200, "alpha /api/users "},
		{"prefix is segment-wise", "b.example.com", "/apix", nil, 404, ""},
		{"unknown host", "nowhere.example.com", "/", nil, 404, ""},
		{"missing Service answers 500 on its rule", "c.example.com", "/broken/x", nil, 500, ""},
		{"the route's other rule still serves", "c.example.com", "/ok", nil, 200, "alpha /ok"},
	} {
		code, body := f.get(c.host, c.path, c.headers...)
		if code != c.status || !strings.HasPrefix(body, c.body) {
			t.Errorf("%s: %s%s = %d %q, want %d %q...", c.name, c.host, c.path, code, body, c.status, c.body)
		}
	}
	out := f.out.String()
	for _, want := range []string{
		"HTTPRoute default/half-broken -> default/gw: Accepted=True(Accepted) ResolvedRefs=False(BackendNotFound)",
		"Gateway default/gw: Accepted=True(Accepted)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q", want)
		}
	}
}

func TestStandaloneFollowsEdits(t *testing.T) {
	f := start(t)
	f.await("a.example.com", "/", 200, "alpha /")

	f.vals["HostABackend"] = "beta"
	render(t, filepath.Join(f.dir, "routes.yaml"), routesYAML, f.vals)
	took := f.await("a.example.com", "/", 200, "beta /")
	t.Logf("edited route answered after %s", took.Round(time.Millisecond))

	// A broken document in a new file is reported by file and name; the
	// rest keeps serving.
	bad := "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: typo, namespace: default}\nspec:\n  parentRefs: [{name: gw}]\n  rulez: []\n"
	if err := os.WriteFile(filepath.Join(f.dir, "zz-bad.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(f.out.String(), "zz-bad.yaml HTTPRoute default/typo") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(f.out.String(), "zz-bad.yaml HTTPRoute default/typo") {
		t.Errorf("the bad document was not reported with its file and name")
	}
	if code, body := f.get("b.example.com", "/api/x"); code != 200 || !strings.HasPrefix(body, "beta") {
		t.Errorf("after a bad file, b.example.com/api/x = %d %q, want 200 beta", code, body)
	}

	// A half-finished edit that breaks a document keeps the file's last
	// good objects serving.
	routes := filepath.Join(f.dir, "routes.yaml")
	good, _ := os.ReadFile(routes)
	broken := strings.Replace(string(good), "hostnames: [a.example.com]", "hostnames: [a.example.com", 1)
	if err := os.WriteFile(routes, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(f.out.String(), "serving the last good version of HTTPRoute default/by-host") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := f.get("a.example.com", "/"); code != 200 || !strings.HasPrefix(body, "beta") {
		t.Errorf("during a broken edit, a.example.com/ = %d %q, want the last good route (200 beta)", code, body)
	}

	// The whole folder deleted and created again is picked up.
	gw, _ := os.ReadFile(filepath.Join(f.dir, "gateway.yaml"))
	if err := os.RemoveAll(f.dir); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := os.Mkdir(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "gateway.yaml"), gw, 0o644); err != nil {
		t.Fatal(err)
	}
	f.vals["HostABackend"] = "alpha"
	render(t, routes, routesYAML, f.vals)
	took = f.await("a.example.com", "/", 200, "alpha /")
	t.Logf("re-created folder served after %s", took.Round(time.Millisecond))
}

func TestStandaloneRestartsEnvoy(t *testing.T) {
	f := start(t)
	f.await("a.example.com", "/", 200, "alpha /")
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/quitquitquit", f.admin), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Envoy goes away, then the controller starts it again.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if code, _ := f.get("a.example.com", "/"); code == -1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := f.await("a.example.com", "/", 200, "alpha /")
	t.Logf("Envoy serving again %s after it quit", took.Round(time.Millisecond))
	if !strings.Contains(f.out.String(), "Envoy exited; restarting") {
		t.Error("the restart was not logged")
	}
}
