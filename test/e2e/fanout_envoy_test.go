package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"
)

// BenchmarkFanoutCalibration calibrates the fan-out benchmark's simulated
// proxies (simproxy.Proxy) against real Envoy processes (issue 30 item 1): for
// N = 10 and 20 (FANOUT_ENVOYS, at most maxCalibEnvoys) and the shared
// input of 1000 routes (CALIB_ROUTES), it runs, side by side, N simulated
// proxies ("sim") and N Envoys on loopback ("envoy"), each against a
// controller of its own in standalone mode (--no-envoy, the Envoys started
// here with its bootstrap), and measures both the same way, from the
// controller's side. Each iteration is BenchmarkFanout's one-route change
// (changeRoute). Reported per sub-benchmark:
//
//   - ack-median-ms, ack-p99-ms: the quantiles of every proxy's ACK of
//     the change's route configuration, from the publish to the ACK, as
//     the controller's histogram xds_controller_xds_ack_seconds
//     (--metrics-address) counts them; quantiles interpolated within its
//     buckets (1, 2, 4, ... ms), as Prometheus's histogram_quantile does;
//
//   - last-ack-median-ms, last-ack-p99-ms: per change, the upper bound of
//     the bucket of its slowest ACK (the last proxy's), over the changes;
//
//   - write-last-median-ms: from the file's write until the histogram's
//     count had grown by N (polled every ackPoll);
//
//   - cpu-ms/change: the controller's CPU time (procCPU) from the write
//     until 300 ms after the count grew by N, less the scrapes' own cost
//     (measured before the changes: scrape-cpu-ms is one scrape's); CPU
//     is read in ticks of 10 ms, so with a small input (100 routes, a few
//     proxies) the figure is noise and can fall below 0;
//
//   - idle-cpu-ms/s: the controller's CPU at rest with the proxies
//     connected, before the changes (ms per second);
//
//   - acks/proxy/change: the ACKs of any type (xds_controller_xds_acks_total)
//     per proxy and change, at the scrape that saw the last route ACK;
//
//   - proxy-cpu-ms/change: one proxy's CPU time per change over the same
//     window: the Envoys' (procCPU), divided by N; for the simulated
//     proxies the benchmark process's (the proxies, the scrapes' client
//     side, this loop), divided by N;
//
//   - KiB/proxy: the controller's resident memory with the N proxies
//     synced, less with one, divided by N-1 (the first proxy connects
//     before, so that the whole input is translated);
//
//   - envoy-MiB (Envoys only): an Envoy's mean resident memory.
//
// FANOUT_PROFILES=DIR writes the controller's CPU profile of the first
// 10 s of changes of each kind into DIR (--pprof-address).
//
// For the Envoys it also logs, after the run, when each applied the last
// change's route configuration (admin /config_dump last_updated),
// relative to the file's write.
//
//	FANOUT_ENVOYS=10,20 go test ./test/e2e -run '^$' -bench FanoutCalibration -benchtime 20x -timeout 60m
//
// (make bench-fanout-calib runs it three times: the simulation and the
// Envoys alternate, as the sub-benchmarks of one run do).
func BenchmarkFanoutCalibration(b *testing.B) {
	for _, n := range envInts("FANOUT_ENVOYS", 10, 20) {
		if n < 2 || n > maxCalibEnvoys {
			b.Fatalf("FANOUT_ENVOYS: %d proxies, want 2 to %d", n, maxCalibEnvoys)
		}
		for _, r := range envInts("CALIB_ROUTES", 1000) {
			for _, kind := range []string{"sim", "envoy"} {
				b.Run(fmt.Sprintf("proxies=%d/routes=%d/%s", n, r, kind), func(b *testing.B) { calibrate(b, kind, n, r) })
			}
		}
	}
}

// maxCalibEnvoys bounds the Envoy processes one calibration starts (each
// holds the whole configuration: about 60 MiB at 1000 routes).
const maxCalibEnvoys = 20

// ackPoll is how often the calibration scrapes the controller's metrics
// while it waits for the ACKs of a change.
const ackPoll = 10 * time.Millisecond

