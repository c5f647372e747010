package e2e

// A change of a cluster-level setting (here an XBackendTrafficPolicy's
// retry budget: the cluster's circuit_breakers) through the real
// controller and Envoy. Envoy warms a modified EDS cluster anew and waits
// for its ClusterLoadAssignment; the server must send it again even when
// the endpoints did not change, or the cluster (and, behind it, every
// other change: Envoy withholds its CDS ACK while a cluster warms) waits
// for Envoy's initial fetch timeout (15 s) and the CLA Envoy cached.

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// clusterChangeYAML: the HTTPRoute main sends main.example.com to the
// Service svc; with Percent set, an XBackendTrafficPolicy gives svc a
// retry budget of Percent percent.
const clusterChangeYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: main, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [main.example.com]
  rules:
  - backendRefs: [{name: svc, port: 80}]
{{with .Percent}}---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackendTrafficPolicy
metadata: {name: budget, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: svc}]
  retryConstraint:
    budget: {percent: {{.}}, interval: 10s}
{{end}}`

// clusterChangeRouteYAML is one more HTTPRoute, for host
// <Service>.example.com, to Service: a route that needs a new cluster.
const clusterChangeRouteYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: {{.}}, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [{{.}}.example.com]
  rules:
  - backendRefs: [{name: {{.}}, port: 80}]
`

// svcCluster is the Envoy cluster of the Service svc.
const svcCluster = "service/default/svc/80"

// TestClusterChangeReachesEnvoyAtOnce changes the retry budget of the
// Service svc (none, then 10 %, then 20 %) and, once Envoy has the
// modified cluster, adds an unrelated HTTPRoute to a Service not used so
// far (a new cluster: Envoy takes no other cluster while one warms).
// Two Envoys follow, the standalone one over delta xDS and a second one
// over state-of-the-world xDS. After each step, once both have the new
// route's cluster active: their svc cluster is active with the new
// budget (circuit_breakers in the config dump), no cluster is warming,
// and the EDS subscription of svc never hit its initial fetch timeout
// (the stat cluster.<svc>.init_fetch_timeout is 0, and the standalone
// Envoy's log has no "initial fetch timed out"): the
// ClusterLoadAssignment of the modified cluster was sent again at once.
// The new route and main.example.com answer.
func TestClusterChangeReachesEnvoyAtOnce(t *testing.T) {
	svc, extra := backend(t, "svc"), backend(t, "extra")
	f := startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends": []gatewayBackend{{Name: "svc", Port: portOf(svc)},
				{Name: "extra-0", Port: portOf(extra)}, {Name: "extra-1", Port: portOf(extra)}},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), clusterChangeYAML, map[string]any{})
	})
	f.await("main.example.com", "/", 200, "svc /")
	// A second Envoy takes the configuration over state-of-the-world
	// xDS (as the controller's --sotw makes its fleets do).
	sotw := f.secondEnvoy("sotw", func(s string) string {
		if !strings.Contains(s, "api_type: DELTA_GRPC") {
			t.Fatal("the bootstrap has no api_type: DELTA_GRPC")
		}
		return strings.Replace(s, "api_type: DELTA_GRPC", "api_type: GRPC", 1)
	})
	envoys := []struct {
		name  string
		admin int
	}{{"delta", f.admin}, {"sotw", sotw}}
	poll(t, "sotw: svc cluster active", func() error { return activeCluster(sotw, svcCluster) })
	for i, percent := range []int{10, 20} {
		began := time.Now()
		render(t, filepath.Join(f.dir, "routes.yaml"), clusterChangeYAML, map[string]any{"Percent": percent})
		// The route change comes once Envoy got the cluster change.
		for _, e := range envoys {
			poll(t, e.name+": svc cluster warming or active with the new budget", func() error {
				_, err := clusterBudget(e.admin, svcCluster, percent, "dynamic_warming_clusters")
				if err != nil {
					_, err = clusterBudget(e.admin, svcCluster, percent, "dynamic_active_clusters")
				}
				return err
			})
		}
		extra := fmt.Sprintf("extra-%d", i)
		render(t, filepath.Join(f.dir, extra+".yaml"), clusterChangeRouteYAML, extra)
		// Requests to the Gateway's port go to either Envoy: each must
		// have the new cluster active (Envoy takes no cluster while
		// another warms).
		for _, e := range envoys {
			poll(t, e.name+": cluster of "+extra+" active", func() error {
				return activeCluster(e.admin, "service/default/"+extra+"/80")
			})
		}
		f.await(extra+".example.com", "/", 200, "extra /")
		t.Logf("retry budget %d%%: the route added after it served %s after the budget was written",
			percent, time.Since(began).Round(time.Millisecond))
		for _, e := range envoys {
			if _, err := clusterBudget(e.admin, svcCluster, percent, "dynamic_active_clusters"); err != nil {
				t.Errorf("%s: retry budget %d%%: %v", e.name, percent, err)
			}
			for _, stat := range []string{"cluster." + svcCluster + ".init_fetch_timeout", "cluster_manager.warming_clusters"} {
				if n, err := envoyCounter(e.admin, stat); err != nil || n != 0 {
					t.Errorf("%s: retry budget %d%%: %s = %d (%v), want 0", e.name, percent, stat, n, err)
				}
			}
		}
		if log, err := os.ReadFile(filepath.Join(f.state, "envoy.log")); err != nil {
			t.Error(err)
		} else if _, line, ok := strings.Cut(string(log), "initial fetch timed out"); ok {
			t.Errorf("retry budget %d%%: Envoy's log says: initial fetch timed out%s", percent, strings.SplitN(line, "\n", 2)[0])
		}
		if code, body := f.get("main.example.com", "/"); code != 200 || !strings.HasPrefix(body, "svc /") {
			t.Errorf("retry budget %d%%: main.example.com = %d %q, want 200 from svc", percent, code, body)
		}
	}
}

