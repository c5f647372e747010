package e2ecluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestSecurityPolicyOnTheLocalCluster installs the chart in Shared and in
// Dedicated mode and moves traffic through SecurityPolicies
// (gateway.xds-controller.dev/v1alpha1) whose credentials are Opaque
// Secrets, read by the controller's credential Secret cache: basic auth
// on one named rule, API keys on another, a Secret rotated under a
// policy, a policy naming a Secret of another type, which the
// controller never reads (securityPolicy), JWT with an authorization
// rule on a claim, its key set rotated in its Secret (securityJWT), and a
// policy's extAuth and an Ingress's auth-url against the test servers'
// ext_authz service (securityExtAuth).
func TestSecurityPolicyOnTheLocalCluster(t *testing.T) {
	inBothModes(t, (*env).securityPolicy)
}

// htpasswdSHA is an htpasswd line of user with password in the {SHA}
// format (htpasswd -nbs user password).
func htpasswdSHA(user, password string) string {
	sum := sha1.Sum([]byte(password))
	return user + ":{SHA}" + base64.StdEncoding.EncodeToString(sum[:])
}

// securityYAML routes secure.example.com to foo with two named rules,
// /basic (a basicAuth policy on the rule, users from Secret users) and
// /keys (an apiKeyAuth policy on the rule, keys from Secret keys, read
// from header x-api-key, the client id forwarded in x-client-id), and a
// third route, typed.example.com, whose policy names a Secret of type
// kubernetes.io/basic-auth.
func securityYAML(users string) string {
	return `apiVersion: v1
kind: Secret
metadata: {name: users, namespace: xds-example}
type: Opaque
stringData:
  auth: "` + users + `"
---
apiVersion: v1
kind: Secret
metadata: {name: keys, namespace: xds-example}
stringData: {acme: acme-key-1, globex: globex-key-2}
---
apiVersion: v1
kind: Secret
metadata: {name: typed, namespace: xds-example}
type: kubernetes.io/basic-auth
stringData: {username: bob, password: builder, auth: "` + htpasswdSHA("bob", "builder") + `"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: secure, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [secure.example.com]
  rules:
  - name: basic
    matches: [{path: {type: PathPrefix, value: /basic}}]
    backendRefs: [{name: foo, port: 80}]
  - name: keys
    matches: [{path: {type: PathPrefix, value: /keys}}]
    backendRefs: [{name: foo, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: typed, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [typed.example.com]
  rules:
  - backendRefs: [{name: foo, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: basic, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: secure, sectionName: basic}]
  basicAuth:
    users: {name: users}
    realm: e2e
    forwardUsernameHeader: X-User
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: keys, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: secure, sectionName: keys}]
  apiKeyAuth:
    credentialRefs: [{name: keys}]
    extractFrom: [{header: X-API-Key}]
    forwardClientIDHeader: X-Client-ID
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: typed, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: typed}]
  basicAuth:
    users: {name: typed}
`
}

