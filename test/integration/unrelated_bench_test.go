package integration

// BenchmarkUnrelatedObjects (make bench-unrelated) measures issue 30 item
// 5: the controller's memory in a cluster with tens of thousands of
// Secrets, ConfigMaps, Services and EndpointSlices that no Gateway or route
// names, against the same cluster without them.
//
// The controller runs as a process of its own (the binary built from this
// tree, or the builds BENCH_UNRELATED_BINS names: name=path,... for a
// before and after) against the envtest API server. The world grows in
// three phases:
//
//  1. small: a Gateway with an HTTPS listener (its certificate a
//     kubernetes.io/tls Secret), three HTTPRoutes to a Service, a
//     BackendTLSPolicy whose CA is a ConfigMap, a SecurityPolicy whose
//     basicAuth users are an Opaque Secret: three referenced objects;
//  2. +secrets: BENCH_UNRELATED_N (30,000) Secrets, a third each of type
//     kubernetes.io/tls (tls.crt 2 KiB, tls.key 1.6 KiB), Opaque (4 KiB)
//     and helm.sh/release.v1 (4 KiB), and as many ConfigMaps (4 KiB of
//     data each), spread over 30 namespaces;
//  3. +services: as many headless Services (two ports, a selector) and
//     EndpointSlices (three ready endpoints each, with their Pod, node and
//     zone), which no route names.
//
// In each phase every binary is started afresh, BENCH_UNRELATED_ROUNDS
// times (alternating the order), and measured once it has translated the
// small world and its CPU is quiet (under 3% of a core over 3 s): VmRSS and
// VmHWM of /proc/PID/status, and after a forced GC (the heap profile's
// gc=1, saved under BENCH_UNRELATED_PROFILES when set) the Go heap in use
// from /metrics. A fresh start lists every object at once, so VmHWM holds
// the initial list's peak.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// unrelatedNamespaces is the number of namespaces the unrelated objects
// are spread over.
const unrelatedNamespaces = 30

func BenchmarkUnrelatedObjects(b *testing.B) {
	requireAPIServer(b)
	ctrllog.SetLogger(logr.Discard()) // the test's client would print the stack of the first warning
	n := envInt(b, "BENCH_UNRELATED_N", 30000)
	rounds := envInt(b, "BENCH_UNRELATED_ROUNDS", 2)
	bins := benchBinaries(b)
	profiles := os.Getenv("BENCH_UNRELATED_PROFILES")
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kubeConfig, 0o600); err != nil {
		b.Fatal(err)
	}
	applyYAML(b, smallWorld(b))
	phases := []struct {
		name string
		add  func(ctx context.Context, i int) []client.Object
	}{
		{"small", nil},
		{fmt.Sprintf("+%d Secrets, +%d ConfigMaps", n, n), unrelatedSecretAndConfigMap},
		{fmt.Sprintf("+%d Services, +%d EndpointSlices", n, n), unrelatedServiceAndSlice},
	}
	type key struct{ phase, bin string }
	got := map[key][]memFigures{}
	for _, ph := range phases {
		if ph.add != nil {
			start := time.Now()
			createInParallel(b, n, ph.add)
			fmt.Printf("unrelated: %s created in %s\n", ph.name, time.Since(start).Round(time.Second))
		}
		for r := range rounds {
			for j := range bins {
				bin := bins[(j+r)%len(bins)]
				m := measureController(b, bin.path, kubeconfig, profiles, fmt.Sprintf("%s-%d-%s", bin.name, len(got), ph.name[:4]))
				if len(got) == 0 {
					checkSmallWorld(b)
				}
				got[key{ph.name, bin.name}] = append(got[key{ph.name, bin.name}], m)
				fmt.Printf("unrelated: %-40s %-8s round %d: %s\n", ph.name, bin.name, r+1, m)
			}
		}
	}
	fmt.Printf("\nunrelated: summary (min-max over %d rounds; +%% against the small world's median)\n", rounds)
	for _, bin := range bins {
		base := median(got[key{phases[0].name, bin.name}])
		for _, ph := range phases {
			ms := got[key{ph.name, bin.name}]
			fmt.Printf("unrelated: %-8s %-40s %s\n", bin.name, ph.name, summarize(ms, base))
		}
	}
}