func calibrate(b *testing.B, kind string, n, routes int) {
	metrics, pprofAddr := fmt.Sprintf("127.0.0.1:%d", freePort(b)), fmt.Sprintf("127.0.0.1:%d", freePort(b))
	args := []string{"--metrics-address", metrics}
	profiles := os.Getenv("FANOUT_PROFILES")
	if profiles != "" {
		args = append(args, "--pprof-address", pprofAddr)
	}
	f := startFanout(b, routes, args...)
	pid := f.proc.Process.Pid
	var fleet *envoyFleet
	switch kind {
	case "sim":
		sims := newSimFleet(b, f)
		sims.probe(b, routes+1, 3*time.Minute)
		rss0 := procRSS(b, pid)
		sims.grow(b, n)
		defer func(rss0 int64) {
			b.ReportMetric(float64(procRSS(b, pid)-rss0)/1024/float64(n-1), "KiB/proxy")
		}(rss0)
	case "envoy":
		fleet = newEnvoyFleet(b, f)
		fleet.start(b, 0)
		fleet.await(b, routes)
		time.Sleep(time.Second)
		rss0 := procRSS(b, pid)
		for i := 1; i < n; i++ {
			fleet.start(b, i)
			time.Sleep(time.Second / time.Duration(n))
		}
		fleet.await(b, routes)
		time.Sleep(time.Second)
		defer func(rss0 int64) {
			b.ReportMetric(float64(procRSS(b, pid)-rss0)/1024/float64(n-1), "KiB/proxy")
		}(rss0)
	}
	// One scrape's CPU, to take the scrapes out of the change's CPU.
	const scrapes = 100
	cpu0 := procCPU(b, pid)
	for range scrapes {
		scrapeAcks(b, metrics)
	}
	scrapeCPU := (procCPU(b, pid) - cpu0) / scrapes
	// The controller's CPU at rest with the proxies connected.
	const rest = 3 * time.Second
	cpu0 = procCPU(b, pid)
	time.Sleep(rest)
	idle := float64(procCPU(b, pid)-cpu0) / float64(rest)

	// proxyCPU is the proxies' CPU time so far: the Envoys', or the
	// benchmark process's (where the simulated proxies run).
	proxyCPU := func() time.Duration {
		if fleet == nil {
			return procCPU(b, os.Getpid())
		}
		var sum time.Duration
		for _, p := range fleet.procs {
			sum += procCPU(b, p.Process.Pid)
		}
		return sum
	}
	if profiles != "" {
		// The controller's CPU profile of the first 10 s of changes.
		done := make(chan struct{})
		go func() {
			defer close(done)
			saveProfile(b, pprofAddr, "profile?seconds=10", filepath.Join(profiles, fmt.Sprintf("cpu-calib-proxies=%d-routes=%d-%s.pb.gz", n, routes, kind)))
		}()
		b.Cleanup(func() { <-done })
	}
	var all ackHist
	var lasts, writes []time.Duration
	var cpu, pcpu time.Duration
	var requests float64
	var write time.Time
	i := 0
	for b.Loop() {
		time.Sleep(benchQuiet)
		h0 := scrapeAcks(b, metrics)
		cpu0, pcpu0 := procCPU(b, pid), proxyCPU()
		write = time.Now()
		changeRoute(b, f, i)
		polls := 0
		var h ackHist
		for {
			time.Sleep(ackPoll)
			h, polls = scrapeAcks(b, metrics), polls+1
			if h.count()-h0.count() >= float64(n) {
				break
			}
			if time.Since(write) > time.Minute {
				b.Fatalf("change %d: %v of %d ACKs within a minute", i, h.count()-h0.count(), n)
			}
		}
		writes = append(writes, time.Since(write))
		time.Sleep(300 * time.Millisecond)
		cpu += procCPU(b, pid) - cpu0 - time.Duration(polls+1)*scrapeCPU
		pcpu += proxyCPU() - pcpu0
		d := h.sub(h0)
		requests += h.acks - h0.acks
		lasts = append(lasts, d.last())
		all = all.add(d)
		i++
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(all.quantile(0.5)), "ack-median-ms")
	b.ReportMetric(ms(all.quantile(0.99)), "ack-p99-ms")
	b.ReportMetric(ms(quantile(lasts, 0.5)), "last-ack-median-ms")
	b.ReportMetric(ms(quantile(lasts, 0.99)), "last-ack-p99-ms")
	b.ReportMetric(ms(quantile(writes, 0.5)), "write-last-median-ms")
	b.ReportMetric(ms(cpu)/float64(i), "cpu-ms/change")
	b.ReportMetric(ms(scrapeCPU), "scrape-cpu-ms")
	b.ReportMetric(idle*1000, "idle-cpu-ms/s")
	b.ReportMetric(requests/float64(i*n), "acks/proxy/change")
	b.ReportMetric(ms(pcpu)/float64(i*n), "proxy-cpu-ms/change")
	if fleet != nil {
		b.ReportMetric(fleet.meanRSS(b)/(1<<20), "envoy-MiB")
		fleet.logApplied(b, write)
	}
}

