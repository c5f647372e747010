package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// standaloneWorlds are the large worlds of issue 30 item 4 in standalone
// mode, as pkg/translate's BenchmarkTranslateWorld: the arguments of
// hack/gen-world.py, the clusters the world makes (one per Service), and
// the HTTPRoute the benchmark changes, a route of the world in a file of
// its own ({{.}} its path: a change is a new path), attached as the
// world's routes are.
var standaloneWorlds = []struct {
	name, args string
	clusters   int
	route      string
}{
	{"routes=20000/services=10000", "20000 --services 10000 --endpointslices", 10000, `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: world-change, namespace: default}
spec:
  parentRefs: [{name: bench}]
  hostnames: [world-change.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: "{{.}}"}}]
    backendRefs: [{name: svc-0, port: 8080}]
`},
	{"listenersets=2500/routes=40000", "40000 --services 10000 --listenersets 2500 --endpointslices", 10000, `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: world-change, namespace: default}
spec:
  parentRefs: [{group: gateway.networking.k8s.io, kind: ListenerSet, name: ls-0}]
  rules:
  - matches: [{path: {type: PathPrefix, value: "{{.}}"}}]
    backendRefs: [{name: svc-0, port: 8080}]
`},
}

// BenchmarkStandaloneWorld measures standalone mode (without Envoy) on each
// large world (issue 30 item 4): the controller starts on the world's file,
// one simulated proxy (simproxy.Proxy, as BenchmarkFanout's) connects, and each
// iteration, after a pause of benchQuiet, rewrites the file of one route of
// the world (write and rename) with another path, and waits until the
// proxy receives the new route configuration. Reported:
//
//   - load-s: from the controller's start until the proxy holds every
//     cluster of the world (reading, the full translation, the publish);
//
//   - rss-MiB, hwm-MiB: the controller's resident memory (VmRSS) and its
//     peak (VmHWM) one second after that, the world loaded;
//
//   - change-median-ms, change-max-ms: from the file's write to the
//     proxy's receipt of the route configuration (standalone's debounce,
//     the read of the changed file, the incremental translation, the
//     publish, and the delivery on loopback);
//
//   - cpu-ms/change: the controller's CPU time (user and system) per
//     change, from the write until 300 ms after the receipt.
//
//     BENCH_WORLDS=1 go test ./test/e2e -run '^$' -bench StandaloneWorld -benchtime 20x -timeout 30m
//
// (make bench-world). Without BENCH_WORLDS it is skipped: each world takes
// a minute or more to generate and load.
func BenchmarkStandaloneWorld(b *testing.B) {
	for _, w := range standaloneWorlds {
		b.Run(w.name, func(b *testing.B) {
			if os.Getenv("BENCH_WORLDS") == "" {
				b.Skip("the large worlds run with BENCH_WORLDS=1 (make bench-world)")
			}
			routeFile := func(f *fixture, i int) {
				render(b, filepath.Join(f.dir, "world-change.yaml"), w.route, fmt.Sprintf("/change-%d", i))
			}
			f := startWith(b, func(f *fixture) {
				f.noEnvoy = true
				world := benchLocal(b, f.gwPort, filepath.Join("..", "..", "hack", "gen-world.py"), strings.Fields(w.args)...)
				if err := os.WriteFile(filepath.Join(f.dir, "bench.yaml"), world, 0o644); err != nil {
					b.Fatal(err)
				}
				routeFile(f, 0)
			})
			fleet := newSimFleet(b, f)
			_, load := fleet.probe(b, w.clusters, 10*time.Minute)
			pid := f.proc.Process.Pid
			rss, hwm := procRSS(b, pid), procStatus(b, pid, "VmHWM")
			b.Logf("world loaded and published %s after start; controller RSS %d MiB, peak %d MiB", load.Round(time.Millisecond), rss>>20, hwm>>20)
			var changes []time.Duration
			var cpu time.Duration
			i := 0
			for b.Loop() {
				i++
				time.Sleep(benchQuiet)
				cpu0 := procCPU(b, pid)
				var write time.Time
				a, err := fleet.AwaitRoutes(func() error {
					write = time.Now()
					routeFile(f, i)
					return nil
				}, time.Minute)
				if err != nil {
					b.Fatalf("change %d: %v", i, err)
				}
				changes = append(changes, a.First.Sub(write))
				time.Sleep(300 * time.Millisecond)
				cpu += procCPU(b, pid) - cpu0
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(load.Seconds(), "load-s")
			b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
			b.ReportMetric(float64(hwm)/(1<<20), "hwm-MiB")
			b.ReportMetric(ms(quantile(changes, 0.5)), "change-median-ms")
			b.ReportMetric(ms(quantile(changes, 1)), "change-max-ms")
			b.ReportMetric(ms(cpu)/float64(len(changes)), "cpu-ms/change")
		})
	}
}
