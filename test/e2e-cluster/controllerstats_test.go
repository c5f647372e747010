package e2ecluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controllerSampler reads the controller replicas' own process metrics
// (the Prometheus client's process collector on the metrics port, 8080):
// process_cpu_seconds_total and process_resident_memory_bytes, and the
// pipeline's runs (xds_controller_translation_duration_seconds, count and
// sum of the successful runs).
type controllerSampler struct {
	e     *env
	c     *http.Client
	addrs []string // pod IP:metrics port of every replica
}

// controllerSampler finds the controller pods of the release.
func (e *env) controllerSampler() *controllerSampler {
	e.t.Helper()
	pods, err := e.kube.CoreV1().Pods(releaseNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=xds-controller"})
	if err != nil || len(pods.Items) == 0 {
		e.t.Fatalf("controller pods: %v (%d)", err, len(pods.Items))
	}
	s := &controllerSampler{e: e, c: &http.Client{Timeout: 2 * time.Second}}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || !podReady(&p) {
			continue
		}
		if err := allowedAddress(p.Status.PodIP); err != nil {
			e.t.Fatal(err)
		}
		s.addrs = append(s.addrs, net.JoinHostPort(p.Status.PodIP, "8080"))
	}
	return s
}

// pipelineSeries are the controller's series a phase reports the change
// of: the pipeline's successful runs (count, seconds), the ACKs of route
// configuration changes (count, seconds after the publish), and the
// status writer's objects (count, seconds waited in its queue, seconds
// spent comparing and writing them, the rate limit's wait included) and
// the HTTPRoute status writes among them.
var pipelineSeries = [nSeries]string{
	runsCount:    `xds_controller_translation_duration_seconds_count{result="ok"}`,
	runsSum:      `xds_controller_translation_duration_seconds_sum{result="ok"}`,
	acksCount:    `xds_controller_xds_ack_seconds_count{type="RouteConfiguration"}`,
	acksSum:      `xds_controller_xds_ack_seconds_sum{type="RouteConfiguration"}`,
	queuedCount:  `xds_controller_status_queue_wait_seconds_count`,
	queuedSum:    `xds_controller_status_queue_wait_seconds_sum`,
	writingCount: `xds_controller_status_write_duration_seconds_count`,
	writingSum:   `xds_controller_status_write_duration_seconds_sum`,
	routeWrites:  `xds_controller_status_writes_total{kind="HTTPRoute",result="written"}`,
}

// The indices of pipelineSeries.
const (
	runsCount = iota
	runsSum
	acksCount
	acksSum
	queuedCount
	queuedSum
	writingCount
	writingSum
	routeWrites
	nSeries
)

// triggersSeries is the prefix of the pipeline's trigger counters, one
// series per kind of object whose events asked for a run.
const triggersSeries = `xds_controller_pipeline_triggers_total{kind="`

// pipeline returns pipelineSeries summed over the replicas, and the
// trigger counters by kind, summed too.
func (s *controllerSampler) pipeline() (out [nSeries]float64, triggers map[string]float64, err error) {
	triggers = map[string]float64{}
	for _, a := range s.addrs {
		m, err := scrapeProcess(s.c, "http://"+a+"/metrics")
		if err != nil {
			return out, nil, fmt.Errorf("controller metrics %s: %w", a, err)
		}
		for i, name := range pipelineSeries {
			out[i] += m[name]
		}
		for name, v := range m {
			if kind, ok := strings.CutPrefix(name, triggersSeries); ok {
				triggers[strings.TrimSuffix(kind, `"}`)] += v
			}
		}
	}
	return out, triggers, nil
}

// sample returns CPU seconds and resident bytes summed over the replicas,
// or an error when a replica's metrics cannot be read or lack them.
func (s *controllerSampler) sample() (cpu, rss float64, err error) {
	for _, a := range s.addrs {
		m, err := scrapeProcess(s.c, "http://"+a+"/metrics")
		if err != nil {
			return 0, 0, fmt.Errorf("controller metrics %s: %w", a, err)
		}
		c, okc := m["process_cpu_seconds_total"]
		r, okr := m["process_resident_memory_bytes"]
		if !okc || !okr {
			return 0, 0, fmt.Errorf("controller metrics %s: no process_cpu_seconds_total or process_resident_memory_bytes", a)
		}
		cpu, rss = cpu+c, rss+r
	}
	return cpu, rss, nil
}

// mustSample is sample on the test's goroutine: it fails the test on error.
func (s *controllerSampler) mustSample() (cpu, rss float64) {
	s.e.t.Helper()
	cpu, rss, err := s.sample()
	if err != nil {
		s.e.t.Fatal(err)
	}
	return cpu, rss
}

// rss is the replicas' resident memory now, in bytes.
func (s *controllerSampler) rss() float64 {
	_, r := s.mustSample()
	return r
}

