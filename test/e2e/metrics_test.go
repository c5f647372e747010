package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEnvoyMetricsPort: with --envoy-metrics-port, Envoy serves its
// statistics in Prometheus format there, and they grow with traffic
// through the Gateway under names that map back to it (docs/metrics.md):
// the HTTP requests of Gateway listener default/gw/http, the TCP
// connections of listener default/gw/tcp and of its Envoy listener
// (default/gw/port=<port>), the upstream requests of the route's backend
// cluster, and, with --route-stats, those of route rule
// httproute/default/by-host/rule/0 on host a.example.com. Every Envoy
// metric the chart's Grafana dashboard queries is among them; every other
// admin path (config_dump, a POST that would change Envoy) is 404 on that
// port.
func TestEnvoyMetricsPort(t *testing.T) {
	port, tcpPort := freePort(t), freePort(t)
	f := startWith(t, func(f *fixture) {
		alpha, beta := backend(t, "alpha"), backend(t, "beta")
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Listeners":   []string{fmt.Sprintf("{name: tcp, protocol: TCP, port: %d}", tcpPort)},
			"Backends": []gatewayBackend{{Name: "alpha", Port: portOf(alpha)}, {Name: "beta", Port: portOf(beta)},
				{Name: "tcp-a", Port: tcpNamer(t, "tcp-a")}},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), routesYAML, map[string]any{"HostABackend": "alpha"})
		render(t, filepath.Join(f.dir, "tcp.yaml"), metricsTCPRouteYAML, nil)
	}, func(f *fixture) { f.args = append(f.args, "--envoy-metrics-port", fmt.Sprint(port), "--route-stats") })
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
	tcpConnect := func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", tcpPort), 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		if err == nil && string(b) != "tcp-a" {
			err = fmt.Errorf("got %q", b)
		}
		return err
	}
	poll(t, "the TCP listener", tcpConnect)
	// The counters the test follows, each a metric and its labels.
	counters := []struct{ name, labels string }{
		{"envoy_cluster_upstream_rq_total", `envoy_cluster_name="service/default/alpha/80"`},
		{"envoy_http_downstream_rq_total", `envoy_http_conn_manager_prefix="default/gw/http"`},
		// (The HTTP client keeps its connection; the TCP connections are
		// new ones.)
		{"envoy_listener_downstream_cx_total", fmt.Sprintf(`envoy_listener_address="default/gw/port=%d"`, tcpPort)},
		{"envoy_vhost_route_upstream_rq_total", `envoy_virtual_host="default/gw/http/a_example_com",envoy_route="httproute/default/by-host/rule/0"`},
		{"envoy_tcp_downstream_cx_total", `envoy_tcp_prefix="default/gw/tcp"`},
	}
	count := func(body, name, labels string) int {
		m := regexp.MustCompile(`(?m)^` + name + `\{` + regexp.QuoteMeta(labels) + `\} (\d+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s{%s} in the scrape; its lines:\n%s", name, labels, grepLines(body, name))
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	code, body := scrape()
	if code != 200 || !strings.Contains(body, "# TYPE envoy_cluster_upstream_rq_total counter") {
		t.Fatalf("scrape: %d %.500s", code, body)
	}
	before := map[string]int{}
	for _, c := range counters {
		before[c.name] = count(body, c.name, c.labels)
	}
	const sent = 5
	for range sent {
		if code, _ := f.get("a.example.com", "/"); code != 200 {
			t.Fatalf("request through the Gateway: %d", code)
		}
		if err := tcpConnect(); err != nil {
			t.Fatalf("connection through the TCP listener: %v", err)
		}
	}
	_, body = scrape()
	for _, c := range counters {
		after := count(body, c.name, c.labels)
		t.Logf("%s{%s}: %d before %d requests and connections, %d after", c.name, c.labels, before[c.name], sent, after)
		if after < before[c.name]+sent {
			t.Errorf("%s{%s} grew by %d after %d requests", c.name, c.labels, after-before[c.name], sent)
		}
	}
	// The route's latency histogram and response classes, labelled alike.
	for _, want := range []string{
		`envoy_vhost_route_upstream_rq_xx{envoy_response_code_class="2",envoy_virtual_host="default/gw/http/a_example_com",envoy_route="httproute/default/by-host/rule/0"}`,
		`envoy_vhost_route_upstream_rq_time_count{envoy_virtual_host="default/gw/http/a_example_com",envoy_route="httproute/default/by-host/rule/0"}`,
		`envoy_http_downstream_rq_xx{envoy_response_code_class="2",envoy_http_conn_manager_prefix="default/gw/http"}`,
		fmt.Sprintf(`envoy_listener_http_downstream_rq_xx{envoy_response_code_class="2",envoy_http_conn_manager_prefix="default/gw/http",envoy_listener_address="default/gw/port=%d"}`, f.gwPort),
	} {
		if !strings.Contains(body, want+" ") {
			t.Errorf("no %s in the scrape", want)
		}
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

// metricsTCPRouteYAML routes listener tcp of Gateway gw to Service tcp-a.
const metricsTCPRouteYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: db, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: tcp}]
  rules: [{backendRefs: [{name: tcp-a, port: 80}]}]
`

// grepLines returns the lines of body that contain s.
func grepLines(body, s string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
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
