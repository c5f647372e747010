package e2e

// HTTPRoute retry (Gateway API v1.7.0 standard: HTTPRouteRetryCodes,
// HTTPRouteRetryConnectionError) through the real controller and Envoy.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// flakyBackend is an HTTP server that fails the first attempts of each
// request id: a request with the query parameters id, code and fail is
// answered with status code while the backend has seen at most fail
// requests of that id, and with 200 after. Every answer's body is "<name>
// attempt <n>", n counting the id's requests from 1.
type flakyBackend struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen map[string]int
}

func startFlakyBackend(t *testing.T, name string) *flakyBackend {
	b := &flakyBackend{seen: map[string]int{}}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		code, _ := strconv.Atoi(q.Get("code"))
		fail, _ := strconv.Atoi(q.Get("fail"))
		b.mu.Lock()
		b.seen[q.Get("id")]++
		n := b.seen[q.Get("id")]
		b.mu.Unlock()
		if n <= fail {
			w.WriteHeader(code)
		}
		fmt.Fprintf(w, "%s attempt %d", name, n)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// attempts is how many requests of id the backend has seen.
func (b *flakyBackend) attempts(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seen[id]
}

// retryRoutesYAML: the HTTPRoute retries for retry.example.com, one rule
// per retry policy, all to the flakyBackend's Service flaky; and the
// HTTPRoute connect for connect.example.com, a rule with retry (attempts
// only) and one without, to the Service half-refused.
const retryRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: retries, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [retry.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /codes}}]
    retry: {codes: [502, 503], attempts: 2}
    backendRefs: [{name: flaky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /default-attempts}}]
    retry: {codes: [503]}
    backendRefs: [{name: flaky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /zero-attempts}}]
    retry: {codes: [503], attempts: 0}
    backendRefs: [{name: flaky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /no-codes}}]
    retry: {attempts: 2}
    backendRefs: [{name: flaky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /no-retry}}]
    backendRefs: [{name: flaky, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: connect, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [connect.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /retry}}]
    retry: {attempts: 3}
    backendRefs: [{name: half-refused, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /no-retry}}]
    backendRefs: [{name: half-refused, port: 80}]