// securityPolicy is one mode's scenario of
// TestSecurityPolicyOnTheLocalCluster.
func (e *env) securityPolicy(mode string) {
	t := e.t
	e.cleanup()
	e.helmInstall(mode)
	e.applyExamples()
	web := e.gatewayAddress("web", 4*time.Minute)
	e.mustKubectl(securityYAML(htpasswdSHA("bob", "builder")), "apply", "-f", "-")
	const host = "secure.example.com"
	basic := func(user, password string) http.Header {
		h := http.Header{}
		if user != "" {
			h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+password)))
		}
		return h
	}
	e.eventually("basic auth: bob/builder reaches foo with X-User bob", 2*time.Minute, func() error {
		return e.expectEcho(web, host, "/basic/x", basic("bob", "builder"), func(r *echoResponse) error {
			if u := r.Headers["X-User"]; strings.Join(u, ",") != "bob" {
				return fmt.Errorf("x-user %q, want bob", u)
			}
			return nil
		})
	})
	for _, c := range []struct{ what, user, password string }{{"no credentials", "", ""}, {"a wrong password", "bob", "wrong"}, {"an unknown user", "eve", "builder"}} {
		status, _, h, err := e.request(web, host, "/basic/x", basic(c.user, c.password))
		if err != nil || status != http.StatusUnauthorized || !strings.Contains(h.Get("WWW-Authenticate"), `realm="e2e"`) {
			t.Fatalf("basic auth with %s: %d WWW-Authenticate %q (%v), want 401 with realm e2e", c.what, status, h.Get("WWW-Authenticate"), err)
		}
	}

	keys := func(key string) http.Header {
		h := http.Header{}
		if key != "" {
			h.Set("X-API-Key", key)
		}
		h.Set("X-Client-ID", "forged")
		return h
	}
	e.eventually("API keys: globex's key reaches foo as client globex, the key not forwarded", 2*time.Minute, func() error {
		return e.expectEcho(web, host, "/keys/x", keys("globex-key-2"), func(r *echoResponse) error {
			if c := r.Headers["X-Client-Id"]; strings.Join(c, ",") != "globex" {
				return fmt.Errorf("x-client-id %q, want globex (the forged value replaced)", c)
			}
			if k := r.Headers["X-Api-Key"]; len(k) != 0 {
				return fmt.Errorf("the key reached the backend: x-api-key %q", k)
			}
			return nil
		})
	})
	for _, key := range []string{"", "globex-key-3", "acme-key-1x"} {
		if status, _, _, err := e.request(web, host, "/keys/x", keys(key)); err != nil || status != http.StatusUnauthorized {
			t.Fatalf("API key %q: %d (%v), want 401", key, status, err)
		}
	}
	// A rule without a policy is not affected... and the other rule's
	// credentials do not open this one.
	if status, _, _, err := e.request(web, host, "/keys/x", basic("bob", "builder")); err != nil || status != http.StatusUnauthorized {
		t.Fatalf("/keys with bob's basic credentials: %d (%v), want 401", status, err)
	}

	// The users Secret rotated: bob's new password opens, the old one no
	// longer does.
	start := time.Now()
	e.mustKubectl(securityYAML(htpasswdSHA("bob", "rebuilt")), "apply", "-f", "-")
	e.eventually("basic auth after the rotation: bob/rebuilt reaches foo", time.Minute, func() error {
		return e.expectEcho(web, host, "/basic/x", basic("bob", "rebuilt"), func(*echoResponse) error { return nil })
	})
	rotated := time.Since(start)
	if status, _, _, err := e.request(web, host, "/basic/x", basic("bob", "builder")); err != nil || status != http.StatusUnauthorized {
		t.Fatalf("the old password after the rotation: %d (%v), want 401", status, err)
	}

	// A policy naming a Secret of type kubernetes.io/basic-auth: the
	// controller never reads it (SecretNotFound), the route answers 500.
	e.eventually("SecurityPolicy typed: ResolvedRefs=False SecretNotFound, and 500", time.Minute, func() error {
		out, err := e.kubectl("", "-n", exampleNamespace, "get", "securitypolicy", "typed", "-o",
			`jsonpath={.status.ancestors[0].conditions[?(@.type=="ResolvedRefs")].reason}`)
		if err != nil {
			return err
		}
		if out != "SecretNotFound" {
			return fmt.Errorf("ResolvedRefs reason %q", out)
		}
		status, _, _, err := e.request(web, "typed.example.com", "/", basic("bob", "builder"))
		if err == nil && status != http.StatusInternalServerError {
			err = fmt.Errorf("status %d, want 500", status)
		}
		return err
	})
	for _, p := range []string{"basic", "keys"} {
		out := e.mustKubectl("", "-n", exampleNamespace, "get", "securitypolicy", p, "-o",
			`jsonpath={.status.ancestors[0].ancestorRef.name}:{.status.ancestors[0].conditions[?(@.type=="Accepted")].status}/{.status.ancestors[0].conditions[?(@.type=="ResolvedRefs")].status}`)
		if out != "web:True/True" {
			t.Fatalf("SecurityPolicy %s status: %q, want web:True/True", p, out)
		}
	}
	e.securityJWT(web)
	e.securityExtAuth(web)
	t.Logf("%s: basic auth and API keys served from Opaque Secrets; a rotated password applied in %s; a kubernetes.io/basic-auth Secret never read (SecretNotFound, 500)", mode, rotated.Round(time.Millisecond))
}

// request sends GET http://addr:80path with Host host and header; it
// returns the status, body (at most 1 MiB) and response headers.
func (e *env) request(addr, host, path string, header http.Header) (int, string, http.Header, error) {
	status, body, h, err := e.do(e.http, http.MethodGet, addr, host, path, header, nil)
	return status, string(body), h, err
}

// do sends method http://addr:80path with Host host, header and body (nil:
// none; a reader of unknown length is sent chunked) through client c; it
// returns the status, the body as it came (at most 1 MiB; a compressed
// one is not decoded when header asks for an Accept-Encoding) and the
// response headers.
func (e *env) do(c *http.Client, method, addr, host, path string, header http.Header, body io.Reader) (int, []byte, http.Header, error) {
	req, err := http.NewRequest(method, "http://"+net.JoinHostPort(addr, "80")+path, body)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Host = host
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, resp.Header, err
}

