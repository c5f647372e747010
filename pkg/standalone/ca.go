package standalone

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"

	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"
	"github.com/xds-controller/xds-controller/pkg/agent"
	"github.com/xds-controller/xds-controller/pkg/identity"
	"github.com/xds-controller/xds-controller/pkg/pki"
)

// caValidity is the validity of a CA that standalone mode creates.
const caValidity = 10 * 365 * 24 * time.Hour

// caPollInterval is how often StateDir/pki is re-read for a new CA.
var caPollInterval = time.Second

// retiredFile, in StateDir/pki, records the retired CAs still trusted
// during a rotation (pki.MarshalRetired), so that a restart during the
// overlap still trusts them.
const retiredFile = "retired.crt"

type credentials struct {
	serverTLS *tls.Config
	serverID  spiffeid.ID
	envoyID   spiffeid.ID
	// authority signs Envoy's SVIDs; caDir holds its CA (ca.crt, ca.key)
	// and retiredFile; overlap times a rotation.
	authority *pki.Authority
	caDir     string
	overlap   pki.Overlap
	// sdsDir holds Envoy's SVID and bundle (kept by an agent.Agent);
	// sdsConfigDir the SDS resource files pointing at them.
	sdsDir, sdsConfigDir string
}

// issueCredentials creates (or loads) the CA under StateDir/pki (with the
// retired CAs its retiredFile records) and the xDS server's certificate
// (24 hours, issued in memory and renewed, from the CA that
// pki.Authority.ServerCA names). Envoy's SVID is not issued here: an
// agent.Agent keeps it in StateDir/sds with a local signer (localSigner),
// as the agent in a Kubernetes Envoy pod does with the identity service.
func issueCredentials(cfg Config) (*credentials, error) {
	td, err := spiffeid.TrustDomainFromString(cfg.TrustDomain)
	if err != nil {
		return nil, fmt.Errorf("trust domain: %w", err)
	}
	state, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(state, "pki")
	ca, err := pki.LoadOrCreateCA(dir, td, caValidity)
	if err != nil {
		return nil, err
	}
	serverID := spiffeid.RequireFromPath(td, "/ns/standalone/sa/xds-controller")
	c := &credentials{
		serverID:     serverID,
		envoyID:      EnvoyID(td),
		authority:    pki.NewAuthority(td, ca),
		caDir:        dir,
		overlap:      pki.OverlapFor(cmp.Or(cfg.SVIDLifetime, identity.DefaultSVIDLifetime)),
		sdsDir:       filepath.Join(state, "sds"),
		sdsConfigDir: state,
	}
	if b, err := os.ReadFile(filepath.Join(dir, retiredFile)); err == nil {
		if retired, err := pki.ParseRetired(b); err == nil {
			c.authority.Set(c.authority.Trust().Merge(retired).Prune(time.Now(), c.overlap))
		}
	}
	server := &pki.ServerCert{
		Authority: c.authority,
		ID:        serverID,
		DNSNames:  []string{"localhost"},
		IPs:       []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		Validity:  24 * time.Hour,
		Overlap:   c.overlap,
	}
	if _, err := server.Certificate(); err != nil {
		return nil, err
	}
	c.serverTLS = server.MTLSConfig("h2")
	files, err := bootstrap.SDSFiles(c.sdsDir)
	if err != nil {
		return nil, err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(c.sdsConfigDir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// followCA rotates to the CA in caDir whenever it changes (syncCA), every
// interval until ctx ends. Problems are logged; the current CA stays.
func (c *credentials) followCA(ctx context.Context, log *slog.Logger, interval time.Duration) {
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
		err := c.syncCA(time.Now(), log)
		switch {
		case err != nil && err.Error() != lastErr:
			log.Error("CA rotation: keeping the current CA", "dir", c.caDir, "error", err)
		case err == nil && lastErr != "":
			log.Info("CA rotation: the CA folder is readable again", "dir", c.caDir)
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
	}
}

// syncCA reads caDir (a pair that was removed is created anew, as at
// start) and its retiredFile, and makes the Authority follow at now: the
// rules of pki.Trust (Rotate, Merge, Prune). It rewrites retiredFile when
// that changed. Errors: an unreadable or invalid CA (a pair half
// written, a key that does not match), and writing retiredFile.
func (c *credentials) syncCA(now time.Time, log *slog.Logger) error {
	ca, err := pki.LoadOrCreateCA(c.caDir, c.authority.Bundle().TrustDomain(), caValidity)
	if err != nil {
		return err
	}
	path := filepath.Join(c.caDir, retiredFile)
	recorded, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	retired, err := pki.ParseRetired(recorded)
	if err != nil {
		log.Warn("CA rotation: ignoring the record of retired CAs", "file", path, "error", err)
		retired = nil
	}
	t, changed := c.authority.Follow(ca, retired, now, c.overlap)
	if changed {
		log.Info("CA rotation: trust bundle changed", "signingCA", t.Current.Cert.SerialNumber.Text(16), "trusted", len(t.Authorities()),
			"handover", c.overlap.Handover, "drop", c.overlap.Drop)
	}
	if want := pki.MarshalRetired(t.Retired); !bytes.Equal(want, recorded) {
		return os.WriteFile(path, want, 0o644)
	}
	return nil
}

// EnvoyID is the SPIFFE ID of standalone mode's Envoy in td: the only
// identity allowed the scope Scope.
func EnvoyID(td spiffeid.TrustDomain) spiffeid.ID {
	return spiffeid.RequireFromPath(td, "/ns/standalone/sa/envoy")
}

// localSigner signs Envoy's CSRs with the authority's current CA, under
// the same CSR rules as the identity service (identity.CheckCSR), for id,
// valid ttl, and returns them with the authority's bundle.
func localSigner(a *pki.Authority, id spiffeid.ID, ttl time.Duration) agent.Signer {
	return agent.SignerFunc(func(_ context.Context, csrPEM []byte) (*identity.SignResponse, error) {
		csr, err := identity.CheckCSR(csrPEM)
		if err != nil {
			return nil, err
		}
		trust := a.Trust()
		der, err := trust.Current.Sign(id, csr.PublicKey, ttl, pki.ClientAuth, nil, nil)
		if err != nil {
			return nil, err
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, err
		}
		return &identity.SignResponse{
			SPIFFEID:  id.String(),
			CertChain: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			Bundle:    string(trust.BundlePEM()),
			ExpiresAt: cert.NotAfter,
		}, nil
	})
}
