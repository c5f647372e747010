// Package identity is xds-controller's identity service: it turns a
// proxy's certificate signing request (CSR) and its projected
// ServiceAccount token into a short-lived X.509 SVID for the xDS channel.
//
// The rules, in the order the service applies them:
//
//  1. The token is checked with a Kubernetes TokenReview for our audience
//     (DefaultAudience): authenticated, audience in the result, a
//     ServiceAccount user, bound to a pod (a projected token, not a
//     long-lived Secret token), and valid for at most MaxTokenLifetime
//     from its issue (CheckReview, CheckTokenLifetime).
//  2. The ServiceAccount must be one of our Envoy fleets' (Fleets.Known):
//     the shared fleet envoy-<class> of a GatewayClass of ours in the
//     controller's namespace, or <gateway>-<class> of a Dedicated Gateway
//     of ours in the Gateway's namespace.
//  3. The CSR must carry a valid self-signature and an accepted key
//     (CheckCSR). Nothing else in it is used: the SVID's only name is the
//     URI SAN spiffe://<trust-domain>/ns/<namespace>/sa/<serviceaccount> of
//     the reviewed token, set by us.
//
// The service speaks HTTPS with JSON (see Server and Client).
package identity

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	authv1 "k8s.io/api/authentication/v1"
)

// Defaults.
const (
	// DefaultAudience is the audience the proxies' projected tokens are
	// bound to; a token for any other audience is refused.
	DefaultAudience = "xds-controller-identity"
	// DefaultSVIDLifetime is the validity of an issued SVID.
	DefaultSVIDLifetime = time.Hour
	// MaxTokenLifetime bounds a token's exp - iat: longer-lived tokens are
	// refused (the Envoy pods' projected tokens live 10 minutes).
	MaxTokenLifetime = time.Hour
	// MinRSABits is the smallest RSA key accepted in a CSR (NIST SP
	// 800-131A: 2048 bits).
	MinRSABits = 2048
	// MaxRSABits bounds the work a CSR can cause.
	MaxRSABits = 8192
)

// Reasons of refusals, as errors.Is targets.
var (
	// ErrBadRequest: the CSR is missing, malformed, badly signed or has
	// a refused key.
	ErrBadRequest = errors.New("bad request")
	// ErrUnauthenticated: the token is missing, invalid, expired, for
	// another audience, too long-lived, or not a pod's ServiceAccount
	// token.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForbidden: the ServiceAccount is not one of our fleets'.
	ErrForbidden = errors.New("forbidden")
)

// ServiceAccount names the Kubernetes ServiceAccount a token belongs to,
// and Pod the pod the token is bound to (in the same namespace).
type ServiceAccount struct {
	Namespace, Name string
	Pod             string
}

// serviceAccountPrefix starts the user name of every ServiceAccount token
// (k8s.io/apiserver/pkg/authentication/serviceaccount).
const serviceAccountPrefix = "system:serviceaccount:"

// podNameExtra is set by the API server in a TokenReview of a token bound
// to a pod (projected ServiceAccount tokens are).
const podNameExtra = "authentication.kubernetes.io/pod-name"

// CheckReview checks the status of a TokenReview that was sent with the
// audiences [audience]: the token must be authenticated, valid for
// audience, belong to a ServiceAccount (user
// system:serviceaccount:<namespace>:<name>) and be bound to a pod. It
// returns the ServiceAccount and the pod, or an error wrapping
// ErrUnauthenticated that says which rule failed (with the API server's
// own message when it refused the token).
func CheckReview(st authv1.TokenReviewStatus, audience string) (ServiceAccount, error) {
	if !st.Authenticated {
		msg := st.Error
		if msg == "" {
			msg = "not authenticated"
		}
		return ServiceAccount{}, fmt.Errorf("%w: token review: %s", ErrUnauthenticated, msg)
	}
	found := false
	for _, a := range st.Audiences {
		found = found || a == audience
	}
	if !found {
		return ServiceAccount{}, fmt.Errorf("%w: token is not valid for audience %q (valid for %q)", ErrUnauthenticated, audience, st.Audiences)
	}
	rest, ok := strings.CutPrefix(st.User.Username, serviceAccountPrefix)
	ns, name, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || ns == "" || name == "" || strings.Contains(name, ":") {
		return ServiceAccount{}, fmt.Errorf("%w: %q is not a ServiceAccount", ErrUnauthenticated, st.User.Username)
	}
	if len(st.User.Extra[podNameExtra]) == 0 {
		return ServiceAccount{}, fmt.Errorf("%w: the token of ServiceAccount %s/%s is not bound to a pod (use a projected token)", ErrUnauthenticated, ns, name)
	}
	return ServiceAccount{Namespace: ns, Name: name, Pod: st.User.Extra[podNameExtra][0]}, nil
}

