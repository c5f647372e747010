package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/template"
	"time"
)

// nackRouteYAML is a route of namespace {{.Namespace}} on the Gateway's
// listener "shared" (routes of every namespace) for host {{.Host}}, which
// redirects prefix {{.Prefix}} to host redirected.example.com; the test
// hook (pkg/translate/testhook) turns prefix /nack-me into a regex Envoy cannot
// compile.
const nackRouteYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: {{.Name}}, namespace: {{.Namespace}}}
spec:
  parentRefs: [{name: gw, namespace: default, sectionName: shared}]
  hostnames: [{{.Host}}]
  rules:
  - matches: [{path: {type: PathPrefix, value: {{.Prefix}}}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: redirected.example.com}}]
`

// nackRoute renders nackRouteYAML.
func nackRoute(name, namespace, host, prefix string) string {
	var b strings.Builder
	if err := template.Must(template.New("").Parse(nackRouteYAML)).Execute(&b, map[string]string{
		"Name": name, "Namespace": namespace, "Host": host, "Prefix": prefix}); err != nil {
		panic(err)
	}
	return b.String()
}

// mark is the current length of the controller's output, for waitOutput.
func (f *fixture) mark() int { return len(f.out.String()) }

// waitOutput polls the controller's output after offset from until it
// matches re and returns the match and how long that took.
func (f *fixture) waitOutput(what string, from int, re *regexp.Regexp, timeout time.Duration) (string, time.Duration) {
	f.t.Helper()
	began := time.Now()
	for deadline := began.Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindString(f.out.String()[from:]); m != "" {
			return m, time.Since(began)
		}
	}
	f.t.Fatalf("%s: no output matching %s within %s", what, re, timeout)
	return "", 0
}

// lastLine returns the last output line that starts with prefix.
func (f *fixture) lastLine(prefix string) string {
	var last string
	for _, l := range strings.Split(f.out.String(), "\n") {
		if strings.HasPrefix(l, prefix) {
			last = l
		}
	}
	return last
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// secondEnvoy starts another Envoy of the standalone scope from the
// controller's bootstrap, with its own node id, admin and readiness ports
// (and what edits change in the bootstrap), and returns its admin port.
func (f *fixture) secondEnvoy(node string, edits ...func(string) string) int {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.state, "envoy-bootstrap.yaml"))
	if err != nil {
		f.t.Fatal(err)
	}
	admin := freePort(f.t)
	s := regexp.MustCompile(`id: "standalone-\d+"`).ReplaceAllString(string(b), fmt.Sprintf("id: %q", node))
	s = regexp.MustCompile(`(address: "127.0.0.1", port_value: )`+fmt.Sprint(f.admin)+`\b`).ReplaceAllString(s, "${1}"+fmt.Sprint(admin))
	s = regexp.MustCompile(`(name: xds_controller_readiness\s+address:\s+socket_address: \{ address: "127.0.0.1", port_value: )\d+`).ReplaceAllString(s, "${1}"+fmt.Sprint(freePort(f.t)))
	for _, edit := range edits {
		s = edit(s)
	}
	boot := filepath.Join(f.t.TempDir(), "bootstrap.yaml")
	if err := os.WriteFile(boot, []byte(s), 0o644); err != nil {
		f.t.Fatal(err)
	}
	log, _ := os.Create(filepath.Join(f.t.TempDir(), "envoy.log"))
	cmd := exec.Command(f.envoy, "-c", boot, "--disable-hot-restart", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); log.Close() })
	return admin
}

// TestStandaloneNackHoldsOnlyTheCulprit (issue 25): a route of one
// namespace that Envoy refuses (the test hook) is held back alone, marked
// Accepted=False reason Rejected with Envoy's message, while the Gateway
// stays Programmed, the other routes keep answering, and a route created
// afterwards in another namespace serves at once; a second Envoy never
// sees the refused route; the fixed route serves again; two routes
// written together, one refused, are told apart.
func TestStandaloneNackHoldsOnlyTheCulprit(t *testing.T) {
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	shared := freePort(t)
	f := startWith(t, func(f *fixture) {
		alpha, beta := backend(t, "alpha"), backend(t, "beta")
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Listeners":   []string{fmt.Sprintf("{name: shared, protocol: HTTP, port: %d, allowedRoutes: {namespaces: {from: All}}}", shared)},
			"Backends":    []gatewayBackend{{Name: "alpha", Port: portOf(alpha)}, {Name: "beta", Port: portOf(beta)}},
		})
		f.vals = map[string]any{"HostABackend": "alpha"}
		render(t, filepath.Join(f.dir, "routes.yaml"), routesYAML, f.vals)
	}, func(f *fixture) {
		f.env = append(f.env, "XDS_CONTROLLER_TESTHOOK_REJECT_PREFIX=/nack-me")
		f.args = append(f.args, "--metrics-address", metrics)
	})
	// The redirects are what the routes answer, not to be followed.
	f.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	redirects := func(host, path string) error {
		r := f.send(shared, host, path)
		if r.status != http.StatusFound || !strings.HasPrefix(r.header.Get("Location"), "http://redirected.example.com") {
			return fmt.Errorf("%s%s: %d %q %v", host, path, r.status, r.body, r.header)
		}
		return nil
	}
	awaitRedirect := func(host, path string) time.Duration {
		t.Helper()
		began := time.Now()
		var err error
		for deadline := began.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if err = redirects(host, path); err == nil {
				return time.Since(began)
			}
		}
		t.Fatalf("no redirect within 30s: %v", err)
		return 0
	}
	f.await("a.example.com", "/", 200, "alpha /")
	gatewayProgrammed := regexp.MustCompile(`Gateway default/gw: Accepted=True\(Accepted\) Programmed=True\(Programmed\)`)
	f.waitOutput("Programmed from Envoy's ACK", 0, gatewayProgrammed, 30*time.Second)

	// 1. A route of namespace team-b that Envoy refuses.
	began, from := time.Now(), f.mark()
	render(t, filepath.Join(f.dir, "nack.yaml"), nackRoute("nack-me", "team-b", "d.example.com", "/nack-me"), nil)
	line, _ := f.waitOutput("the refused route marked", from,
		regexp.MustCompile(`HTTPRoute team-b/nack-me -> default/gw/shared: Accepted=False\(Rejected\)[^\n]*`), 30*time.Second)
	t.Logf("the refused route marked %s after the edit:\n%s", time.Since(began).Round(time.Millisecond), line)
	if !strings.Contains(line, "missing ): (") {
		t.Errorf("the route's status lacks Envoy's reason: %s", line)
	}
	t.Logf("NACK line: %s", f.lastLine("xDS: Envoy proxy"))

	// 2. A route created afterwards in another namespace serves within
	// the usual propagation time.
	began = time.Now()
	render(t, filepath.Join(f.dir, "team-c.yaml"), nackRoute("new", "team-c", "e.example.com", "/"), nil)
	took := awaitRedirect("e.example.com", "/")
	t.Logf("a new route of namespace team-c answered %s after it was written", took.Round(time.Millisecond))

	// The Gateway stayed Programmed: the scope is not Rejected as a whole.
	if m := regexp.MustCompile(`Gateway default/gw[^\n]*Programmed=False[^\n]*`).FindString(f.out.String()[from:]); m != "" {
		t.Errorf("the Gateway lost Programmed for the refused route: %s", m)
	}
	t.Logf("Gateway line: %s", f.lastLine("Gateway default/gw:"))
	t.Logf("listener line: %s", f.lastLine("Gateway default/gw listener shared:"))
	for _, c := range []struct {
		port       int
		host, path string
		status     int
		body       string
	}{
		{f.gwPort, "a.example.com", "/", 200, "alpha /"},
		{f.gwPort, "b.example.com", "/api/x", 200, "beta /api/x"},
		{shared, "d.example.com", "/nack-me", 404, ""},
	} {
		if code, body := f.getOn(c.port, c.host, c.path); code != c.status || !strings.HasPrefix(body, c.body) {
			t.Errorf("while the refused route is held, %s%s = %d %q, want %d %q", c.host, c.path, code, body, c.status, c.body)
		}
	}
	m, err := httpGet("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	nacks := regexp.MustCompile(`xds_controller_xds_nacks_total\{scope="standalone",type="RouteConfiguration"\} (\d+)`).FindStringSubmatch(m)
	if nacks == nil || nacks[1] == "0" {
		t.Errorf("metrics lack the NACK counter:\n%s", m)
	} else {
		t.Logf("metrics: %s", nacks[0])
	}

	// 3. A new Envoy gets the newest configuration without the refused
	// route, and accepts it.
	admin := f.secondEnvoy("second-envoy")
	var dump string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		dump, _ = httpGet(fmt.Sprintf("http://127.0.0.1:%d/config_dump?resource=dynamic_route_configs", admin))
		if strings.Contains(dump, "e.example.com") {
			break
		}
	}
	if !strings.Contains(dump, "a.example.com") || !strings.Contains(dump, "e.example.com") || strings.Contains(dump, "nack-me") {
		t.Errorf("the new Envoy does not serve the newest configuration without the refused route:\n%s", dump)
	}
	stats, _ := httpGet(fmt.Sprintf("http://127.0.0.1:%d/stats?filter=update_rejected", admin))
	for _, l := range strings.Split(strings.TrimSpace(stats), "\n") {
		if l != "" && !strings.HasSuffix(l, ": 0") {
			t.Errorf("the new Envoy rejected an update: %s", l)
		}
	}

	// 4. The fixed route (a new generation) is tried again and serves.
	from = f.mark()
	render(t, filepath.Join(f.dir, "nack.yaml"), nackRoute("nack-me", "team-b", "d.example.com", "/fixed"), nil)
	took = awaitRedirect("d.example.com", "/fixed")
	line, _ = f.waitOutput("the fixed route accepted", from,
		regexp.MustCompile(`HTTPRoute team-b/nack-me -> default/gw/shared: Accepted=True\(Accepted\)[^\n]*`), 30*time.Second)
	t.Logf("the fixed route answered %s after the edit: %s", took.Round(time.Millisecond), line)

	// 5. Two routes written at once, one refused: both are suspects, told
	// apart by halves; the good one serves, the refused one is held.
	from, began = f.mark(), time.Now()
	render(t, filepath.Join(f.dir, "pair.yaml"), nackRoute("good", "team-d", "g.example.com", "/")+"---\n"+
		nackRoute("bad", "team-e", "h.example.com", "/nack-me"), nil)
	took = awaitRedirect("g.example.com", "/")
	line, _ = f.waitOutput("the refused one of two marked", from,
		regexp.MustCompile(`HTTPRoute team-e/bad -> default/gw/shared: Accepted=False\(Rejected\)[^\n]*`), 30*time.Second)
	t.Logf("of two routes written together, the good one answered %s after the write, the refused one is marked: %s", took.Round(time.Millisecond), line)
	if l := f.lastLine("HTTPRoute team-d/good -> default/gw/shared:"); !strings.Contains(l, "Accepted=True") {
		t.Errorf("the good route of the pair: %s", l)
	}
	for _, c := range [][2]string{{"a.example.com", "/"}, {"e.example.com", "/"}, {"d.example.com", "/fixed"}} {
		if c[0] == "a.example.com" {
			if code, body := f.get(c[0], c[1]); code != 200 || !strings.HasPrefix(body, "alpha /") {
				t.Errorf("after the pair, %s%s = %d %q", c[0], c[1], code, body)
			}
			continue
		}
		if err := redirects(c[0], c[1]); err != nil {
			t.Errorf("after the pair: %v", err)
		}
	}
	if l := f.lastLine("Gateway default/gw:"); !gatewayProgrammed.MatchString(l) {
		t.Errorf("the Gateway after the pair: %s", l)
	}
}
