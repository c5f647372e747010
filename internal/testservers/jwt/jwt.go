// Package jwt holds what tests of JWT authentication need on the issuer's
// side: signing keys (RSA and EC) made by the test, tokens signed with
// chosen claims, a key set that rotates (a new key published beside the
// old ones, the old ones removed later), the key set's public JWKS JSON
// (for a Secret or an inline JWKS) and a JWKS server on loopback that
// counts its fetches.
//
// Signing and the JWK encoding are go-jose's (github.com/go-jose/go-jose);
// nothing here is cryptography of our own. It is for tests only: keys are
// made fresh in memory and never stored.
package jwt

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
)

// Key is a private signing key with its JWK key ID and algorithm.
type Key struct {
	// ID is the JWK "kid", written into the header of each token signed.
	ID string
	// Algorithm is the JWS "alg" (RS256 or ES256 for keys made here).
	Algorithm jose.SignatureAlgorithm
	// Private is the private key (*rsa.PrivateKey or *ecdsa.PrivateKey).
	Private crypto.Signer
}

// NewRSA returns a fresh 2048-bit RSA key for RS256 with key ID id. It
// fails t if the system's random source fails.
func NewRSA(t testing.TB, id string) *Key {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("rsa key: %v", err)
	}
	return &Key{ID: id, Algorithm: jose.RS256, Private: k}
}

// NewEC returns a fresh P-256 key for ES256 with key ID id.
func NewEC(t testing.TB, id string) *Key {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("ec key: %v", err)
	}
	return &Key{ID: id, Algorithm: jose.ES256, Private: k}
}

// Public returns the public half as a JWK (kid, alg, use "sig").
func (k *Key) Public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.Private.Public(), KeyID: k.ID, Algorithm: string(k.Algorithm), Use: "sig"}
}

// Claims are the claims of a token. Zero fields are left out of the
// token, so a test can make one that lacks any claim.
type Claims struct {
	Issuer    string    // "iss"
	Subject   string    // "sub"
	Audience  []string  // "aud" (a string when it has one element)
	Expiry    time.Time // "exp"
	NotBefore time.Time // "nbf"
	IssuedAt  time.Time // "iat"
	// Scope is the "scope" claim: scopes separated by spaces (RFC 8693
	// section 4.2), as Envoy's jwt_authn and RBAC read it.
	Scope string
	// Extra holds any other claim; it wins over the fields above.
	Extra map[string]any
}

// Valid returns Claims for issuer and audience that are valid for an
// hour from now (iat and nbf now, exp in an hour), subject "alice".
func Valid(issuer string, audience ...string) Claims {
	now := time.Now()
	return Claims{Issuer: issuer, Subject: "alice", Audience: audience, IssuedAt: now, NotBefore: now, Expiry: now.Add(time.Hour)}
}

// Map returns the claims as the JSON object a token carries.
func (c Claims) Map() map[string]any {
	std := josejwt.Claims{Issuer: c.Issuer, Subject: c.Subject, Audience: c.Audience}
	for _, f := range []struct {
		t   time.Time
		dst **josejwt.NumericDate
	}{{c.Expiry, &std.Expiry}, {c.NotBefore, &std.NotBefore}, {c.IssuedAt, &std.IssuedAt}} {
		if !f.t.IsZero() {
			*f.dst = josejwt.NewNumericDate(f.t)
		}
	}
	raw, _ := json.Marshal(std) // a struct of strings and numbers always marshals
	out := map[string]any{}
	_ = json.Unmarshal(raw, &out)
	if c.Scope != "" {
		out["scope"] = c.Scope
	}
	maps.Copy(out, c.Extra)
	return out
}

// Sign returns the compact JWS of claims signed by k, with "kid" and
// "typ: JWT" in its header. It fails t if signing fails.
func (k *Key) Sign(t testing.TB, claims Claims) string {
	t.Helper()
	s, err := k.SignMap(claims.Map())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SignMap signs any JSON object of claims; errors come from go-jose.
func (k *Key) SignMap(claims map[string]any) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.Algorithm, Key: jose.JSONWebKey{Key: k.Private, KeyID: k.ID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("signer for key %q: %w", k.ID, err)
	}
	return josejwt.Signed(signer).Claims(claims).Serialize()
}

// KeySet is a set of keys published together, one of which (the newest)
// signs. It is safe for concurrent use.
type KeySet struct {
	mu   sync.Mutex
	keys []*Key // oldest first; the last one is current
}

// NewKeySet returns a set of keys; the last one is the current key.
func NewKeySet(keys ...*Key) *KeySet { return &KeySet{keys: slices.Clone(keys)} }

// Current returns the key that signs now, or nil for an empty set.
func (s *KeySet) Current() *Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) == 0 {
		return nil
	}
	return s.keys[len(s.keys)-1]
}

// Keys returns every key of the set, oldest first.
func (s *KeySet) Keys() []*Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.keys)
}

// Rotate makes k the current key. The previous keys stay published, so
// tokens they signed still verify, until RemoveOld.
func (s *KeySet) Rotate(k *Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, k)
}

// RemoveOld unpublishes every key but the current one.
func (s *KeySet) RemoveOld() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) > 1 {
		s.keys = s.keys[len(s.keys)-1:]
	}
}

// JWKS returns the public keys as a JWK Set document (RFC 7517 section
// 5: {"keys": [...]}), oldest first: what a JWKS URL serves and what a
// Secret holds.
func (s *KeySet) JWKS() []byte {
	var set jose.JSONWebKeySet
	for _, k := range s.Keys() {
		set.Keys = append(set.Keys, k.Public())
	}
	out, err := json.Marshal(set)
	if err != nil { // only an unsupported key type, which no constructor here makes
		panic(fmt.Sprintf("jwks: %v", err))
	}
	return out
}
