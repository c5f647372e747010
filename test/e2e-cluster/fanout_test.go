package e2ecluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// simEvent is one line of the simfleet command's output
// (test/simproxy/simfleet).
type simEvent struct {
	Event      string         `json:"event"`
	Error      string         `json:"error"`
	Proxies    int            `json:"proxies"`
	Seconds    float64        `json:"seconds"`
	Reconnects int64          `json:"reconnects"`
	Failures   map[string]int `json:"failures"`
	FirstNS    int64          `json:"first_ns"`
	LastNS     int64          `json:"last_ns"`
	Bytes      int64          `json:"bytes"`
}

// bootstrapScope finds the node's cluster (the fleet's scope) in an Envoy
// bootstrap rendered by envoy-bootstrap ("cluster: <JSON string>" under
// node).
var bootstrapScope = regexp.MustCompile(`(?m)^  cluster: ("[^"]*")$`)

// benchFanout is the fan-out phase of TestPropagationBenchmark (issue 30
// item 1 on the cluster): the simfleet command (E2E_SIMFLEET, built by
// make bench-cluster) runs on this node as the Gateway bench's fleet,
// with a token of the fleet's ServiceAccount for the identity service's
// audience (TokenRequest), bound to one of the fleet's Envoy pods (the
// identity service takes pod-bound tokens only), the trust bundle and
// scope of the fleet's bootstrap ConfigMap, and the controller Service's
// xDS and identity ports; it connects fleets[0] simulated proxies beside the fleet's
// Envoys, then grows to each next size of fleets (fanoutStep). At each,
// samples changes (one more HTTPRoute each, to the Service of the
// steady stream: one route configuration changes) are timed at every
// simulated proxy. It logs, through logf: the controller's RSS before and
// after the proxies connected (per proxy), and per change the time from
// the first proxy's receipt to the last proxy's ACK and from the API
// server's answer to the last ACK (median, p99, max), the controller's
// CPU seconds and the bytes the proxies received.
func (e *env) benchFanout(logf func(string, ...any), ctl *controllerSampler, mode string, fleets []int, samples int) {
	t := e.t
	ctx := context.Background()
	bin := os.Getenv("E2E_SIMFLEET")
	if bin == "" {
		t.Fatal("E2E_SIMFLEET: the simfleet command is needed for the fan-out phase (make bench-cluster PROXIES=N builds it)")
	}
	fleetNS, fleetName := gatewayFleet(mode, "default", "bench", "bench")
	cm, err := e.kube.CoreV1().ConfigMaps(fleetNS).Get(ctx, fleetName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the fleet's bootstrap ConfigMap: %v", err)
	}
	m := bootstrapScope.FindStringSubmatch(cm.Data["bootstrap.yaml"])
	if m == nil {
		t.Fatalf("no node cluster (scope) in %s/%s's bootstrap.yaml", fleetNS, fleetName)
	}
	scope, err := strconv.Unquote(m[1])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bundle, token := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	if err := os.WriteFile(bundle, []byte(cm.Data["ca.crt"]), 0o600); err != nil {
		t.Fatal(err)
	}
	// The identity service takes pod-bound tokens only: this one is bound
	// to a running Envoy pod of the fleet.
	pods, err := e.kube.CoreV1().Pods(fleetNS).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running"})
	if err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	for i := range pods.Items {
		if pods.Items[i].Spec.ServiceAccountName == fleetName && pods.Items[i].DeletionTimestamp == nil {
			pod = &pods.Items[i]
		}
	}
	if pod == nil {
		t.Fatalf("no running pod of %s/%s", fleetNS, fleetName)
	}
	tr, err := e.kube.CoreV1().ServiceAccounts(fleetNS).CreateToken(ctx, fleetName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences: []string{"xds-controller-identity"}, ExpirationSeconds: ptr.To[int64](3600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of %s/%s: %v", fleetNS, fleetName, err)
	}
	if err := os.WriteFile(token, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	svc, err := e.kube.CoreV1().Services(releaseNamespace).Get(ctx, "xds-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]string{}
	for _, p := range svc.Spec.Ports {
		ports[p.Name] = net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(p.Port)))
	}

	rss0 := ctl.rss()
	cmd := exec.Command(bin, "--n", strconv.Itoa(fleets[0]), "--scope", scope,
		"--xds", ports["grpc-xds"], "--identity-address", ports["https-identity"],
		"--server-id", "spiffe://cluster.local/ns/"+releaseNamespace+"/sa/xds-controller",
		"--bundle-file", bundle, "--token-file", token)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	next := func(want string) simEvent {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("simfleet ended before %q: %v", want, lines.Err())
		}
		var ev simEvent
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("simfleet: %v: %s", err, lines.Text())
		}
		if ev.Event != want {
			t.Fatalf("simfleet: %s %s, want %q", ev.Event, ev.Error, want)
		}
		return ev
	}
	created := 0 // the routes created so far
	for k, proxies := range fleets {
		if k > 0 {
			if _, err := fmt.Fprintf(stdin, "grow %d\n", proxies); err != nil {
				t.Fatal(err)
			}
		}
		e.fanoutStep(logf, ctl, stdin, next, rss0, proxies, samples, &created)
	}
}

// fanoutStep is one fleet size of benchFanout: once simfleet says
// proxies are synced, it logs the controller's memory per proxy (above
// rss0, its RSS before any simulated proxy), then times samples route
// creates at every proxy (created counts them over the steps, for their
// names).
func (e *env) fanoutStep(logf func(string, ...any), ctl *controllerSampler, stdin io.Writer, next func(string) simEvent, rss0 float64, proxies, samples int, created *int) {
	t := e.t
	synced := next("synced")
	for msg, k := range synced.Failures {
		logf("fan-out: %d proxies' last stream failure: %s", k, msg)
	}
	time.Sleep(time.Second)
	rss1 := ctl.rss()
	logf("fan-out: %d simulated proxies synced %.1fs after the start or the grow (%d streams opened again in all); controller RSS %s without them, %s with them: %.0f KiB per proxy",
		proxies, synced.Seconds, synced.Reconnects, mib(rss0), mib(rss1), (rss1-rss0)/1024/float64(proxies))

	var spreads, fromAPI []time.Duration
	var bytes int64
	cpu0, _ := ctl.mustSample()
	for range samples {
		time.Sleep(500 * time.Millisecond)
		if _, err := fmt.Fprintln(stdin, "arm"); err != nil {
			t.Fatal(err)
		}
		next("armed")
		*created++
		i := *created
		at := e.createBenchRoute(fmt.Sprintf("fanout-%d", i), "fanout", fmt.Sprintf("fanout-%d.example.com", i), "steady", 80)
		a := next("arrived")
		spreads = append(spreads, time.Duration(a.LastNS-a.FirstNS))
		fromAPI = append(fromAPI, time.Unix(0, a.LastNS).Sub(at))
		bytes += a.Bytes
	}
	cpu1, _ := ctl.mustSample()
	logf("fan-out, %d changes at %d simulated proxies (median, p99, max): first receipt to last ACK %s; API server's answer to last ACK %s; controller %.0f ms CPU and %.1f MB received per change",
		samples, proxies, spread(spreads), spread(fromAPI), 1000*(cpu1-cpu0)/float64(samples), float64(bytes)/1e6/float64(samples))
}
