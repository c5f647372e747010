package e2e

// URLRewrite on an HTTPRoute backendRef (Gateway API v1.7.0 standard:
// HTTPRouteBackendURLRewrite) through the real controller and Envoy.

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// backendRewriteRoutesYAML: the HTTPRoute rewrite for rewrite.example.com,
// whose rules rewrite on their backendRefs the full path, a path prefix,
// the hostname of one of two backendRefs, and the hostname of one of two
// backendRefs that both rewrite the path prefix alike; and the HTTPRoute
// one-sided for one-sided.example.com, whose rule rewrites the path on one
// backendRef of two, which Envoy cannot do (it rewrites a path per route).
const backendRewriteRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: rewrite, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [rewrite.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /full}}]
    backendRefs:
    - name: alpha
      port: 80
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /rewritten-full}}}]
  - matches: [{path: {type: PathPrefix, value: /prefix}}]
    backendRefs:
    - name: alpha
      port: 80
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /rewritten-prefix}}}]
  - matches: [{path: {type: PathPrefix, value: /host}}]
    backendRefs:
    - name: alpha
      port: 80
      filters: [{type: URLRewrite, urlRewrite: {hostname: alpha.internal}}]
    - {name: beta, port: 80}
  - matches: [{path: {type: PathPrefix, value: /split}}]
    backendRefs:
    - name: alpha
      port: 80
      filters: [{type: URLRewrite, urlRewrite: {hostname: alpha.internal, path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}}]
    - name: beta
      port: 80
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: one-sided, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [one-sided.example.com]
  rules:
  - backendRefs:
    - name: alpha
      port: 80
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /rewritten}}}]
    - {name: beta, port: 80}
`

// TestHTTPRouteBackendURLRewrite shows that a URLRewrite filter on a
// backendRef rewrites what that backend receives: a full path
// (/full/original reaches the backend as /rewritten-full) and a path
// prefix (/prefix/original as /rewritten-prefix/original), with the
// client's Host kept; a hostname on one of a rule's two backendRefs
// reaches that backend as its Host while the other backend sees the
// client's, both with the client's path; two backendRefs rewriting the
// path alike both get the rewritten path, each with its own Host. A rule
// rewriting the path on one backendRef only is refused
// (Accepted=False(UnsupportedValue), its host answers 404) while the
// other route serves.
func TestHTTPRouteBackendURLRewrite(t *testing.T) {
	f := startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends": []gatewayBackend{
				{Name: "alpha", Port: portOf(backend(t, "alpha"))},
				{Name: "beta", Port: portOf(backend(t, "beta"))},
			},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), backendRewriteRoutesYAML, nil)
	})
	const host = "rewrite.example.com"
	// reached says whether r is backend's answer to a request that reached
	// it with Host h and path p (nil), or else what r is.
	reached := func(r reply, backend, h, p string) error {
		if r.status != 200 || r.header.Get("x-backend") != backend || r.header.Get("x-host") != h || !strings.HasPrefix(r.body, backend+" "+p+" ") {
			return fmt.Errorf("%d %q from %q, which saw Host %q; want 200 from %s, which saw Host %s and path %s",
				r.status, r.body, r.header.Get("x-backend"), r.header.Get("x-host"), backend, h, p)
		}
		return nil
	}
	took := poll(t, "rewrite.example.com served", func() error {
		return reached(f.send(f.gwPort, host, "/full/original"), "alpha", host, "/rewritten-full")
	})
	t.Logf("rewrite route answered after %s", took.Round(time.Millisecond))

	for _, c := range []struct{ path, want string }{
		{"/full/original", "/rewritten-full"},
		{"/full", "/rewritten-full"},
		{"/prefix/original", "/rewritten-prefix/original"},
		{"/prefix", "/rewritten-prefix"},
	} {
		if err := reached(f.send(f.gwPort, host, c.path), "alpha", host, c.want); err != nil {
			t.Errorf("%s: %v", c.path, err)
		} else {
			t.Logf("%s reached alpha as %s, Host %s", c.path, c.want, host)
		}
	}

	// The rules with two backendRefs (weight 1 each): requests until both
	// backends have answered, each as its own backendRef says.
	for _, c := range []struct {
		path string
		// want are, by backend, its Host and path.
		want map[string][2]string
	}{
		{"/host/x", map[string][2]string{"alpha": {"alpha.internal", "/host/x"}, "beta": {host, "/host/x"}}},
		{"/split/x", map[string][2]string{"alpha": {"alpha.internal", "/v2/x"}, "beta": {host, "/v2/x"}}},
	} {
		seen := map[string]int{}
		for i := 0; i < 200 && (seen["alpha"] == 0 || seen["beta"] == 0); i++ {
			r := f.send(f.gwPort, host, c.path)
			b := r.header.Get("x-backend")
			w, ok := c.want[b]
			if !ok {
				t.Fatalf("%s: %d %q from %q; want alpha or beta", c.path, r.status, r.body, b)
			}
			if err := reached(r, b, w[0], w[1]); err != nil {
				t.Fatalf("%s: %v", c.path, err)
			}
			seen[b]++
		}
		if seen["alpha"] == 0 || seen["beta"] == 0 {
			t.Errorf("%s: answers by backend %v; want both", c.path, seen)
		} else {
			t.Logf("%s: answers by backend %v, each with its own Host and path %v", c.path, seen, c.want)
		}
	}

	f.waitOutput("rewrite status", 0, regexp.MustCompile(regexp.QuoteMeta(
		"HTTPRoute default/rewrite -> default/gw: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)")), l4Deadline)
	const refused = "HTTPRoute default/one-sided -> default/gw: Accepted=False(UnsupportedValue)"
	f.waitOutput("one-sided status", 0, regexp.MustCompile(regexp.QuoteMeta(refused)), l4Deadline)
	if l := f.lastLine(refused); !strings.Contains(l, "rewrites the path") {
		t.Errorf("one-sided status: %q; want the reason: one backendRef rewrites the path", l)
	}
	if code, body := f.get("one-sided.example.com", "/x"); code != 404 {
		t.Errorf("one-sided.example.com/x = %d %q; want 404 (the route is not accepted)", code, body)
	}
}
