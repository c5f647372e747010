package e2ecluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestPropagationBenchmark is the cluster benchmark of issue 14 (`make
// bench-cluster N=... MODE=shared|dedicated`): with the shared benchmark
// input (../shared/bench/gen-routes.py N: one Gateway "bench", N HTTPRoutes
// and Services) on the local cluster, in one deployment mode, it prints
//   - bulk: from the end of the apply (the last create's answer) until every
//     route is Accepted, and until every route answers through the
//     Gateway's address;
//   - single: with the N routes in place, the create, the edit (a new
//     hostname) and the delete of one more HTTPRoute, from the API server's
//     answer until the first request Envoy routes the new way: median, p99
//     and maximum over E2E_BENCH_SAMPLES samples each (default 50);
//   - churn: during E2E_BENCH_CHURN (default 60s) of route adds, edits and
//     deletes at 10 per second, a steady keep-alive request stream to 20
//     unchanged routes with a real backend: requests sent and failed; the
//     same stream during a rolling restart of the Gateway's Envoy fleet;
//   - fan-out, with E2E_BENCH_PROXIES=P1,P2,...: P1 simulated proxies
//     join the Gateway's fleet (benchFanout), then more up to P2, and so
//     on; at each size E2E_BENCH_SAMPLES route creates are timed at every
//     one of them;
//   - the controller's memory limit is 6 GiB instead of the chart's 512
//     MiB with the fan-out phase or over 3000 routes;
//   - per phase, the controller's CPU seconds and peak RSS (its own
//     process_cpu_seconds_total and process_resident_memory_bytes, sampled
//     every 250 ms and summed over the replicas), and its RSS once the N
//     routes are in place.
//
// It asserts that every route arrives and that no request of the steady
// stream fails. Skipped without E2E_BENCH_ROUTES=N; E2E_BENCH_MODE is
// Shared (default) or Dedicated.
func TestPropagationBenchmark(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("E2E_BENCH_ROUTES"))
	if n <= 0 {
		t.Skip("set E2E_BENCH_ROUTES=N to measure with N routes")
	}
	mode := "Shared"
	if strings.EqualFold(os.Getenv("E2E_BENCH_MODE"), "dedicated") {
		mode = "Dedicated"
	}
	samples := envInt("E2E_BENCH_SAMPLES", 50)
	churnFor := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("E2E_BENCH_CHURN")); err == nil && d > 0 {
		churnFor = d
	}

	e := setup(t)
	e.cleanup()
	input := e.benchInput(n)
	if mode == "Dedicated" {
		input = dedicatedBench(input)
	}
	removeInput := func() {
		_, _ = e.kubectl(input, "delete", "--ignore-not-found", "--wait=false", "-f", "-")
		_, _ = e.kubectl("", "-n", "default", "delete", "httproutes", "-l", "xds-bench", "--ignore-not-found")
		_, _ = e.kubectl(steadyBackend, "delete", "--ignore-not-found", "-f", "-")
	}
	removeInput()
	if os.Getenv("E2E_KEEP") == "" {
		t.Cleanup(func() { removeInput(); e.cleanup() })
	}
	// Verbose logging off: the benchmark measures the controller, not its
	// log volume.
	values := map[string]any{"verbose": false}
	profileDir := os.Getenv("E2E_BENCH_PROFILE")
	if profileDir != "" {
		values["extraArgs"] = []any{"--pprof-address=:" + pprofPort}
	}
	proxies := envInts("E2E_BENCH_PROXIES")
	if len(proxies) > 0 || n > 3000 {
		// The chart's 512 MiB limit is for a handful of fleets and a few
		// thousand routes; the fan-out phase measures what each
		// connected proxy costs, the large worlds what routes cost.
		values["resources"] = map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "128Mi"}, "limits": map[string]any{"memory": "6Gi"}}
	}
	e.helmInstallWith(mode, values)
	ctl := e.controllerSampler()
	var report []string
	logf := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		report = append(report, line)
		t.Log(line)
	}
	logf("benchmark: %d routes, %s mode", n, mode)

	// Bulk.
	ph := ctl.begin()
	accepted := e.watchAccepted()
	start := time.Now()
	type applied struct {
		at  time.Time
		err error
	}
	apply := make(chan applied, 1)
	go func() {
		_, err := e.kubectl(input, "apply", "--server-side", "-f", "-")
		apply <- applied{time.Now(), err}
	}()
	// The probes start while the routes are being created, as soon as the
	// Gateway has its address, so that "answering" is when the last route
	// answered, not how long probing them all takes.
	addr := e.gatewayAddressIn("default", "bench", 5*time.Minute)
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("svc-%d.example.com", i)
	}
	prober := startBulkProber(addr, hosts)
	a := <-apply
	if a.err != nil {
		prober.stop()
		t.Fatal(a.err)
	}
	appliedAt := a.at
	acceptedAfter := accepted.wait(e, n, appliedAt, 10*time.Minute)
	lastRouted, err := prober.wait(appliedAt.Add(10 * time.Minute))
	if err != nil {
		e.dumpState()
		t.Fatalf("bulk: %v", err)
	}
	answered := lastRouted.Sub(appliedAt)
	logf("bulk: applied in %s; every route Accepted %s and answering %s after the last create (probed from %s after the apply began); %s",
		appliedAt.Sub(start).Round(time.Millisecond), acceptedAfter.Round(time.Millisecond), answered.Round(time.Millisecond),
		prober.started.Sub(start).Round(100*time.Millisecond), ph.end())
	logf("controller RSS with %d routes in place: %s", n, mib(ctl.rss()))

	// The steady stream's 20 routes and their backend.
	e.mustKubectl(steadyBackend, "apply", "-f", "-")
	steadyHosts := make([]string, 20)
	for i := range steadyHosts {
		steadyHosts[i] = fmt.Sprintf("steady-%d.example.com", i)
		e.createBenchRoute(fmt.Sprintf("steady-%d", i), "steady", steadyHosts[i], "steady", 80)
	}
	probe := keepAliveClient()
	for _, h := range steadyHosts {
		e.eventually("http://"+addr+"/ Host "+h+" -> default/steady", 3*time.Minute, func() error {
			_, err := keepAliveGet(probe, addr, h, "/", "steady")
			return err
		})
	}

	// Single route: create, edit, delete.
	ph = ctl.begin()
	if profileDir != "" {
		profiled := ctl.cpuProfile(profileDir, fmt.Sprintf("single-%s-%d", strings.ToLower(mode), n), 20*time.Second)
		defer func() { logf("controller CPU profiles of the single-route phase: %s", strings.Join(profiled(), " ")) }()
	}
	var created, edited, deleted []time.Duration
	// The create is also timed at each Envoy pod directly: the Gateway's
	// address picks one pod per connection, so a slow pod shows as a tail.
	pods := e.gatewayEndpoints(addr, 80)
	perPod := make([][]time.Duration, len(pods))
	for i := range samples {
		name := fmt.Sprintf("probe-%d", i)
		host := fmt.Sprintf("probe-%d.example.com", i)
		at := e.createBenchRoute(name, "probe", host, "steady", 80)
		var wg sync.WaitGroup
		for j, ep := range pods {
			wg.Go(func() { perPod[j] = append(perPod[j], e.waitRoutedAt(ep, host, at, time.Minute)) })
		}
		created = append(created, e.waitRouted(addr, host, at, time.Minute))
		wg.Wait()
		time.Sleep(200 * time.Millisecond)

		edit := fmt.Sprintf("probe-%d-edited.example.com", i)
		at = e.patchRoute(name, fmt.Sprintf(`{"spec":{"hostnames":[%q]}}`, edit))
		edited = append(edited, e.waitRouted(addr, edit, at, time.Minute))
		time.Sleep(200 * time.Millisecond)

		at = e.deleteRoute(name)
		deleted = append(deleted, e.waitUnrouted(addr, edit, at, time.Minute))
		time.Sleep(200 * time.Millisecond)
	}
	logf("single route with %d in place, %d samples each (median, p99, max): create %s; edit %s; delete %s; %s",
		n, samples, spread(created), spread(edited), spread(deleted), ph.end())
	for j, ep := range pods {
		logf("  create at Envoy pod %s: %s", ep, spread(perPod[j]))
	}

	// Churn under a steady stream.
	ph = ctl.begin()
	stream := e.startSteadyStream(addr, steadyHosts)
	ops, opErrs := e.churn(churnFor, 10)
	sent, failed, errs := stream.stop()
	logf("churn: %d route adds, edits and deletes in %s (%d refused by the API server); steady stream to 20 unchanged routes: %d requests, %d failed %v; %s",
		ops, churnFor, opErrs, sent, failed, errs, ph.end())
	if failed > 0 {
		t.Errorf("churn: %d of %d requests to unchanged routes failed", failed, sent)
	}

	// Rolling restart of the fleet under the same stream.
	fleetNS, fleetName := gatewayFleet(mode, "default", "bench", "bench")
	ph = ctl.begin()
	stream = e.startSteadyStream(addr, steadyHosts)
	time.Sleep(2 * time.Second)
	took := e.restartFleet(fleetNS, fleetName)
	time.Sleep(2 * time.Second)
	sent, failed, errs = stream.stop()
	logf("rolling restart of %s/%s: %d requests, %d failed %v over %s; %s",
		fleetNS, fleetName, sent, failed, errs, took.Round(100*time.Millisecond), ph.end())
	if failed > 0 {
		t.Errorf("rolling restart: %d of %d requests failed", failed, sent)
	}

	if len(proxies) > 0 {
		e.benchFanout(logf, ctl, mode, proxies, samples)
	}

	if out := os.Getenv("E2E_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(strings.Join(report, "\n")+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// steadyBackend is the echo server behind the steady stream's routes
// (namespace default, Service steady port 80).
const steadyBackend = `apiVersion: apps/v1
kind: Deployment
metadata: {name: steady, namespace: default, labels: {app: steady}}
spec:
  replicas: 2
  selector: {matchLabels: {app: steady}}
  template:
    metadata: {labels: {app: steady}}
    spec:
      # The namespace holds the benchmark's thousands of Services: their
      # environment variables would overflow exec's limit.
      enableServiceLinks: false
      containers:
      - name: echo
        image: registry.k8s.io/gateway-api/echo-basic:v1.6.0-dev.3
        imagePullPolicy: IfNotPresent
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        ports: [{name: http, containerPort: 3000}]
        readinessProbe: {httpGet: {path: /, port: 3000}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: steady, namespace: default}
spec:
  selector: {app: steady}
  ports: [{name: http, port: 80, targetPort: 3000}]
`

// envInts are the increasing positive integers of the comma-separated
// list in environment variable name (none when it is unset or 0).
func envInts(name string) []int {
	var out []int
	for _, f := range strings.Split(os.Getenv(name), ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && v > 0 && (len(out) == 0 || v > out[len(out)-1]) {
			out = append(out, v)
		}
	}
	return out
}

// envInt is the integer in environment variable name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchRoute is HTTPRoute default/name, labelled xds-bench=kind, on the
// Gateway bench for host with one backendRef (Service backend, port).
func benchRoute(name, kind, host, backend string, port int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1",
		"kind":       "HTTPRoute",
		"metadata":   map[string]any{"name": name, "namespace": "default", "labels": map[string]any{"xds-bench": kind}},
		"spec": map[string]any{
			"parentRefs": []any{map[string]any{"name": "bench"}},
			"hostnames":  []any{host},
			"rules":      []any{map[string]any{"backendRefs": []any{map[string]any{"name": backend, "port": port}}}},
		},
	}}
}