// ackHist is the RouteConfiguration series of the controller's histogram
// xds_controller_xds_ack_seconds: the buckets' upper bounds (seconds, the
// last +Inf) and their cumulative counts; and acks, the sum of
// xds_controller_xds_acks_total (every scope and type) at the same scrape.
type ackHist struct {
	le, counts []float64
	acks       float64
}

var ackTotal = regexp.MustCompile(`(?m)^xds_controller_xds_acks_total\{[^}]*\} (\S+)$`)

var ackBucket = regexp.MustCompile(`(?m)^xds_controller_xds_ack_seconds_bucket\{type="RouteConfiguration",le="([^"]+)"\} (\S+)$`)

// scrapeAcks reads ackHist from the controller's /metrics at addr (empty
// before the first ACK).
func scrapeAcks(b *testing.B, addr string) ackHist {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	var h ackHist
	for _, m := range ackBucket.FindAllStringSubmatch(string(body), -1) {
		le, err1 := strconv.ParseFloat(m[1], 64)
		c, err2 := strconv.ParseFloat(m[2], 64)
		if err1 != nil || err2 != nil {
			b.Fatalf("bucket %q", m[0])
		}
		h.le, h.counts = append(h.le, le), append(h.counts, c)
	}
	for _, m := range ackTotal.FindAllStringSubmatch(string(body), -1) {
		c, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			b.Fatalf("acks %q", m[0])
		}
		h.acks += c
	}
	return h
}

// count is the number of ACKs observed.
func (h ackHist) count() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// sub is h less the earlier scrape h0 (of the same buckets, or empty).
func (h ackHist) sub(h0 ackHist) ackHist {
	d := ackHist{le: h.le, counts: append([]float64(nil), h.counts...)}
	for i := range h0.counts {
		d.counts[i] -= h0.counts[i]
	}
	return d
}

// add is the sum of h and d (h may be empty).
func (h ackHist) add(d ackHist) ackHist {
	sum := ackHist{le: d.le, counts: append([]float64(nil), d.counts...)}
	for i := range h.counts {
		sum.counts[i] += h.counts[i]
	}
	return sum
}

// last is the upper bound of the highest bucket that holds an ACK (the
// slowest one's latency, rounded up to its bucket); 0 when none.
func (h ackHist) last() time.Duration {
	for i := range h.counts {
		if h.counts[i] >= h.count() && h.count() > 0 {
			return seconds(h.le[i])
		}
	}
	return 0
}

// quantile is the q-quantile of the ACKs, interpolated linearly within
// its bucket (the first bucket's lower bound 0), as Prometheus's
// histogram_quantile; a quantile in the +Inf bucket is the highest bound.
func (h ackHist) quantile(q float64) time.Duration {
	rank := q * h.count()
	for i, c := range h.counts {
		if c < rank {
			continue
		}
		if math.IsInf(h.le[i], 1) {
			return seconds(h.le[i-1])
		}
		lo, below := 0.0, 0.0
		if i > 0 {
			lo, below = h.le[i-1], h.counts[i-1]
		}
		if c == below {
			return seconds(h.le[i])
		}
		return seconds(lo + (h.le[i]-lo)*(rank-below)/(c-below))
	}
	return 0
}

func seconds(s float64) time.Duration {
	if math.IsInf(s, 1) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

// envoyFleet is the Envoy processes of one calibration, each connected to
// f's controller with the bootstrap standalone mode writes
// (<state>/envoy-bootstrap.yaml), as node "envoy-<i>" with an admin port
// of its own. The Gateway's listener port is shared: Envoy binds it with
// SO_REUSEPORT (the listener's enable_reuse_port, on by default). They are
// killed in the benchmark's Cleanup.
type envoyFleet struct {
	f      *fixture
	ctx    context.Context
	procs  []*exec.Cmd
	exited []chan struct{}
	admins []int
	logs   []string
	client *http.Client
}

func newEnvoyFleet(b *testing.B, f *fixture) *envoyFleet {
	ctx, cancel := context.WithCancel(context.Background())
	e := &envoyFleet{f: f, ctx: ctx, client: &http.Client{Timeout: 10 * time.Second}}
	b.Cleanup(func() {
		cancel()
		for i := range e.procs {
			<-e.exited[i]
			if b.Failed() {
				if log, err := os.ReadFile(e.logs[i]); err == nil {
					b.Logf("envoy-%d's log:\n%s", i, log)
				}
			}
		}
	})
	return e
}

// start starts Envoy number i, once the controller has written the
// bootstrap (with Envoy's SVID), as standalone mode starts its own
// (pkg/standalone: --disable-hot-restart and bootstrap.ConfigArgs).
func (e *envoyFleet) start(b *testing.B, i int) {
	boot := filepath.Join(e.f.state, "envoy-bootstrap.yaml")
	for began := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(boot); err == nil {
			break
		}
		if time.Since(began) > time.Minute {
			b.Fatalf("no %s after a minute", boot)
		}
	}
	admin := freePort(b)
	args := append([]string{"-c", boot, "--service-node", fmt.Sprintf("envoy-%d", i), "--base-id", fmt.Sprint(i),
		"--disable-hot-restart", "--drain-time-s", "1", "--log-level", "warn",
		"--config-yaml", fmt.Sprintf("admin: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}", admin)},
		bootstrap.ConfigArgs()...)
	cmd := exec.CommandContext(e.ctx, e.f.envoy, args...)
	logPath := filepath.Join(b.TempDir(), "envoy.log")
	log, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	e.procs, e.exited, e.admins, e.logs = append(e.procs, cmd), append(e.exited, exited), append(e.admins, admin), append(e.logs, logPath)
}

