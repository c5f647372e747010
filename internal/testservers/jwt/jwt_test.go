package jwt_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"

	"github.com/xds-controller/xds-controller/internal/testservers/jwt"
)

// TestSignVerifyRotate signs with RSA and EC keys, verifies each token
// against the JWKS the server serves, and checks that rotation publishes
// the new key beside the old one until RemoveOld.
func TestSignVerifyRotate(t *testing.T) {
	rsaKey, ecKey := jwt.NewRSA(t, "rsa-1"), jwt.NewEC(t, "ec-1")
	set := jwt.NewKeySet(rsaKey)
	srv := jwt.StartJWKS(t, set)

	fetch := func() jose.JSONWebKeySet {
		t.Helper()
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var ks jose.JSONWebKeySet
		if err := json.Unmarshal(b, &ks); err != nil || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("JWKS %q (%s): %v", b, resp.Header.Get("Content-Type"), err)
		}
		return ks
	}
	kids := func(ks jose.JSONWebKeySet) (out []string) {
		for _, k := range ks.Keys {
			if !k.IsPublic() {
				t.Errorf("JWKS key %s is not public", k.KeyID)
			}
			out = append(out, k.KeyID)
		}
		return out
	}
	verify := func(ks jose.JSONWebKeySet, token string, alg jose.SignatureAlgorithm) (map[string]any, error) {
		tok, err := josejwt.ParseSigned(token, []jose.SignatureAlgorithm{alg})
		if err != nil {
			return nil, err
		}
		keys := ks.Key(tok.Headers[0].KeyID)
		if len(keys) != 1 {
			return nil, jose.ErrUnsupportedKeyType
		}
		out := map[string]any{}
		return out, tok.Claims(keys[0].Key, &out)
	}

	c := jwt.Valid("https://issuer.test", "api")
	c.Scope = "read write"
	c.Extra = map[string]any{"groups": []string{"dev"}}
	token := rsaKey.Sign(t, c)
	got, err := verify(fetch(), token, jose.RS256)
	if err != nil {
		t.Fatalf("RS256 token does not verify against the served JWKS: %v", err)
	}
	if got["iss"] != "https://issuer.test" || got["aud"] != "api" || got["sub"] != "alice" || got["scope"] != "read write" || got["exp"] == nil {
		t.Errorf("claims = %v", got)
	}

	if _, err := verify(fetch(), ecKey.Sign(t, c), jose.ES256); err == nil {
		t.Errorf("a token of a key not in the JWKS verified")
	}
	set.Rotate(ecKey)
	ks := fetch()
	if k := kids(ks); len(k) != 2 || k[0] != "rsa-1" || k[1] != "ec-1" || set.Current() != ecKey {
		t.Fatalf("after Rotate: kids %v, current %s; want [rsa-1 ec-1], ec-1", k, set.Current().ID)
	}
	for _, tc := range []struct {
		token string
		alg   jose.SignatureAlgorithm
	}{{token, jose.RS256}, {ecKey.Sign(t, c), jose.ES256}} {
		if _, err := verify(ks, tc.token, tc.alg); err != nil {
			t.Errorf("%s token after Rotate: %v", tc.alg, err)
		}
	}
	set.RemoveOld()
	ks = fetch()
	if k := kids(ks); len(k) != 1 || k[0] != "ec-1" {
		t.Fatalf("after RemoveOld: kids %v, want [ec-1]", k)
	}
	if _, err := verify(ks, token, jose.RS256); err == nil {
		t.Errorf("a token of the removed key still verifies")
	}
	if srv.Fetches() != 4 {
		t.Errorf("fetches = %d, want 4", srv.Fetches())
	}

	// Zero claims are left out: a token can lack exp.
	bare := jwt.Claims{Issuer: "i"}.Map()
	if _, ok := bare["exp"]; ok || len(bare) != 1 {
		t.Errorf("Claims{Issuer}.Map() = %v, want only iss", bare)
	}
	if m := (jwt.Claims{Expiry: time.Unix(100, 0)}).Map(); m["exp"] != float64(100) {
		t.Errorf("exp = %v, want 100", m["exp"])
	}
}
