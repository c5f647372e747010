package e2ecluster

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOperatorTools (issue 17) runs the operator commands, built from this
// repository, against the local cluster with two controller replicas and
// the NACK test hook on, as the README writes them: without the
// controller's namespace (-n, --controller-namespace), which they find by
// the labels of the chart's controller pods (issue 26);
//   - after `kubectl apply -f examples/`, `proxy-status` lists every Envoy
//     pod, each with every resource type it subscribed to SYNCED, its
//     Gateways and an unexpired SVID;
//   - `config-dump web --type routes` prints the routes of the applied
//     HTTPRoutes, and only routes; `--diff` finds no drift;
//   - after a route Envoy rejects (the hook), the route is held back and
//     marked Accepted=False reason Rejected with Envoy's message, every
//     Envoy is SYNCED without it (issue 25: a NACK holds back its culprit,
//     not the scope), and `config-dump --diff`, which does not know the
//     controller's holds, shows the held route as the one difference;
//   - without the route, every Envoy is still SYNCED.
func TestOperatorTools(t *testing.T) {
	inBothModes(t, (*env).operatorTools)
}

// proxyStatus is the part of `proxy-status -o json` the test reads.
type proxyStatus struct {
	Proxies []struct {
		Pod        string   `json:"pod"`
		Namespace  string   `json:"namespace"`
		Scope      string   `json:"scope"`
		Gateways   []string `json:"gateways"`
		Replica    string   `json:"replica"`
		SVIDExpiry *string  `json:"svidExpiry"`
		Types      map[string]struct {
			State   string `json:"state"`
			Message string `json:"message"`
		} `json:"types"`
	} `json:"proxies"`
}

func (e *env) operatorTools(mode string) {
	t := e.t
	cli := buildCLI(t)
	e.cleanup()
	e.helmInstallWith(mode, map[string]any{
		"replicas": 2,
		"extraEnv": []any{map[string]any{"name": nackHookEnv, "value": nackPrefix}},
	})
	e.applyExamples()
	web := e.gatewayAddress("web", 4*time.Minute)
	e.expectBackend(web, "foo.example.com", "/", "foo", 3*time.Minute)
	fleetNS, webScope := releaseNamespace, "gatewayclass/"+className
	if mode == "Dedicated" {
		fleetNS, webScope = exampleNamespace, "gateway/"+exampleNamespace+"/web"
	}
	webGateway := exampleNamespace + "/web"

	// 1. Every Envoy SYNCED.
	var status proxyStatus
	e.eventually("proxy-status: every Envoy pod listed and SYNCED", 3*time.Minute, func() error {
		var err error
		if status, err = e.proxyStatus(cli); err != nil {
			return err
		}
		pods := e.envoyPods()
		if len(status.Proxies) != len(pods) || len(pods) == 0 {
			return fmt.Errorf("%d proxies listed, %d Envoy pods running %v", len(status.Proxies), len(pods), pods)
		}
		for _, p := range status.Proxies {
			if !pods[p.Namespace+"/"+p.Pod] {
				return fmt.Errorf("proxy %s/%s is no running Envoy pod", p.Namespace, p.Pod)
			}
			if err := allSynced(p.Types); err != nil {
				return fmt.Errorf("%s/%s: %w", p.Namespace, p.Pod, err)
			}
		}
		return nil
	})
	served := false
	for _, p := range status.Proxies {
		if contains(p.Gateways, webGateway) {
			served = true
			if p.Scope != webScope || p.Namespace != fleetNS {
				t.Errorf("proxy %s/%s of %s: scope %s, want %s in namespace %s", p.Namespace, p.Pod, webGateway, p.Scope, webScope, fleetNS)
			}
		}
		if p.Replica == "" {
			t.Errorf("proxy %s/%s: no replica", p.Namespace, p.Pod)
		}
		if p.SVIDExpiry == nil {
			t.Errorf("proxy %s/%s: no SVID expiry", p.Namespace, p.Pod)
		} else if exp, err := time.Parse(time.RFC3339, *p.SVIDExpiry); err != nil || !exp.After(time.Now()) {
			t.Errorf("proxy %s/%s: SVID expiry %s (%v), want in the future", p.Namespace, p.Pod, *p.SVIDExpiry, err)
		}
	}
	if !served {
		t.Errorf("no proxy serves Gateway %s: %+v", webGateway, status.Proxies)
	}
	t.Logf("xds-controller proxy-status:\n%s", e.mustCLI(cli, "proxy-status"))

	// 2. config-dump --type routes shows the applied routes, only routes.
	routes := e.mustCLI(cli, "config-dump", "web", "-n", exampleNamespace, "--type", "routes")
	for _, want := range []string{"RoutesConfigDump", "foo.example.com", "bar.example.com", "httproute/" + exampleNamespace + "/"} {
		if !strings.Contains(routes, want) {
			t.Errorf("config-dump --type routes lacks %q:\n%s", want, routes)
		}
	}
	for _, not := range []string{"ListenersConfigDump", "ClustersConfigDump", "BootstrapConfigDump"} {
		if strings.Contains(routes, not) {
			t.Errorf("config-dump --type routes printed %s", not)
		}
	}
	t.Logf("config-dump web --type routes (%d lines), head:\n%s", strings.Count(routes, "\n"), head(routes, 40))
	noDrift := func() error {
		out, err := e.cli(cli, "config-dump", "web", "-n", exampleNamespace, "--diff")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "holds the controller's snapshot") {
			return fmt.Errorf("unexpected output:\n%s", out)
		}
		t.Logf("config-dump --diff: %s", out)
		return nil
	}
	e.eventually("config-dump --diff: no drift", time.Minute, noDrift)
	everySynced := func() error {
		st, err := e.proxyStatus(cli)
		if err != nil {
			return err
		}
		for _, p := range st.Proxies {
			if err := allSynced(p.Types); err != nil {
				return fmt.Errorf("%s/%s: %w", p.Namespace, p.Pod, err)
			}
		}
		return nil
	}

	// 3. A route Envoy rejects is held back (pkg/quarantine) and marked
	// Accepted=False reason Rejected with Envoy's message; the proxies go
	// on with the rest, SYNCED.
	e.mustKubectl(nackRouteYAML, "apply", "-f", "-")
	e.eventually("route nack-me Accepted=False reason Rejected with Envoy's message", 2*time.Minute,
		e.routeCondition(exampleNamespace, "nack-me", "Accepted", "False", "Rejected", "missing )"))
	e.eventually("proxy-status: every Envoy SYNCED with the refused route held", 2*time.Minute, everySynced)
	t.Logf("xds-controller proxy-status with the refused route held:\n%s", e.mustCLI(cli, "proxy-status"))
	// config-dump --diff translates the API server's objects itself and
	// does not know the controller's holds: the held route is the one
	// difference it shows (exit 1).
	out, err := e.cli(cli, "config-dump", "web", "-n", exampleNamespace, "--diff", "--type", "routes")
	if err == nil || !strings.Contains(out, "nack.example.com") || !strings.Contains(err.Error(), "differ") {
		t.Errorf("config-dump --diff with the refused route held: want the held route as the difference and exit 1; got %v:\n%s", err, out)
	}
	t.Logf("config-dump web --diff --type routes with the refused route held (%v):\n%s", err, out)
	if routes := e.mustCLI(cli, "config-dump", "web", "-n", exampleNamespace, "--type", "routes"); strings.Contains(routes, "nack.example.com") {
		t.Errorf("config-dump --type routes: the held route reached Envoy:\n%s", routes)
	}

	// 4. Without it, still SYNCED.
	e.mustKubectl("", "-n", exampleNamespace, "delete", "httproute", "nack-me")
	e.eventually("proxy-status: every Envoy SYNCED after the rejected route is gone", 2*time.Minute, everySynced)
}

