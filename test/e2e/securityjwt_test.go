package e2e

// SecurityPolicy jwt and authorization through the real controller and
// Envoy, with tokens the test signs (internal/testservers/jwt):
//   - jwt.example.com: providers local (JWKS in Secret jwks, token from
//     the Authorization header, header x-token, query parameter
//     access_token or cookie jwt; sub and org.team copied to x-jwt-sub
//     and x-jwt-team; the token removed) and remote (JWKS fetched by
//     Envoy over HTTPS from the test's JWKS server, jwks.jwt.test, which
//     only the test's DNS server resolves, verified with the CA of
//     ConfigMap jwks-ca, cached 1s);
//   - forward.example.com: provider local with forwardToken;
//   - authz.example.com: provider idp (JWKS in ConfigMap idp-jwks),
//     requiredClaims org=acme, and ordered rules, default Deny: Deny
//     DELETE; Allow tokens whose roles hold admin; Allow GET of /read/...
//     with x-env: prod; Allow clients of 10.0.0.0/8 (never reached: the
//     standalone connection manager trusts no X-Forwarded-For hop); Allow
//     127.0.0.1/32 on /local;
//   - open.example.com: authorization alone, default Allow, Deny /secret;
//   - broken.example.com: a policy whose JWKS Secret does not exist.

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xds-controller/xds-controller/internal/testservers/jwt"
)

const jwtPoliciesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: jwt, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [jwt.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: forward, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [forward.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: authz, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [authz.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: open, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [open.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: broken, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [broken.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: down, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [down.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
---
apiVersion: v1
kind: Secret
metadata: {name: jwks, namespace: default}
data: {jwks.json: {{.LocalJWKS}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: idp-jwks, namespace: default}
binaryData: {jwks.json: {{.IdpJWKS}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: jwks-ca, namespace: default}
data:
  ca.crt: {{printf "%q" .CA}}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: jwt, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {{.JWTRoute}}}]
  jwt:
    providers:
    - name: local
      issuer: https://local.test
      audiences: [api]
      localJWKS: {kind: Secret, name: jwks}
      extractFrom:
        headers: [{name: Authorization, valuePrefix: "Bearer "}, {name: x-token}]
        queryParameters: [access_token]
        cookies: [jwt]
      claimToHeaders: [{header: x-jwt-sub, claim: sub}, {header: x-jwt-team, claim: org.team}]
    - name: remote
      issuer: https://remote.test
      audiences: [api]
      remoteJWKS:
        uri: {{.RemoteURL}}
        cacheDuration: 1s
        caCertificateRefs: [{group: "", kind: ConfigMap, name: jwks-ca}]
      claimToHeaders: [{header: x-jwt-sub, claim: sub}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: forward, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: forward}]
  jwt:
    providers:
    - {name: local, issuer: https://local.test, localJWKS: {kind: Secret, name: jwks}, forwardToken: true}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: authz, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: authz}]
  jwt:
    providers:
    - name: idp
      issuer: https://idp.test
      localJWKS: {kind: ConfigMap, name: idp-jwks}
{{if not .Removed}}      requiredClaims: [{name: org, values: [acme]}]
{{end}}  authorization:
    defaultAction: {{.AuthzDefault}}
    rules:
{{if not .Removed}}    - {name: no-delete, action: Deny, methods: [DELETE]}
{{end}}    - {name: admins, action: Allow, jwt: {provider: idp, claims: [{name: roles, values: [admin]}]}}
{{if .Removed}}    - {name: no-delete, action: Deny, methods: [DELETE]}
{{end}}
    - name: readers
      action: Allow
      methods: [GET]
      paths: [{type: PathPrefix, value: /read}]
      headers: [{name: x-env, value: prod}]
    - {name: office, action: Allow, clientCIDRs: [10.0.0.0/8]}
    - {name: local, action: Allow, clientCIDRs: [127.0.0.1/32], paths: [{type: Exact, value: /local}]}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: open, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: open}]
  authorization:
    defaultAction: Allow
    rules:
    - {name: secret, action: {{.SecretAction}}, paths: [{type: PathPrefix, value: /secret}]}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: down, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: down}]
  jwt:
    providers:
    - name: remote
      issuer: https://remote.test
      remoteJWKS: {uri: "https://down.jwt.test:{{.DownPort}}/jwks.json", caCertificateRefs: [{group: "", kind: ConfigMap, name: jwks-ca}]}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: broken, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: broken}]
  jwt:
    providers: [{name: p, localJWKS: {kind: Secret, name: nowhere}}]