`

// startRetryConfig serves retryRoutesYAML: the Service flaky is
// flakyBackend, and half-refused has two endpoints on healthy's port, one
// at 127.0.0.1 (healthy) and one at 127.0.0.2, where nothing listens, so
// that connections to it are refused.
func startRetryConfig(t *testing.T, flaky *flakyBackend, healthy *httptest.Server) *fixture {
	return startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends": []gatewayBackend{
				{Name: "flaky", Port: portOf(flaky.srv)},
				{Name: "half-refused", Port: portOf(healthy), Addresses: []string{"127.0.0.1", "127.0.0.2"}},
			},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), retryRoutesYAML, nil)
	})
}

// TestHTTPRouteRetryCodes shows that an HTTPRouteRule's retry resends a
// request whose answer has one of retry.codes, up to retry.attempts more
// times, and hands the client the first answer that is not retried: the
// backend answers an id's first requests with the code asked for, and the
// client sees 200 after as many attempts as the backend needed while they
// fit in 1+attempts, else the backend's own error after exactly
// 1+attempts. A code the rule does not list, attempts 0, a retry without
// codes (connection errors only) and a rule without retry each give the
// error after one attempt; unset attempts means one retry (the schema's
// default). The route is Accepted with ResolvedRefs.
func TestHTTPRouteRetryCodes(t *testing.T) {
	flaky := startFlakyBackend(t, "flaky")
	f := startRetryConfig(t, flaky, backend(t, "healthy"))

	ready := 0
	took := poll(t, "retry.example.com served", func() error {
		ready++
		r := f.send(f.gwPort, "retry.example.com", fmt.Sprintf("/codes?id=ready-%d&code=503&fail=0", ready))
		if r.status != 200 || r.body != "flaky attempt 1" {
			return fmt.Errorf("%d %q", r.status, r.body)
		}
		return nil
	})
	t.Logf("retries route answered after %s", took.Round(time.Millisecond))

	for i, c := range []struct {
		name, path string
		// The backend answers code to the request's first fail attempts;
		// the client sees status, and the backend attempts requests.
		code, fail, status, attempts int
	}{
		{"a listed code, retried once", "/codes", 503, 1, 200, 2},
		{"another listed code, retried twice", "/codes", 502, 2, 200, 3},
		{"attempts exhausted: the backend's error", "/codes", 503, 3, 503, 3},
		{"a code not listed is not retried", "/codes", 500, 1, 500, 1},
		{"unset attempts: one retry", "/default-attempts", 503, 1, 200, 2},
		{"unset attempts, exhausted", "/default-attempts", 503, 2, 503, 2},
		{"attempts 0: no retry", "/zero-attempts", 503, 1, 503, 1},
		{"no codes: status codes are not retried", "/no-codes", 503, 1, 503, 1},
		{"no retry on the rule", "/no-retry", 503, 1, 503, 1},
	} {
		id := fmt.Sprintf("case-%d", i)
		r := f.send(f.gwPort, "retry.example.com", fmt.Sprintf("%s?id=%s&code=%d&fail=%d", c.path, id, c.code, c.fail))
		want := fmt.Sprintf("flaky attempt %d", c.attempts)
		if got := flaky.attempts(id); r.status != c.status || r.body != want || got != c.attempts {
			t.Errorf("%s: %s failing %d times with %d: client got %d %q, backend saw %d attempts; want %d %q, %d attempts",
				c.name, c.path, c.fail, c.code, r.status, r.body, got, c.status, want, c.attempts)
		} else {
			t.Logf("%s: %s failing %d times with %d: %d after %d attempts", c.name, c.path, c.fail, c.code, r.status, got)
		}
	}

	f.waitOutput("retries status", 0, regexp.MustCompile(regexp.QuoteMeta(
		"HTTPRoute default/retries -> default/gw: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)")), l4Deadline)
}

// TestHTTPRouteRetryConnectionError shows that a retry with attempts and
// no codes resends a request whose connection to the backend failed: the
// Service half-refused has a listening endpoint and one that refuses
// connections, which Envoy's round robin picks every other time. Without
// retry some of 20 requests get Envoy's 503 (upstream connect error) and
// the others the healthy backend; with retry all 20 reach the healthy
// backend, once each, and Envoy counts the failed connections and the
// retries.
func TestHTTPRouteRetryConnectionError(t *testing.T) {
	healthy, served := countingBackend(t, "healthy")
	f := startRetryConfig(t, startFlakyBackend(t, "flaky"), healthy)
	const cluster = "cluster.service/default/half-refused/80."

	took := poll(t, "connect.example.com served", func() error {
		if code, body := f.get("connect.example.com", "/retry"); code != 200 || body != "healthy /retry" {
			return fmt.Errorf("%d %q", code, body)
		}
		return nil
	})
	t.Logf("connect route answered after %s", took.Round(time.Millisecond))

	const n = 20
	// count sends n requests for path and returns how many the healthy
	// backend answered (through Envoy), how many Envoy answered 503 for a
	// failed connection, and how many requests the backend saw meanwhile.
	count := func(path string) (ok, refused, reached int) {
		before := served.Load()
		for range n {
			switch code, body := f.get("connect.example.com", path); {
			case code == 200 && body == "healthy "+path:
				ok++
			case code == 503 && strings.HasPrefix(body, "upstream connect error"):
				refused++
			default:
				t.Errorf("%s: %d %q; want the healthy backend's 200 or Envoy's 503 for a refused connection", path, code, body)
			}
		}
		return ok, refused, int(served.Load() - before)
	}

	ok, refused, reached := count("/no-retry")
	t.Logf("without retry: %d answered, %d refused, the backend saw %d", ok, refused, reached)
	if refused == 0 || ok == 0 || reached != ok {
		t.Errorf("without retry: %d answered, %d refused, the backend saw %d; want both kinds, as the endpoints alternate, and the backend seeing each answered request",
			ok, refused, reached)
	}

	failsBefore, err := envoyCounter(f.admin, cluster+"upstream_cx_connect_fail")
	if err != nil {
		t.Fatal(err)
	}
	retriesBefore, err := envoyCounter(f.admin, cluster+"upstream_rq_retry")
	if err != nil {
		t.Fatal(err)
	}
	ok, refused, reached = count("/retry")
	fails, err := envoyCounter(f.admin, cluster+"upstream_cx_connect_fail")
	if err != nil {
		t.Fatal(err)
	}
	retries, err := envoyCounter(f.admin, cluster+"upstream_rq_retry")
	if err != nil {
		t.Fatal(err)
	}
	fails, retries = fails-failsBefore, retries-retriesBefore
	t.Logf("with retry: %d answered, %d refused, the backend saw %d; Envoy: %d failed connections, %d retries", ok, refused, reached, fails, retries)
	if ok != n || reached != n {
		t.Errorf("with retry: %d of %d answered by the healthy backend, which saw %d; want all, once each", ok, n, reached)
	}
	if fails == 0 || retries < fails {
		t.Errorf("with retry: Envoy counted %d failed connections and %d retries; want some failed connections, each retried", fails, retries)
	}

	f.waitOutput("connect status", 0, regexp.MustCompile(regexp.QuoteMeta(
		"HTTPRoute default/connect -> default/gw: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)")), l4Deadline)
}
