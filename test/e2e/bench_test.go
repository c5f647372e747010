package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchRoutes is the shared benchmark input for n HTTPRoutes (one Gateway
// "bench", n Services and HTTPRoutes), written by the workspace's
// shared/bench/gen-routes.py (BENCH_GEN_ROUTES overrides its path), made
// local (benchLocal).
func benchRoutes(b *testing.B, n, port int) []byte {
	b.Helper()
	script := os.Getenv("BENCH_GEN_ROUTES")
	if script == "" {
		script = filepath.Join("..", "..", "..", "shared", "bench", "gen-routes.py")
	}
	return benchLocal(b, port, script, fmt.Sprint(n))
}

// benchLocal is the output of the Python input generator script with args
// (the shape of gen-routes.py: Gateway "bench" whose listeners, and those
// of its ListenerSets, are on port 80) with the listeners moved to port,
// the Gateway bound to 127.0.0.1 and the Services' cluster IPs moved to
// 127.96.0.0/16. It skips the benchmark when the script is missing.
func benchLocal(b *testing.B, port int, script string, args ...string) []byte {
	b.Helper()
	if _, err := os.Stat(script); err != nil {
		b.Skipf("benchmark input generator not found at %s (set BENCH_GEN_ROUTES)", script)
	}
	out, err := exec.Command("python3", append([]string{script}, args...)...).Output()
	if err != nil {
		b.Fatal(err)
	}
	// The Services' cluster IPs (10.96.0.0/16) become loopback addresses
	// (127.96.0.0/16): standalone mode sends a Service's traffic to its
	// cluster IP, and the benchmark's traffic must stay on this machine.
	// Nothing listens there, so a bench route answers 503 at once.
	s := strings.ReplaceAll(string(out), "  clusterIP: 10.96.", "  clusterIP: 127.96.")
	if !strings.Contains(s, "  clusterIP: 127.96.") {
		b.Fatal("benchmark input: no clusterIP in 10.96.0.0/16 to move to loopback")
	}
	if !strings.Contains(s, "      port: 80\n") {
		b.Fatal("benchmark input: no listener on port 80")
	}
	s = strings.ReplaceAll(s, "      port: 80\n", fmt.Sprintf("      port: %d\n", port))
	const class = "  gatewayClassName: bench\n"
	if strings.Count(s, class) != 1 {
		b.Fatalf("benchmark input: %q appears %d times, want once", class, strings.Count(s, class))
	}
	return []byte(strings.Replace(s, class, class+"  addresses: [{type: IPAddress, value: 127.0.0.1}]\n", 1))
}

// extraRouteYAML is one more HTTPRoute of the bench Gateway, for hostname
// extra-<N>.example.com, to the Service extra.
const extraRouteYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: extra-{{.}}, namespace: default}
spec:
  parentRefs: [{name: bench}]
  hostnames: [extra-{{.}}.example.com]
  rules:
  - backendRefs: [{name: extra, port: 80}]
`

// benchPolicyYAML is a SecurityPolicy on the bench route route-0 (whose
// Service nothing serves: 503) with basic auth from Secret bench-users,
// which benchUsersYAML holds: a request without credentials gets 401
// while it is in place.
const benchPolicyYAML = `apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: bench, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: route-0}]
  basicAuth: {users: {name: bench-users}}
`

// benchUsersYAML is the Secret of benchPolicyYAML, and a policy of the
// same kind on route-1 that stays: the chain's basic_auth filter is there
// from the start, so that a policy change is a route configuration change
// (RDS), as a route change is. The first policy of a kind on a listener
// adds its filter to the chain, a listener change: existing connections
// keep the old chain until Envoy drains them (--drain-time-s, 1 s in
// standalone mode), docs/security-policy.md.
const benchUsersYAML = `apiVersion: v1
kind: Secret
metadata: {name: bench-users, namespace: default}
stringData: {auth: "bob:{SHA}9SMYoF5RilWWASry7TjeaKwmpGg="}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: bench-steady, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: route-1}]
  basicAuth: {users: {name: bench-users}}