// buildCLI builds cmd/xds-controller of this repository once per test.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "xds-controller")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/xds-controller")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/xds-controller: %v\n%s", err, out)
	}
	return bin
}

// cli runs the CLI with the cluster's kubeconfig; stdout and stderr
// combined.
func (e *env) cli(bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, append(args, "--kubeconfig", e.kubeconfig)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("xds-controller %s: %w: %s", strings.Join(args, " "), err, lastLine(string(out)))
	}
	return string(out), nil
}

func (e *env) mustCLI(bin string, args ...string) string {
	e.t.Helper()
	out, err := e.cli(bin, args...)
	if err != nil {
		e.t.Fatalf("%v\n%s", err, out)
	}
	return out
}

func (e *env) proxyStatus(bin string) (proxyStatus, error) {
	var st proxyStatus
	cmd := exec.Command(bin, "proxy-status", "-o", "json", "--kubeconfig", e.kubeconfig)
	out, err := cmd.Output()
	if err != nil {
		return st, fmt.Errorf("proxy-status: %w", err)
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return st, fmt.Errorf("proxy-status -o json: %w:\n%s", err, out)
	}
	return st, nil
}

// envoyPods are the running Envoy pods ("namespace/name") of the whole
// cluster: proxy-status lists every fleet, including those of Gateways
// that other tests (a conformance run) left behind.
func (e *env) envoyPods() map[string]bool {
	out := map[string]bool{}
	list, err := e.kubectl("", "get", "pods", "-A", "-l", "app.kubernetes.io/name=envoy",
		"-o", `jsonpath={range .items[?(@.status.phase=="Running")]}{.metadata.namespace}/{.metadata.name}{" "}{.metadata.deletionTimestamp}{"\n"}{end}`)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if f := strings.Fields(line); len(f) == 1 {
			out[f[0]] = true
		}
	}
	return out
}

// allSynced checks that every type a proxy subscribed to is SYNCED, and
// that it subscribed to listeners, routes and clusters at least.
func allSynced(types map[string]struct {
	State   string `json:"state"`
	Message string `json:"message"`
}) error {
	for _, must := range []string{"listeners", "routes", "clusters"} {
		if types[must].State == "-" || types[must].State == "" {
			return fmt.Errorf("%s not subscribed", must)
		}
	}
	for name, ts := range types {
		if ts.State != "SYNCED" && ts.State != "-" {
			return fmt.Errorf("%s %s %s", name, ts.State, ts.Message)
		}
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func head(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
