package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

// CA rotation with an overlap. When the CA is replaced, the old CA's
// certificate stays in the trust bundle (Trust.Retired) so that SVIDs it
// signed keep verifying while new SVIDs come from the new CA; the proxies
// receive the bundle with both CAs with their next SVID. Two moments
// follow, both counted from the retirement (Overlap):
//
//   - Handover: until then a process that still holds the old CA's key
//     signs its server certificate with it (proxies that have not renewed
//     yet trust only the old CA); after it, the server certificate comes
//     from the new CA. Agents renew at half of their SVID's lifetime, so by
//     then every running proxy trusts both.
//   - Drop: the old CA leaves the bundle; every SVID it signed has expired.

// Retired is a CA certificate that no longer signs but is still trusted,
// and when it stopped signing.
type Retired struct {
	Cert *x509.Certificate
	At   time.Time
}

// Trust is the CA that signs and the retired CAs still trusted.
type Trust struct {
	Current *CA
	// Retired, oldest retirement first.
	Retired []Retired
}

// Rotate returns t with ca as the current CA. When ca's certificate is
// not the current one, the current one is retired at now (a CA that was
// retired and comes back leaves Retired). t is not changed.
func (t Trust) Rotate(ca *CA, now time.Time) Trust {
	if t.Current != nil && t.Current.Cert.Equal(ca.Cert) {
		t.Current = ca
		return t
	}
	out := Trust{Current: ca}
	retired := slices.Clone(t.Retired)
	if t.Current != nil {
		retired = append(retired, Retired{Cert: t.Current.Cert, At: now})
	}
	return out.Merge(retired)
}

// Merge returns t with the retired CAs of others added: the union, a CA
// listed twice keeping its earliest retirement, the current CA never
// listed. It is how replicas agree (each merges the shared record with
// what it saw itself). t is not changed.
func (t Trust) Merge(others []Retired) Trust {
	out := Trust{Current: t.Current}
	for _, r := range append(slices.Clone(t.Retired), others...) {
		if t.Current != nil && t.Current.Cert.Equal(r.Cert) {
			continue
		}
		i := slices.IndexFunc(out.Retired, func(o Retired) bool { return o.Cert.Equal(r.Cert) })
		switch {
		case i < 0:
			out.Retired = append(out.Retired, r)
		case r.At.Before(out.Retired[i].At):
			out.Retired[i].At = r.At
		}
	}
	slices.SortStableFunc(out.Retired, func(a, b Retired) int { return a.At.Compare(b.At) })
	return out
}

// Prune returns t without the retired CAs whose Drop time (o) has come at
// now, nor those that have expired. t is not changed.
func (t Trust) Prune(now time.Time, o Overlap) Trust {
	out := Trust{Current: t.Current}
	for _, r := range t.Retired {
		if now.Before(r.At.Add(o.Drop)) && now.Before(r.Cert.NotAfter) {
			out.Retired = append(out.Retired, r)
		}
	}
	return out
}

// Authorities are the certificates that verify SVIDs: the current CA's,
// then the retired ones'.
func (t Trust) Authorities() []*x509.Certificate {
	var out []*x509.Certificate
	if t.Current != nil {
		out = append(out, t.Current.Cert)
	}
	for _, r := range t.Retired {
		out = append(out, r.Cert)
	}
	return out
}

// BundlePEM is Authorities as PEM: the trust bundle the proxies get.
func (t Trust) BundlePEM() []byte {
	var b bytes.Buffer
	for _, c := range t.Authorities() {
		b.Write(pemBlock("CERTIFICATE", c.Raw))
	}
	return b.Bytes()
}

// Overlap is how long after its retirement a CA keeps each role.
type Overlap struct {
	// Handover: until then, its key (where still held) signs the server
	// certificate.
	Handover time.Duration
	// Drop: until then, it stays in the bundle.
	Drop time.Duration
}

// OverlapFor is the overlap for SVIDs valid for svidLifetime, renewed at
// half of it (pkg/agent.RenewAt), with a margin of a quarter of the
// lifetime (at least 30 s, for the agents' retries and the replicas
// seeing the change at slightly different times): handover at half the
// lifetime plus the margin, drop at the lifetime plus the margin.
func OverlapFor(svidLifetime time.Duration) Overlap {
	margin := max(svidLifetime/4, 30*time.Second)
	return Overlap{Handover: svidLifetime/2 + margin, Drop: svidLifetime + margin}
}