// checkSmallWorld fails the benchmark unless the controller accepted what
// reads the three referenced objects: the listener (its certificate), the
// BackendTLSPolicy (its CA ConfigMap) and the SecurityPolicy (its users
// Secret), so that the figures are those of a controller that holds them.
func checkSmallWorld(b *testing.B) {
	type check struct {
		kind, apiVersion, name string
		conds                  []string // the path of a condition list in the object
	}
	for _, c := range []check{
		{"Gateway", "gateway.networking.k8s.io/v1", "web", []string{"status", "listeners", "0", "conditions"}},
		{"BackendTLSPolicy", "gateway.networking.k8s.io/v1", "app", []string{"status", "ancestors", "0", "conditions"}},
		{"SecurityPolicy", "gateway.xds-controller.dev/v1alpha1", "users", []string{"status", "ancestors", "0", "conditions"}},
	} {
		eventually(b, time.Minute, c.kind+" bench/"+c.name+" accepted with its references", func() error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(c.apiVersion)
			u.SetKind(c.kind)
			if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: "bench", Name: c.name}, u); err != nil {
				return err
			}
			var v any = u.Object
			for _, step := range c.conds {
				switch x := v.(type) {
				case map[string]any:
					v = x[step]
				case []any:
					if len(x) == 0 {
						return fmt.Errorf("no %s yet", strings.Join(c.conds, "."))
					}
					v = x[0]
				}
			}
			conds, _ := v.([]any)
			for _, want := range []string{"Accepted", "ResolvedRefs"} {
				ok := false
				for _, cond := range conds {
					m, _ := cond.(map[string]any)
					ok = ok || m["type"] == want && m["status"] == "True"
				}
				if !ok {
					return fmt.Errorf("%s not True: %v", want, conds)
				}
			}
			return nil
		})
	}
}

// benchBinary is a controller build the benchmark runs.
type benchBinary struct{ name, path string }

// benchBinaries are BENCH_UNRELATED_BINS (name=path,...), or this tree's
// build named "this".
func benchBinaries(b *testing.B) []benchBinary {
	if v := os.Getenv("BENCH_UNRELATED_BINS"); v != "" {
		var out []benchBinary
		for _, f := range strings.Split(v, ",") {
			name, path, ok := strings.Cut(f, "=")
			if !ok {
				b.Fatalf("BENCH_UNRELATED_BINS: %q is not name=path", f)
			}
			out = append(out, benchBinary{name, path})
		}
		return out
	}
	bin := filepath.Join(b.TempDir(), "xds-controller")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/xds-controller")
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return []benchBinary{{"this", bin}}
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: not a positive number", name, v)
	}
	return n
}

// memFigures are one measurement of the controller, in bytes; settle is
// the time from its start until it had translated and was quiet.
type memFigures struct {
	rss, hwm, heap int64
	settle         time.Duration
}

