package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"

	"github.com/xds-controller/xds-controller/pkg/identity"
)

// Signer has a CSR signed: the identity service (identity.Client with a
// token, see TokenSigner) or a local CA.
type Signer interface {
	Sign(ctx context.Context, csrPEM []byte) (*identity.SignResponse, error)
}

// SignerFunc adapts a function to Signer.
type SignerFunc func(ctx context.Context, csrPEM []byte) (*identity.SignResponse, error)

// Sign calls f.
func (f SignerFunc) Sign(ctx context.Context, csrPEM []byte) (*identity.SignResponse, error) {
	return f(ctx, csrPEM)
}

// Clock is time as the agent sees it; tests replace it.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Retry bounds: after a failed renewal the agent retries after MinRetry,
// doubling up to MaxRetry.
const (
	MinRetry = time.Second
	MaxRetry = 30 * time.Second
)

// RenewAt is when an SVID received at received and valid until notAfter
// is renewed: at half of the lifetime left at reception. (The SVID's own
// NotBefore is back-dated for clock skew, so it is not used.)
func RenewAt(received, notAfter time.Time) time.Time {
	if !notAfter.After(received) {
		return received
	}
	return received.Add(notAfter.Sub(received) / 2)
}

// Backoff is the wait before retry number attempt (1, 2, ...) after a
// failure: MinRetry doubled attempt-1 times, at most MaxRetry.
func Backoff(attempt int) time.Duration {
	d := MinRetry
	for i := 1; i < attempt && d < MaxRetry; i++ {
		d *= 2
	}
	return min(d, MaxRetry)
}

// Agent keeps the SVID in Dir fresh. Set the fields, then Run.
type Agent struct {
	// Dir is the SDS folder (see WriteAtomic).
	Dir string
	// Signer signs the CSRs.
	Signer Signer
	// Clock (default: the real one).
	Clock Clock
	// Log (default slog.Default()).
	Log *slog.Logger
	// OnRotate, when set, is called after every SVID written, with its
	// NotAfter.
	OnRotate func(notAfter time.Time)
	// Trust, when set, is the bundle that authenticates the identity
	// service (identity.Client.Trust): it becomes the bundle of every SVID
	// received, so the agent follows a rotation of the controller's CA
	// (the bundle then holds the old and the new CA, later the new one
	// only) without a restart.
	Trust *x509bundle.Bundle

	mu       sync.Mutex
	notAfter time.Time
	id       string
}

// Run renews the SVID until ctx ends: right away, then at RenewAt of each
// SVID, and after a failure with Backoff. It returns nil when ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	attempt := 0
	for {
		renewAt, err := a.Rotate(ctx)
		var wait time.Duration
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			attempt++
			wait = Backoff(attempt)
			a.log().Error("SVID renewal failed; retrying", "error", err, "attempt", attempt, "retryIn", wait, "currentExpires", a.Expiry())
		} else {
			attempt = 0
			wait = max(renewAt.Sub(a.clock().Now()), 0)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.clock().After(wait):
		}
	}
}

// Rotate obtains one new SVID (new key, new CSR), checks it and writes it
// into Dir. It returns when to renew it (RenewAt).
func (a *Agent) Rotate(ctx context.Context) (time.Time, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return time.Time{}, err
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return time.Time{}, err
	}
	resp, err := a.Signer.Sign(ctx, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}))
	if err != nil {
		return time.Time{}, err
	}
	received := a.clock().Now()
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return time.Time{}, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	svid, bundle, err := CheckResponse(resp, keyPEM, received)
	if err != nil {
		return time.Time{}, err
	}
	err = WriteAtomic(a.Dir, VersionName(received), map[string][]byte{
		CertFile:   []byte(resp.CertChain),
		KeyFile:    keyPEM,
		BundleFile: []byte(resp.Bundle),
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("writing the SVID: %w", err)
	}
	if a.Trust != nil {
		a.Trust.SetX509Authorities(bundle.X509Authorities())
	}
	leaf := svid.Certificates[0]
	a.mu.Lock()
	a.notAfter, a.id = leaf.NotAfter, svid.ID.String()
	a.mu.Unlock()
	if a.OnRotate != nil {
		a.OnRotate(leaf.NotAfter)
	}
	renew := RenewAt(received, leaf.NotAfter)
	a.log().Info("SVID written", "id", svid.ID.String(), "expires", leaf.NotAfter.UTC().Format(time.RFC3339), "renewAt", renew.UTC().Format(time.RFC3339), "dir", a.Dir)
	return renew, nil
}

// CheckResponse checks an answer of the identity service against the key
// the CSR was made with, at now: the certificate chain is an X.509 SVID
// for that key (go-spiffe's rules) and verifies against the bundle it came
// with. It returns the SVID and the bundle.
func CheckResponse(resp *identity.SignResponse, keyPEM []byte, now time.Time) (*x509svid.SVID, *x509bundle.Bundle, error) {
	svid, err := x509svid.Parse([]byte(resp.CertChain), keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("the issued SVID: %w", err)
	}
	bundle, err := x509bundle.Parse(svid.ID.TrustDomain(), []byte(resp.Bundle))
	if err != nil {
		return nil, nil, fmt.Errorf("the trust bundle: %w", err)
	}
	if _, _, err := x509svid.Verify(svid.Certificates, bundle, x509svid.WithTime(now)); err != nil {
		return nil, nil, fmt.Errorf("the issued SVID does not verify against its bundle: %w", err)
	}
	return svid, bundle, nil
}

// Ready reports whether an SVID has been written and has not expired.
func (a *Agent) Ready() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.notAfter.IsZero() && a.clock().Now().Before(a.notAfter)
}

// Expiry is the current SVID's NotAfter (zero before the first).
func (a *Agent) Expiry() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.notAfter
}

func (a *Agent) clock() Clock {
	if a.Clock != nil {
		return a.Clock
	}
	return realClock{}
}

func (a *Agent) log() *slog.Logger {
	if a.Log != nil {
		return a.Log
	}
	return slog.Default()
}

// errNoToken: the token file is empty.
var errNoToken = errors.New("the ServiceAccount token file is empty")