// createBenchRoute creates benchRoute(name, kind, host, backend, port) and
// returns when the API server answered.
func (e *env) createBenchRoute(name, kind, host, backend string, port int64) time.Time {
	e.t.Helper()
	if _, err := e.dyn.Resource(httpRouteGVR).Namespace("default").Create(context.Background(), benchRoute(name, kind, host, backend, port), metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return time.Now()
}

// patchRoute merge-patches HTTPRoute default/name and returns when the API
// server answered.
func (e *env) patchRoute(name, patch string) time.Time {
	e.t.Helper()
	if _, err := e.dyn.Resource(httpRouteGVR).Namespace("default").Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return time.Now()
}

// deleteRoute deletes HTTPRoute default/name and returns when the API
// server answered.
func (e *env) deleteRoute(name string) time.Time {
	e.t.Helper()
	if err := e.dyn.Resource(httpRouteGVR).Namespace("default").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return time.Now()
}

// waitUnrouted polls every 5 ms until Envoy at addr answers 404 for host
// (no virtual host left for it), and returns the time since start; it
// fails after timeout.
func (e *env) waitUnrouted(addr, host string, start time.Time, timeout time.Duration) time.Duration {
	e.t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	for routed(c, addr, host) {
		if time.Since(start) > timeout {
			e.t.Fatalf("host %s still routed at %s after %s", host, addr, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// bulkProber probes hosts through a Gateway, 64 at a time, in turn, each
// again after a 404 and a 200 ms pause (at most about 300 probes per
// second: the probes share the machine with what they measure), until
// every one answers routed (routedOrBusy, within 200 ms), and records when
// each first did (the start of that probe). A routed host's probe takes
// the whole 200 ms (see routedOrBusy), so 64 at a time clear about 300
// routed hosts a second.
type bulkProber struct {
	started time.Time
	hosts   []string
	routed  firstTimes // by host
	done    chan struct{}
	wg      sync.WaitGroup
}

// startBulkProber starts probing hosts at addr:80 (routedOrBusy).
func startBulkProber(addr string, hosts []string) *bulkProber {
	b := &bulkProber{started: time.Now(), hosts: hosts, done: make(chan struct{})}
	todo := make(chan int, len(hosts))
	for i := range hosts {
		todo <- i
	}
	for range 64 {
		b.wg.Go(func() {
			c := &http.Client{Timeout: 200 * time.Millisecond}
			for {
				var i int
				select {
				case <-b.done:
					return
				case i = <-todo:
				}
				at := time.Now()
				if routedOrBusy(c, addr, hosts[i]) {
					if b.routed.see(hosts[i], at) == len(hosts) {
						return
					}
					continue
				}
				todo <- i
				select {
				case <-b.done:
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		})
	}
	return b
}

// stop ends the probes.
func (b *bulkProber) stop() {
	select {
	case <-b.done:
	default:
		close(b.done)
	}
	b.wg.Wait()
}

// wait returns when the last host first answered routed, once every host
// has; past deadline it returns an error naming a host that did not. It
// stops the probes.
func (b *bulkProber) wait(deadline time.Time) (time.Time, error) {
	last, count, ok := b.routed.waitFor(len(b.hosts), deadline)
	b.stop()
	if ok {
		return last, nil
	}
	for _, h := range b.hosts {
		if !b.routed.seen(h) {
			return time.Time{}, fmt.Errorf("%d of %d hosts not routed, %s among them", len(b.hosts)-count, len(b.hosts), h)
		}
	}
	return time.Time{}, fmt.Errorf("%d of %d hosts not routed", len(b.hosts)-count, len(b.hosts))
}

// routedOrBusy reports whether Envoy at addr:80 has a route for host: an
// answer other than 404, or none within the client's timeout. Envoy
// answers 404 at once for a host no virtual host matches, while the
// benchmark input's Services have no endpoints, so a routed request waits
// for the connection to the Service's clusterIP to fail before its 503:
// kube-proxy rejects it with an ICMP port unreachable, which the kernel
// sends at a limited rate, so most connects wait for a SYN retry (1 to 5 s
// on the local cluster).
func routedOrBusy(c *http.Client, addr, host string) bool {
	code, err := probe(c, net.JoinHostPort(addr, "80"), host)
	if err != nil {
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	}
	return code != http.StatusNotFound
}

// steadyStream is two keep-alive clients sending to a set of hosts in turn.
type steadyStream []*load

// startSteadyStream starts two keep-alive clients (startKeepAliveLoad's
// transport, 10 ms apart) that request each of hosts in turn through addr
// and expect the steady backend to answer.
func (e *env) startSteadyStream(addr string, hosts []string) steadyStream {
	var s steadyStream
	for range 2 {
		c := keepAliveClient()
		var i atomic.Int64
		s = append(s, runLoad(10*time.Millisecond, func() (bool, error) {
			h := hosts[int(i.Add(1))%len(hosts)]
			return keepAliveGet(c, addr, h, "/", "steady")
		}, c.CloseIdleConnections))
	}
	return s
}

// stop ends both clients and returns their requests, failures and first
// errors.
func (s steadyStream) stop() (sent, failed int64, errs []string) {
	for _, l := range s {
		n, f, _, es := l.stop()
		sent, failed, errs = sent+n, failed+f, append(errs, es...)
	}
	return sent, failed, errs
}

// churn adds, edits and deletes HTTPRoutes labelled xds-bench=churn at
// perSecond operations a second for d, in turn: a create, an edit of the
// newest route's hostname, a delete of the oldest. It returns the
// operations done and how many the API server refused.
func (e *env) churn(d time.Duration, perSecond int) (ops, refused int) {
	ctx := context.Background()
	res := e.dyn.Resource(httpRouteGVR).Namespace("default")
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	var live []string
	end := time.Now().Add(d)
	for k := 0; time.Now().Before(end); k++ {
		<-tick.C
		var err error
		switch {
		case k%3 == 0 || len(live) == 0:
			name := fmt.Sprintf("churn-%d", k)
			route := benchRoute(name, "churn", name+".example.com", fmt.Sprintf("svc-%d", k%20), 8080)
			if _, err = res.Create(ctx, route, metav1.CreateOptions{}); err == nil {
				live = append(live, name)
			}
		case k%3 == 1:
			name := live[len(live)-1]
			_, err = res.Patch(ctx, name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"hostnames":["%s-%d.example.com"]}}`, name, k), metav1.PatchOptions{})
		default:
			err = res.Delete(ctx, live[0], metav1.DeleteOptions{})
			live = live[1:]
		}
		ops++
		if err != nil {
			refused++
			e.t.Logf("churn operation %d: %v", k, err)
		}
	}
	return ops, refused
}

// spread formats sorted-on-the-fly samples as "median / p99 / max".
func spread(d []time.Duration) string {
	s := slices.Sorted(slices.Values(d))
	if len(s) == 0 {
		return "no samples"
	}
	p99 := s[min(len(s)-1, (len(s)*99+99)/100-1)]
	r := func(x time.Duration) string { return x.Round(time.Millisecond).String() }
	return r(s[len(s)/2]) + " / " + r(p99) + " / " + r(s[len(s)-1])
}

// mib formats bytes as MiB.
func mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }

// dedicatedBench makes the benchmark input's Gateway (class bench, which
// the chart's mode does not reach) Dedicated: its
// infrastructure.parametersRef names GatewayParameters of mode Dedicated,
// added at the head of the input (the other parameters keep their
// defaults).
func dedicatedBench(input string) string {
	const class = "\n  gatewayClassName: bench\n"
	if !strings.Contains(input, class) {
		panic("dedicatedBench: the input's Gateway has no gatewayClassName: bench")
	}
	input = strings.Replace(input, class, class+
		"  infrastructure:\n    parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: bench-dedicated}\n", 1)
	// First: a Gateway whose parameters do not exist yet is refused, and
	// so are its routes, until they do.
	return `apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: bench-dedicated, namespace: default}
spec: {mode: Dedicated}
---
` + input
}
