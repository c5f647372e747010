package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"

	"github.com/xds-controller/xds-controller/pkg/identity"
)

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	if err := WriteAtomic(dir, "v1", map[string][]byte{"a": []byte("1a"), "b": []byte("1b")}); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(dir, "v2", map[string][]byte{"a": []byte("2a"), "b": []byte("2b")}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "2a", "b": "2b"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q %v, want %q", name, got, err, want)
		}
		if target, _ := os.Readlink(filepath.Join(dir, name)); target != filepath.Join(DataLink, name) {
			t.Errorf("%s links to %q", name, target)
		}
		st, _ := os.Stat(filepath.Join(dir, name))
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", name, st.Mode())
		}
	}
	if target, _ := os.Readlink(filepath.Join(dir, DataLink)); target != "..v2" {
		t.Errorf("..data -> %q, want ..v2", target)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"..data", "..v2", "a", "b"}; !slices.Equal(names, want) {
		t.Errorf("folder holds %v, want %v (old versions removed, no temporary links)", names, want)
	}
	if err := WriteAtomic(dir, "v2", map[string][]byte{"a": nil}); err == nil {
		t.Error("a version was written twice")
	}
}

func TestRenewAtAndBackoff(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	if got := RenewAt(t0, t0.Add(time.Hour)); !got.Equal(t0.Add(30 * time.Minute)) {
		t.Errorf("RenewAt 1h = %s", got.Sub(t0))
	}
	if got := RenewAt(t0, t0.Add(-time.Minute)); !got.Equal(t0) {
		t.Errorf("RenewAt of an expired SVID = %s, want now", got.Sub(t0))
	}
	var got []time.Duration
	for i := 1; i <= 7; i++ {
		got = append(got, Backoff(i))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("Backoff = %v, want %v", got, want)
	}
}

// fakeClock jumps forward by every wait it is asked for, and records it.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// testCA signs SVIDs on the fake clock's time.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string
}

func newTestCA(t *testing.T, now time.Time) *testCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	td, _ := url.Parse("spiffe://cluster.local")
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), URIs: []*url.URL{td},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

func (ca *testCA) sign(t *testing.T, csrPEM []byte, serial int64, now time.Time, ttl time.Duration) *identity.SignResponse {
	block, _ := pem.Decode(csrPEM)
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := url.Parse("spiffe://cluster.local/ns/xds-system/sa/envoy-xds")
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(serial), URIs: []*url.URL{id},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(ttl),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca.cert, csr.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return &identity.SignResponse{
		CertChain: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		Bundle:    ca.pem,
		ExpiresAt: now.Add(ttl),
	}
}

// TestRunRenewsAtHalfLifetimeAndRetries: with 2-minute SVIDs the agent
// renews every minute, retries failures with back-off, and the folder
// always holds the newest SVID.
func TestRunRenewsAtHalfLifetimeAndRetries(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	ca := newTestCA(t, clock.now)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	// Calls 2 and 3 fail; call 5 ends the test.
	signer := SignerFunc(func(_ context.Context, csr []byte) (*identity.SignResponse, error) {
		calls++
		switch calls {
		case 2, 3:
			return nil, errors.New("identity service unreachable")
		case 5:
			cancel()
			return nil, context.Canceled
		}
		return ca.sign(t, csr, int64(calls), clock.Now(), 2*time.Minute), nil
	})
	a := &Agent{Dir: dir, Signer: signer, Clock: clock}
	if a.Ready() {
		t.Error("ready before the first SVID")
	}
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{time.Minute, time.Second, 2 * time.Second, time.Minute}
	if !slices.Equal(clock.waits, want) {
		t.Errorf("waits %v, want %v", clock.waits, want)
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, CertFile))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	cert, _ := x509.ParseCertificate(block.Bytes)
	if cert.SerialNumber.Int64() != 4 {
		t.Errorf("the folder holds SVID %d, want the newest (4)", cert.SerialNumber.Int64())
	}
	if _, _, err := CheckResponse(&identity.SignResponse{CertChain: string(certPEM), Bundle: ca.pem}, mustRead(t, filepath.Join(dir, KeyFile)), clock.Now()); err != nil {
		t.Errorf("the folder's certificate and key do not match: %v", err)
	}
	if !a.Ready() {
		t.Error("not ready with a valid SVID")
	}
	clock.After(2 * time.Minute)
	if a.Ready() {
		t.Error("ready with an expired SVID")
	}
}

func TestCheckResponseRefusesAnotherKey(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ca := newTestCA(t, now)
	k1, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	csrDER, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, k1)
	resp := ca.sign(t, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}), 1, now, time.Hour)
	der, _ := x509.MarshalPKCS8PrivateKey(k2)
	if _, _, err := CheckResponse(resp, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), now); err == nil {
		t.Error("an SVID for another key was accepted")
	}
	other := newTestCA(t, now)
	der1, _ := x509.MarshalPKCS8PrivateKey(k1)
	resp.Bundle = other.pem
	if _, _, err := CheckResponse(resp, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der1}), now); err == nil {
		t.Error("an SVID that does not chain to its bundle was accepted")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTrustFollowsTheBundle: the trust that authenticates the identity
// service becomes the bundle of each SVID received: during a CA rotation
// the old and the new CA, after it the new one alone.
func TestTrustFollowsTheBundle(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	old, next := newTestCA(t, clock.now), newTestCA(t, clock.now)
	td := spiffeid.RequireTrustDomainFromString("cluster.local")
	trust := x509bundle.FromX509Authorities(td, []*x509.Certificate{old.cert})
	bundle := old.pem + next.pem
	a := &Agent{Dir: t.TempDir(), Clock: clock, Trust: trust, Signer: SignerFunc(func(_ context.Context, csr []byte) (*identity.SignResponse, error) {
		r := next.sign(t, csr, 1, clock.Now(), time.Minute)
		r.Bundle = bundle
		return r, nil
	})}
	if _, err := a.Rotate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := trust.X509Authorities(); len(got) != 2 || !got[0].Equal(old.cert) || !got[1].Equal(next.cert) {
		t.Errorf("trust during the rotation: %d CAs, want the old and the new", len(got))
	}
	bundle = next.pem
	clock.now = clock.now.Add(30 * time.Second)
	if _, err := a.Rotate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := trust.X509Authorities(); len(got) != 1 || !got[0].Equal(next.cert) {
		t.Errorf("trust after the rotation: %d CAs, want the new one alone", len(got))
	}
}