`

// jwtFixture serves jwtPoliciesYAML; app echoes what it got: path and
// query, x-jwt-sub, x-jwt-team, whether Authorization, x-token or a jwt
// cookie came, and counts its requests.
type jwtFixture struct {
	*fixture
	hits       atomic.Int64
	client     *http.Client
	local, idp *jwt.KeySet
	remote     *jwt.KeySet
	jwks       *jwt.Server
	remoteURL  string
	// vals are the template's values (write renders them).
	vals map[string]any
}

// write (re)renders jwtPoliciesYAML with f.vals. With
// XDS_E2E_PROTECTION_REMOVED=1 in the environment, policy jwt targets a
// route that does not exist, policy authz has no requiredClaims, its
// Deny rule comes after the Allow rule it must precede and its default
// action allows, and policy open's /secret rule allows: the tests'
// protection removed, to show that they fail then.
func (f *jwtFixture) write(t *testing.T) {
	removed := os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1"
	f.vals["JWTRoute"], f.vals["AuthzDefault"], f.vals["SecretAction"], f.vals["Removed"] = "jwt", "Deny", "Deny", removed
	if removed {
		f.vals["JWTRoute"], f.vals["AuthzDefault"], f.vals["SecretAction"] = "elsewhere", "Allow", "Allow"
	}
	f.vals["LocalJWKS"] = base64.StdEncoding.EncodeToString(f.local.JWKS())
	f.vals["IdpJWKS"] = base64.StdEncoding.EncodeToString(f.idp.JWKS())
	render(t, filepath.Join(f.dir, "security.yaml"), jwtPoliciesYAML, f.vals)
}

func startJWT(t *testing.T) *jwtFixture {
	resolver := startDNS(t, "jwt.test.")
	f := &jwtFixture{client: &http.Client{Timeout: 20 * time.Second},
		local: jwt.NewKeySet(jwt.NewEC(t, "local-1")), idp: jwt.NewKeySet(jwt.NewRSA(t, "idp-1")), remote: jwt.NewKeySet(jwt.NewRSA(t, "remote-1"))}
	f.jwks = jwt.StartJWKSTLS(t, f.remote, "jwks.jwt.test")
	_, port, _ := net.SplitHostPort(f.jwks.Addr)
	f.remoteURL = "https://jwks.jwt.test:" + port + jwt.JWKSPath
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		c, _ := r.Cookie("jwt")
		fmt.Fprintf(w, "app %s?%s sub=%s team=%s authorization=%t x-token=%t cookie=%t",
			r.URL.Path, r.URL.RawQuery, strings.Join(r.Header.Values("x-jwt-sub"), ","), strings.Join(r.Header.Values("x-jwt-team"), ","),
			r.Header.Get("authorization") != "", r.Header.Get("x-token") != "", c != nil)
	}), ReadHeaderTimeout: 5 * time.Second}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Serve(lis) }()
	t.Cleanup(func() { _ = app.Close() })
	f.fixture = startWith(t, func(fx *fixture) {
		render(t, filepath.Join(fx.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": fx.gwPort,
			"Backends":    []gatewayBackend{{Name: "app", Port: lis.Addr().(*net.TCPAddr).Port}},
		})
		f.fixture = fx
		f.vals = map[string]any{"RemoteURL": f.remoteURL, "CA": string(f.jwks.CA), "DownPort": freePort(t)}
		f.write(t)
	}, func(fx *fixture) { fx.args = append(fx.args, "--dns-resolvers", resolver.addr) })
	good := f.localToken(t, nil)
	took := poll(t, "policies served", func() error {
		if r := f.do("jwt.example.com", "/", "Authorization", "Bearer "+good); r.status != 200 {
			return fmt.Errorf("jwt.example.com: %d %q", r.status, r.body)
		}
		if r := f.do("open.example.com", "/"); r.status != 200 {
			return fmt.Errorf("open.example.com: %d %q", r.status, r.body)
		}
		return nil
	})
	t.Logf("policies served after %s", took.Round(time.Millisecond))
	return f
}

// localToken is a token of provider local (issuer https://local.test,
// audience api, sub alice, org.team core), edited by edit.
func (f *jwtFixture) localToken(t *testing.T, edit func(*jwt.Claims)) string {
	c := jwt.Valid("https://local.test", "api")
	c.Extra = map[string]any{"org": map[string]any{"team": "core"}}
	if edit != nil {
		edit(&c)
	}
	return f.local.Current().Sign(t, c)
}

// idpToken is a token of provider idp (issuer https://idp.test, sub bob,
// org acme) with the roles given.
func (f *jwtFixture) idpToken(t *testing.T, org string, roles ...string) string {
	c := jwt.Valid("https://idp.test")
	c.Subject = "bob"
	c.Extra = map[string]any{"roles": roles}
	if org != "" {
		c.Extra["org"] = org
	}
	return f.idp.Current().Sign(t, c)
}

// do sends a request (method "GET" unless the first header pair is
// ":method", m) for host and path through Envoy with the headers given
// (name, value pairs; "cookie" sets a cookie jwt=value).
func (f *jwtFixture) do(host, path string, headers ...string) reply {
	method := http.MethodGet
	if len(headers) >= 2 && headers[0] == ":method" {
		method, headers = headers[1], headers[2:]
	}
	req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", f.gwPort, path), nil)
	req.Host = host
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "cookie" {
			req.AddCookie(&http.Cookie{Name: "jwt", Value: headers[i+1]})
			continue
		}
		req.Header.Add(headers[i], headers[i+1])
	}
	return exchange(f.client, req)
}

// refused asserts that r has status want and never reached app.
func (f *jwtFixture) refused(t *testing.T, what string, want int, before int64, r reply) {
	t.Helper()
	if r.status != want {
		t.Errorf("%s: got %d %q; want %d", what, r.status, r.body, want)
	}
	if n := f.hits.Load() - before; n != 0 {
		t.Errorf("%s: app got %d requests", what, n)
	}
}

func TestSecurityPolicyJWT(t *testing.T) {
	f := startJWT(t)
	now := time.Now()
	t.Run("valid token", func(t *testing.T) {
		r := f.do("jwt.example.com", "/a", "Authorization", "Bearer "+f.localToken(t, nil))
		if r.status != 200 || r.body != "app /a? sub=alice team=core authorization=false x-token=false cookie=false" {
			t.Fatalf("got %d %q; want 200, sub alice, team core, the token removed", r.status, r.body)
		}
		t.Logf("valid token: %d %q", r.status, r.body)
	})
	t.Run("refused", func(t *testing.T) {
		stranger := jwt.NewEC(t, "local-1") // the known kid, another key
		for _, tc := range []struct {
			name, token string
			want        int
		}{
			{"no token", "", 401},
			{"expired", f.localToken(t, func(c *jwt.Claims) {
				c.Expiry, c.IssuedAt, c.NotBefore = now.Add(-2*time.Minute), now.Add(-time.Hour), now.Add(-time.Hour)
			}), 401},
			{"wrong issuer", f.localToken(t, func(c *jwt.Claims) { c.Issuer = "https://evil.test" }), 401},
			{"wrong audience", f.localToken(t, func(c *jwt.Claims) { c.Audience = []string{"other"} }), 403},
			{"another key", stranger.Sign(t, jwt.Valid("https://local.test", "api")), 401},
			{"garbage", "not.a.jwt", 401},
		} {
			before := f.hits.Load()
			var h []string
			if tc.token != "" {
				h = []string{"Authorization", "Bearer " + tc.token}
			}
			r := f.do("jwt.example.com", "/a", h...)
			f.refused(t, tc.name, tc.want, before, r)
			t.Logf("%s: %d %q", tc.name, r.status, r.body)
		}
	})
	t.Run("token sources", func(t *testing.T) {
		tok := f.localToken(t, nil)
		for _, tc := range []struct {
			name, path string
			headers    []string
			want       string
		}{
			{"header x-token", "/h", []string{"x-token", tok}, "app /h? sub=alice team=core authorization=false x-token=false cookie=false"},
			{"query parameter", "/q?access_token=" + tok + "&page=2", nil, "app /q?page=2 sub=alice team=core authorization=false x-token=false cookie=false"},
			// Envoy cannot remove a token from a cookie (JwtProvider
			// forward's caveat): the cookie reaches the backend.
			{"cookie", "/c", []string{"cookie", tok}, "app /c? sub=alice team=core authorization=false x-token=false cookie=true"},
		} {
			if r := f.do("jwt.example.com", tc.path, tc.headers...); r.status != 200 || r.body != tc.want {
				t.Errorf("%s: got %d %q; want 200 %q", tc.name, r.status, r.body, tc.want)
			}
		}
	})
	t.Run("spoofed claim headers are replaced", func(t *testing.T) {
		r := f.do("jwt.example.com", "/s", "Authorization", "Bearer "+f.localToken(t, nil), "x-jwt-sub", "mallory", "x-jwt-team", "evil")
		if r.status != 200 || !strings.Contains(r.body, " sub=alice team=core ") {
			t.Errorf("with claims: got %d %q; want sub=alice team=core only", r.status, r.body)
		}
		noTeam := f.localToken(t, func(c *jwt.Claims) { c.Extra = nil })
		r = f.do("jwt.example.com", "/s", "Authorization", "Bearer "+noTeam, "x-jwt-team", "evil")
		if r.status != 200 || !strings.Contains(r.body, " sub=alice team= ") {
			t.Errorf("token without org.team, x-jwt-team sent: got %d %q; want team empty (the client's removed)", r.status, r.body)
		}
		t.Logf("spoofed x-jwt-team with a token lacking the claim: %d %q", r.status, r.body)
	})
	t.Run("forwarded", func(t *testing.T) {
		r := f.do("forward.example.com", "/f", "Authorization", "Bearer "+f.localToken(t, nil))
		if r.status != 200 || !strings.Contains(r.body, " authorization=true ") {
			t.Errorf("forwardToken: got %d %q; want the Authorization header forwarded", r.status, r.body)
		}
	})
	t.Run("remote JWKS", func(t *testing.T) {
		c := jwt.Valid("https://remote.test", "api")
		old := f.remote.Current().Sign(t, c)
		took := poll(t, "remote token", func() error {
			if r := f.do("jwt.example.com", "/r", "Authorization", "Bearer "+old); r.status != 200 || !strings.Contains(r.body, " sub=alice ") {
				return fmt.Errorf("%d %q", r.status, r.body)
			}
			return nil
		})
		t.Logf("remote provider's token passed after %s; JWKS fetched %d times over TLS", took.Round(time.Millisecond), f.jwks.Fetches())
		next := jwt.NewEC(t, "remote-2")
		newTok := next.Sign(t, c)
		before := f.hits.Load()
		f.refused(t, "token of a key not yet published", 401, before, f.do("jwt.example.com", "/r", "Authorization", "Bearer "+newTok))
		f.remote.Rotate(next)
		f.remote.RemoveOld()
		took = poll(t, "rotated remote key", func() error {
			if r := f.do("jwt.example.com", "/r", "Authorization", "Bearer "+newTok); r.status != 200 {
				return fmt.Errorf("%d %q", r.status, r.body)
			}
			return nil
		})
		before = f.hits.Load()
		f.refused(t, "old remote key after rotation", 401, before, f.do("jwt.example.com", "/r", "Authorization", "Bearer "+old))
		t.Logf("rotated at the URL: the new key's token passed after %s (cacheDuration 1s), the removed key's is refused", took.Round(time.Millisecond))
	})
	t.Run("JWKS server down", func(t *testing.T) {
		tok := f.remote.Current().Sign(t, jwt.Valid("https://remote.test", "api"))
		if r := f.do("jwt.example.com", "/d", "Authorization", "Bearer "+tok); r.status != 200 {
			t.Fatalf("before: %d %q", r.status, r.body)
		}
		fetches := f.jwks.Fetches()
		f.jwks.Stop()
		time.Sleep(3 * time.Second) // three cache durations
		for i := range 5 {
			// A token never seen before: not one of jwt_authn's cache of
			// verified tokens.
			c := jwt.Valid("https://remote.test", "api")
			c.Subject = fmt.Sprintf("user-%d", i)
			r := f.do("jwt.example.com", "/d", "Authorization", "Bearer "+f.remote.Current().Sign(t, c))
			if r.status != 200 {
				t.Errorf("JWKS server down, token %d: %d %q; want 200 (Envoy keeps the JWKS it fetched last)", i, r.status, r.body)
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("JWKS server stopped after %d fetches: 5 new tokens of its key 3-6s later (cacheDuration 1s) still pass: Envoy keeps the last JWKS it fetched", fetches)
		// A JWKS never fetched: nothing listens at its URL.
		before := f.hits.Load()
		r := f.do("down.example.com", "/", "Authorization", "Bearer "+tok)
		f.refused(t, "JWKS never fetched", 401, before, r)
		t.Logf("a provider whose JWKS URL never answered: %d %q", r.status, r.body)
	})
	t.Run("fail closed", func(t *testing.T) {
		before := f.hits.Load()
		r := f.do("broken.example.com", "/", "Authorization", "Bearer "+f.localToken(t, nil))
		f.refused(t, "policy whose JWKS Secret is missing", 500, before, r)
		t.Logf("policy with a missing JWKS Secret: %d %q", r.status, r.body)
	})
	t.Run("rotated in the Secret", func(t *testing.T) {
		old := f.localToken(t, nil)
		f.local = jwt.NewKeySet(jwt.NewEC(t, "local-2"))
		f.write(t)
		newTok := f.localToken(t, nil)
		// The JWKS is in the listener's filter configuration: a new
		// connection gets the new one as soon as Envoy has it, a
		// keep-alive connection keeps the old one until Envoy drains it
		// (standalone: --drain-time-s 1).
		kept := f.client
		f.client = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		fresh := poll(t, "rotated Secret, new connections", func() error {
			if r := f.do("jwt.example.com", "/k", "Authorization", "Bearer "+newTok); r.status != 200 {
				return fmt.Errorf("%d %q", r.status, r.body)
			}
			return nil
		})
		before := f.hits.Load()
		f.refused(t, "old key after the Secret changed, new connection", 401, before, f.do("jwt.example.com", "/k", "Authorization", "Bearer "+old))
		f.client = kept
		took := poll(t, "rotated Secret, the kept connection", func() error {
			if r := f.do("jwt.example.com", "/k", "Authorization", "Bearer "+newTok); r.status != 200 {
				return fmt.Errorf("%d %q", r.status, r.body)
			}
			return nil
		})
		before = f.hits.Load()
		f.refused(t, "old key after the Secret changed", 401, before, f.do("jwt.example.com", "/k", "Authorization", "Bearer "+old))
		t.Logf("new key's token accepted on new connections %s after the Secret changed, on the kept keep-alive connection after %s; then the old key's gets 401",
			fresh.Round(time.Millisecond), (fresh + took).Round(time.Millisecond))
	})
}

func TestSecurityPolicyAuthorization(t *testing.T) {
	f := startJWT(t)
	user, admin := f.idpToken(t, "acme"), f.idpToken(t, "acme", "admin")
	for _, tc := range []struct {
		name, host, path string
		headers          []string
		want             int
	}{
		{"no token", "authz.example.com", "/read/x", []string{"x-env", "prod"}, 401},
		{"missing required claim (org)", "authz.example.com", "/read/x", []string{"Authorization", "Bearer " + f.idpToken(t, "", "admin"), "x-env", "prod"}, 403},
		{"wrong required claim (org)", "authz.example.com", "/read/x", []string{"Authorization", "Bearer " + f.idpToken(t, "globex", "admin"), "x-env", "prod"}, 403},
		{"claim rule: admin", "authz.example.com", "/anything", []string{"Authorization", "Bearer " + admin}, 200},
		{"claim rule: not admin, default", "authz.example.com", "/anything", []string{"Authorization", "Bearer " + user}, 403},
		{"deny before allow: admin DELETE", "authz.example.com", "/anything", []string{":method", "DELETE", "Authorization", "Bearer " + admin}, 403},
		{"header/method/path rule", "authz.example.com", "/read/x", []string{"Authorization", "Bearer " + user, "x-env", "prod"}, 200},
		{"header/method/path rule, wrong header", "authz.example.com", "/read/x", []string{"Authorization", "Bearer " + user, "x-env", "dev"}, 403},
		{"header/method/path rule, wrong method", "authz.example.com", "/read/x", []string{":method", "POST", "Authorization", "Bearer " + user, "x-env", "prod"}, 403},
		{"header/method/path rule, wrong path", "authz.example.com", "/reader", []string{"Authorization", "Bearer " + user, "x-env", "prod"}, 403},
		{"CIDR rule: 127.0.0.1 on /local", "authz.example.com", "/local", []string{"Authorization", "Bearer " + user}, 200},
		{"CIDR rule: X-Forwarded-For 10.1.2.3 is not trusted", "authz.example.com", "/office", []string{"Authorization", "Bearer " + user, "X-Forwarded-For", "10.1.2.3"}, 403},
		{"default Allow", "open.example.com", "/public", nil, 200},
		{"Deny rule", "open.example.com", "/secret/x", nil, 403},
	} {
		before := f.hits.Load()
		r := f.do(tc.host, tc.path, tc.headers...)
		if tc.want != 200 {
			f.refused(t, tc.name, tc.want, before, r)
		} else if r.status != 200 || !strings.HasPrefix(r.body, "app ") {
			t.Errorf("%s: got %d %q; want 200 from app", tc.name, r.status, r.body)
		}
		t.Logf("%s: %d %q", tc.name, r.status, r.body)
	}
}
