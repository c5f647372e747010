package identity

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
)

// tokenAlgorithms are the JWS algorithms a ServiceAccount token may be
// signed with: the API server signs with its RSA (RS256) or ECDSA (ES256,
// ES384, ES512) service-account key, an external signer may use the other
// asymmetric ones. "none" and the HMAC algorithms are refused.
var tokenAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// CheckToken runs the checks of a ServiceAccount token that need no API
// server, before its TokenReview, so that a malformed, expired, foreign or
// over-long token costs no request to the API server. It reads the JWT's
// claims without verifying its signature (the TokenReview does that) and
// refuses a token that:
//   - is not a compact JWS (RFC 7515) signed with one of tokenAlgorithms;
//   - has no exp or iat, has expired at now (no leeway), or lives longer
//     than maxLifetime (exp - iat);
//   - is not yet valid (nbf) or issued in the future (iat), with the API
//     server's own leeway (go-jose's jwt.DefaultLeeway, one minute: the
//     kube-apiserver's ServiceAccount token validator), so a token the API
//     server accepts is never refused for clock skew;
//   - is not bound to audience (the aud claim);
//   - does not name a ServiceAccount in its sub claim
//     (system:serviceaccount:<namespace>:<name>).
//
// It returns the ServiceAccount the token claims (Pod is empty: only the
// TokenReview says which pod the token is bound to). Errors wrap
// ErrUnauthenticated.
func CheckToken(token, audience string, now time.Time, maxLifetime time.Duration) (ServiceAccount, error) {
	tok, err := josejwt.ParseSigned(token, tokenAlgorithms)
	if err != nil {
		return ServiceAccount{}, fmt.Errorf("%w: token is not a JWT: %v", ErrUnauthenticated, err)
	}
	var c josejwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&c); err != nil {
		return ServiceAccount{}, fmt.Errorf("%w: token claims: %v", ErrUnauthenticated, err)
	}
	if c.Expiry == nil || c.IssuedAt == nil {
		return ServiceAccount{}, fmt.Errorf("%w: token has no expiry (exp and iat are required)", ErrUnauthenticated)
	}
	exp, iat := c.Expiry.Time(), c.IssuedAt.Time()
	if !now.Before(exp) {
		return ServiceAccount{}, fmt.Errorf("%w: token expired at %s", ErrUnauthenticated, exp.UTC().Format(time.RFC3339))
	}
	if life := exp.Sub(iat); life > maxLifetime {
		return ServiceAccount{}, fmt.Errorf("%w: token lifetime %s exceeds %s", ErrUnauthenticated, life, maxLifetime)
	}
	switch err := c.Validate(josejwt.Expected{AnyAudience: josejwt.Audience{audience}, Time: now}); {
	case errors.Is(err, josejwt.ErrInvalidAudience):
		return ServiceAccount{}, fmt.Errorf("%w: token is not valid for audience %q (valid for %q)", ErrUnauthenticated, audience, []string(c.Audience))
	case errors.Is(err, josejwt.ErrNotValidYet):
		return ServiceAccount{}, fmt.Errorf("%w: token is not valid before %s", ErrUnauthenticated, c.NotBefore.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, josejwt.ErrIssuedInTheFuture):
		return ServiceAccount{}, fmt.Errorf("%w: token is issued in the future (%s)", ErrUnauthenticated, iat.UTC().Format(time.RFC3339))
	case err != nil:
		return ServiceAccount{}, fmt.Errorf("%w: token claims: %v", ErrUnauthenticated, err)
	}
	ns, name, ok := serviceAccountUser(c.Subject)
	if !ok {
		return ServiceAccount{}, fmt.Errorf("%w: token subject %q is not a ServiceAccount", ErrUnauthenticated, c.Subject)
	}
	return ServiceAccount{Namespace: ns, Name: name}, nil
}

// serviceAccountUser splits a ServiceAccount's user name (a token's sub
// claim, a TokenReview's user),
// system:serviceaccount:<namespace>:<name>
// (k8s.io/apiserver/pkg/authentication/serviceaccount).
func serviceAccountUser(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, serviceAccountPrefix)
	ns, name, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || ns == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return ns, name, true
}

// fleet returns the SPIFFE ID of sa when sa is the ServiceAccount of one of
// our Envoy fleets (Server.Fleets); else an error wrapping ErrForbidden.
func (s *Server) fleet(sa ServiceAccount) (spiffeid.ID, error) {
	id, err := spiffeid.FromSegments(s.TrustDomain, "ns", sa.Namespace, "sa", sa.Name)
	if err != nil {
		return spiffeid.ID{}, fmt.Errorf("%w: ServiceAccount %s/%s: %v", ErrForbidden, sa.Namespace, sa.Name, err)
	}
	if s.Fleets == nil || !s.Fleets.Known(id) {
		return spiffeid.ID{}, fmt.Errorf("%w: ServiceAccount %s/%s is not the ServiceAccount of an Envoy fleet of this controller", ErrForbidden, sa.Namespace, sa.Name)
	}
	return id, nil
}
