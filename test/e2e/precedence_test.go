package e2e

// Route precedence by the route's own hostname (Gateway API v1.7.0
// standard: GatewayRouteHostnameIntersectionPrecedence) through the real
// controller and Envoy.

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// precedenceRoutesYAML: on listener exact (abc.example.com), the older
// HTTPRoute wide-on-exact (*.example.com, PathPrefix /path/prefix, to old)
// and the newer narrow-on-exact (abc.example.com, PathPrefix /path with
// header x-pick: new, to new); on listener wild (*.example.com), the older
// wide-on-wild (*.example.com, PathPrefix /path/prefix and a catch-all,
// to old) and the newer narrow-on-wild (*.b.example.com, PathPrefix /path,
// to new). In each pair the newer route has the shorter path: path length
// and age favour the older, less specific route.
const precedenceRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: wide-on-exact, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: exact}]
  hostnames: ["*.example.com"]
  rules:
  - matches: [{path: {type: PathPrefix, value: /path/prefix}}]
    backendRefs: [{name: old, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: narrow-on-exact, namespace: default, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: exact}]
  hostnames: [abc.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /path}, headers: [{name: x-pick, value: new}]}]
    backendRefs: [{name: new, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: wide-on-wild, namespace: default, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: wild}]
  hostnames: ["*.example.com"]
  rules:
  - matches: [{path: {type: PathPrefix, value: /path/prefix}}]
    backendRefs: [{name: old, port: 80}]
  - backendRefs: [{name: old, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: narrow-on-wild, namespace: default, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: wild}]
  hostnames: ["*.b.example.com"]
  rules:
  - matches: [{path: {type: PathPrefix, value: /path}}]
    backendRefs: [{name: new, port: 80}]
`

// TestGatewayRouteHostnameIntersectionPrecedence shows that among the
// routes that meet in one listener's virtual host, the route whose own
// hostname is more specific serves first, though it is newer and its path
// match shorter, and passes what it does not match to the less specific
// route:
//   - on listener abc.example.com, a request for abc.example.com with
//     x-pick: new reaches the abc.example.com route (PathPrefix /path)
//     rather than the *.example.com route's /path/prefix; without the
//     header it reaches the *.example.com route;
//   - on listener *.example.com, x.b.example.com reaches the
//     *.b.example.com route rather than the *.example.com route's
//     /path/prefix, and other paths reach the *.example.com route's
//     catch-all; bar.example.com reaches the *.example.com route only.
//
// A request for abc.example.com that no route of its listener matches gets
// 404: the catch-all of the *.example.com listener does not serve it.
func TestGatewayRouteHostnameIntersectionPrecedence(t *testing.T) {
	port := freePort(t)
	f := startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Listeners": []string{
				fmt.Sprintf("{name: exact, protocol: HTTP, port: %d, hostname: abc.example.com}", port),
				fmt.Sprintf(`{name: wild, protocol: HTTP, port: %d, hostname: "*.example.com"}`, port),
			},
			"Backends": []gatewayBackend{
				{Name: "old", Port: portOf(backend(t, "old"))},
				{Name: "new", Port: portOf(backend(t, "new"))},
			},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), precedenceRoutesYAML, nil)
	})

	// Ready: the last route of each listener answers.
	took := poll(t, "both listeners served", func() error {
		for _, hp := range [][2]string{{"abc.example.com", "/path/x"}, {"x.b.example.com", "/path/x"}} {
			if code, body := f.getOn(port, hp[0], hp[1], "x-pick", "new"); code != 200 || !strings.HasPrefix(body, "new ") {
				return fmt.Errorf("%s%s: %d %q", hp[0], hp[1], code, body)
			}
		}
		return nil
	})
	t.Logf("both listeners served after %s", took.Round(time.Millisecond))

	for _, c := range []struct {
		name, host, path string
		headers          []string
		status           int
		body             string
	}{
		{"exact route first, despite the longer prefix of the older wildcard route", "abc.example.com", "/path/prefix/x", []string{"x-pick", "new"}, 200, "new"},
		{"what the exact route does not match passes to the wildcard route", "abc.example.com", "/path/prefix/x", nil, 200, "old"},
		{"neither route of the exact listener", "abc.example.com", "/elsewhere", nil, 404, ""},
		{"more specific wildcard route first", "x.b.example.com", "/path/prefix/x", nil, 200, "new"},
		{"the less specific route's catch-all", "x.b.example.com", "/elsewhere", nil, 200, "old"},
		{"a host only the wildcard route claims", "bar.example.com", "/path/prefix/x", nil, 200, "old"},
		{"a host only the wildcard route claims, catch-all", "bar.example.com", "/path/x", nil, 200, "old"},
	} {
		want := ""
		if c.body != "" {
			want = c.body + " " + c.path + " "
		}
		if code, body := f.getOn(port, c.host, c.path, c.headers...); code != c.status || !strings.HasPrefix(body, want) {
			t.Errorf("%s: %s%s %q = %d %q; want %d %q...", c.name, c.host, c.path, c.headers, code, body, c.status, want)
		} else {
			t.Logf("%s: %s%s %q -> %d %q", c.name, c.host, c.path, c.headers, code, body)
		}
	}

	for _, r := range []string{"wide-on-exact -> default/gw/exact", "narrow-on-exact -> default/gw/exact", "wide-on-wild -> default/gw/wild", "narrow-on-wild -> default/gw/wild"} {
		f.waitOutput(r, 0, regexp.MustCompile(regexp.QuoteMeta("HTTPRoute default/"+r+": Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)")), l4Deadline)
	}
	for _, l := range []string{"exact", "wild"} {
		if s := f.lastLine("Gateway default/gw listener " + l + ":"); !strings.Contains(s, "attachedRoutes=2 ") {
			t.Errorf("listener %s status: %q; want attachedRoutes=2", l, s)
		}
	}
}