// get reads path from Envoy i's admin interface: the status and body
// (-1 and the error when the request failed).
func (e *envoyFleet) get(i int, path string) (int, string) {
	resp, err := e.client.Get(fmt.Sprintf("http://127.0.0.1:%d%s", e.admins[i], path))
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// stat is Envoy i's counter or gauge name (-1 when unread).
func (e *envoyFleet) stat(i int, name string) int {
	code, body := e.get(i, "/stats?filter=^"+regexp.QuoteMeta(name)+"$")
	if code != 200 {
		return -1
	}
	_, v, ok := strings.Cut(strings.TrimSpace(body), ": ")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return n
}

// await waits until every Envoy started is up (5 minutes at most): ready
// (/ready LIVE: its clusters, listeners and their route configurations
// received), holding a cluster per Service of the input (routes and
// extra), with the same number of active listeners as Envoy 0 (the
// Gateway's shared one among them) and no listener that failed.
func (e *envoyFleet) await(b *testing.B, routes int) {
	began := time.Now()
	for i := range e.procs {
		for {
			select {
			case <-e.exited[i]:
				b.Fatalf("envoy-%d exited", i)
			default:
			}
			code, body := e.get(i, "/ready")
			if code == 200 && strings.TrimSpace(body) == "LIVE" && e.stat(i, "cluster_manager.active_clusters") > routes {
				break
			}
			if time.Since(began) > 5*time.Minute {
				b.Fatalf("envoy-%d not up after 5 minutes: /ready %d %q", i, code, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	want := e.stat(0, "listener_manager.total_listeners_active")
	for i := range e.procs {
		if got, failed := e.stat(i, "listener_manager.total_listeners_active"), e.stat(i, "listener_manager.listener_create_failure"); got != want || want < 2 || failed != 0 {
			b.Fatalf("envoy-%d: %d listeners active (envoy-0: %d), %d failed", i, got, want, failed)
		}
	}
}

// meanRSS is the Envoys' mean resident memory in bytes.
func (e *envoyFleet) meanRSS(b *testing.B) float64 {
	var sum int64
	for _, p := range e.procs {
		sum += procRSS(b, p.Process.Pid)
	}
	return float64(sum) / float64(len(e.procs))
}

// logApplied logs when the Envoys applied their newest route
// configuration (admin /config_dump?resource=dynamic_route_configs,
// last_updated), relative to write: the first, the median and the last.
func (e *envoyFleet) logApplied(b *testing.B, write time.Time) {
	var applied []time.Duration
	for i := range e.procs {
		code, body := e.get(i, "/config_dump?resource=dynamic_route_configs")
		if code != 200 {
			b.Fatalf("envoy-%d config_dump: %d %.200s", i, code, body)
		}
		var dump struct {
			Configs []struct {
				LastUpdated time.Time `json:"last_updated"`
			} `json:"configs"`
		}
		if err := json.Unmarshal([]byte(body), &dump); err != nil {
			b.Fatal(err)
		}
		var last time.Time
		for _, c := range dump.Configs {
			if c.LastUpdated.After(last) {
				last = c.LastUpdated
			}
		}
		applied = append(applied, last.Sub(write))
	}
	b.Logf("the last change's route configuration applied by the %d Envoys after the write: first %s, median %s, last %s (config_dump last_updated)",
		len(applied), quantile(applied, 0), quantile(applied, 0.5), quantile(applied, 1))
}