// The header of a retired CA's PEM block that says when it retired.
const retiredAtHeader = "Retired-At"

// MarshalRetired writes retired CAs as PEM CERTIFICATE blocks, each with
// a Retired-At header (RFC 3339).
func MarshalRetired(rs []Retired) []byte {
	var b bytes.Buffer
	for _, r := range rs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Headers: map[string]string{retiredAtHeader: r.At.UTC().Format(time.RFC3339)}, Bytes: r.Cert.Raw})
	}
	return b.Bytes()
}

// ParseRetired reads what MarshalRetired wrote. Errors: a block that is
// not a CA certificate or has no valid Retired-At header.
func ParseRetired(b []byte) ([]Retired, error) {
	var out []Retired
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return out, nil
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("retired CAs: unexpected PEM block %q", block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("retired CAs: %w", err)
		}
		if !cert.IsCA {
			return nil, errors.New("retired CAs: a certificate is not a CA")
		}
		at, err := time.Parse(time.RFC3339, block.Headers[retiredAtHeader])
		if err != nil {
			return nil, fmt.Errorf("retired CAs: %s header: %w", retiredAtHeader, err)
		}
		out = append(out, Retired{Cert: cert, At: at})
	}
}

// Authority is a process's live CA state: the Trust, the keys of retired
// CAs it still holds (those it signed with itself before they retired),
// and the bundle as a go-spiffe x509bundle.Bundle that TLS
// configurations read at every handshake. Safe for concurrent use.
type Authority struct {
	bundle *x509bundle.Bundle

	mu    sync.Mutex
	trust Trust
	keys  []*CA
}

// NewAuthority returns an Authority whose only CA is ca, for trustDomain.
func NewAuthority(trustDomain spiffeid.TrustDomain, ca *CA) *Authority {
	a := &Authority{bundle: x509bundle.New(trustDomain)}
	a.Set(Trust{Current: ca})
	return a
}

// Set makes t the state. The key of a CA that leaves Current is kept
// while t still trusts it (ServerCA).
func (a *Authority) Set(t Trust) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.trust.Current != nil && !a.trust.Current.Cert.Equal(t.Current.Cert) {
		a.keys = append(a.keys, a.trust.Current)
	}
	a.keys = slices.DeleteFunc(a.keys, func(k *CA) bool {
		return !slices.ContainsFunc(t.Retired, func(r Retired) bool { return r.Cert.Equal(k.Cert) })
	})
	a.trust = t
	a.bundle.SetX509Authorities(t.Authorities())
}

// Follow makes a follow a CA and another process's record at now: t
// rotated to ca (nil keeps the current CA), merged with the recorded
// retired CAs, pruned under o (Trust.Rotate, Merge, Prune), and Set when
// its bundle differs from the current one. It returns the new Trust and
// whether the bundle changed. The controller (a Secret and a ConfigMap)
// and standalone mode (files) follow rotations through it.
func (a *Authority) Follow(ca *CA, recorded []Retired, now time.Time, o Overlap) (Trust, bool) {
	before := a.Trust()
	t := before
	if ca != nil {
		t = t.Rotate(ca, now)
	}
	t = t.Merge(recorded).Prune(now, o)
	if bytes.Equal(t.BundlePEM(), before.BundlePEM()) {
		return t, false
	}
	a.Set(t)
	return t, true
}

// Trust returns the state.
func (a *Authority) Trust() Trust {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.trust
}

// Current is the CA that signs SVIDs.
func (a *Authority) Current() *CA { return a.Trust().Current }

// Bundle is the live bundle (every CA of Trust.Authorities); it changes in
// place on Set.
func (a *Authority) Bundle() *x509bundle.Bundle { return a.bundle }

// BundlePEM is the trust bundle as PEM (Trust.BundlePEM).
func (a *Authority) BundlePEM() []byte { return a.Trust().BundlePEM() }

// ServerCA is the CA that signs the server certificate at now: the
// earliest retired CA whose key this process holds and whose Handover
// (o) has not come, else the current CA.
func (a *Authority) ServerCA(now time.Time, o Overlap) *CA {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range a.trust.Retired {
		if !now.Before(r.At.Add(o.Handover)) || !now.Before(r.Cert.NotAfter) {
			continue
		}
		for _, k := range a.keys {
			if k.Cert.Equal(r.Cert) {
				return k
			}
		}
	}
	return a.trust.Current
}