// activeCluster says whether Envoy (its admin port) has the cluster name
// active: among dynamic_active_clusters of its config dump, and not
// among dynamic_warming_clusters.
func activeCluster(admin int, name string) error {
	for _, list := range []string{"dynamic_active_clusters", "dynamic_warming_clusters"} {
		body, err := clusterDump(admin, name, list)
		if err != nil {
			return err
		}
		has := strings.Contains(body, fmt.Sprintf("%q", name))
		if has != (list == "dynamic_active_clusters") {
			return fmt.Errorf("cluster %s: among %s: %v", name, list, has)
		}
	}
	return nil
}

// clusterDump returns the entries of cluster name in list
// (dynamic_active_clusters or dynamic_warming_clusters) of Envoy's config
// dump (admin: its admin port).
func clusterDump(admin int, name, list string) (string, error) {
	return httpGet(fmt.Sprintf("http://127.0.0.1:%d/config_dump?resource=%s&name_regex=%s", admin, list, url.QueryEscape("^"+regexp.QuoteMeta(name)+"$")))
}

// clusterBudget reads cluster name from list (dynamic_active_clusters or
// dynamic_warming_clusters) of Envoy's config dump and checks that its
// retry budget is percent; it returns the cluster's version_info.
func clusterBudget(admin int, name string, percent int, list string) (string, error) {
	body, err := clusterDump(admin, name, list)
	if err != nil {
		return "", err
	}
	var dump struct {
		Configs []struct {
			Version string `json:"version_info"`
			Cluster struct {
				Name            string `json:"name"`
				CircuitBreakers struct {
					Thresholds []struct {
						RetryBudget *struct {
							BudgetPercent struct {
								Value float64 `json:"value"`
							} `json:"budget_percent"`
						} `json:"retry_budget"`
					} `json:"thresholds"`
				} `json:"circuit_breakers"`
			} `json:"cluster"`
		} `json:"configs"`
	}
	if err := json.Unmarshal([]byte(body), &dump); err != nil {
		return "", fmt.Errorf("config dump: %w", err)
	}
	for _, c := range dump.Configs {
		if c.Cluster.Name != name {
			continue
		}
		for _, th := range c.Cluster.CircuitBreakers.Thresholds {
			if b := th.RetryBudget; b != nil && b.BudgetPercent.Value == float64(percent) {
				return c.Version, nil
			}
		}
		return "", fmt.Errorf("%s: cluster %s has no retry budget of %d%%: %+v", list, name, percent, c.Cluster.CircuitBreakers)
	}
	return "", fmt.Errorf("%s: no cluster %s", list, name)
}
