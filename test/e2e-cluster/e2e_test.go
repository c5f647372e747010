package e2ecluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	defaultKubeconfig = "/var/lib/xds-cluster/admin.kubeconfig"
	repoRoot          = "../.."
	chartDir          = repoRoot + "/charts/xds-controller"
	examplesDir       = repoRoot + "/examples"
	clusterTool       = repoRoot + "/hack/cluster/cluster"

	releaseName      = "xds-controller"
	releaseNamespace = "xds-system"
	exampleNamespace = "xds-example"
	className        = "xds-controller"
)

var (
	gatewayGVR      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	gatewayClassGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
)

// env is what every step uses.
type env struct {
	t          *testing.T
	kubeconfig string
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	http       *http.Client
}

func setup(t *testing.T) *env {
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		kubeconfig = defaultKubeconfig
	}
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Skipf("no local cluster (kubeconfig %s: %v); run `make e2e`", kubeconfig, err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The scale tests create tens of thousands of objects; client-go's
	// default of 5 requests a second would take hours.
	rc.QPS, rc.Burst = 500, 1000
	e := &env{t: t, kubeconfig: kubeconfig}
	e.kube = kubernetes.NewForConfigOrDie(rc)
	e.dyn = dynamic.NewForConfigOrDie(rc)
	if _, err := e.kube.Discovery().ServerVersion(); err != nil {
		t.Skipf("local cluster not reachable: %v", err)
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	e.http = &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			Proxy: nil, // never a proxy: traffic goes to the cluster only
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				host, _, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				if err := allowedAddress(host); err != nil {
					return nil, err
				}
				return dialer.DialContext(ctx, network, addr)
			},
			DisableKeepAlives: true,
		},
	}
	return e
}

// allowedAddress refuses every address but loopback and the cluster's own
// ranges: the pod bridge and LoadBalancer pool (10.244.0.0/16) and the
// Service range (10.96.0.0/16).
func allowedAddress(host string) error {
	ip := net.ParseIP(host)
	if ip == nil {
		return fmt.Errorf("refusing to dial %q: not an IP address", host)
	}
	for _, cidr := range []string{"127.0.0.0/8", "::1/128", "10.244.0.0/16", "10.96.0.0/16"} {
		_, n, _ := net.ParseCIDR(cidr)
		if n.Contains(ip) {
			return nil
		}
	}
	return fmt.Errorf("refusing to send traffic to %s: outside loopback and the local cluster's ranges", ip)
}

