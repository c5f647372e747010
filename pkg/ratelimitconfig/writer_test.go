package ratelimitconfig

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// apiServer starts envtest's kube-apiserver and etcd (KUBEBUILDER_ASSETS,
// else hack/envtest-assets.sh --no-build), or skips the test without
// them (fails it when CI or KUBEBUILDER_ASSETS is set).
func apiServer(t *testing.T) *rest.Config {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		_, self, _, _ := runtime.Caller(0)
		out, err := exec.Command(filepath.Join(filepath.Dir(self), "..", "..", "hack", "envtest-assets.sh"), "--no-build").Output()
		if err != nil {
			msg := fmt.Sprintf("no kube-apiserver/etcd for envtest (KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)): %v", err)
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		assets = strings.TrimSpace(string(out))
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}

// writeCounter counts the writes (POST, PUT, PATCH, DELETE) that go
// through a rest.Config.
type writeCounter struct{ n atomic.Int64 }

func (c *writeCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet {
				c.n.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	return cfg
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func limits(domain string, requests uint32) *ir.GlobalRateLimits {
	return &ir.GlobalRateLimits{
		Domain:  domain,
		Service: &ir.Backend{Name: "ratelimit", Protocol: ir.AppProtocolH2C, Endpoints: []ir.Endpoint{{Address: "10.0.0.1", Port: 8081}}},
		Rules:   []ir.GlobalRateLimitRule{{Name: "default/p/0", ClientIP: true, Requests: requests, Unit: ir.RateLimitMinute}},
	}
}

// The Writer against a real API server, as the controller's
// ServiceAccount with the chart's Role of the release namespace (patch,
// create, delete on configmaps, nothing else): the ConfigMap the chart
// renders (labels, no data) gets one key per domain with the service's
// files; Helm applying its manifest again leaves the data; a domain that
// goes away loses its key; an unchanged Write sends nothing; a bad domain
// writes nothing; a missing ConfigMap is created.
func TestWriterOnAPIServer(t *testing.T) {
	cfg := apiServer(t)
	ctx := context.Background()
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const ns, sa = "xds-system", "xds-controller"
	name := ConfigMapName(sa)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		// The chart's Role (templates/rbac.yaml, release namespace): the
		// ConfigMap rule is the only one this test needs.
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "patch", "delete"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: sa},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// What Helm installs: the ConfigMap with the chart's labels, no data.
	helmApply := func() {
		t.Helper()
		cm := corev1ac.ConfigMap(name, ns).WithLabels(map[string]string{"app.kubernetes.io/name": "xds-controller"})
		if err := admin.Apply(ctx, cm, client.FieldOwner("helm")); err != nil {
			t.Fatal(err)
		}
	}
	helmApply()

	var writes writeCounter
	asSA := writes.wrap(cfg)
	asSA.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa}
	c, err := client.New(asSA, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(c, ns, name)
	read := func() *corev1.ConfigMap {
		t.Helper()
		var cm corev1.ConfigMap
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
			t.Fatal(err)
		}
		return &cm
	}
	keys := func(cm *corev1.ConfigMap) []string {
		var out []string
		for k := range cm.Data {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}

	a, b := limits("gatewayclass.xds-controller", 10), limits("gateway.apps.web", 20)
	if err := w.Write(ctx, []*ir.GlobalRateLimits{a, nil, b}); err != nil {
		t.Fatal(err)
	}
	cm := read()
	want, _ := xdstranslator.RateLimitConfigFiles(xdstranslator.RateLimitConfig(a), xdstranslator.RateLimitConfig(b))
	if got := keys(cm); !slices.Equal(got, []string{"gateway.apps.web.yaml", "gatewayclass.xds-controller.yaml"}) {
		t.Fatalf("keys %v", got)
	}
	for k, v := range want {
		if cm.Data[k] != string(v) {
			t.Errorf("%s:\n%s\nwant (standalone's file):\n%s", k, cm.Data[k], v)
		}
	}
	if cm.Labels["app.kubernetes.io/name"] != "xds-controller" {
		t.Errorf("the chart's labels are gone: %v", cm.Labels)
	}

	// helm upgrade applies the chart's manifest again: the data stays.
	helmApply()
	if got := keys(read()); len(got) != 2 {
		t.Errorf("after Helm's apply: keys %v", got)
	}

	// The same limits again: no request at all.
	n := writes.n.Load()
	if err := w.Write(ctx, []*ir.GlobalRateLimits{b, a}); err != nil {
		t.Fatal(err)
	}
	if d := writes.n.Load() - n; d != 0 {
		t.Errorf("unchanged limits sent %d writes, want 0", d)
	}

	// A domain goes away, the other changes.
	if err := w.Write(ctx, []*ir.GlobalRateLimits{limits("gateway.apps.web", 30)}); err != nil {
		t.Fatal(err)
	}
	cm = read()
	if got := keys(cm); !slices.Equal(got, []string{"gateway.apps.web.yaml"}) || !strings.Contains(cm.Data["gateway.apps.web.yaml"], "requests_per_unit: 30") {
		t.Errorf("after removing a domain: %v", cm.Data)
	}

	// A domain that makes no ConfigMap key: an error, nothing sent.
	n = writes.n.Load()
	if err := w.Write(ctx, []*ir.GlobalRateLimits{limits("gateway:apps:web", 1)}); err == nil {
		t.Error("domain with ':' accepted")
	}
	if writes.n.Load() != n {
		t.Error("a bad domain sent a write")
	}

	// No limits at all: no key left.
	if err := w.Write(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := keys(read()); len(got) != 0 {
		t.Errorf("no limits: keys %v", got)
	}

	// Deleted behind its back (the chart disabled and enabled again): a
	// new Writer (a restarted controller) creates it.
	if err := admin.Delete(ctx, read()); err != nil {
		t.Fatal(err)
	}
	if err := NewWriter(c, ns, name).Write(ctx, []*ir.GlobalRateLimits{a}); err != nil {
		t.Fatal(err)
	}
	if got := keys(read()); !slices.Equal(got, []string{"gatewayclass.xds-controller.yaml"}) {
		t.Errorf("recreated: keys %v", got)
	}

	// Least privilege: the same ServiceAccount may not write a ConfigMap
	// of another namespace.
	other := NewWriter(c, "default", name)
	err = other.Write(ctx, []*ir.GlobalRateLimits{a})
	if err == nil || !apierrors.IsForbidden(errors.Unwrap(err)) {
		t.Errorf("write in another namespace: %v, want forbidden", err)
	}
}

// The chart renders and mounts the ConfigMap under the name the
// controller writes: ConfigMapName of the chart's fullname (the
// controller's ServiceAccount, --service-account).
func TestConfigMapNameIsTheChartsName(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "charts", "xds-controller", "templates", "ratelimit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tpl := string(b)
	if ConfigMapName("{{ $name }}") != "{{ $name }}-ratelimit" ||
		!strings.Contains(tpl, "kind: ConfigMap\nmetadata:\n  name: "+ConfigMapName("{{ $name }}")+"\n") ||
		!strings.Contains(tpl, "configMap:\n          name: "+ConfigMapName("{{ $name }}")+"\n") {
		t.Errorf("the chart's ConfigMap is not %s", ConfigMapName("{{ $name }}"))
	}
}
