package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestEnvoyMetricsPort: with --envoy-metrics-port, Envoy serves its
// statistics in Prometheus format there, and the request counters of a
// route's backend cluster grow with traffic through the Gateway; every
// Envoy metric the chart's Grafana dashboard queries is among them; every
// other admin path (config_dump, a POST that would change Envoy) is 404 on
// that port.
func TestEnvoyMetricsPort(t *testing.T) {
	port := freePort(t)
	f := start(t, func(f *fixture) { f.args = append(f.args, "--envoy-metrics-port", fmt.Sprint(port)) })
	f.await("a.example.com", "/", 200, "alpha /")
	scrape := func() (int, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/stats/prometheus", port))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// envoy_cluster_upstream_rq_total{envoy_cluster_name="service/default/alpha/80"} N
	counter := regexp.MustCompile(`(?m)^envoy_cluster_upstream_rq_total\{envoy_cluster_name="service/default/alpha/80"\} (\d+)`)
	count := func(body string) int {
		m := counter.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no upstream request counter of cluster service/default/alpha/80 in the scrape:\n%.2000s", body)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	code, body := scrape()
	if code != 200 || !strings.Contains(body, "# TYPE envoy_cluster_upstream_rq_total counter") {
		t.Fatalf("scrape: %d %.500s", code, body)
	}
	before := count(body)
	for range 5 {
		if code, _ := f.get("a.example.com", "/"); code != 200 {
			t.Fatalf("request through the Gateway: %d", code)
		}
	}
	if _, body = scrape(); count(body) < before+5 {
		t.Errorf("upstream requests of alpha: %d before 5 requests, %d after", before, count(body))
	}
	// Every Envoy metric the chart's Grafana dashboard queries exists.
	used := regexp.MustCompile(`envoy_[a-z0-9_]+`).FindAllString(dashboardQueries(t), -1)
	if len(used) < 5 {
		t.Fatalf("the dashboard queries %d Envoy metrics; want its data-plane panels", len(used))
	}
	for _, name := range used {
		if !regexp.MustCompile(`(?m)^` + name + `[{ ]`).MatchString(body) {
			t.Errorf("the dashboard queries %s, which Envoy does not serve", name)
		}
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/config_dump"}, {"GET", "/stats"}, {"GET", "/"}, {"POST", "/stats/prometheus"}, {"POST", "/healthcheck/fail"}, {"POST", "/quitquitquit"},
	} {
		req, _ := http.NewRequest(r.method, fmt.Sprintf("http://127.0.0.1:%d%s", port, r.path), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", r.method, r.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("%s %s on the metrics port: %d, want 404", r.method, r.path, resp.StatusCode)
		}
	}
	// Envoy is still serving (nothing above reached the admin).
	if code, _ := f.get("a.example.com", "/"); code != 200 {
		t.Errorf("after the refused admin requests: %d", code)
	}
}

// dashboardQueries returns the PromQL of every panel of the chart's Grafana
// dashboard, one per line, with the "by (...)" clauses and label matchers
// removed: what is left names metrics only.
func dashboardQueries(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../charts/xds-controller/files/dashboards/xds-controller.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			exprs = append(exprs, q.Expr)
		}
	}
	return regexp.MustCompile(`by \([^)]*\)|[a-z_]+\s*(=~|!~|!=|=)\s*"[^"]*"`).ReplaceAllString(strings.Join(exprs, "\n"), "")
}
