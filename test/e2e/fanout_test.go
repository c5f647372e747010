package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"
	"github.com/xds-controller/xds-controller/pkg/standalone"
	"github.com/xds-controller/xds-controller/test/simproxy"
)

// BenchmarkFanout measures what one route change costs the controller in
// standalone mode when N proxies are connected (issue 30 item 1): N
// simulated proxies (simproxy.Proxy: delta ADS on mutual TLS with the Envoy SVID,
// subscribing and ACKing as Envoy does) against the shared benchmark input
// of R routes, for N = 10, 100, 1000 and R = 1000, 3000 (FANOUT_PROXIES
// and FANOUT_ROUTES, comma-separated, choose others). Each iteration adds
// one HTTPRoute to an existing Service (one route configuration changes),
// after a pause of benchQuiet, and waits until every proxy has ACKed a
// route configuration response. Reported per iteration:
//
//   - ack-median-ms, ack-p99-ms: from the first proxy's receipt of the new
//     route configuration (the publish, within a millisecond) to the last
//     proxy's ACK;
//
//   - write-median-ms: from the file's write (standalone's debounce and
//     the translation included) to the last ACK;
//
//   - cpu-ms/change: the controller process's CPU time (user and system,
//     /proc/PID/stat) from the write until 300 ms after the last ACK;
//
//   - MB/change: the encoded size of every response the proxies received
//     in that window (payload only: no gRPC framing nor TLS);
//
//   - KiB/proxy: the controller's resident memory with the N proxies
//     synced, less before they connected, divided by N.
//
//     FANOUT_PROXIES=10,100 go test ./test/e2e -run '^$' -bench Fanout -benchtime 20x -timeout 60m
//
// (make bench-fanout). The proxies run in the benchmark's process, on the
// same cores as the controller: at N = 1000 their decoding of the initial
// clusters slows the start, not the measured changes (route
// configurations are never decoded).
func BenchmarkFanout(b *testing.B) {
	for _, n := range envInts("FANOUT_PROXIES", 10, 100, 1000) {
		for _, r := range envInts("FANOUT_ROUTES", 1000, 3000) {
			b.Run(fmt.Sprintf("proxies=%d/routes=%d", n, r), func(b *testing.B) { fanout(b, n, r) })
		}
	}
}

func fanout(b *testing.B, n, routes int) {
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", freePort(b))
	var args []string
	if os.Getenv("FANOUT_PROFILES") != "" {
		args = append(args, "--pprof-address", pprofAddr)
	}
	f := startFanout(b, routes, args...)
	fleet := newSimFleet(b, f)
	began := time.Now()
	// A cluster per Service, extra's included.
	fleet.probe(b, routes+1, 3*time.Minute)
	rss0 := procRSS(b, f.proc.Process.Pid)
	fleet.grow(b, n)
	rss1 := procRSS(b, f.proc.Process.Pid)
	reconnects, failures := fleet.Failures()
	for e, k := range failures {
		b.Logf("%d proxies' last stream failure: %s", k, e)
	}
	b.Logf("%d proxies synced %s after start (%d streams opened again); controller RSS %d MiB without them, %d MiB with them",
		n, time.Since(began).Round(time.Millisecond), reconnects, rss0>>20, rss1>>20)
	if dir := os.Getenv("FANOUT_PROFILES"); dir != "" {
		saveProfile(b, pprofAddr, "heap", filepath.Join(dir, fmt.Sprintf("heap-proxies=%d-routes=%d.pb.gz", n, routes)))
		// The CPU profile of the first 20 s of changes.
		var profiled sync.WaitGroup
		defer profiled.Wait()
		profiled.Go(func() {
			saveProfile(b, pprofAddr, "profile?seconds=20", filepath.Join(dir, fmt.Sprintf("cpu-proxies=%d-routes=%d.pb.gz", n, routes)))
		})
	}
	var acks, writes []time.Duration
	var cpu time.Duration
	var sent int64
	i := 0
	for b.Loop() {
		time.Sleep(benchQuiet)
		cpu0 := procCPU(b, f.proc.Process.Pid)
		var write time.Time
		a, err := fleet.AwaitRoutes(func() error {
			write = time.Now()
			changeRoute(b, f, i)
			return nil
		}, time.Minute)
		if err != nil {
			b.Fatalf("change %d: %v", i, err)
		}
		acks = append(acks, a.Spread())
		writes = append(writes, a.Last.Sub(write))
		time.Sleep(300 * time.Millisecond)
		cpu += procCPU(b, f.proc.Process.Pid) - cpu0
		sent += a.Bytes
		i++
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(quantile(acks, 0.5)), "ack-median-ms")
	b.ReportMetric(ms(quantile(acks, 0.99)), "ack-p99-ms")
	b.ReportMetric(ms(quantile(writes, 0.5)), "write-median-ms")
	b.ReportMetric(ms(cpu)/float64(i), "cpu-ms/change")
	b.ReportMetric(float64(sent)/float64(i)/1e6, "MB/change")
	b.ReportMetric(float64(rss1-rss0)/1024/float64(n), "KiB/proxy")
	if dir := os.Getenv("FANOUT_PROFILES"); dir != "" {
		saveProfile(b, pprofAddr, "allocs", filepath.Join(dir, fmt.Sprintf("allocs-proxies=%d-routes=%d.pb.gz", n, routes)))
	}
}

