// Package integration runs the controller in-process against a real
// kube-apiserver and etcd started by controller-runtime's envtest (no
// kubelet, no Envoy): status lands on the objects, follows generations, is
// not rewritten when nothing changed, and moves to a new leader.
//
// The binaries come from KUBEBUILDER_ASSETS, else from
// `hack/envtest-assets.sh --no-build` (the local cluster's kube-apiserver
// build and Debian's etcd). Without them the tests skip, unless CI=true,
// where they fail. `make test-integration` builds what is missing first.
package integration

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
	"github.com/xds-controller/xds-controller/pkg/provisioner"
)

var (
	restConfig *rest.Config
	k8sClient  client.Client
	skipReason string
	// kubeConfig is a kubeconfig file's content for the API server, for
	// the controller run as a process (unrelated_bench_test.go).
	kubeConfig []byte
)

const controllerNamespace = "xds-controller-system"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	env, err := setup()
	if err != nil {
		// Asked for an API server (make test as root sets
		// KUBEBUILDER_ASSETS) or on CI: a start that fails is a failure,
		// never a silent skip.
		if os.Getenv("CI") == "true" || os.Getenv("KUBEBUILDER_ASSETS") != "" {
			fmt.Fprintln(os.Stderr, "integration: cannot start the API server (KUBEBUILDER_ASSETS or CI=true set, failing):", err)
			return 1
		}
		skipReason = err.Error()
		return m.Run()
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "integration: stopping the API server:", err)
		}
	}()
	return m.Run()
}

// requireAPIServer skips the test when the API server could not start.
func requireAPIServer(t testing.TB) {
	t.Helper()
	if skipReason != "" {
		t.Skip("no kube-apiserver/etcd for envtest: " + skipReason)
	}
}

func setup() (*envtest.Environment, error) {
	if os.Geteuid() != 0 && os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("not root, and KUBEBUILDER_ASSETS is unset (the local cluster's build cache is root's)")
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		out, err := exec.Command(filepath.Join(repoRoot(), "hack", "envtest-assets.sh"), "--no-build").Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return nil, fmt.Errorf("hack/envtest-assets.sh --no-build: %s", strings.TrimSpace(string(ee.Stderr)))
			}
			return nil, err
		}
		assets = strings.TrimSpace(string(out))
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return nil, fmt.Errorf("%s missing in %s", b, assets)
		}
	}
	crds, err := gatewayAPICRDs()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{crds, filepath.Join(repoRoot(), "config", "crd")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("envtest: %w", err)
	}
	scheme, err := kubernetes.Scheme()
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		_ = env.Stop()
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	restConfig, k8sClient, kubeConfig = cfg, c, env.KubeConfig
	if err := ensureNamespace(context.Background(), controllerNamespace); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return env, nil
}

func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..")
}

// gatewayAPICRDs is config/crd/standard of the gateway-api module in go.mod.
func gatewayAPICRDs() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating sigs.k8s.io/gateway-api: %w", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard")
	if _, err := os.Stat(dir); err != nil {
		return "", err
	}
	return dir, nil
}

