package e2ecluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// envoyMetrics checks the Envoy fleet ns/fleet's metrics port: every pod
// serves GET /stats/prometheus on port 19003 and nothing else of its admin
// (config_dump is 404), and, summed over the pods, these counters grow by
// at least the requests sent to foo.example.com through the Gateway web at
// addr: the upstream requests of the cluster of Service xds-example/foo
// port 80, the requests of Gateway listener xds-example/web/http, and
// (route statistics on: the chart's monitoring.routeStats) those of rule 0
// of HTTPRoute xds-example/foo on that listener's host foo.example.com.
// The scrape's lines of the example Gateways are logged.
func (e *env) envoyMetrics(ns, fleet, addr string) {
	e.t.Helper()
	pods, err := e.kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=envoy,app.kubernetes.io/instance=" + fleet})
	if err != nil || len(pods.Items) == 0 {
		e.t.Fatalf("Envoy pods of %s/%s: %v (%d)", ns, fleet, err, len(pods.Items))
	}
	var ips []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			if err := allowedAddress(p.Status.PodIP); err != nil {
				e.t.Fatal(err)
			}
			ips = append(ips, p.Status.PodIP)
		}
	}
	counters := []string{
		`envoy_cluster_upstream_rq_total{envoy_cluster_name="service/xds-example/foo/80"}`,
		`envoy_http_downstream_rq_total{envoy_http_conn_manager_prefix="xds-example/web/http"}`,
		`envoy_vhost_route_upstream_rq_total{envoy_virtual_host="xds-example/web/http/foo_example_com",envoy_route="httproute/xds-example/foo/rule/0"}`,
	}
	c := &http.Client{Timeout: 5 * time.Second}
	// scrape sums each counter over the pods and returns the lines of the
	// last pod's scrape that name the example namespace.
	scrape := func() (map[string]int, string) {
		total := map[string]int{}
		var sample []string
		for _, ip := range ips {
			resp, err := c.Get("http://" + net.JoinHostPort(ip, "19003") + "/stats/prometheus")
			if err != nil {
				e.t.Fatalf("scraping Envoy pod %s: %v", ip, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				e.t.Fatalf("scraping Envoy pod %s: %d", ip, resp.StatusCode)
			}
			for _, counter := range counters {
				if m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(counter) + ` (\d+)$`).FindSubmatch(b); m != nil {
					n, _ := strconv.Atoi(string(m[1]))
					total[counter] += n
				}
			}
			sample = regexp.MustCompile(`(?m)^envoy_(http_downstream_rq_total|listener_downstream_cx_total|vhost_route_upstream_rq_total|cluster_upstream_rq_total)\{[^}]*xds-example/.*$`).FindAllString(string(b), -1)
		}
		return total, strings.Join(sample, "\n")
	}
	before, _ := scrape()
	const sent = 10
	for range sent {
		if r, err := e.get(addr, "foo.example.com", "/"); err != nil || r.Pod == "" {
			e.t.Fatalf("request to foo through %s: %+v %v", addr, r, err)
		}
	}
	after, sample := scrape()
	for _, counter := range counters {
		e.t.Logf("Envoy metrics of %s/%s (%d pods): %s %d -> %d after %d requests", ns, fleet, len(ips), counter, before[counter], after[counter], sent)
		if after[counter] < before[counter]+sent {
			e.t.Errorf("%s grew by %d after %d requests", counter, after[counter]-before[counter], sent)
		}
	}
	e.t.Logf("the scrape of %s's lines of the example Gateways:\n%s", ips[len(ips)-1], sample)
	resp, err := c.Get(fmt.Sprintf("http://%s/config_dump", net.JoinHostPort(ips[0], "19003")))
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		e.t.Errorf("config_dump on the metrics port of %s: %d, want 404", ips[0], resp.StatusCode)
	}
}