// phase is one measured stretch of the benchmark.
type phase struct {
	s       *controllerSampler
	cpu0    float64
	series0 [nSeries]float64 // pipelineSeries at begin
	trig0   map[string]float64
	began   time.Time
	mu      sync.Mutex
	peakRSS float64
	done    chan struct{}
	wg      sync.WaitGroup
}

// begin starts a phase: the CPU seconds now, and the peak RSS sampled every
// 250 ms until end.
func (s *controllerSampler) begin() *phase {
	p := &phase{s: s, began: time.Now(), done: make(chan struct{})}
	p.cpu0, p.peakRSS = s.mustSample()
	p.series0, p.trig0, _ = s.pipeline()
	p.wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				_, r, err := s.sample()
				if err != nil {
					continue // a missed sample; begin and end check the metrics
				}
				p.mu.Lock()
				p.peakRSS = max(p.peakRSS, r)
				p.mu.Unlock()
			}
		}
	})
	return p
}

// end stops the phase and formats the controller's CPU seconds, peak RSS,
// pipeline runs (how many, and their mean duration, and the events that
// asked for them by kind), the Envoy ACKs of route configuration changes
// (how many, and their mean time after the publish), and the status
// writer's comparisons (how many, their mean wait in the queue and mean
// comparison and write, and how many HTTPRoute statuses were written)
// during it.
func (p *phase) end() string {
	close(p.done)
	p.wg.Wait()
	cpu, rss := p.s.mustSample()
	peak := max(p.peakRSS, rss)
	runs := ""
	if v, trig, err := p.s.pipeline(); err == nil {
		d := func(i int) float64 { return v[i] - p.series0[i] }
		if n := d(runsCount); n > 0 {
			runs = fmt.Sprintf(", %.0f pipeline runs of %.1f ms mean", n, 1000*d(runsSum)/n)
			var kinds []string
			for kind, c := range trig {
				if d := c - p.trig0[kind]; d > 0 {
					kinds = append(kinds, fmt.Sprintf("%s %.0f", kind, d))
				}
			}
			slices.Sort(kinds)
			runs += " (asked for by " + strings.Join(kinds, ", ") + ")"
		}
		if n := d(acksCount); n > 0 {
			runs += fmt.Sprintf(", %.0f RouteConfiguration ACKs %.1f ms after the publish (mean)", n, 1000*d(acksSum)/n)
		}
		if n, w := d(queuedCount), d(writingCount); n > 0 && w > 0 {
			runs += fmt.Sprintf(", %.0f status comparisons %.1f ms in the queue and %.1f ms writing (means), %.0f HTTPRoute status writes", n, 1000*d(queuedSum)/n, 1000*d(writingSum)/w, d(routeWrites))
		}
	}
	return fmt.Sprintf("controller: %.1f CPU s over %s, peak RSS %s%s",
		cpu-p.cpu0, time.Since(p.began).Round(100*time.Millisecond), mib(peak), runs)
}

// scrapeProcess fetches a Prometheus text exposition at url and returns
// its samples by metric name (with its labels as exposed, for a labelled
// one).
func scrapeProcess(c *http.Client, url string) (map[string]float64, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		name, val, ok := line[:max(i, 0)], line[i+1:], i > 0
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// pprofPort is where the benchmark asks the controller to serve
// /debug/pprof/ (--pprof-address) when E2E_BENCH_PROFILE is set.
const pprofPort = "6060"

// cpuProfile starts fetching a CPU profile of d from every replica into
// dir/cpu-<name>-<pod IP>.pprof; the returned function waits for them and
// returns the files written (a replica that failed is logged and left
// out). Read one with `go tool pprof -top FILE`.
func (s *controllerSampler) cpuProfile(dir, name string, d time.Duration) func() []string {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var files []string
	c := &http.Client{Timeout: d + 30*time.Second}
	for _, a := range s.addrs {
		host, _, _ := net.SplitHostPort(a)
		wg.Go(func() {
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", net.JoinHostPort(host, pprofPort), int(d.Seconds()))
			resp, err := c.Get(url)
			if err != nil {
				s.e.t.Logf("CPU profile %s: %v", url, err)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				s.e.t.Logf("CPU profile %s: %s", url, resp.Status)
				return
			}
			file := filepath.Join(dir, fmt.Sprintf("cpu-%s-%s.pprof", name, host))
			f, err := os.Create(file)
			if err == nil {
				_, err = io.Copy(f, resp.Body)
				err = errors.Join(err, f.Close())
			}
			if err != nil {
				s.e.t.Logf("CPU profile %s: %v", file, err)
				return
			}
			mu.Lock()
			files = append(files, file)
			mu.Unlock()
		})
	}
	return func() []string {
		wg.Wait()
		return files
	}
}