// expectEcho sends request(addr, host, path, header) and checks that foo
// answered 200 for path, then check on its description of the request.
func (e *env) expectEcho(addr, host, path string, header http.Header, check func(*echoResponse) error) error {
	status, body, _, err := e.request(addr, host, path, header)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("status %d: %.200s", status, body)
	}
	r, err := decodeEcho([]byte(body))
	if err != nil {
		return err
	}
	if !strings.HasPrefix(r.Pod, "foo-") || r.Path != path {
		return fmt.Errorf("answered by %s for %s, want foo-* for %s", r.Pod, r.Path, path)
	}
	return check(r)
}

// jwtKey is a signing key of the JWT scenario and its public JWK.
type jwtKey struct {
	signer jose.Signer
	public jose.JSONWebKey
}

// newJWTKey makes an ES256 key named kid.
func newJWTKey(t *testing.T, kid string) jwtKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: priv, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	return jwtKey{signer: signer, public: jose.JSONWebKey{Key: &priv.PublicKey, KeyID: kid, Algorithm: string(jose.ES256), Use: "sig"}}
}

// token signs claims (iss, aud, sub, exp an hour from now, then extra).
func (k jwtKey) token(t *testing.T, aud string, exp time.Duration, extra map[string]any) string {
	t.Helper()
	claims := map[string]any{"iss": "https://idp.e2e.example", "aud": aud, "sub": "alice", "exp": time.Now().Add(exp).Unix()}
	for name, v := range extra {
		claims[name] = v
	}
	s, err := jwt.Signed(k.signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// jwtYAML routes jwt.example.com to foo under a SecurityPolicy: JWT
// provider idp (issuer https://idp.e2e.example, audience e2e, keys from
// the Opaque Secret idp-jwks holding keys, sub copied to X-Sub) and an
// authorization whose one rule allows tokens with role admin (default
// Deny).
func jwtYAML(t *testing.T, keys ...jose.JSONWebKey) string {
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return `apiVersion: v1
kind: Secret
metadata: {name: idp-jwks, namespace: xds-example}
stringData:
  jwks.json: '` + string(jwks) + `'
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: jwt, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [jwt.example.com]
  rules:
  - backendRefs: [{name: foo, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: jwt, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: jwt}]
  jwt:
    providers:
    - name: idp
      issuer: https://idp.e2e.example
      audiences: [e2e]
      localJWKS: {kind: Secret, name: idp-jwks}
      claimToHeaders: [{header: X-Sub, claim: sub}]
  authorization:
    defaultAction: Deny
    rules:
    - name: admins
      action: Allow
      jwt: {provider: idp, claims: [{name: role, values: [admin]}]}
`
}

// securityJWT checks a JWT policy with an authorization rule on a claim,
// keys from a Secret: the admin's token passes with its sub copied to
// X-Sub (a forged X-Sub replaced), a user's token is denied by the rule,
// and tokens that are missing, expired, for another audience or signed
// by an unknown key are refused; then the key set is rotated in the
// Secret: the new key's tokens pass and the old key's are refused.
func (e *env) securityJWT(web string) {
	t := e.t
	const host = "jwt.example.com"
	k1, k2 := newJWTKey(t, "e2e-1"), newJWTKey(t, "e2e-2")
	e.mustKubectl(jwtYAML(t, k1.public), "apply", "-f", "-")
	bearer := func(tok string) http.Header {
		h := http.Header{"X-Sub": {"forged"}}
		if tok != "" {
			h.Set("Authorization", "Bearer "+tok)
		}
		return h
	}
	admin := func(k jwtKey) string { return k.token(t, "e2e", time.Hour, map[string]any{"role": "admin"}) }
	e.eventually("JWT: the admin's token reaches foo with X-Sub alice", 2*time.Minute, func() error {
		return e.expectEcho(web, host, "/", bearer(admin(k1)), func(r *echoResponse) error {
			if s := r.Headers["X-Sub"]; strings.Join(s, ",") != "alice" {
				return fmt.Errorf("x-sub %q, want alice (the forged value replaced)", s)
			}
			if a := r.Headers["Authorization"]; len(a) != 0 {
				return fmt.Errorf("the token reached the backend: %q", a)
			}
			return nil
		})
	})
	for _, c := range []struct {
		what  string
		token string
		want  int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a user's token (the rule wants role admin)", k1.token(t, "e2e", time.Hour, map[string]any{"role": "user"}), http.StatusForbidden},
		{"an expired token (beyond the default 60 s clock skew)", k1.token(t, "e2e", -10*time.Minute, map[string]any{"role": "admin"}), http.StatusUnauthorized},
		{"another audience", k1.token(t, "other", time.Hour, map[string]any{"role": "admin"}), http.StatusForbidden},
		{"an unknown key", admin(k2), http.StatusUnauthorized},
	} {
		if status, body, _, err := e.request(web, host, "/", bearer(c.token)); err != nil || status != c.want {
			t.Fatalf("JWT with %s: %d %.100q (%v), want %d", c.what, status, body, err, c.want)
		}
	}
	start := time.Now()
	e.mustKubectl(jwtYAML(t, k2.public), "apply", "-f", "-")
	e.eventually("JWT after the key rotation: the new key's token passes, the old key's is refused", time.Minute, func() error {
		if err := e.expectEcho(web, host, "/", bearer(admin(k2)), func(*echoResponse) error { return nil }); err != nil {
			return fmt.Errorf("new key: %w", err)
		}
		if status, _, _, err := e.request(web, host, "/", bearer(admin(k1))); err != nil || status != http.StatusUnauthorized {
			return fmt.Errorf("old key: %d (%v), want 401", status, err)
		}
		return nil
	})
	t.Logf("JWT: admin passes, user 403, missing/expired/unknown key 401, other audience 403; the rotated key set applied within %s", time.Since(start).Round(time.Millisecond))
}

// extAuthYAML routes ext.example.com to foo under a SecurityPolicy whose
// extAuth asks the test servers' HTTP ext_authz service (sent
// x-e2e-auth, its x-auth-user copied upstream), and serves the Ingress
// guarded (guarded.example.com to foo) behind the same service through
// ingress-nginx's auth-url and auth-response-headers.
const extAuthYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ext, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [ext.example.com]
  rules:
  - backendRefs: [{name: foo, port: 80}]
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: SecurityPolicy
metadata: {name: ext, namespace: xds-example}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: ext}]
  extAuth:
    protocol: HTTP
    backendRef: {name: testservers, port: 9001}
    http: {allowedHeaders: [x-e2e-auth], allowedResponseHeaders: [x-auth-user]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: guarded
  namespace: xds-example
  annotations:
    nginx.ingress.kubernetes.io/auth-url: http://testservers.xds-example.svc.cluster.local:9001/check
    nginx.ingress.kubernetes.io/auth-response-headers: X-Auth-User
spec:
  ingressClassName: xds-controller
  rules:
  - host: guarded.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {service: {name: foo, port: {number: 80}}}
`

// securityExtAuth deploys the test servers and checks a SecurityPolicy
// extAuth on a route and an Ingress's auth-url against their HTTP
// ext_authz service: with x-e2e-auth: allow the request reaches foo with
// the x-auth-user the service set (a forged one replaced), without it
// the service's 403 and body come back.
func (e *env) securityExtAuth(web string) {
	t := e.t
	e.deployTestServers()
	e.mustKubectl(extAuthYAML, "apply", "-f", "-")
	guarded := e.ingressAddress("guarded", 2*time.Minute)
	for _, c := range []struct{ what, addr, host string }{
		{"SecurityPolicy extAuth", web, "ext.example.com"},
		{"Ingress auth-url", guarded, "guarded.example.com"},
	} {
		e.eventually(c.what+": allowed with x-e2e-auth, x-auth-user e2e", 2*time.Minute, func() error {
			h := http.Header{"X-E2e-Auth": {"allow"}, "X-Auth-User": {"forged"}}
			return e.expectEcho(c.addr, c.host, "/x", h, func(r *echoResponse) error {
				if u := r.Headers["X-Auth-User"]; strings.Join(u, ",") != "e2e" {
					return fmt.Errorf("x-auth-user %q, want e2e", u)
				}
				return nil
			})
		})
		status, body, _, err := e.request(c.addr, c.host, "/x", http.Header{"X-Auth-User": {"forged"}})
		if err != nil || status != http.StatusForbidden || body != "denied by xds-testservers" {
			t.Fatalf("%s without x-e2e-auth: %d %q (%v), want the service's 403", c.what, status, body, err)
		}
		t.Logf("%s: allowed with x-e2e-auth (x-auth-user e2e), denied without: %d %q", c.what, status, body)
	}
}
