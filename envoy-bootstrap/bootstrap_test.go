package bootstrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"sigs.k8s.io/yaml"

	"github.com/xds-controller/xds-controller/internal/testenvoy"
	"github.com/xds-controller/xds-controller/pkg/pki"
)

func params(t *testing.T) Params {
	dir := t.TempDir()
	td := spiffeid.RequireTrustDomainFromString("test.local")
	ca, err := pki.LoadOrCreateCA(dir, td, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	svid, _ := ca.Issue(spiffeid.RequireFromPath(td, "/ns/a/sa/b"), time.Hour, pki.ClientAuth, nil, nil)
	sds := filepath.Join(dir, "sds")
	_ = os.Mkdir(sds, 0o700)
	_ = os.WriteFile(filepath.Join(sds, SVIDCertFile), svid.CertPEM, 0o600)
	_ = os.WriteFile(filepath.Join(sds, SVIDKeyFile), svid.KeyPEM, 0o600)
	_ = os.WriteFile(filepath.Join(sds, BundleFile), ca.CertPEM, 0o600)
	files, err := SDSFiles(sds)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		_ = os.WriteFile(filepath.Join(dir, name), b, 0o600)
	}
	return Params{
		NodeID: "envoy-0", Scope: "gatewayclass/demo",
		XDSHost: "xds-controller.system.svc", XDSPort: 18000,
		XDSServerID:  "spiffe://test.local/ns/system/sa/xds-controller",
		SDSConfigDir: dir,
		Delta:        true,
	}
}

func TestRenderFields(t *testing.T) {
	b, err := Render(params(t))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Node  struct{ ID, Cluster string } `json:"node"`
		Admin struct {
			Address struct {
				SocketAddress struct {
					Address   string `json:"address"`
					PortValue int    `json:"port_value"`
				} `json:"socket_address"`
			} `json:"address"`
		} `json:"admin"`
		DynamicResources struct {
			ADS struct {
				APIType string `json:"api_type"`
			} `json:"ads_config"`
		} `json:"dynamic_resources"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("bootstrap is not YAML: %v\n%s", err, b)
	}
	if doc.Node.ID != "envoy-0" || doc.Node.Cluster != "gatewayclass/demo" {
		t.Errorf("node = %+v, want id envoy-0, cluster gatewayclass/demo", doc.Node)
	}
	if a := doc.Admin.Address.SocketAddress; a.Address != "127.0.0.1" || a.PortValue != 9901 {
		t.Errorf("admin = %s:%d, want 127.0.0.1:9901 (never the pod IP)", a.Address, a.PortValue)
	}
	if doc.DynamicResources.ADS.APIType != "DELTA_GRPC" {
		t.Errorf("ads api_type = %s, want DELTA_GRPC", doc.DynamicResources.ADS.APIType)
	}
	if !strings.Contains(string(b), "type: STRICT_DNS") {
		t.Error("a DNS name for the controller needs a STRICT_DNS cluster")
	}
}

func TestRenderRequiresIdentity(t *testing.T) {
	p := params(t)
	p.SDSConfigDir = ""
	if _, err := Render(p); err == nil {
		t.Error("rendered a bootstrap without the SDS configuration of its client certificate")
	}
}

// TestRenderMetricsListener: with MetricsPort the bootstrap has a listener
// on it whose only route to the admin is GET or HEAD /stats/prometheus;
// without, neither the listener nor the admin cluster exists.
func TestRenderMetricsListener(t *testing.T) {
	p := params(t)
	b, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "xds_controller_metrics") || strings.Contains(string(b), "xds_controller_admin") {
		t.Error("a metrics listener or admin cluster without MetricsPort")
	}
	p.MetricsPort = 19003
	if b, err = Render(p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"name: xds_controller_metrics",
		`socket_address: { address: "0.0.0.0", port_value: 19003 }`,
		"path: /stats/prometheus",
		`regex: "GET|HEAD"`,
		"route: { cluster: xds_controller_admin }",
		`socket_address: { address: "127.0.0.1", port_value: 9901 }`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("bootstrap lacks %q", want)
		}
	}
	if n := strings.Count(string(b), "cluster: xds_controller_admin"); n != 1 {
		t.Errorf("%d routes to the admin, want exactly one", n)
	}
}

// TestEnvoyAcceptsBootstrap loads the rendered bootstrap into the real
// Envoy in validate mode, for both xDS flavours, with and without the
// metrics listener.
func TestEnvoyAcceptsBootstrap(t *testing.T) {
	envoy := testenvoy.Path(t)
	for _, delta := range []bool{true, false} {
		p := params(t)
		p.Delta = delta
		if delta {
			p.MetricsPort = 19003
		}
		b, err := Render(p)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "bootstrap.yaml")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(envoy, "--mode", "validate", "-c", path, "--disable-hot-restart").CombinedOutput()
		if err != nil {
			t.Errorf("delta=%v: Envoy rejected the bootstrap: %v\n%s", delta, err, out)
		}
	}
}

// TestRenderOverload: the overload manager watches the heap (fixed_heap)
// besides the connection count, shrinks the heap at 95% and stops
// accepting connections and requests at 98%; Overload's values replace
// the defaults.
func TestRenderOverload(t *testing.T) {
	p := params(t)
	b, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"max_active_downstream_connections: 50000",
		"max_heap_size_bytes: 2147483648",
		"name: envoy.overload_actions.shrink_heap",
		"name: envoy.overload_actions.stop_accepting_connections",
		"name: envoy.overload_actions.stop_accepting_requests",
		"overload.premature_reset_total_stream_count: 500",
		"overload.premature_reset_min_stream_lifetime_seconds: 1",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("default bootstrap lacks %q", want)
		}
	}
	p.Overload = Overload{MaxHeapSizeBytes: 429496729, MaxDownstreamConnections: 1000}
	if b, err = Render(p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"max_active_downstream_connections: 1000", "max_heap_size_bytes: 429496729"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("bootstrap with %+v lacks %q", p.Overload, want)
		}
	}
}