func TestAllowedAddress(t *testing.T) {
	for _, ok := range []string{"127.0.0.1", "10.244.1.10", "10.96.0.10", "10.244.0.20"} {
		if err := allowedAddress(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"8.8.8.8", "10.0.0.1", "192.168.1.1", "example.com", "10.245.0.1"} {
		if allowedAddress(bad) == nil {
			t.Errorf("%s allowed", bad)
		}
	}
}

// kubectl runs the cluster's kubectl; stdin may be empty.
func (e *env) kubectl(stdin string, args ...string) (string, error) {
	cmd := exec.Command(clusterTool, append([]string{"kubectl"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (e *env) mustKubectl(stdin string, args ...string) string {
	e.t.Helper()
	out, err := e.kubectl(stdin, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// eventually polls f every interval until it returns nil or timeout
// passes; then it fails with f's last error.
func (e *env) eventually(what string, timeout time.Duration, f func() error) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	start := time.Now()
	for {
		err := f()
		if err == nil {
			e.t.Logf("%s: ok after %s", what, time.Since(start).Round(100*time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			e.dumpState()
			e.t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(time.Second)
	}
}

// dumpState logs what helps to understand a failure.
func (e *env) dumpState() {
	for _, args := range [][]string{
		{"get", "pods,svc,deploy,endpointslices", "-A", "-o", "wide"},
		{"get", "gateways,httproutes", "-A", "-o", "yaml"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
	} {
		out, _ := e.kubectl("", args...)
		if len(out) > 12000 {
			out = out[len(out)-12000:]
		}
		e.t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
	}
	// Every controller replica's log: with several replicas, deploy/... picks one.
	if ctrl, err := e.kube.CoreV1().Pods(releaseNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=xds-controller"}); err == nil {
		for _, p := range ctrl.Items {
			out, _ := e.kubectl("", "-n", p.Namespace, "logs", p.Name, "--all-containers", "--tail=200")
			e.t.Logf("controller pod %s logs:\n%s", p.Name, out)
		}
	}
	pods, err := e.kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=envoy"})
	if err == nil {
		for _, p := range pods.Items {
			out, _ := e.kubectl("", "-n", p.Namespace, "logs", p.Name, "--tail=30")
			e.t.Logf("envoy pod %s/%s logs:\n%s", p.Namespace, p.Name, out)
		}
	}
}

// helmInstall installs the chart from the repository like `helm install
// xds-controller charts/xds-controller -n xds-system --create-namespace
// --wait --set mode=MODE --set gatewayAPI.installCRDs=true`.
func (e *env) helmInstall(mode string) {
	e.t.Helper()
	e.helmInstallValues(mode, chartValues(mode))
}

// helmInstallWith is helmInstall with further values (top-level keys
// replace chartValues' own).
func (e *env) helmInstallWith(mode string, extra map[string]any) {
	e.t.Helper()
	values := chartValues(mode)
	for k, v := range extra {
		values[k] = v
	}
	e.helmInstallValues(mode, values)
}

// helmInstallValues is helmInstall with the given values.
func (e *env) helmInstallValues(mode string, values map[string]any) {
	e.t.Helper()
	e.applyChartCRDs()
	cfg := e.helmConfig()
	ch, err := loader.Load(chartDir)
	if err != nil {
		e.t.Fatal(err)
	}
	in := action.NewInstall(cfg)
	in.ReleaseName = releaseName
	in.Namespace = releaseNamespace
	in.CreateNamespace = true
	in.WaitStrategy = kube.StatusWatcherStrategy
	in.Timeout = 3 * time.Minute
	in.ForceConflicts = true // the release owns what the chart renders, whoever applied it last
	start := time.Now()
	if _, err := in.Run(ch, values); err != nil {
		e.dumpState()
		e.t.Fatalf("helm install (mode %s): %v", mode, err)
	}
	e.t.Logf("helm install --set mode=%s: %s", mode, time.Since(start).Round(100*time.Millisecond))
}

// applyChartCRDs applies the chart's own CRDs (crds/: GatewayParameters,
// IngressClassParameters), as the chart's README asks after an upgrade:
// Helm installs crds/ only where a CRD is missing and never updates it,
// and the local cluster keeps the CRDs of an earlier run. It waits until the API server keeps
// the newest field (a server-side dry run of spec.metrics.routeStats).
func (e *env) applyChartCRDs() {
	e.t.Helper()
	e.mustKubectl("", "apply", "--server-side", "--force-conflicts", "--field-manager", "xds-e2e", "-f", chartDir+"/crds/")
	probe := `apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: crd-probe, namespace: default}
spec: {metrics: {routeStats: true}}
`
	e.eventually("the GatewayParameters CRD keeps spec.metrics", time.Minute, func() error {
		out, err := e.kubectl(probe, "create", "--dry-run=server", "-o", "jsonpath={.spec.metrics.routeStats}", "-f", "-")
		if err == nil && strings.TrimSpace(out) != "true" {
			err = fmt.Errorf("spec.metrics.routeStats pruned: %q", out)
		}
		return err
	})
}

func chartValues(mode string) map[string]any {
	return map[string]any{
		"mode":       mode,
		"verbose":    true,
		"gatewayAPI": map[string]any{"installCRDs": true},
	}
}

// helmUpgrade upgrades the release to the same chart and values, like
// `helm upgrade xds-controller charts/xds-controller --wait ...`.
func (e *env) helmUpgrade(mode string) {
	e.t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		e.t.Fatal(err)
	}
	up := action.NewUpgrade(e.helmConfig())
	up.Namespace = releaseNamespace
	up.WaitStrategy = kube.StatusWatcherStrategy
	up.Timeout = 3 * time.Minute
	up.ForceConflicts = true
	start := time.Now()
	if _, err := up.Run(releaseName, ch, chartValues(mode)); err != nil {
		e.dumpState()
		e.t.Fatalf("helm upgrade (mode %s): %v", mode, err)
	}
	e.t.Logf("helm upgrade: %s", time.Since(start).Round(100*time.Millisecond))
}

func (e *env) helmConfig() *action.Configuration {
	ns := releaseNamespace
	kc := e.kubeconfig
	getter := &genericclioptions.ConfigFlags{KubeConfig: &kc, Namespace: &ns}
	// Helm's log in the test's output: warnings, and with E2E_HELM_DEBUG
	// set its debug lines too.
	level := slog.LevelWarn
	if os.Getenv("E2E_HELM_DEBUG") != "" {
		level = slog.LevelDebug
	}
	// Helm 4 applies server-side, as field manager "helm" like its CLI
	// (by default a Go program's binary name: e2e-cluster.test here,
	// conformance.test in the conformance runner, whose installs of the
	// same chart then conflicted with this one's).
	kube.ManagedFieldsManager = "helm"
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(e.t.Output(), &slog.HandlerOptions{Level: level})))
	if err := cfg.Init(getter, releaseNamespace, "secret"); err != nil {
		e.t.Fatal(err)
	}
	return cfg
}

// cleanup removes what a run leaves: the example namespace (while the
// controller still runs), the release, the GatewayClass (a post-install
// hook: `helm uninstall` keeps hook objects) and the release namespace.
// The Gateway API CRDs stay (the chart keeps them on uninstall; the next
// install adopts them).
func (e *env) cleanup() {
	e.t.Helper()
	ctx := context.Background()
	start := time.Now()
	_ = e.kube.CoreV1().Namespaces().Delete(ctx, exampleNamespace, metav1.DeleteOptions{})
	e.waitNamespaceGone(exampleNamespace)
	cfg := e.helmConfig()
	if _, err := action.NewHistory(cfg).Run(releaseName); err == nil {
		un := action.NewUninstall(cfg)
		un.WaitStrategy = kube.StatusWatcherStrategy
		un.Timeout = 2 * time.Minute
		if _, err := un.Run(releaseName); err != nil {
			e.t.Errorf("helm uninstall: %v", err)
		}
	}
	err := e.dyn.Resource(gatewayClassGVR).Delete(ctx, className, metav1.DeleteOptions{})
	// NotFound also when the Gateway API CRDs are not installed yet.
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Errorf("deleting GatewayClass: %v", err)
	}
	_ = e.kube.CoreV1().Namespaces().Delete(ctx, releaseNamespace, metav1.DeleteOptions{})
	e.waitNamespaceGone(releaseNamespace)
	e.t.Logf("cleanup: %s", time.Since(start).Round(100*time.Millisecond))
}

func (e *env) waitNamespaceGone(ns string) {
	e.t.Helper()
	e.eventually("namespace "+ns+" gone", 3*time.Minute, func() error {
		_, err := e.kube.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return errors.New("still there")
	})
}

// gatewayAddress waits until the Gateway is Programmed=True with an address
// in status, and returns the address.
func (e *env) gatewayAddress(name string, timeout time.Duration) string {
	e.t.Helper()
	return e.gatewayAddressIn(exampleNamespace, name, timeout)
}

// gatewayAddressIn is gatewayAddress for a Gateway in namespace ns.
func (e *env) gatewayAddressIn(ns, name string, timeout time.Duration) string {
	e.t.Helper()
	var addr string
	e.eventually("Gateway "+name+" Programmed with an address", timeout, func() error {
		gw, err := e.dyn.Resource(gatewayGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c := condition(gw, "Programmed"); c == nil || c["status"] != "True" {
			return fmt.Errorf("Programmed: %v", c)
		}
		if c := condition(gw, "Accepted"); c == nil || c["status"] != "True" {
			return fmt.Errorf("Accepted: %v", c)
		}
		addrs, _, _ := unstructured.NestedSlice(gw.Object, "status", "addresses")
		if len(addrs) == 0 {
			return errors.New("no status.addresses")
		}
		a, _ := addrs[0].(map[string]any)
		v, _ := a["value"].(string)
		if v == "" {
			return fmt.Errorf("address %v has no value", a)
		}
		addr = v
		// Until the load balancer assigns an address the Gateway's
		// status.addresses holds the Service's cluster IP
		// (status.GatewayAddresses); wait for the load balancer's.
		return fromLBPool(v)
	})
	if err := allowedAddress(addr); err != nil {
		e.t.Fatalf("Gateway %s: %v", name, err)
	}
	return addr
}

// lbPool is the local cluster's LoadBalancer subnet, from which its
// lb-allocator assigns Service addresses (hack/cluster/lib/common.sh:
// LB_CIDR).
var lbPool = netip.MustParsePrefix("10.244.1.0/24")

// fromLBPool returns an error unless addr is an address of lbPool.
func fromLBPool(addr string) error {
	if ip, err := netip.ParseAddr(addr); err != nil || !lbPool.Contains(ip) {
		return fmt.Errorf("address %s is not (yet) from the LoadBalancer pool %s", addr, lbPool)
	}
	return nil
}

func condition(obj *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return m
		}
	}
	return nil
}

// echoResponse is what echo-basic answers.
type echoResponse struct {
	Path      string `json:"path"`
	Host      string `json:"host"`
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Service   string `json:"service"`
	// Headers are the request headers the echo server received.
	Headers map[string][]string `json:"headers"`
}

// get sends GET http://addr:80path with Host host.
func (e *env) get(addr, host, path string) (*echoResponse, error) {
	return e.getPort(addr, "80", host, path)
}

// getPort sends GET http://addr:port/path with Host host.
func (e *env) getPort(addr, port, host, path string) (*echoResponse, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(addr, port)+path, nil)
	if err != nil {
		return nil, err
	}
	req.Host = host
	resp, err := e.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return decodeEcho(body)
}

// decodeEcho reads echo-basic's JSON description of a request.
func decodeEcho(body []byte) (*echoResponse, error) {
	var r echoResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("not echo-basic's JSON: %v: %.200s", err, body)
	}
	return &r, nil
}

// expectBackend waits until GET addr host path is answered by the echo
// backend backend (pod name prefix) in the example namespace.
func (e *env) expectBackend(addr, host, path, backend string, timeout time.Duration) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("http://%s%s Host %s -> %s", addr, path, host, backend), timeout, func() error {
		r, err := e.get(addr, host, path)
		if err != nil {
			return err
		}
		if r.Namespace != exampleNamespace || !strings.HasPrefix(r.Pod, backend+"-") || r.Path != path {
			return fmt.Errorf("answered by pod %s/%s for path %s, want %s/%s-*", r.Namespace, r.Pod, r.Path, exampleNamespace, backend)
		}
		return nil
	})
}

// steady checks that GET addr host path is answered by backend every time
// for d (a request every 250 ms): the Gateway's Service keeps its endpoints.
func (e *env) steady(addr, host, path, backend string, d time.Duration) {
	e.t.Helper()
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
		r, err := e.get(addr, host, path)
		if err == nil && !strings.HasPrefix(r.Pod, backend+"-") {
			err = fmt.Errorf("answered by %s", r.Pod)
		}
		if err != nil {
			e.dumpState()
			e.t.Fatalf("http://%s%s Host %s: request %d of a steady series failed: %v", addr, path, host, n+1, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	e.t.Logf("http://%s%s Host %s -> %s: %d requests in a row over %s", addr, path, host, backend, n, d)
}

// inBothModes runs scenario once per mode (Shared, then Dedicated), each as
// a subtest on a cluster cleaned first; it stops after a failing mode. The
// cluster is cleaned at the end unless E2E_KEEP is set.
func inBothModes(t *testing.T, scenario func(e *env, mode string)) {
	e := setup(t)
	e.cleanup()
	if os.Getenv("E2E_KEEP") == "" {
		t.Cleanup(e.cleanup)
	}
	for _, mode := range []string{"Shared", "Dedicated"} {
		t.Run(mode, func(t *testing.T) {
			me := *e
			me.t = t
			scenario(&me, mode)
		})
		if t.Failed() {
			return
		}
	}
}

func TestGatewaysOnTheLocalCluster(t *testing.T) {
	inBothModes(t, (*env).run)
}

// applyExamples runs `kubectl apply -f examples/` and waits for the echo
// backends foo and bar to roll out.
func (e *env) applyExamples() {
	e.t.Helper()
	e.mustKubectl("", "apply", "-f", examplesDir)
	e.mustKubectl("", "-n", exampleNamespace, "rollout", "status", "deploy/foo", "deploy/bar", "--timeout=120s")
}

// webFleet is the namespace and name of the Envoy fleet that serves the
// example Gateway web in mode: the class's shared fleet, or web's own.
func webFleet(mode string) (ns, name string) {
	return gatewayFleet(mode, exampleNamespace, "web", className)
}

// gatewayFleet is the Envoy fleet (Deployment namespace and name) that
// serves Gateway gwNS/gw of GatewayClass class in mode: its own in
// Dedicated mode, the class's shared one in Shared mode.
func gatewayFleet(mode, gwNS, gw, class string) (ns, name string) {
	if mode == "Dedicated" {
		return gwNS, gw + "-" + class
	}
	return releaseNamespace, "envoy-" + class
}

// run is one mode's scenario.
func (e *env) run(mode string) {
	t := e.t
	ctx := context.Background()
	e.cleanup()
	// Per-route statistics on (the class's GatewayParameters), for
	// envoyMetrics.
	e.helmInstallWith(mode, map[string]any{"monitoring": map[string]any{"routeStats": true}})

	// `kubectl apply -f examples/`.
	e.applyExamples()

	// Both Gateways listen on port 80 and are Programmed with their own
	// LoadBalancer address.
	web := e.gatewayAddress("web", 4*time.Minute)
	internal := e.gatewayAddress("internal", 2*time.Minute)
	if web == internal {
		t.Fatalf("both Gateways have the address %s", web)
	}
	t.Logf("Gateway web: %s, Gateway internal: %s", web, internal)

	// Routing by host and path, on both Gateways.
	e.expectBackend(web, "foo.example.com", "/", "foo", 3*time.Minute)
	e.expectBackend(web, "bar.example.com", "/api/users", "bar", time.Minute)
	e.expectBackend(web, "bar.example.com", "/other", "foo", time.Minute)
	e.expectBackend(internal, "anything.example.com", "/", "bar", 2*time.Minute)
	e.steady(web, "foo.example.com", "/", "foo", 5*time.Second)
	e.steady(internal, "anything.example.com", "/", "bar", 3*time.Second)
	// No route for this host on web.
	if r, err := e.get(web, "nobody.example.com", "/"); err == nil {
		t.Errorf("web answered an unrouted host: %+v", r)
	}

	// The example Ingress, on the same fleet (ingress_test.go).
	e.ingressServed()

	// Envoy's metrics port, scraped like Prometheus does.
	fleetNS, fleetName := webFleet(mode)
	e.envoyMetrics(fleetNS, fleetName, web)

	e.staticAddress()

	// Editing a route: the new route answers and the Envoy pods are neither
	// restarted nor re-rolled.
	before := e.fleetState(fleetNS, fleetName)
	e.mustKubectl(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: foo
  namespace: xds-example
spec:
  parentRefs:
  - name: web
  hostnames: ["foo.example.com", "new.example.com"]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /to-bar}
    backendRefs:
    - name: bar
      port: 80
  - backendRefs:
    - name: foo
      port: 80
`, "apply", "-f", "-")
	e.expectBackend(web, "new.example.com", "/", "foo", 15*time.Second)
	e.expectBackend(web, "foo.example.com", "/to-bar", "bar", 15*time.Second)
	time.Sleep(3 * time.Second) // give a wrong re-roll a chance to show
	after := e.fleetState(fleetNS, fleetName)
	if before.templateHash != after.templateHash || before.generation != after.generation {
		t.Errorf("route edit changed the Envoy Deployment %s/%s: generation %d -> %d, pod template hash %s -> %s",
			fleetNS, fleetName, before.generation, after.generation, before.templateHash, after.templateHash)
	}
	if before.pods != after.pods {
		t.Errorf("route edit replaced or restarted Envoy pods: %s -> %s", before.pods, after.pods)
	}

	// `helm upgrade` with unchanged values keeps the GatewayClass (and so
	// everything it owns, the shared fleet included) and the Gateways
	// answer throughout.
	classBefore, err := e.dyn.Resource(gatewayClassGVR).Get(ctx, className, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.helmUpgrade(mode)
	classAfter, err := e.dyn.Resource(gatewayClassGVR).Get(ctx, className, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if classBefore.GetUID() != classAfter.GetUID() {
		t.Errorf("helm upgrade replaced the GatewayClass (uid %s -> %s)", classBefore.GetUID(), classAfter.GetUID())
	}
	e.steady(web, "foo.example.com", "/", "foo", 5*time.Second)
	if after := e.fleetState(fleetNS, fleetName); after.pods != before.pods {
		t.Errorf("helm upgrade replaced the Envoy pods: %s -> %s", before.pods, after.pods)
	}

	if mode == "Shared" {
		// A replaced shared Envoy pod: the Gateway's EndpointSlice follows
		// the fleet's pods (the controller writes it from their IPs).
		pods, err := e.kube.CoreV1().Pods(fleetNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=envoy,app.kubernetes.io/instance=" + fleetName})
		if err != nil || len(pods.Items) == 0 {
			t.Fatalf("shared fleet pods: %v %d", err, len(pods.Items))
		}
		if err := e.kube.CoreV1().Pods(fleetNS).Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually("web's EndpointSlice lists exactly the ready shared fleet pods", 2*time.Minute, func() error {
			pods, err := e.kube.CoreV1().Pods(fleetNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=envoy,app.kubernetes.io/instance=" + fleetName})
			if err != nil {
				return err
			}
			var want []string
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && podReady(&p) {
					want = append(want, p.Status.PodIP)
				}
			}
			if len(want) != 2 {
				return fmt.Errorf("%d ready pods", len(want))
			}
			slices.Sort(want)
			sl, err := e.kube.DiscoveryV1().EndpointSlices(exampleNamespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=web-" + className})
			if err != nil {
				return err
			}
			var got []string
			for _, s := range sl.Items {
				for _, ep := range s.Endpoints {
					if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
						got = append(got, ep.Addresses...)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				return fmt.Errorf("ready endpoints %v, ready pods %v", got, want)
			}
			return nil
		})
		e.steady(web, "foo.example.com", "/", "foo", 3*time.Second)
	}

	// Deleting a Gateway removes its own objects; the other one still answers.
	e.mustKubectl("", "-n", exampleNamespace, "delete", "gateway", "internal", "--wait=true")
	name := "internal-" + className
	type getter func() error
	gone := map[string]getter{
		"Service": func() error {
			_, err := e.kube.CoreV1().Services(exampleNamespace).Get(ctx, name, metav1.GetOptions{})
			return err
		},
		"EndpointSlices": func() error {
			l, err := e.kube.DiscoveryV1().EndpointSlices(exampleNamespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + name})
			if err == nil && len(l.Items) == 0 {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "endpointslices"}, name)
			}
			return err
		},
	}
	if mode == "Dedicated" {
		gone["Deployment"] = func() error {
			_, err := e.kube.AppsV1().Deployments(exampleNamespace).Get(ctx, name, metav1.GetOptions{})
			return err
		}
		gone["ServiceAccount"] = func() error {
			_, err := e.kube.CoreV1().ServiceAccounts(exampleNamespace).Get(ctx, name, metav1.GetOptions{})
			return err
		}
		gone["ConfigMap"] = func() error {
			_, err := e.kube.CoreV1().ConfigMaps(exampleNamespace).Get(ctx, name, metav1.GetOptions{})
			return err
		}
	}
	for kind, get := range gone {
		e.eventually(kind+" of the deleted Gateway internal gone", 2*time.Minute, func() error {
			if err := get(); apierrors.IsNotFound(err) {
				return nil
			} else if err != nil {
				return err
			}
			return errors.New("still there")
		})
	}
	if mode == "Shared" {
		// The shared fleet stays: web still uses it.
		if _, err := e.kube.AppsV1().Deployments(releaseNamespace).Get(ctx, "envoy-"+className, metav1.GetOptions{}); err != nil {
			t.Errorf("shared fleet: %v", err)
		}
	}
	e.steady(web, "foo.example.com", "/", "foo", 5*time.Second)

	if mode == "Shared" {
		e.switchModes(web)
	}
}
