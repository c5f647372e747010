package testservers_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/xds-controller/xds-controller/internal/testservers/jwt"
	"github.com/xds-controller/xds-controller/internal/testservers/oidc"
	"github.com/xds-controller/xds-controller/internal/xdstest"
)

// jwtBootstrap is a static Envoy bootstrap with one listener whose
// jwt_authn filter has three providers:
//
//   - remote: issuer https://issuer.test, audience api, JWKS fetched from
//     the test's JWKS server (cluster jwks) and cached 1s; the sub claim
//     copied to x-jwt-sub, the payload (scope split into a list) put in
//     the dynamic metadata for RBAC; the token removed (forward false);
//
//   - local: issuer https://local.test, audience api, JWKS inline, token
//     also read from the access_token query parameter;
//
//   - oidc: the OpenID provider's issuer, audience web (its client), JWKS
//     from the provider's jwks_uri (cluster oidc), cached 1s.
//
//   - tls, tls_wrong_ca, tls_wrong_name: like remote, but the JWKS is
//     fetched over HTTPS from the TLS JWKS server, verified with its CA
//     and name (jwks.test), with another CA, or with its CA but the
//     name other.test.
//
// Rules: /remote and /scoped need remote, /local needs local, /oidc needs
// oidc; any other path needs nothing. An RBAC filter after it allows
// /scoped only when the token's scope list has "read".
const jwtBootstrap = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: {{adminPort}}}}
static_resources:
  listeners:
  - name: jwt
    address: {socket_address: {address: 127.0.0.1, port_value: {{listenerPort}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: jwt
          route_config: {virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: /}, route: {cluster: backend}}]}]}
          http_filters:
          - name: envoy.filters.http.jwt_authn
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication
              providers:
                remote:
                  issuer: https://issuer.test
                  audiences: [api]
                  remote_jwks:
                    http_uri: {uri: "{{jwksURL}}", cluster: jwks, timeout: 1s}
                    cache_duration: 1s
                  claim_to_headers: [{header_name: x-jwt-sub, claim_name: sub}]
                  payload_in_metadata: remote_payload
                  normalize_payload_in_metadata: {space_delimited_claims: [scope]}
                local:
                  issuer: https://local.test
                  audiences: [api]
                  local_jwks: {inline_string: '{{localJWKS}}'}
                  from_headers: [{name: Authorization, value_prefix: "Bearer "}]
                  from_params: [access_token]
                oidc:
                  issuer: {{oidcIssuer}}
                  audiences: [web]
                  remote_jwks:
                    http_uri: {uri: "{{oidcJWKS}}", cluster: oidc, timeout: 1s}
                    cache_duration: 1s
                  claim_to_headers: [{header_name: x-jwt-sub, claim_name: sub}]
                tls:
                  issuer: https://issuer.test
                  audiences: [api]
                  remote_jwks:
                    http_uri: {uri: "{{jwksTLSURL}}", cluster: jwks_tls, timeout: 1s}
                    cache_duration: 1s
                tls_wrong_ca:
                  issuer: https://issuer.test
                  audiences: [api]
                  remote_jwks:
                    http_uri: {uri: "{{jwksTLSURL}}", cluster: jwks_tls_wrong_ca, timeout: 1s}
                    cache_duration: 1s
                tls_wrong_name:
                  issuer: https://issuer.test
                  audiences: [api]
                  remote_jwks:
                    http_uri: {uri: "{{jwksTLSURL}}", cluster: jwks_tls_wrong_name, timeout: 1s}
                    cache_duration: 1s
              rules:
              - {match: {prefix: /remote}, requires: {provider_name: remote}}
              - {match: {prefix: /scoped}, requires: {provider_name: remote}}
              - {match: {prefix: /local}, requires: {provider_name: local}}
              - {match: {prefix: /oidc}, requires: {provider_name: oidc}}
              - {match: {prefix: /tls/}, requires: {provider_name: tls}}
              - {match: {prefix: /tls-wrong-ca/}, requires: {provider_name: tls_wrong_ca}}
              - {match: {prefix: /tls-wrong-name/}, requires: {provider_name: tls_wrong_name}}
          - name: envoy.filters.http.rbac
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC
              rules:
                action: ALLOW
                policies:
                  not-scoped:
                    permissions: [{not_rule: {url_path: {path: {prefix: /scoped}}}}]
                    principals: [{any: true}]
                  scope-read:
                    permissions: [{url_path: {path: {prefix: /scoped}}}]
                    principals:
                    - sourced_metadata:
                        metadata_source: DYNAMIC
                        metadata_matcher:
                          filter: envoy.filters.http.jwt_authn
                          path: [{key: remote_payload}, {key: scope}]
                          value: {list_match: {one_of: {string_match: {exact: read}}}}
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
  clusters:
{{clusters}}
`

// staticCluster is a plain HTTP/1 STATIC cluster to addr.
func staticCluster(name, addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf(`  - name: %s
    type: STATIC
    connect_timeout: 0.25s
    load_assignment:
      cluster_name: %s
      endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: %s, port_value: %s}}}}]}]