`

// BenchmarkStandalonePropagation measures how long one more route takes to
// reach Envoy in standalone mode with the shared benchmark input in place
// (routes=100, 1000, 3000): each iteration writes one more HTTPRoute file
// (write and rename, as editors do) and polls Envoy every millisecond
// until the new hostname answers 200 from its backend, then deletes the
// file and polls until it answers 404 again; then it writes a
// SecurityPolicy file on the bench route route-0 and polls until that
// answers 401, and deletes it and polls until 503 again. Each change
// comes after a pause of benchQuiet, as a single edit does. Reported per
// sample, in milliseconds: add-median, add-p90, add-max, del-median,
// del-max, and policy-add-median, policy-add-max, policy-del-median,
// policy-del-max (issue 28: a policy change reaches Envoy as a route
// change does).
//
//	go test ./test/e2e -run '^$' -bench StandalonePropagation -benchtime 20x
//
// (make bench-standalone). The figures go into docs/performance.md.
func BenchmarkStandalonePropagation(b *testing.B) {
	for _, n := range []int{100, 1000, 3000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			extra := backend(b, "extra")
			f := benchStandalone(b, n, func(f *fixture) {
				render(b, filepath.Join(f.dir, "extra-backend.yaml"), gatewayYAML[strings.Index(gatewayYAML, "{{range .Backends}}"):],
					map[string]any{"Backends": []gatewayBackend{{Name: "extra", Port: portOf(extra)}}})
				if err := os.WriteFile(filepath.Join(f.dir, "bench-users.yaml"), []byte(benchUsersYAML), 0o644); err != nil {
					b.Fatal(err)
				}
			})
			var adds, dels, policyAdds, policyDels []time.Duration
			policy := filepath.Join(f.dir, "bench-policy.yaml")
			i := 0
			for b.Loop() {
				host := fmt.Sprintf("extra-%d.example.com", i)
				path := filepath.Join(f.dir, fmt.Sprintf("extra-%d.yaml", i))
				// Each change comes after a quiet moment, as one edit
				// does (back to back, each would be a burst and wait for
				// the debounce).
				time.Sleep(benchQuiet)
				render(b, path, extraRouteYAML, i)
				adds = append(adds, f.until(host, 200, time.Now()))
				time.Sleep(benchQuiet)
				if err := os.Remove(path); err != nil {
					b.Fatal(err)
				}
				dels = append(dels, f.until(host, 404, time.Now()))
				time.Sleep(benchQuiet)
				render(b, policy, benchPolicyYAML, nil)
				policyAdds = append(policyAdds, f.until("svc-0.example.com", 401, time.Now()))
				time.Sleep(benchQuiet)
				if err := os.Remove(policy); err != nil {
					b.Fatal(err)
				}
				policyDels = append(policyDels, f.until("svc-0.example.com", 503, time.Now()))
				i++
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(ms(quantile(adds, 0.5)), "add-median-ms")
			b.ReportMetric(ms(quantile(adds, 0.9)), "add-p90-ms")
			b.ReportMetric(ms(quantile(adds, 1)), "add-max-ms")
			b.ReportMetric(ms(quantile(dels, 0.5)), "del-median-ms")
			b.ReportMetric(ms(quantile(dels, 1)), "del-max-ms")
			b.ReportMetric(ms(quantile(policyAdds, 0.5)), "policy-add-median-ms")
			b.ReportMetric(ms(quantile(policyAdds, 1)), "policy-add-max-ms")
			b.ReportMetric(ms(quantile(policyDels, 0.5)), "policy-del-median-ms")
			b.ReportMetric(ms(quantile(policyDels, 1)), "policy-del-max-ms")
		})
	}
}

// benchQuiet is the pause before each change of the propagation
// benchmark: longer than standalone mode's debounce (50 ms).
const benchQuiet = 200 * time.Millisecond

// until polls host every millisecond until it answers status, and returns
// the time since since; it fails after 30 s.
func (f *fixture) until(host string, status int, since time.Time) time.Duration {
	f.t.Helper()
	for {
		if code, _ := f.get(host, "/"); code == status {
			return time.Since(since)
		}
		if time.Since(since) > 30*time.Second {
			f.t.Fatalf("%s did not answer %d within 30s", host, status)
		}
		time.Sleep(time.Millisecond)
	}
}

// quantile returns the q-quantile (0..1, nearest rank) of ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// benchStandalone starts standalone mode on the shared benchmark input
// for n routes and the files files writes, and waits until the last
// bench route is served.
func benchStandalone(b *testing.B, n int, files func(f *fixture)) *fixture {
	f := startWith(b, func(f *fixture) {
		if err := os.WriteFile(filepath.Join(f.dir, "bench.yaml"), benchRoutes(b, n, f.gwPort), 0o644); err != nil {
			b.Fatal(err)
		}
		files(f)
	})
	f.client.Timeout = time.Second
	// Ready: the last bench route answers (from no backend: 503 or
	// 500; anything but 404 and a failed connection).
	began := time.Now()
	for {
		if code, _ := f.get(fmt.Sprintf("svc-%d.example.com", n-1), "/"); code > 0 && code != 404 {
			break
		}
		if time.Since(began) > 2*time.Minute {
			b.Fatalf("the bench routes were not served after %s", time.Since(began))
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Logf("%d routes served %s after start", n, time.Since(began).Round(time.Millisecond))
	return f
}

// protoBackend answers every request with the protocol it came in
// (r.Proto: "HTTP/1.1", or "HTTP/2.0" for prior-knowledge h2c, which it
// accepts too).
func protoBackend(b *testing.B) *httptest.Server {
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	}))
	s.Config.Protocols = new(http.Protocols)
	s.Config.Protocols.SetHTTP1(true)
	s.Config.Protocols.SetUnencryptedHTTP2(true)
	s.Start()
	b.Cleanup(s.Close)
	return s
}

// protoRouteYAML is the HTTPRoute proto of the bench Gateway, for
// hostname proto.example.com, to the Service proto.
const protoRouteYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: proto, namespace: default}
spec:
  parentRefs: [{name: bench}]
  hostnames: [proto.example.com]
  rules:
  - backendRefs: [{name: proto, port: 80}]
`

