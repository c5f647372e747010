package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// dynamicState returns, per dynamic listener and route configuration in
// Envoy's config dump, its version_info and last_updated.
func dynamicState(t *testing.T, admin int) map[string]string {
	t.Helper()
	body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/config_dump", admin))
	if err != nil {
		t.Fatal(err)
	}
	var dump struct {
		Configs []map[string]json.RawMessage `json:"configs"`
	}
	if err := json.Unmarshal([]byte(body), &dump); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	type entry struct {
		Version     string `json:"version_info"`
		LastUpdated string `json:"last_updated"`
		Listener    struct {
			Name string `json:"name"`
		} `json:"listener"`
		RouteConfig struct {
			Name string `json:"name"`
		} `json:"route_config"`
	}
	for _, c := range dump.Configs {
		var listeners []struct {
			Name   string `json:"name"`
			Active entry  `json:"active_state"`
		}
		var routes []entry
		_ = json.Unmarshal(c["dynamic_listeners"], &listeners)
		_ = json.Unmarshal(c["dynamic_route_configs"], &routes)
		for _, l := range listeners {
			out["listener "+l.Name] = l.Active.Version + " " + l.Active.LastUpdated
		}
		for _, r := range routes {
			out["route "+r.RouteConfig.Name] = r.Version + " " + r.LastUpdated
		}
	}
	return out
}

// TestStandaloneRestartLosesNothing: Envoy runs on its own; the controller
// is killed (SIGKILL) and started again while a client sends requests.
// No request fails, Envoy reconnects and is given nothing new (its
// listeners and route configurations keep their versions and update
// times), and the Gateway is Programmed again from Envoy's reconnect.
func TestStandaloneRestartLosesNothing(t *testing.T) {
	f := start(t, func(f *fixture) { f.noEnvoy = true })
	f.waitOutput("bootstrap written", 0, regexp.MustCompile(`Envoy bootstrap: `), 30*time.Second)
	log, _ := os.Create(filepath.Join(t.TempDir(), "envoy.log"))
	envoy := exec.Command(f.envoy, "-c", filepath.Join(f.state, "envoy-bootstrap.yaml"), "--disable-hot-restart", "--log-level", "warn")
	envoy.Stdout, envoy.Stderr = log, log
	if err := envoy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = envoy.Process.Kill(); _ = envoy.Wait(); log.Close() })
	f.await("a.example.com", "/", 200, "alpha /")
	f.waitOutput("Programmed", 0, regexp.MustCompile(`Gateway default/gw: Accepted=True\(Accepted\) Programmed=True\(Programmed\)`), 30*time.Second)
	before := dynamicState(t, f.admin)
	if len(before) == 0 {
		t.Fatal("no dynamic listeners or routes in Envoy's config dump")
	}

	var ok, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if code, _ := f.get("a.example.com", "/"); code == 200 {
				ok.Add(1)
			} else {
				failed.Add(1)
			}
		}
	})

	// Kill the controller without a chance to clean up, then start it
	// again on the same state folder and xDS address.
	if err := f.proc.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-f.stopped
	killedAt := ok.Load() + failed.Load()
	from := f.mark()
	f.launch()
	_, took := f.waitOutput("Programmed after the restart", from,
		regexp.MustCompile(`Gateway default/gw: Accepted=True\(Accepted\) Programmed=True\(Programmed\)`), 60*time.Second)
	close(stop)
	wg.Wait()
	t.Logf("requests: %d ok, %d failed (%d sent before the restarted controller started); Programmed again %s after the restart",
		ok.Load(), failed.Load(), killedAt, took.Round(time.Millisecond))
	if failed.Load() != 0 {
		t.Errorf("%d requests failed across the controller restart", failed.Load())
	}
	after := dynamicState(t, f.admin)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed across the controller restart: %q -> %q", k, v, after[k])
		}
	}
	if len(after) != len(before) {
		t.Errorf("Envoy's dynamic configuration went from %d to %d entries", len(before), len(after))
	}
}