`, name, name, host, port)
}

// tlsCluster is a STATIC cluster to addr over TLS: SNI sni (none when
// empty), the server certificate verified against caPEM and its SAN of
// type sanType (DNS, IP_ADDRESS) against san.
func tlsCluster(name, addr, sni string, caPEM []byte, sanType, san string) string {
	if sni != "" {
		sni = "\n        sni: " + sni
	}
	return staticCluster(name, addr) + fmt.Sprintf(`    transport_socket:
      name: envoy.transport_sockets.tls
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext%s
        common_tls_context:
          validation_context:
            trusted_ca: {inline_string: %q}
            match_typed_subject_alt_names: [{san_type: %s, matcher: {exact: %s}}]
`, sni, caPEM, sanType, san)
}

// fill replaces each {{key}} of tmpl; a placeholder left fails t.
func fill(t *testing.T, tmpl string, values map[string]string) string {
	t.Helper()
	for k, v := range values {
		tmpl = strings.ReplaceAll(tmpl, "{{"+k+"}}", v)
	}
	if strings.Contains(tmpl, "{{") {
		t.Fatalf("bootstrap has unfilled placeholders:\n%s", tmpl)
	}
	return tmpl
}

func port(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }

// echoBackend answers 200 "backend", echoing the request's Authorization
// and x-jwt-* headers back as "echo-" + name.
func echoBackend(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range r.Header {
			if k = strings.ToLower(k); k == "authorization" || strings.HasPrefix(k, "x-jwt-") {
				w.Header().Set("echo-"+k, strings.Join(v, ","))
			}
		}
		_, _ = io.WriteString(w, "backend")
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// eventually polls get every 100ms until it returns want or 10s pass; it
// returns the last status and how many polls it took.
func eventually(get func() int, want int) (last, polls int) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		last, polls = get(), polls+1
		if last == want || time.Now().After(deadline) {
			return last, polls
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestJWTBehindEnvoy proves the jwt and oidc test servers against Envoy's
// jwt_authn filter: a valid token passes (its sub copied upstream, the
// token itself removed); no token, expired, not yet valid, wrong issuer,
// an unknown key and a forged signature under a known kid get 401, a
// wrong or missing audience 403; a scope rule (RBAC on the payload
// metadata) gives 403 without the scope; after a rotation the new key's tokens pass once
// Envoy refetches the JWKS, the old key's until it is removed; an access
// token from a real login at the OpenID provider passes, before and after
// the provider rotates its key; a JWKS over HTTPS is fetched only
// through a cluster that verifies the server's CA and name.
func TestJWTBehindEnvoy(t *testing.T) {
	ctx := context.Background()
	remoteKey, localKey := jwt.NewRSA(t, "remote-1"), jwt.NewEC(t, "local-1")
	remoteSet := jwt.NewKeySet(remoteKey)
	jwks := jwt.StartJWKS(t, remoteSet)
	jwksTLS := jwt.StartJWKSTLS(t, remoteSet, "jwks.test")
	otherCA, _ := xdstest.Cert("jwks.test")
	op := oidc.Start(t)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.URL.Query().Get("code")) }))
	t.Cleanup(cb.Close)
	op.AddClient(oidc.Client{ID: "web", Secret: "s3cret", RedirectURIs: []string{cb.URL}})
	op.AddUser(oidc.User{Username: "alice", Password: "wonderland"})

	admin, listener := freeAddr(t), freeAddr(t)
	startEnvoy(t, fill(t, jwtBootstrap, map[string]string{
		"adminPort": port(admin), "listenerPort": port(listener),
		"jwksURL": jwks.URL, "localJWKS": string(jwt.NewKeySet(localKey).JWKS()),
		"oidcIssuer": op.Issuer, "oidcJWKS": op.Issuer + "/keys",
		"jwksTLSURL": jwksTLS.URL,
		"clusters": staticCluster("backend", echoBackend(t)) + staticCluster("jwks", jwks.Addr) + staticCluster("oidc", op.Addr) +
			tlsCluster("jwks_tls", jwksTLS.Addr, "jwks.test", jwksTLS.CA, "DNS", "jwks.test") +
			tlsCluster("jwks_tls_wrong_ca", jwksTLS.Addr, "jwks.test", otherCA, "DNS", "jwks.test") +
			tlsCluster("jwks_tls_wrong_name", jwksTLS.Addr, "jwks.test", jwksTLS.CA, "DNS", "other.test"),
	}), admin)
	base := "http://" + listener

	now := time.Now()
	valid := jwt.Valid("https://issuer.test", "api")
	with := func(f func(*jwt.Claims)) jwt.Claims { c := valid; f(&c); return c }
	good := remoteKey.Sign(t, valid)

	r := do(t, http.MethodGet, base+"/remote", "", bearer(good))
	if r.status != http.StatusOK || r.body != "backend" || r.headers.Get("echo-x-jwt-sub") != "alice" || r.headers.Get("echo-authorization") != "" {
		t.Errorf("valid token: %d %q, upstream x-jwt-sub %q authorization %q; want 200, alice, the token removed",
			r.status, r.body, r.headers.Get("echo-x-jwt-sub"), r.headers.Get("echo-authorization"))
	}
	if r := do(t, http.MethodGet, base+"/open", "", nil); r.status != http.StatusOK {
		t.Errorf("path without a rule: %d, want 200", r.status)
	}

	stranger := jwt.NewRSA(t, "stranger")
	forger := jwt.NewRSA(t, remoteKey.ID) // the known kid, another key
	// jwt_authn answers 401 for every failure but the audience, which is
	// 403 (Envoy maps JwtAudienceNotAllowed to Forbidden).
	for _, tc := range []struct {
		name, token string
		want        int
		reason      string // Envoy's response body
	}{
		{"no token", "", 401, "Jwt is missing"},
		{"expired", remoteKey.Sign(t, with(func(c *jwt.Claims) {
			c.Expiry = now.Add(-2 * time.Minute)
			c.IssuedAt = now.Add(-time.Hour)
			c.NotBefore = c.IssuedAt
		})), 401, "Jwt is expired"},
		{"not yet valid", remoteKey.Sign(t, with(func(c *jwt.Claims) { c.NotBefore = now.Add(10 * time.Minute) })), 401, "Jwt not yet valid"},
		{"wrong issuer", remoteKey.Sign(t, with(func(c *jwt.Claims) { c.Issuer = "https://evil.test" })), 401, "Jwt issuer is not configured"},
		{"wrong audience", remoteKey.Sign(t, with(func(c *jwt.Claims) { c.Audience = []string{"other"} })), 403, "Audiences in Jwt are not allowed"},
		{"no audience", remoteKey.Sign(t, with(func(c *jwt.Claims) { c.Audience = nil })), 403, "Audiences in Jwt are not allowed"},
		{"unknown key", stranger.Sign(t, valid), 401, "Jwks doesn't have key to match kid or alg from Jwt"},
		{"forged signature under a known kid", forger.Sign(t, valid), 401, "Jwt verification fails"},
		{"local provider's token", localKey.Sign(t, with(func(c *jwt.Claims) { c.Issuer = "https://local.test" })), 401, "Jwt issuer is not configured"},
		{"garbage", "not.a.jwt", 401, "Jwt header is an invalid JSON"},
	} {
		h := bearer(tc.token)
		if tc.token == "" {
			h = nil
		}
		if r := do(t, http.MethodGet, base+"/remote", "", h); r.status != tc.want || r.body != tc.reason || !strings.HasPrefix(r.headers.Get("www-authenticate"), "Bearer realm=") {
			t.Errorf("%s: %d %q www-authenticate %q, want %d %q and a Bearer challenge", tc.name, r.status, r.body, r.headers.Get("www-authenticate"), tc.want, tc.reason)
		}
	}

	t.Run("JWKS over TLS", func(t *testing.T) {
		for _, tc := range []struct {
			path, want string
		}{{"/tls/", "backend"}, {"/tls-wrong-ca/", "Jwks remote fetch is failed"}, {"/tls-wrong-name/", "Jwks remote fetch is failed"}} {
			want := http.StatusOK
			if tc.want != "backend" {
				want = http.StatusUnauthorized
			}
			if r := do(t, http.MethodGet, base+tc.path, "", bearer(good)); r.status != want || r.body != tc.want {
				t.Errorf("%s: %d %q, want %d %q", tc.path, r.status, r.body, want, tc.want)
			}
		}
		if jwksTLS.Fetches() != 1 {
			t.Errorf("the TLS JWKS server served %d fetches, want 1 (the verified cluster's; the others fail the handshake)", jwksTLS.Fetches())
		}
	})

	t.Run("scope", func(t *testing.T) {
		for scope, want := range map[string]int{"": http.StatusForbidden, "write": http.StatusForbidden, "readonly": http.StatusForbidden, "write read": http.StatusOK} {
			tok := remoteKey.Sign(t, with(func(c *jwt.Claims) { c.Scope = scope }))
			if r := do(t, http.MethodGet, base+"/scoped", "", bearer(tok)); r.status != want {
				t.Errorf("scope %q: %d %q, want %d", scope, r.status, r.body, want)
			}
		}
	})

	t.Run("local JWKS", func(t *testing.T) {
		lc := with(func(c *jwt.Claims) { c.Issuer = "https://local.test" })
		tok := localKey.Sign(t, lc)
		if r := do(t, http.MethodGet, base+"/local", "", bearer(tok)); r.status != http.StatusOK {
			t.Errorf("ES256 token, inline JWKS, header: %d %q, want 200", r.status, r.body)
		}
		if r := do(t, http.MethodGet, base+"/local?access_token="+tok, "", nil); r.status != http.StatusOK {
			t.Errorf("ES256 token, query parameter: %d %q, want 200", r.status, r.body)
		}
		if r := do(t, http.MethodGet, base+"/local", "", bearer(remoteKey.Sign(t, lc))); r.status != http.StatusUnauthorized {
			t.Errorf("token of a key not in the inline JWKS: %d, want 401", r.status)
		}
	})

	t.Run("rotation", func(t *testing.T) {
		next := jwt.NewEC(t, "remote-2")
		newTok := next.Sign(t, valid)
		get := func(tok string) func() int {
			return func() int { return do(t, http.MethodGet, base+"/remote", "", bearer(tok)).status }
		}
		before := jwks.Fetches()
		if s := get(newTok)(); s != http.StatusUnauthorized {
			t.Errorf("token of a key not yet published: %d, want 401", s)
		}
		remoteSet.Rotate(next)
		s, polls := eventually(get(newTok), http.StatusOK)
		if s != http.StatusOK {
			t.Fatalf("new key's token after Rotate: %d after %d polls, want 200 once Envoy refetches", s, polls)
		}
		t.Logf("new key's token passed after %d polls of 100ms; JWKS fetched %d times since", polls, jwks.Fetches()-before)
		if s := get(good)(); s != http.StatusOK {
			t.Errorf("old key's token while the old key is still published: %d, want 200", s)
		}
		remoteSet.RemoveOld()
		s, polls = eventually(get(good), http.StatusUnauthorized)
		if s != http.StatusUnauthorized {
			t.Fatalf("old key's token after RemoveOld: %d after %d polls, want 401", s, polls)
		}
		t.Logf("old key's token refused after %d polls of 100ms", polls)
		if s := get(newTok)(); s != http.StatusOK {
			t.Errorf("new key's token after RemoveOld: %d, want 200", s)
		}
	})

	t.Run("oidc access token", func(t *testing.T) {
		conf := oauth2.Config{ClientID: "web", ClientSecret: "s3cret", RedirectURL: cb.URL, Scopes: []string{"openid"},
			Endpoint: oauth2.Endpoint{AuthURL: op.Issuer + "/authorize", TokenURL: op.Issuer + oidc.TokenPath, AuthStyle: oauth2.AuthStyleInHeader}}
		login := func() string {
			jar, _ := cookiejar.New(nil)
			_, code, err := oidc.LogIn(&http.Client{Jar: jar}, conf.AuthCodeURL("st"), "alice", "wonderland")
			if err != nil {
				t.Fatal(err)
			}
			tok, err := conf.Exchange(ctx, code)
			if err != nil {
				t.Fatal(err)
			}
			return tok.AccessToken
		}
		first := login()
		r := do(t, http.MethodGet, base+"/oidc", "", bearer(first))
		if r.status != http.StatusOK || r.headers.Get("echo-x-jwt-sub") != "alice" {
			t.Errorf("access token from a real login: %d, sub %q; want 200, alice", r.status, r.headers.Get("echo-x-jwt-sub"))
		}
		op.Rotate(t)
		second := login()
		s, polls := eventually(func() int { return do(t, http.MethodGet, base+"/oidc", "", bearer(second)).status }, http.StatusOK)
		if s != http.StatusOK {
			t.Errorf("access token of the provider's rotated key: %d after %d polls, want 200", s, polls)
		}
		if r := do(t, http.MethodGet, base+"/oidc", "", bearer(first)); r.status != http.StatusOK {
			t.Errorf("access token of the provider's old key, still published: %d, want 200", r.status)
		}
		op.RemoveOld()
		if s, _ := eventually(func() int { return do(t, http.MethodGet, base+"/oidc", "", bearer(first)).status }, http.StatusUnauthorized); s != http.StatusUnauthorized {
			t.Errorf("access token of the removed key: %d, want 401", s)
		}
	})
}