// startFanout starts standalone mode without Envoy (--no-envoy, with
// args) on the fan-out benchmarks' input: the shared benchmark input of
// routes HTTPRoutes (benchRoutes), the Service "extra" (nothing listens on
// its port, no traffic is sent) and a route to it from the start, so that
// its cluster is there before the changes (changeRoute), which change one
// route configuration only.
func startFanout(b *testing.B, routes int, args ...string) *fixture {
	return startWith(b, func(f *fixture) {
		f.noEnvoy = true
		f.args = append(f.args, args...)
		if err := os.WriteFile(filepath.Join(f.dir, "bench.yaml"), benchRoutes(b, routes, f.gwPort), 0o644); err != nil {
			b.Fatal(err)
		}
		render(b, filepath.Join(f.dir, "extra-backend.yaml"), gatewayYAML[strings.Index(gatewayYAML, "{{range .Backends}}"):],
			map[string]any{"Backends": []gatewayBackend{{Name: "extra", Port: freePort(b)}}})
		render(b, filepath.Join(f.dir, "extra-base.yaml"), extraRouteYAML, "base")
	})
}

// changeRoute is the fan-out benchmarks' change number i: one more
// HTTPRoute to the Service "extra" (one route configuration changes).
func changeRoute(b *testing.B, f *fixture, i int) {
	render(b, filepath.Join(f.dir, fmt.Sprintf("extra-%d.yaml", i)), extraRouteYAML, i)
}

// simFleet is the simulated proxies (simproxy.Fleet) of one benchmark,
// connected to f's controller from the benchmark's process, with
// standalone mode's Envoy SVID; they stop in the benchmark's Cleanup.
type simFleet struct {
	*simproxy.Fleet
	f *fixture
}

func newSimFleet(b *testing.B, f *fixture) *simFleet {
	fleet := simproxy.NewFleet(f.xds, standalone.Scope, func() (*tls.Config, error) {
		return simproxy.Credentials(filepath.Join(f.state, "sds"), "/ns/standalone/sa/xds-controller")
	})
	b.Cleanup(fleet.Close)
	return &simFleet{Fleet: fleet, f: f}
}

// probe connects a first proxy once the controller has written Envoy's
// SVID, and waits until it holds clusters clusters (within at most: the
// whole input translated) and is synced, and a second more, before the
// controller's memory is read without proxies. It returns the proxy and
// how long after the call it held the clusters.
func (s *simFleet) probe(b *testing.B, clusters int, within time.Duration) (*simproxy.Proxy, time.Duration) {
	began := time.Now()
	var probe *simproxy.Proxy
	for probe == nil || probe.Clusters.Load() < int64(clusters) {
		if time.Since(began) > within {
			b.Fatalf("%d clusters were not published after %s", clusters, time.Since(began))
		}
		if probe == nil {
			if _, err := os.Stat(filepath.Join(s.f.state, "sds", bootstrap.SVIDCertFile)); err == nil {
				probe = s.Connect("sim-0")
			}
		}
		select {
		case err := <-s.Errs:
			b.Fatal(err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	held := time.Since(began)
	<-probe.Synced
	time.Sleep(time.Second)
	return probe, held
}

// grow connects proxies until the fleet has n (simproxy.Fleet.Grow, 5
// minutes at most), and waits a second more.
func (s *simFleet) grow(b *testing.B, n int) {
	if err := s.Grow(n, "sim-", 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	time.Sleep(time.Second)
}

// saveProfile writes the controller's Go profile name (heap, allocs), read
// from its --pprof-address addr, to path.
func saveProfile(b testing.TB, addr, name, path string) {
	resp, err := http.Get("http://" + addr + "/debug/pprof/" + name)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, resp.Body); err != nil {
		b.Fatal(err)
	}
	b.Logf("profile %s: %s", name, path)
}

// envInts reads a comma-separated list of integers from the environment
// variable name, or returns def when it is unset.
func envInts(name string, def ...int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		if i, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			out = append(out, i)
		}
	}
	return out
}

// procCPU returns the user and system CPU time of process pid so far
// (/proc/PID/stat fields utime and stime, in clock ticks of 10 ms).
func procCPU(b testing.TB, pid int) time.Duration {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which is in parentheses.
	fields := strings.Fields(string(s[strings.LastIndexByte(string(s), ')')+1:]))
	// utime and stime are fields 14 and 15 of the line, 12 and 13 after
	// the name (state is the first).
	var ticks int64
	for _, f := range fields[11:13] {
		t, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		ticks += t
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// procRSS returns the resident memory of process pid in bytes
// (/proc/PID/status VmRSS).
func procRSS(b testing.TB, pid int) int64 { return procStatus(b, pid, "VmRSS") }

// procStatus returns the memory figure field (VmRSS, VmHWM: the peak
// resident memory) of /proc/PID/status, in bytes.
func procStatus(b testing.TB, pid int, field string) int64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for l := range strings.Lines(string(s)) {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no " + field)
	return 0
}
