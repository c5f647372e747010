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
	"time"
)

// nackRouteYAML attaches a route whose path prefix the test hook
// (internal/testhook) turns into a regex Envoy cannot compile.
const nackRouteYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: nack-me, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [d.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /nack-me}}]
    backendRefs: [{name: alpha, port: 80}]
`

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
// controller's bootstrap, with its own node id, admin and readiness ports,
// and returns its admin port.
func (f *fixture) secondEnvoy(node string) int {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.state, "envoy-bootstrap.yaml"))
	if err != nil {
		f.t.Fatal(err)
	}
	admin := freePort(f.t)
	s := regexp.MustCompile(`id: "standalone-\d+"`).ReplaceAllString(string(b), fmt.Sprintf("id: %q", node))
	s = regexp.MustCompile(`(address: "127.0.0.1", port_value: )`+fmt.Sprint(f.admin)+`\b`).ReplaceAllString(s, "${1}"+fmt.Sprint(admin))
	s = regexp.MustCompile(`(name: xds_controller_readiness\s+address:\s+socket_address: \{ address: "127.0.0.1", port_value: )\d+`).ReplaceAllString(s, "${1}"+fmt.Sprint(freePort(f.t)))
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

func TestStandaloneNackKeepsLastGood(t *testing.T) {
	metrics := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	f := start(t, func(f *fixture) {
		f.env = append(f.env, "XDS_CONTROLLER_TESTHOOK_REJECT_PREFIX=/nack-me")
		f.args = append(f.args, "--metrics-address", metrics)
	})
	f.await("a.example.com", "/", 200, "alpha /")
	_, took := f.waitOutput("Programmed from Envoy's ACK", 0,
		regexp.MustCompile(`Gateway default/gw: Accepted=True\(Accepted\) Programmed=True\(Programmed\)`), 30*time.Second)
	t.Logf("Gateway Programmed=True %s after the first route answered: %s", took.Round(time.Millisecond), f.lastLine("Gateway default/gw:"))

	// The hook makes Envoy reject the route configuration with this route.
	began, from := time.Now(), f.mark()
	render(t, filepath.Join(f.dir, "nack.yaml"), nackRouteYAML, nil)
	line, _ := f.waitOutput("NACK in status", from,
		regexp.MustCompile(`Gateway default/gw: Accepted=True\(Accepted\) Programmed=False\(Rejected\)[^\n]*`), 30*time.Second)
	t.Logf("NACK shown in status %s after the edit:\n%s", time.Since(began).Round(time.Millisecond), line)
	if !strings.Contains(line, "missing ): (") {
		t.Errorf("the status line lacks Envoy's reason: %s", line)
	}
	t.Logf("listener line: %s", f.lastLine("Gateway default/gw listener http:"))
	t.Logf("NACK line: %s", f.lastLine("xDS: Envoy proxy"))

	// The old routes keep answering; the rejected route is not there.
	for _, c := range []struct {
		host, path string
		status     int
		body       string
	}{
		{"a.example.com", "/", 200, "alpha /"},
		{"b.example.com", "/api/x", 200, "beta /api/x"},
		{"d.example.com", "/nack-me", 404, ""},
	} {
		if code, body := f.get(c.host, c.path); code != c.status || !strings.HasPrefix(body, c.body) {
			t.Errorf("during the NACK, %s%s = %d %q, want %d %q", c.host, c.path, code, body, c.status, c.body)
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

	// A new Envoy started during the NACK gets the last good
	// configuration, accepts it, and never sees the rejected one.
	admin := f.secondEnvoy("second-envoy")
	var dump string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		dump, _ = httpGet(fmt.Sprintf("http://127.0.0.1:%d/config_dump?resource=dynamic_route_configs", admin))
		if strings.Contains(dump, "a.example.com") {
			break
		}
	}
	if !strings.Contains(dump, "a.example.com") || strings.Contains(dump, "d.example.com") || strings.Contains(dump, "nack-me") {
		t.Errorf("the new Envoy does not serve the last good route configuration:\n%s", dump)
	}
	stats, _ := httpGet(fmt.Sprintf("http://127.0.0.1:%d/stats?filter=update_rejected", admin))
	for _, l := range strings.Split(strings.TrimSpace(stats), "\n") {
		if l != "" && !strings.HasSuffix(l, ": 0") {
			t.Errorf("the new Envoy rejected an update: %s", l)
		}
	}
	if code, body := f.get("a.example.com", "/"); code != 200 || !strings.HasPrefix(body, "alpha /") {
		t.Errorf("with two Envoys, a.example.com/ = %d %q, want 200 alpha", code, body)
	}

	// Fixing the input serves again.
	from = f.mark()
	if err := os.Remove(filepath.Join(f.dir, "nack.yaml")); err != nil {
		t.Fatal(err)
	}
	_, took = f.waitOutput("Programmed again", from,
		regexp.MustCompile(`Gateway default/gw: Accepted=True\(Accepted\) Programmed=True\(Programmed\)`), 30*time.Second)
	t.Logf("after the fix, %s later: %s", took.Round(time.Millisecond), f.lastLine("Gateway default/gw:"))
}
