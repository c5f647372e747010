package pki

import (
	"bytes"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

var td = spiffeid.RequireTrustDomainFromString("example.org")

func TestIssueSVID(t *testing.T) {
	ca, _, err := NewCA(td, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	id := spiffeid.RequireFromPath(td, "/ns/gw/sa/envoy")
	svid, err := ca.Issue(id, 10*time.Minute, ClientAuth, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(svid.Cert.URIs) != 1 || svid.Cert.URIs[0].String() != "spiffe://example.org/ns/gw/sa/envoy" {
		t.Errorf("URI SANs = %v, want the SPIFFE ID only", svid.Cert.URIs)
	}
	if _, err := svid.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("SVID does not verify as a client certificate against its CA: %v", err)
	}
	if _, err := svid.Cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a client SVID verified as a server certificate")
	}
	if got := svid.Cert.NotAfter.Sub(svid.Cert.NotBefore); got < 10*time.Minute || got > 12*time.Minute {
		t.Errorf("lifetime = %s, want about 10m", got)
	}
	other, _, _ := NewCA(td, time.Hour)
	if _, err := svid.Cert.Verify(x509.VerifyOptions{Roots: other.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err == nil {
		t.Error("SVID verified against a foreign CA")
	}
}

func TestLifetimeCappedByCA(t *testing.T) {
	ca, _, err := NewCA(td, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	svid, err := ca.Issue(spiffeid.RequireFromPath(td, "/x"), 48*time.Hour, ServerAuth, []string{"localhost"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if svid.Cert.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("SVID outlives its CA: %s > %s", svid.Cert.NotAfter, ca.Cert.NotAfter)
	}
}

func TestSignRequiresID(t *testing.T) {
	ca, _, _ := NewCA(td, time.Hour)
	if _, err := ca.Issue(spiffeid.ID{}, time.Hour, ClientAuth, nil, nil); err == nil {
		t.Error("issued a certificate without a SPIFFE ID")
	}
}

func TestLoadOrCreateCA(t *testing.T) {
	dir := t.TempDir()
	first, err := LoadOrCreateCA(dir, td, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, CAKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode = %v (%v), want 0600", st.Mode().Perm(), err)
	}
	second, err := LoadOrCreateCA(dir, td, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Cert.Equal(second.Cert) {
		t.Error("second start created a new CA instead of loading the first")
	}
	// A half-present CA is an error, never silently replaced.
	if err := os.Remove(filepath.Join(dir, CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateCA(dir, td, time.Hour); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("err = %v, want an incomplete-CA error", err)
	}
}

func TestParseCARejectsLeaf(t *testing.T) {
	ca, _, _ := NewCA(td, time.Hour)
	leaf, _ := ca.Issue(spiffeid.RequireFromPath(td, "/x"), time.Hour, ClientAuth, nil, nil)
	if _, err := ParseCA(leaf.CertPEM, leaf.KeyPEM); err == nil {
		t.Error("a leaf certificate was accepted as a CA")
	}
}

// TestDerivationKey: the same CA (loaded again from its files, as
// another replica or a restart does) derives the same key per purpose;
// another purpose or another CA derives another.
func TestDerivationKey(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadOrCreateCA(dir, td, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreateCA(dir, td, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := NewCA(td, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k := a.DerivationKey("oidc")
	if len(k) != 32 || !bytes.Equal(k, b.DerivationKey("oidc")) {
		t.Fatalf("the same CA derived %x and %x", k, b.DerivationKey("oidc"))
	}
	if bytes.Equal(k, a.DerivationKey("other")) || bytes.Equal(k, other.DerivationKey("oidc")) {
		t.Error("another purpose or another CA derived the same key")
	}
}
