package e2ecluster

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// extAuthRouteYAML routes authz.example.com to foo through the test
// servers' (testserversYAML) ext_authz services: /grpc through the gRPC
// one, /http through the HTTP one, which is sent the header x-e2e-auth.
const extAuthRouteYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: authz, namespace: xds-example}
spec:
  parentRefs: [{name: web}]
  hostnames: [authz.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /grpc}}]
    filters:
    - type: ExternalAuth
      externalAuth:
        protocol: GRPC
        backendRef: {name: testservers, port: 9000}
        grpc: {}
    backendRefs: [{name: foo, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /http}}]
    filters:
    - type: ExternalAuth
      externalAuth:
        protocol: HTTP
        backendRef: {name: testservers, port: 9001}
        http:
          allowedHeaders: [x-e2e-auth]
          allowedResponseHeaders: [x-auth-user]
    backendRefs: [{name: foo, port: 80}]
`

// extAuth applies extAuthRouteYAML (after tracing deployed the test
// servers) and checks both protocols: a request without x-e2e-auth: allow
// gets the auth service's 403 with its body and header, one with it
// reaches foo carrying the header the service added (x-auth-user: e2e).
func (e *env) extAuth(web string) {
	t := e.t
	e.mustKubectl(extAuthRouteYAML, "apply", "-f", "-")
	for _, path := range []string{"/grpc/x", "/http/x"} {
		e.eventually("ExternalAuth "+path+" allows with x-e2e-auth: allow", 2*time.Minute, func() error {
			status, body, _, err := e.authzGet(web, path, "allow")
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
			if !strings.HasPrefix(r.Pod, "foo-") || strings.Join(r.Headers["X-Auth-User"], ",") != "e2e" {
				return fmt.Errorf("answered by %s with x-auth-user %q (headers %v), want foo-* and e2e", r.Pod, r.Headers["X-Auth-User"], r.Headers)
			}
			return nil
		})
		status, body, h, err := e.authzGet(web, path, "")
		if err != nil {
			t.Fatalf("%s without x-e2e-auth: %v", path, err)
		}
		if status != http.StatusForbidden || body != "denied by xds-testservers" || h.Get("x-denied-by") != "xds-testservers" {
			t.Fatalf("%s without x-e2e-auth: %d %q x-denied-by=%q; want the auth service's 403, body and header", path, status, body, h.Get("x-denied-by"))
		}
		t.Logf("ExternalAuth %s: allowed with x-e2e-auth (x-auth-user added), denied without: %d %q", path, status, body)
	}
}

// authzGet sends GET http://web/path with Host authz.example.com and, when
// allow is not empty, x-e2e-auth: allow; it returns the status, body and
// headers.
func (e *env) authzGet(web, path, allow string) (int, string, http.Header, error) {
	h := http.Header{}
	if allow != "" {
		h.Set("x-e2e-auth", allow)
	}
	return e.request(web, "authz.example.com", path, h)
}