func (m memFigures) String() string {
	return fmt.Sprintf("VmRSS %6.1f MiB  VmHWM %6.1f MiB  heap in use %6.1f MiB  settled in %s", mib(m.rss), mib(m.hwm), mib(m.heap), m.settle.Round(100*time.Millisecond))
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// median is the median of each figure of ms.
func median(ms []memFigures) memFigures {
	pick := func(f func(memFigures) int64) int64 {
		v := make([]int64, len(ms))
		for i, m := range ms {
			v[i] = f(m)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return memFigures{rss: pick(func(m memFigures) int64 { return m.rss }), hwm: pick(func(m memFigures) int64 { return m.hwm }), heap: pick(func(m memFigures) int64 { return m.heap })}
}

// summarize gives each figure's range over ms and its median's growth
// over base's.
func summarize(ms []memFigures, base memFigures) string {
	med := median(ms)
	part := func(name string, f func(memFigures) int64) string {
		lo, hi := f(ms[0]), f(ms[0])
		for _, m := range ms {
			lo, hi = min(lo, f(m)), max(hi, f(m))
		}
		return fmt.Sprintf("%s %5.1f-%5.1f MiB (%+4.0f%%)", name, mib(lo), mib(hi), 100*float64(f(med)-f(base))/float64(f(base)))
	}
	return strings.Join([]string{
		part("VmRSS", func(m memFigures) int64 { return m.rss }),
		part("VmHWM", func(m memFigures) int64 { return m.hwm }),
		part("heap", func(m memFigures) int64 { return m.heap }),
	}, "  ")
}

// measureController starts the controller at bin, waits until it has
// translated the small world (its three HTTPRoutes, the listener's
// certificate) and its CPU is quiet, measures it and stops it.
func measureController(b *testing.B, bin, kubeconfig, profiles, label string) memFigures {
	metrics, pprof := freeAddr(b), freeAddr(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "controller", "--kubeconfig", kubeconfig, "--namespace", controllerNamespace,
		"--xds-address", freeAddr(b), "--identity-address", freeAddr(b), "--health-address", "0",
		"--metrics-address", metrics, "--pprof-address", pprof)
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cancel()
			<-exited
		}
	}()
	fail := func(format string, args ...any) {
		b.Fatalf("%s: %s\n%s", label, fmt.Sprintf(format, args...), lastLines(logs.String(), 30))
	}
	deadline := start.Add(5 * time.Minute)
	for {
		text, _ := httpGet("http://" + metrics + "/metrics")
		if metricValue(text, `xds_controller_translation_objects{kind="HTTPRoute"}`) == 3 && metricSum(text, "xds_controller_xds_resources", `type="secrets"`) >= 1 {
			break
		}
		select {
		case <-exited:
			fail("exited before it translated")
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			fail("not translated after %s", time.Since(start))
		}
	}
	for last := cpuTime(b, cmd.Process.Pid); ; {
		time.Sleep(3 * time.Second)
		now := cpuTime(b, cmd.Process.Pid)
		if now-last < 90*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			fail("CPU not quiet after %s", time.Since(start))
		}
		last = now
	}
	settle := time.Since(start)
	prof, err := httpGet("http://" + pprof + "/debug/pprof/heap?gc=1")
	if err != nil {
		fail("heap profile: %v", err)
	}
	if profiles != "" {
		if err := os.WriteFile(filepath.Join(profiles, label+".heap.pb.gz"), []byte(prof), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	text, err := httpGet("http://" + metrics + "/metrics")
	if err != nil {
		fail("metrics: %v", err)
	}
	m := memFigures{heap: int64(metricValue(text, "go_memstats_heap_inuse_bytes")), settle: settle}
	m.rss, m.hwm = procStatus(b, cmd.Process.Pid, "VmRSS:"), procStatus(b, cmd.Process.Pid, "VmHWM:")
	return m
}

// freeAddr is a loopback address with a port free now.
func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpGet(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(body), err
}

// metricValue is the value of the sample named exactly series (name and
// labels) in a Prometheus text exposition, -1 without it.
func metricValue(text, series string) float64 {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

// metricSum is the sum of the samples of name whose labels hold label.
func metricSum(text, name, label string) float64 {
	sum := 0.0
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, label) {
			f, err := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndexByte(line, ' ')+1:]), 64)
			if err == nil {
				sum += f
			}
		}
	}
	return sum
}

// cpuTime is the user and system CPU time of process pid
// (/proc/PID/stat's utime and stime, in clock ticks of 10 ms).
func cpuTime(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// procStatus is a "kB" field of /proc/PID/status, in bytes.
func procStatus(b *testing.B, pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("/proc/%d/status: no %s", pid, field)
	return 0
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// createInParallel creates the objects add makes for 0..n-1 with eight
// workers (each create one request; the API server's own QPS limit).
func createInParallel(b *testing.B, n int, add func(ctx context.Context, i int) []client.Object) {
	ctx := context.Background()
	for ns := range unrelatedNamespaces {
		if err := ensureNamespace(ctx, fmt.Sprintf("unrelated-%02d", ns)); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if i > 0 && i%5000 == 0 {
					fmt.Printf("unrelated: %d of %d at %s\n", i, n, time.Now().Format(time.TimeOnly))
				}
				for _, o := range add(ctx, i) {
					if err := k8sClient.Create(ctx, o); err != nil {
						errs <- fmt.Errorf("create %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// filler is n bytes of base64 text (random: etcd and the API server store
// it as is).
func filler(n int) []byte {
	raw := make([]byte, n*3/4)
	_, _ = rand.Read(raw)
	return []byte(base64.StdEncoding.EncodeToString(raw))
}

func unrelatedMeta(i int, prefix string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: fmt.Sprintf("unrelated-%02d", i%unrelatedNamespaces), Name: fmt.Sprintf("%s-%05d", prefix, i),
		Labels: map[string]string{"app.kubernetes.io/name": fmt.Sprintf("app-%d", i%500), "app.kubernetes.io/part-of": "bench"}}
}

// unrelatedSecretAndConfigMap are the i-th unrelated Secret (its type by
// i mod 3) and ConfigMap.
func unrelatedSecretAndConfigMap(_ context.Context, i int) []client.Object {
	s := &corev1.Secret{ObjectMeta: unrelatedMeta(i, "secret")}
	switch i % 3 {
	case 0:
		s.Type = corev1.SecretTypeTLS
		s.Data = map[string][]byte{corev1.TLSCertKey: filler(2048), corev1.TLSPrivateKeyKey: filler(1600)}
	case 1:
		s.Type = corev1.SecretTypeOpaque
		s.Data = map[string][]byte{"config.json": filler(4096)}
	default:
		s.Type = "helm.sh/release.v1"
		s.Data = map[string][]byte{"release": filler(4096)}
	}
	cm := &corev1.ConfigMap{ObjectMeta: unrelatedMeta(i, "config"), Data: map[string]string{"app.properties": string(filler(3072)), "logging.yaml": string(filler(1024))}}
	return []client.Object{s, cm}
}

// unrelatedServiceAndSlice are the i-th unrelated headless Service (no
// cluster IP to allocate) and its EndpointSlice.
func unrelatedServiceAndSlice(_ context.Context, i int) []client.Object {
	svc := &corev1.Service{ObjectMeta: unrelatedMeta(i, "svc"), Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app.kubernetes.io/name": fmt.Sprintf("app-%d", i)},
		Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
			{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9090), Protocol: corev1.ProtocolTCP},
		}}}
	es := &discoveryv1.EndpointSlice{ObjectMeta: unrelatedMeta(i, "svc"), AddressType: discoveryv1.AddressTypeIPv4}
	es.Name += "-abcde"
	es.Labels = map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}
	for _, port := range svc.Spec.Ports {
		es.Ports = append(es.Ports, discoveryv1.EndpointPort{Name: new(port.Name), Port: new(port.TargetPort.IntVal), Protocol: new(corev1.ProtocolTCP)})
	}
	for e := range 3 {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", 64+e, (i/250)%250, i%250+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: new(true), Serving: new(true), Terminating: new(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: svc.Namespace, Name: fmt.Sprintf("%s-7d9f8c6b5-%05d", svc.Name, e)},
			NodeName:   new(fmt.Sprintf("node-%d", i%50)), Zone: new(fmt.Sprintf("zone-%c", 'a'+e)),
		})
	}
	return []client.Object{svc, es}
}

