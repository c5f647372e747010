package e2e

// XBackendTrafficPolicy (experimental channel) through the real
// controller and Envoy: sessionPersistence of the Services a policy
// targets, with two replicas on loopback; and a retry budget
// (retryConstraint) under a backend that always fails.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// backendTrafficSessionYAML: the Services sticky and header-sticky (both
// the two replicas) have an XBackendTrafficPolicy each, a cookie named
// policy-sticky and the header x-policy-session; the Service loose (the
// same replicas) has none. The HTTPRoute policy-sessions sends /cookie to
// sticky, /header to header-sticky and /none to loose, none of its rules
// with a sessionPersistence of its own.
const backendTrafficSessionYAML = `apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackendTrafficPolicy
metadata: {name: cookie-sessions, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: sticky}]
  sessionPersistence: {type: Cookie, cookie: {name: policy-sticky}}
---
apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackendTrafficPolicy
metadata: {name: header-sessions, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: header-sticky}]
  sessionPersistence: {type: Header, header: {name: x-policy-session}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: policy-sessions, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [sticky.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /cookie}}]
    backendRefs: [{name: sticky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /header}}]
    backendRefs: [{name: header-sticky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /none}}]
    backendRefs: [{name: loose, port: 80}]
`

// TestBackendTrafficPolicySession shows XBackendTrafficPolicy
// sessionPersistence: with two replicas behind each Service, requests
// without the cookie or header reach both; every request that carries
// the cookie (or the header) the first answer set reaches the replica
// that answered it; a Service without a policy spreads requests with or
// without the cookie. Both policies are Accepted on the Gateway.
func TestBackendTrafficPolicySession(t *testing.T) {
	rs, port := startReplicas(t)
	addrs := []string{rs[0].addr, rs[1].addr}
	s := &sessionFixture{rs: rs, port: port}
	s.fixture = startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends": []gatewayBackend{
				{Name: "sticky", Port: port, Addresses: addrs},
				{Name: "header-sticky", Port: port, Addresses: addrs},
				{Name: "loose", Port: port, Addresses: addrs},
			},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), backendTrafficSessionYAML, nil)
	})
	poll(t, "sticky.example.com served", func() error {
		if r := s.send(s.gwPort, "sticky.example.com", "/none"); r.status != 200 || (r.body != "one" && r.body != "two") {
			return fmt.Errorf("%d %q", r.status, r.body)
		}
		return nil
	})
	for _, p := range []string{"cookie-sessions", "header-sessions"} {
		want := "XBackendTrafficPolicy default/" + p + " -> default/gw: Accepted=True(Accepted)"
		line, _ := s.waitOutput(p+" status", 0, regexp.MustCompile(regexp.QuoteMeta(want)), l4Deadline)
		t.Logf("status: %s", line)
	}

	for _, path := range []string{"/none", "/cookie", "/header"} {
		if got := s.spread(path); got["one"] == 0 || got["two"] == 0 {
			t.Fatalf("%s without a cookie or header: %v, want both replicas", path, got)
		} else {
			t.Logf("%s without a cookie or header: %v", path, got)
		}
	}

	first := s.send(s.gwPort, "sticky.example.com", "/cookie")
	set, value := sessionCookie(t, first, "policy-sticky")
	t.Logf("first answer %q: Set-Cookie: %s", first.body, set)
	pinned, _ := s.replicaNamed(t, first.body)
	if got := s.spread("/cookie", "Cookie", "policy-sticky="+value); got[pinned.name] != sessionRequests {
		t.Fatalf("/cookie with the cookie: %v, want all %d on %s", got, sessionRequests, pinned.name)
	} else {
		t.Logf("/cookie with the cookie: %v", got)
	}
	if got := s.spread("/none", "Cookie", "policy-sticky="+value); got["one"] == 0 || got["two"] == 0 {
		t.Fatalf("/none (no policy) with the cookie: %v, want both replicas", got)
	} else {
		t.Logf("/none (no policy) with the cookie: %v", got)
	}

	first = s.send(s.gwPort, "sticky.example.com", "/header")
	session := first.header.Get("x-policy-session")
	if session == "" {
		t.Fatalf("first /header answer has no x-policy-session: %v", first.header)
	}
	pinned, _ = s.replicaNamed(t, first.body)
	if got := s.spread("/header", "x-policy-session", session); got[pinned.name] != sessionRequests {
		t.Fatalf("/header with the header: %v, want all %d on %s", got, sessionRequests, pinned.name)
	} else {
		t.Logf("/header with x-policy-session %s: %v", session, got)
	}
}

// failingBackend answers every request 503 after delay and counts them.
func failingBackend(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int32) {
	n := &atomic.Int32{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		time.Sleep(delay)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "always failing")
	}))
	t.Cleanup(s.Close)
	return s, n
}

