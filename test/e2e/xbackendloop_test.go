package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// xbackendLoopYAML: an HTTPRoute to an XBackend named localhost at the
// port of the Gateway's own listener (.Port): each request it forwards
// would come back to the gateway, and be forwarded again.
const xbackendLoopYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: loop, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [loop.example.test]
  rules:
  - backendRefs: [{group: gateway.networking.x-k8s.io, kind: XBackend, name: self}]
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackend
metadata: {name: self, namespace: default}
spec:
  type: ExternalHostname
  port: {number: {{.Port}}}
  externalHostname: {hostname: {{.Host}}}
`

// downstreamRequests is the number of requests Envoy's HTTP connection
// managers received, but the admin interface's (the sum of the
// http.*.downstream_rq_total counters).
func downstreamRequests(admin int) (int, error) {
	out, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/stats?filter=%s", admin, "downstream_rq_total"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		name, v, ok := strings.Cut(l, ": ")
		if !ok || !strings.HasPrefix(name, "http.") || strings.HasPrefix(name, "http.admin.") || !strings.HasSuffix(name, ".downstream_rq_total") {
			continue
		}
		c, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// TestXBackendLocalhostCannotLoop: an XBackend named localhost (or a name
// under it) at the port of the Gateway's own listener must not turn one
// request into a stream of requests through the gateway: the XBackend is
// refused (BackendNotFound, "is a loopback name"), its route answers 500,
// and Envoy's listeners see the client's requests only.
func TestXBackendLocalhostCannotLoop(t *testing.T) {
	f := startWith(t, func(f *fixture) {
		l4Config(t, f, nil, nil, xbackendLoopYAML, map[string]any{"Port": f.gwPort, "Host": "localhost"})
	})
	f.waitOutput("the loop route's status", 0, regexp.MustCompile(`HTTPRoute default/loop -> default/gw/http: Accepted=True\(Accepted\) ResolvedRefs=False\(BackendNotFound\)[^\n]*is a loopback name`), l4Deadline)
	f.await("loop.example.test", "/", 500, "")
	before, err := downstreamRequests(f.admin)
	if err != nil {
		t.Fatal(err)
	}
	const requests = 3
	for range requests {
		if code, body := f.get("loop.example.test", "/"); code != 500 {
			t.Errorf("loop.example.test: %d %.200q, want 500", code, body)
		}
	}
	// Let a loop, if there were one, run for a moment.
	time.Sleep(500 * time.Millisecond)
	after, err := downstreamRequests(f.admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d client requests: Envoy's listeners received %d requests", requests, after-before)
	if after-before != requests {
		t.Errorf("%d client requests made Envoy's listeners receive %d requests, want %d", requests, after-before, requests)
	}
}