func ensureNamespace(ctx context.Context, name string) error {
	err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// requestCounter counts the status writes (PATCH or PUT of .../status)
// that go through a rest.Config, and in infra the writes (POST, PUT, PATCH,
// DELETE) of the kinds the provisioner manages.
type requestCounter struct {
	n, infra atomic.Int64
	// forbidden counts the requests the API server refused (403), first
	// names the first.
	forbidden atomic.Int64
	first     atomic.Pointer[string]
}

// forbiddenCount is the number of refused requests and the first one.
func (c *requestCounter) forbiddenCount() (int64, string) {
	first := ""
	if p := c.first.Load(); p != nil {
		first = *p
	}
	return c.forbidden.Load(), first
}

// infraResources are the URL path segments of the provisioner's kinds.
var infraResources = []string{"/deployments", "/services", "/serviceaccounts", "/configmaps", "/secrets", "/endpointslices"}

func (c *requestCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			write := r.Method == http.MethodPatch || r.Method == http.MethodPut || r.Method == http.MethodPost || r.Method == http.MethodDelete
			switch {
			case (r.Method == http.MethodPatch || r.Method == http.MethodPut) && strings.HasSuffix(r.URL.Path, "/status"):
				c.n.Add(1)
			case strings.Contains(r.URL.Path, "/configmaps/"+kubernetes.ReportPrefix):
				// every replica's data-plane report: not infrastructure
			case write && slices.ContainsFunc(infraResources, func(s string) bool { return strings.Contains(r.URL.Path, s) }):
				c.infra.Add(1)
			}
			resp, err := rt.RoundTrip(r)
			if err == nil && resp.StatusCode == http.StatusForbidden {
				c.forbidden.Add(1)
				what := r.Method + " " + r.URL.String()
				c.first.CompareAndSwap(nil, &what)
			}
			return resp, err
		})
	}
	return cfg
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// replica is one controller running in the test process.
type replica struct {
	*kubernetes.Controller
	writes *requestCounter
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

type replicaOptions struct {
	leaderElect bool
	identity    string
	hooks       kubernetes.Hooks
	// provision installs the provisioner (pkg/provisioner) instead of hooks.
	provision bool
	// ingressGatewayClass is the GatewayClass whose fleet serves the
	// Ingresses (default ingress.DefaultGatewayClass).
	ingressGatewayClass string
	// rest, when set, is how the replica reaches the API server (default
	// the envtest admin's restConfig); namespace is its own (default
	// controllerNamespace); watchNamespaces its Config.WatchNamespaces.
	rest            *rest.Config
	namespace       string
	watchNamespaces []string
}

func startReplica(t *testing.T, o replicaOptions) *replica {
	t.Helper()
	counter := &requestCounter{}
	cfg := kubernetes.Config{
		RestConfig:      counter.wrap(cmp.Or(o.rest, restConfig)),
		Namespace:       cmp.Or(o.namespace, controllerNamespace),
		WatchNamespaces: o.watchNamespaces,
		XDSAddress:      "127.0.0.1:0",
		IdentityAddress: "127.0.0.1:0",
		MetricsAddress:  "0",
		HealthAddress:   "0",
		LeaderElect:     o.leaderElect,
		LeaderIdentity:  o.identity,
		LeaseDuration:   3 * time.Second,
		RenewDeadline:   2 * time.Second,
		RetryPeriod:     300 * time.Millisecond,
		TrustDomain:     "cluster.local",
		Debounce:        20 * time.Millisecond,
		MaxDebounce:     200 * time.Millisecond,
		StatusQPS:       100,
		StatusBurst:     100,
		Hooks:           o.hooks,
		Ingress:         ingress.Config{GatewayClass: o.ingressGatewayClass},
		// TrafficPolicy rateLimit.global (golden cases 150-154).
		RateLimitService: "10.0.0.9:8081",

		GracefulShutdownTimeout: 5 * time.Second,
		Log:                     testLogger(t, o.identity),
	}
	if o.provision {
		if err := provisioner.Install(&cfg, provisioner.Options{XDSPort: 18000, IdentityPort: 18443}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := kubernetes.New(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("controller: %v", err)
	}
	r := &replica{Controller: c, writes: counter, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Start(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// stop stops the replica and waits for it (idempotent).
func (r *replica) stop() {
	r.once.Do(func() {
		r.cancel()
		select {
		case <-r.done:
		case <-time.After(15 * time.Second):
		}
	})
}

// testLogger collects a replica's log and prints it when the test fails
// (or always with XDS_TEST_LOG=1).
func testLogger(t *testing.T, name string) *slog.Logger {
	buf := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("XDS_TEST_LOG") != "" {
			fmt.Fprintf(os.Stderr, "---- log of replica %q (%s)\n%s", name, t.Name(), buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// eventually polls f until it returns nil or timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = f(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// update writes obj (its spec and metadata). The controller writes status
// at the same time, which bumps resourceVersion; on a conflict update takes
// the latest resourceVersion and writes obj again, so the test's change
// wins whatever the controller did to status meanwhile.
func update(ctx context.Context, obj client.Object) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := k8sClient.Update(ctx, obj)
		if apierrors.IsConflict(err) {
			fresh := obj.DeepCopyObject().(client.Object)
			if gerr := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), fresh); gerr != nil {
				return gerr
			}
			obj.SetResourceVersion(fresh.GetResourceVersion())
		}
		return err
	})
}