// smallWorld is the world the controller translates: one Gateway, three
// HTTPRoutes, and the three referenced objects (a listener certificate, a
// CA ConfigMap, a basicAuth users Secret) with a fresh certificate.
func smallWorld(b *testing.B) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench.example.com"}, DNSNames: []string{"bench.example.com", "*.bench.example.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		b.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		b.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	indent := func(s []byte) string {
		return "    " + strings.ReplaceAll(strings.TrimSpace(string(s)), "\n", "\n    ")
	}
	var routes strings.Builder
	for i := range 3 {
		fmt.Fprintf(&routes, `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: bench-%d, namespace: bench}
spec:
  parentRefs: [{name: web}]
  hostnames: [r%d.bench.example.com]
  rules:
  - backendRefs: [{name: app, port: 443}]
`, i, i)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: bench}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: bench}
spec:
  controllerName: xds-controller.dev/gateway-controller
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: bench}
spec:
  gatewayClassName: bench
  listeners:
  - name: https
    protocol: HTTPS
    port: 443
    hostname: "*.bench.example.com"
    tls:
      certificateRefs: [{name: web-cert}]
---
apiVersion: v1
kind: Secret
metadata: {name: web-cert, namespace: bench}
type: kubernetes.io/tls
data:
  tls.crt: %s
  tls.key: %s
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app-ca, namespace: bench}
data:
  ca.crt: |
%s
---
apiVersion: v1
kind: Secret
metadata: {name: users, namespace: bench}
type: Opaque
data:
  auth: %s
---
apiVersion: v1
kind: Service
metadata: {name: app, namespace: bench}
spec:
  ports: [{name: https, port: 443, targetPort: 8443}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: app-1
  namespace: bench
  labels: {kubernetes.io/service-name: app}
addressType: IPv4
ports: [{name: https, port: 8443}]
endpoints:
- addresses: ["10.0.9.1"]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: app, namespace: bench}
spec:
  targetRefs: [{group: "", kind: Service, name: app}]
  validation:
    caCertificateRefs: [{group: "", kind: ConfigMap, name: app-ca}]
    hostname: app.bench.example.com
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: users, namespace: bench}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: bench-0}]
  basicAuth:
    users: {name: users}
%s`, base64.StdEncoding.EncodeToString(certPEM), base64.StdEncoding.EncodeToString(keyPEM), indent(certPEM),
		base64.StdEncoding.EncodeToString([]byte("bob:{SHA}9SMYoF5RilWWASry7TjeaKwmpGg=\n")), routes.String())
}
