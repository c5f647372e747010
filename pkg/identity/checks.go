// Package identity is xds-controller's identity service: it turns a
// proxy's certificate signing request (CSR) and its projected
// ServiceAccount token into a short-lived X.509 SVID for the xDS channel.
//
// The rules, in the order the service applies them:
//
//  0. One client (source IP address, an IPv6 /64) gets at most
//     DefaultClientBurst requests at once and DefaultClientRate after that
//     (Server.Limiter); more are refused with 429 before any other work.
//  1. The token's claims are checked locally, without its signature
//     (CheckToken): a JWT for our audience (DefaultAudience), with exp and
//     iat, not expired, not yet valid or issued in the future, valid for at
//     most MaxTokenLifetime, naming a ServiceAccount; and that
//     ServiceAccount must be one of our fleets' (rule 3). A token that
//     fails costs the API server nothing.
//  2. The token is checked with a Kubernetes TokenReview for our audience:
//     authenticated (its signature, and its ServiceAccount and pod still
//     exist), audience in the result, a ServiceAccount user, bound to a pod
//     (a projected token, not a long-lived Secret token) (CheckReview).
//  3. The reviewed ServiceAccount must be one of our Envoy fleets'
//     (Fleets.Known): the shared fleet envoy-<class> of a GatewayClass of
//     ours in the controller's namespace, or <gateway>-<class> of a
//     Dedicated Gateway of ours in the Gateway's namespace.
//  4. The CSR must carry a valid self-signature and an accepted key
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
	ns, name, ok := serviceAccountUser(st.User.Username)
	if !ok {
		return ServiceAccount{}, fmt.Errorf("%w: %q is not a ServiceAccount", ErrUnauthenticated, st.User.Username)
	}
	if len(st.User.Extra[podNameExtra]) == 0 {
		return ServiceAccount{}, fmt.Errorf("%w: the token of ServiceAccount %s/%s is not bound to a pod (use a projected token)", ErrUnauthenticated, ns, name)
	}
	return ServiceAccount{Namespace: ns, Name: name, Pod: st.User.Extra[podNameExtra][0]}, nil
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
