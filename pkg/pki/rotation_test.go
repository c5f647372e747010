package pki

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
)

func newTestCA(t *testing.T) *CA {
	t.Helper()
	ca, _, err := NewCA(td, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// verifies reports whether an SVID issued by signer verifies against the
// authority's live bundle (go-spiffe's rules, as the proxies and the xDS
// server check it).
func verifies(t *testing.T, a *Authority, signer *CA) bool {
	t.Helper()
	id := td.ID()
	id, _ = id.AppendPath("/ns/gw/sa/envoy")
	svid, err := signer.Issue(id, time.Hour, ClientAuth, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = x509svid.Verify([]*x509.Certificate{svid.Cert}, a.Bundle())
	return err == nil
}

// TestRotationOverlap walks one rotation: the old CA stays trusted and
// keeps signing the server certificate until the handover, new SVIDs come
// from the new CA at once, and the old CA leaves the bundle at the drop.
func TestRotationOverlap(t *testing.T) {
	old, next := newTestCA(t), newTestCA(t)
	a := NewAuthority(td, old)
	o := OverlapFor(2 * time.Minute)
	if o.Handover != 90*time.Second || o.Drop != 150*time.Second {
		t.Fatalf("OverlapFor(2m) = %+v, want handover 1m30s, drop 2m30s", o)
	}
	t0 := time.Now()
	if !verifies(t, a, old) || verifies(t, a, next) {
		t.Fatal("before the rotation the bundle must hold the old CA only")
	}

	a.Set(a.Trust().Rotate(next, t0))
	if a.Current() != next {
		t.Error("SVIDs are not signed by the new CA after the rotation")
	}
	if !verifies(t, a, old) || !verifies(t, a, next) {
		t.Error("during the overlap SVIDs of both CAs must verify")
	}
	if got := len(a.Bundle().X509Authorities()); got != 2 {
		t.Errorf("bundle holds %d CAs during the overlap, want 2", got)
	}
	if a.ServerCA(t0.Add(o.Handover-time.Second), o) != old {
		t.Error("before the handover the server certificate must come from the old CA (proxies may trust only it)")
	}
	if a.ServerCA(t0.Add(o.Handover), o) != next {
		t.Error("at the handover the server certificate must come from the new CA")
	}

	a.Set(a.Trust().Prune(t0.Add(o.Drop-time.Second), o))
	if !verifies(t, a, old) {
		t.Error("the old CA was dropped before its SVIDs can have expired")
	}
	a.Set(a.Trust().Prune(t0.Add(o.Drop), o))
	if verifies(t, a, old) || !verifies(t, a, next) {
		t.Error("after the drop only the new CA may verify")
	}
	if a.ServerCA(t0, o) != next {
		t.Error("a dropped CA still signs the server certificate")
	}
}

// TestRotationAgreement: a replica that started after the rotation (it
// never held the old CA) learns it from the shared record and agrees on
// the bundle and the times, but signs its server certificate with the only
// key it has.
func TestRotationAgreement(t *testing.T) {
	old, next := newTestCA(t), newTestCA(t)
	t0 := time.Now().Truncate(time.Second)
	o := OverlapFor(time.Hour)

	first := NewAuthority(td, old)
	first.Set(first.Trust().Rotate(next, t0))
	record, err := ParseRetired(MarshalRetired(first.Trust().Retired))
	if err != nil {
		t.Fatal(err)
	}

	late := NewAuthority(td, next)
	// It saw the rotation a few seconds later: the record's time wins.
	late.Set(late.Trust().Rotate(next, t0.Add(5*time.Second)).Merge(record))
	if got, want := string(late.BundlePEM()), string(first.BundlePEM()); got != want {
		t.Errorf("bundles differ:\n%s\nvs\n%s", got, want)
	}
	if r := late.Trust().Retired; len(r) != 1 || !r[0].At.Equal(t0) {
		t.Errorf("retired = %+v, want the old CA retired at %s", r, t0)
	}
	if late.ServerCA(t0, o) != next {
		t.Error("a replica without the old key must sign with the new CA")
	}
	// A rotation back to a retired CA makes it current again, once.
	back := late.Trust().Rotate(old, t0.Add(time.Minute))
	if back.Current != old || len(back.Retired) != 1 || !back.Retired[0].Cert.Equal(next.Cert) {
		t.Errorf("rotation back: current %v, retired %+v", back.Current.Cert.Subject, back.Retired)
	}
	// The same CA again (a re-read of the Secret) changes nothing.
	if same := late.Trust().Rotate(next, t0.Add(time.Hour)); len(same.Retired) != 1 || !same.Retired[0].At.Equal(t0) {
		t.Errorf("re-reading the same CA changed the retired CAs: %+v", same.Retired)
	}
}

func TestParseRetiredRefuses(t *testing.T) {
	ca := newTestCA(t)
	for name, in := range map[string][]byte{
		"no header": ca.CertPEM,
		"not a CA": func() []byte {
			id, _ := td.ID().AppendPath("/x")
			s, _ := ca.Issue(id, time.Hour, ClientAuth, nil, nil)
			return MarshalRetired([]Retired{{Cert: s.Cert, At: time.Now()}})
		}(),
		"garbage": []byte("-----BEGIN CERTIFICATE-----\nZm9v\n-----END CERTIFICATE-----\n"),
	} {
		if _, err := ParseRetired(in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
