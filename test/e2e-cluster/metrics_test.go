package e2ecluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// envoyMetrics checks the Envoy fleet ns/fleet's metrics port: every pod
// serves GET /stats/prometheus on port 19003 and nothing else of its admin
// (config_dump is 404), and the upstream request counters of the cluster
// of Service xds-example/foo port 80, summed over the pods, grow by at
// least the requests sent to foo.example.com through the Gateway at addr.
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
	counter := regexp.MustCompile(`(?m)^envoy_cluster_upstream_rq_total\{envoy_cluster_name="service/xds-example/foo/80"\} (\d+)`)
	c := &http.Client{Timeout: 5 * time.Second}
	scrape := func() int {
		total := 0
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
			if m := counter.FindSubmatch(b); m != nil {
				n, _ := strconv.Atoi(string(m[1]))
				total += n
			}
		}
		return total
	}
	before := scrape()
	const sent = 10
	for range sent {
		if r, err := e.get(addr, "foo.example.com", "/"); err != nil || r.Pod == "" {
			e.t.Fatalf("request to foo through %s: %+v %v", addr, r, err)
		}
	}
	after := scrape()
	e.t.Logf("Envoy metrics of %s/%s (%d pods): upstream requests of service/xds-example/foo/80 %d -> %d after %d requests", ns, fleet, len(ips), before, after, sent)
	if after < before+sent {
		e.t.Errorf("upstream request counter of foo grew by %d after %d requests", after-before, sent)
	}
	resp, err := c.Get(fmt.Sprintf("http://%s/config_dump", net.JoinHostPort(ips[0], "19003")))
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		e.t.Errorf("config_dump on the metrics port of %s: %d, want 404", ips[0], resp.StatusCode)
	}
}
