package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/xds-controller/xds-controller/internal/xdsclient"
	"github.com/xds-controller/xds-controller/pkg/agent"
	"github.com/xds-controller/xds-controller/pkg/pki"
)

// TestStandaloneCARotation: with 20-second SVIDs (handover 40 s, drop
// 50 s after the rotation), the CA in the state folder is replaced while
// a client sends requests through Envoy. Envoy gets an SVID of the new CA
// and the bundle of both, later the new CA alone; its ADS connection is
// never re-established (no stream error) and a route edit made after the
// drop is served over it; a connection made with Envoy's current files
// (what Envoy would present and trust on a reconnect) is accepted, one
// with an SVID of the old CA is refused. No request fails.
func TestStandaloneCARotation(t *testing.T) {
	f := start(t, func(f *fixture) { f.args = append(f.args, "--svid-lifetime", "20s") })
	f.await("a.example.com", "/", 200, "alpha /")
	stat := func(name string) int {
		t.Helper()
		v, err := envoyCounter(f.admin, name)
		if err != nil {
			t.Fatalf("stat %s: %v", name, err)
		}
		return v
	}
	const xdsConns = "cluster.xds_controller.upstream_cx_total"
	connsBefore := stat(xdsConns)
	if connsBefore < 1 || stat("control_plane.connected_state") != 1 {
		t.Fatalf("Envoy is not connected to the controller: %d connections", connsBefore)
	}

	// Requests through Envoy the whole time, 20 ms apart.
	var sent, failed atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			code, body := f.get("a.example.com", "/load")
			sent.Add(1)
			if code != 200 {
				failed.Add(1)
				firstFailure.CompareAndSwap(nil, fmt.Sprintf("%s: %d %s", time.Now().Format("15:04:05.000"), code, body))
			}
		}
	})

	pkiDir, sds := filepath.Join(f.state, "pki"), filepath.Join(f.state, "sds")
	old, err := pki.ParseCA(mustRead(t, filepath.Join(pkiDir, pki.CACertFile)), mustRead(t, filepath.Join(pkiDir, pki.CAKeyFile)))
	if err != nil {
		t.Fatal(err)
	}
	next, nextKey, err := pki.NewCA(spiffeid.RequireTrustDomainFromString("xds-controller.local"), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The key first, then the certificate, each written and renamed: the
	// controller may see the new key with the old certificate for a
	// moment, which it refuses and retries.
	for _, w := range []struct {
		name string
		b    []byte
	}{{pki.CAKeyFile, nextKey}, {pki.CACertFile, next.CertPEM}} {
		tmp := filepath.Join(pkiDir, w.name+".tmp")
		if err := os.WriteFile(tmp, w.b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(pkiDir, w.name)); err != nil {
			t.Fatal(err)
		}
	}
	rotated := time.Now()

	// Envoy's files: an SVID of the new CA, the bundle of both.
	waitFor(t, "Envoy's SVID from the new CA with the bundle of both", 30*time.Second, func() error {
		leaf, roots := envoyFiles(t, sds)
		if err := leaf.CheckSignatureFrom(next.Cert); err != nil {
			return fmt.Errorf("SVID issued by %s", leaf.Issuer)
		}
		if len(roots) != 2 {
			return fmt.Errorf("%d CAs in the bundle", len(roots))
		}
		return nil
	})
	t.Logf("Envoy holds an SVID of the new CA and both CAs %s after the rotation", time.Since(rotated).Round(time.Millisecond))
	// After the drop (50 s) and the next renewal, the new CA alone.
	waitFor(t, "the bundle of the new CA alone", 90*time.Second, func() error {
		if _, roots := envoyFiles(t, sds); len(roots) != 1 || !roots[0].Equal(next.Cert) {
			return fmt.Errorf("%d CAs in the bundle", len(roots))
		}
		return nil
	})
	t.Logf("Envoy trusts the new CA alone %s after the rotation", time.Since(rotated).Round(time.Millisecond))
	if b, err := os.ReadFile(filepath.Join(pkiDir, "retired.crt")); err != nil || len(b) != 0 {
		t.Errorf("the record of retired CAs after the drop: %q %v, want empty", b, err)
	}

	// A route edit reaches Envoy over the connection it had all along.
	f.vals["HostABackend"] = "beta"
	render(t, filepath.Join(f.dir, "routes.yaml"), routesYAML, f.vals)
	took := f.await("a.example.com", "/", 200, "beta /")
	t.Logf("route edit after the rotation served in %s", took.Round(time.Millisecond))
	close(stop)
	wg.Wait()

	if got := stat(xdsConns); got != connsBefore {
		t.Errorf("Envoy's connections to the controller: %d before the rotation, %d after (the ADS stream was re-established)", connsBefore, got)
	}
	if stat("control_plane.connected_state") != 1 {
		t.Error("Envoy is not connected to the controller after the rotation")
	}
	t.Logf("requests through Envoy during the rotation: %d sent, %d failed (first: %v); xDS connections %d -> %d",
		sent.Load(), failed.Load(), firstFailure.Load(), connsBefore, stat(xdsConns))
	if failed.Load() > 0 {
		t.Errorf("%d of %d requests failed during the CA rotation", failed.Load(), sent.Load())
	}

	// A reconnecting Envoy: its current SVID and bundle are accepted and
	// trust the server; an SVID of the dropped CA is refused.
	pair, err := tls.LoadX509KeyPair(filepath.Join(sds, agent.CertFile), filepath.Join(sds, agent.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	_, roots := envoyFiles(t, sds)
	pool := x509.NewCertPool()
	for _, c := range roots {
		pool.AddCert(c)
	}
	if _, err := xdsclient.FetchClusters(f.xds, &tls.Config{RootCAs: pool, ServerName: "localhost", Certificates: []tls.Certificate{pair}}, "standalone"); err != nil {
		t.Errorf("a new connection with Envoy's current SVID and bundle failed: %v", err)
	}
	envoyID := spiffeid.RequireFromPath(spiffeid.RequireTrustDomainFromString("xds-controller.local"), "/ns/standalone/sa/envoy")
	stale, _ := old.Issue(envoyID, time.Hour, pki.ClientAuth, nil, nil)
	stalePair, _ := tls.X509KeyPair(stale.CertPEM, stale.KeyPEM)
	if _, err := xdsclient.FetchClusters(f.xds, &tls.Config{RootCAs: pool, ServerName: "localhost", Certificates: []tls.Certificate{stalePair}}, "standalone"); err == nil {
		t.Error("an SVID of the dropped CA was accepted")
	}
}

// envoyFiles reads Envoy's SVID and bundle from the SDS folder.
func envoyFiles(t *testing.T, dir string) (*x509.Certificate, []*x509.Certificate) {
	t.Helper()
	certs := func(name string) []*x509.Certificate {
		var out []*x509.Certificate
		rest := mustRead(t, filepath.Join(dir, name))
		for {
			var b *pem.Block
			b, rest = pem.Decode(rest)
			if b == nil {
				return out
			}
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
	}
	leaf := certs(agent.CertFile)
	if len(leaf) == 0 {
		t.Fatal("no SVID in the SDS folder")
	}
	return leaf[0], certs(agent.BundleFile)
}

// waitFor polls check every 200 ms until it returns nil, or fails the
// test after timeout with its last error.
func waitFor(t *testing.T, what string, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