// backendTrafficBudgetYAML: the Services budgeted and unbudgeted are one
// always-failing backend; budgeted has a retry budget of 10 percent of
// the requests in flight, at least 1 retry (minRetryRate count 1). The
// HTTPRoute budget retries 503 up to 3 times on both paths: /budgeted to
// budgeted, /unbudgeted to unbudgeted.
const backendTrafficBudgetYAML = `apiVersion: gateway.networking.x-k8s.io/v1alpha1
kind: XBackendTrafficPolicy
metadata: {name: budget, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: budgeted}]
  retryConstraint:
    budget: {percent: 10, interval: 10s}
    minRetryRate: {count: 1, interval: 1s}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: budget, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [budget.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /budgeted}}]
    retry: {codes: [503], attempts: 3}
    backendRefs: [{name: budgeted, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /unbudgeted}}]
    retry: {codes: [503], attempts: 3}
    backendRefs: [{name: unbudgeted, port: 80}]
`

// TestBackendTrafficPolicyRetryBudget shows retryConstraint as Envoy's
// retry budget: a backend that always answers 503 (after 200ms) is
// reached through a rule that retries 503 three times, in rounds of 3
// concurrent requests (5 rounds). Without a policy every retry is made:
// 3 retries in flight are within Envoy's default limit of a cluster (its
// max_retries circuit breaker, 3), so the backend sees 1+3 attempts per
// request, 60. With a budget of 10 percent of the requests in flight and
// at least 1 retry (minRetryRate count 1), one retry may be active at a
// time: of the 3 requests failing together, one is retried and the
// retries of the others are refused (Envoy counts them:
// upstream_rq_retry_overflow), so the backend sees about half the
// attempts. Every client gets 503 either way (the backend's answer, not
// retried). The counts are printed.
func TestBackendTrafficPolicyRetryBudget(t *testing.T) {
	const concurrent, rounds = 3, 5
	const requests = concurrent * rounds
	srv, seen := failingBackend(t, 200*time.Millisecond)
	f := startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends": []gatewayBackend{
				{Name: "budgeted", Port: portOf(srv)},
				{Name: "unbudgeted", Port: portOf(srv)},
			},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), backendTrafficBudgetYAML, nil)
	})
	poll(t, "budget.example.com served", func() error {
		if r := f.send(f.gwPort, "budget.example.com", "/unbudgeted"); r.status != 503 || r.body != "always failing" {
			return fmt.Errorf("%d %q", r.status, r.body)
		}
		return nil
	})
	line, _ := f.waitOutput("budget status", 0, regexp.MustCompile(regexp.QuoteMeta("XBackendTrafficPolicy default/budget -> default/gw: Accepted=True(Accepted)")), l4Deadline)
	t.Logf("status: %s", line)

	// send makes rounds of concurrent requests for path and returns how
	// many attempts the backend saw, the retries Envoy refused for lack of
	// budget (or of the default limit) and the clients' statuses.
	send := func(path, cluster string) (attempts int32, refused int, statuses map[int]int) {
		counter := "cluster.service/default/" + cluster + "/80.upstream_rq_retry_overflow"
		overflow, err := envoyCounter(f.admin, counter)
		if err != nil {
			t.Fatal(err)
		}
		before := seen.Load()
		var mu sync.Mutex
		statuses = map[int]int{}
		for range rounds {
			var wg sync.WaitGroup
			for range concurrent {
				wg.Go(func() {
					r := f.send(f.gwPort, "budget.example.com", path)
					mu.Lock()
					statuses[r.status]++
					mu.Unlock()
				})
			}
			wg.Wait()
		}
		after, err := envoyCounter(f.admin, counter)
		if err != nil {
			t.Fatal(err)
		}
		return seen.Load() - before, after - overflow, statuses
	}
	without, refused, st := send("/unbudgeted", "unbudgeted")
	t.Logf("without a retry budget: %d requests (%d rounds of %d), %d attempts at the backend, %d retries refused, client statuses %v",
		requests, rounds, concurrent, without, refused, st)
	if without != requests*4 || refused != 0 || st[503] != requests {
		t.Errorf("without a retry budget: %d attempts, %d refused, statuses %v; want %d attempts (1+3 each), none refused, all 503", without, refused, st, requests*4)
	}
	with, refused, st := send("/budgeted", "budgeted")
	t.Logf("with a retry budget (10%%, min 1): %d requests (%d rounds of %d), %d attempts at the backend, %d retries refused by the budget, client statuses %v",
		requests, rounds, concurrent, with, refused, st)
	// The first attempts all reach the backend; of the requests failing
	// together one is retried, the others' retries are refused. Envoy
	// counts a retry active from the moment it is scheduled, and the 3
	// requests of a round do not fail at the same instant on a loaded
	// machine, so a round may let a retry more through (30 and 31
	// attempts were measured): a retry per round at least (the minimum
	// of 1 in flight), at most one request's worth of retries more than
	// the requests and a retry per round, and a refusal per round.
	if lo, hi := int32(requests+rounds), int32(2*requests+rounds); with < lo || with > hi || refused < rounds || st[503] != requests {
		t.Errorf("with a retry budget: %d attempts, %d refused, statuses %v; want %d to %d attempts, at least %d refused, all 503",
			with, refused, st, lo, hi, rounds)
	}
}