// BenchmarkStandalonePropagationCluster measures how long a change of a
// cluster-level setting takes to reach Envoy in standalone mode with the
// shared benchmark input in place (routes=100, 1000, 3000) and an
// HTTPRoute to the Service proto, whose backend answers with the
// protocol of the request: each iteration, after a pause of benchQuiet,
// rewrites the Service (write and rename) with its port's appProtocol
// switched between kubernetes.io/h2c and none (the protocol options of
// its cluster; its EndpointSlice, in the same file, unchanged), and polls
// Envoy every millisecond until the backend answers in the new protocol.
// Envoy warms a modified EDS cluster until its ClusterLoadAssignment
// arrives: a server that does not send it again leaves the old cluster
// serving until the initial fetch timeout (15 s). Reported per sample,
// in milliseconds: cluster-median, cluster-p90, cluster-max.
//
//	go test ./test/e2e -run '^$' -bench StandalonePropagationCluster -benchtime 20x
//
// (make bench-standalone runs it after BenchmarkStandalonePropagation).
func BenchmarkStandalonePropagationCluster(b *testing.B) {
	for _, n := range []int{100, 1000, 3000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			proto := protoBackend(b)
			service := func(f *fixture, appProtocol string) {
				render(b, filepath.Join(f.dir, "proto-backend.yaml"), gatewayYAML[strings.Index(gatewayYAML, "{{range .Backends}}"):],
					map[string]any{"Backends": []gatewayBackend{{Name: "proto", Port: portOf(proto), AppProtocol: appProtocol}}})
			}
			f := benchStandalone(b, n, func(f *fixture) {
				render(b, filepath.Join(f.dir, "proto-route.yaml"), protoRouteYAML, nil)
				service(f, "")
			})
			f.await("proto.example.com", "/", 200, "HTTP/1.1")
			var changes []time.Duration
			h2c := false
			for b.Loop() {
				time.Sleep(benchQuiet)
				h2c = !h2c
				appProtocol, want := "", "HTTP/1.1"
				if h2c {
					appProtocol, want = "kubernetes.io/h2c", "HTTP/2.0"
				}
				began := time.Now()
				service(f, appProtocol)
				for {
					if code, body := f.get("proto.example.com", "/"); code == 200 && body == want {
						break
					}
					if time.Since(began) > 30*time.Second {
						b.Fatalf("proto.example.com not served over %s within 30s", want)
					}
					time.Sleep(time.Millisecond)
				}
				changes = append(changes, time.Since(began))
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(ms(quantile(changes, 0.5)), "cluster-median-ms")
			b.ReportMetric(ms(quantile(changes, 0.9)), "cluster-p90-ms")
			b.ReportMetric(ms(quantile(changes, 1)), "cluster-max-ms")
		})
	}
}
