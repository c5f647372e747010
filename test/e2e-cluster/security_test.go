package e2ecluster

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSecurityPolicyOnTheLocalCluster installs the chart in Shared and in
// Dedicated mode and moves traffic through SecurityPolicies
// (gateway.xds-controller.dev/v1alpha1) whose credentials are Opaque
// Secrets, read by the controller's credential Secret cache: basic auth
// on one named rule, API keys on another, a Secret rotated under a
// policy, and a policy naming a Secret of another type, which the
// controller never reads (securityPolicy).
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
	t.Logf("%s: basic auth and API keys served from Opaque Secrets; a rotated password applied in %s; a kubernetes.io/basic-auth Secret never read (SecretNotFound, 500)", mode, rotated.Round(time.Millisecond))
}

// request sends GET http://addr:80path with Host host and header; it
// returns the status, body (at most 1 MiB) and response headers.
func (e *env) request(addr, host, path string, header http.Header) (int, string, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(addr, "80")+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Host = host
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), resp.Header, nil
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