// CheckTokenLifetime reads the iat and exp claims of a JWT whose signature
// the API server has already verified (call it after CheckReview) and
// refuses a token that has no exp, has expired at now, or was issued for
// longer than maxLifetime. Errors wrap ErrUnauthenticated.
func CheckTokenLifetime(token string, now time.Time, maxLifetime time.Duration) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return fmt.Errorf("%w: token is not a JWT", ErrUnauthenticated)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("%w: token payload: %v", ErrUnauthenticated, err)
	}
	var claims struct {
		Exp *int64 `json:"exp"`
		Iat *int64 `json:"iat"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return fmt.Errorf("%w: token claims: %v", ErrUnauthenticated, err)
	}
	if claims.Exp == nil || claims.Iat == nil {
		return fmt.Errorf("%w: token has no expiry (exp and iat are required)", ErrUnauthenticated)
	}
	exp, iat := time.Unix(*claims.Exp, 0), time.Unix(*claims.Iat, 0)
	if !now.Before(exp) {
		return fmt.Errorf("%w: token expired at %s", ErrUnauthenticated, exp.UTC().Format(time.RFC3339))
	}
	if life := exp.Sub(iat); life > maxLifetime {
		return fmt.Errorf("%w: token lifetime %s exceeds %s", ErrUnauthenticated, life, maxLifetime)
	}
	return nil
}

// CheckCSR parses a PEM "CERTIFICATE REQUEST", checks its signature
// (proof that the requester holds the key) and its key: ECDSA P-256 or
// P-384, or RSA of MinRSABits to MaxRSABits bits. Ed25519 and other keys
// are refused: Envoy's TLS (BoringSSL) certificate support is RSA and
// ECDSA. The CSR's subject, SANs and extensions are not used. Errors wrap
// ErrBadRequest.
func CheckCSR(csrPEM []byte) (*x509.CertificateRequest, error) {
	block, rest := pem.Decode(csrPEM)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("%w: no PEM CERTIFICATE REQUEST", ErrBadRequest)
	}
	if len(strings.TrimSpace(string(rest))) > 0 {
		return nil, fmt.Errorf("%w: data after the CSR", ErrBadRequest)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: CSR: %v", ErrBadRequest, err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("%w: CSR signature: %v", ErrBadRequest, err)
	}
	if err := CheckPublicKey(csr.PublicKey); err != nil {
		return nil, err
	}
	return csr, nil
}

// CheckPublicKey accepts ECDSA P-256 and P-384 keys and RSA keys of
// MinRSABits to MaxRSABits bits; errors wrap ErrBadRequest.
func CheckPublicKey(pub any) error {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return fmt.Errorf("%w: ECDSA curve %s refused (P-256 or P-384)", ErrBadRequest, k.Curve.Params().Name)
		}
		return nil
	case *rsa.PublicKey:
		if n := k.N.BitLen(); n < MinRSABits || n > MaxRSABits {
			return fmt.Errorf("%w: RSA key of %d bits refused (%d to %d)", ErrBadRequest, n, MinRSABits, MaxRSABits)
		}
		return nil
	case ed25519.PublicKey:
		return fmt.Errorf("%w: Ed25519 keys are refused: Envoy accepts RSA and ECDSA certificates", ErrBadRequest)
	default:
		return fmt.Errorf("%w: key type %T refused", ErrBadRequest, pub)
	}
}
