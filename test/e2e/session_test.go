package e2e

// HTTPRoute rule sessionPersistence (GEP-1619, experimental) through the
// real controller and Envoy: two replicas of one Service on loopback
// (127.0.0.1 and 127.0.0.2, one port), HTTPRoute rules with a cookie, a
// permanent cookie, a header and none; a GRPCRoute rule with a header.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

// sessionRequests is how many requests each step of the tests sends.
const sessionRequests = 20

// replica is one endpoint of a Service of the test: a server on addr
// that answers its name (an HTTP body, or a gRPC answer's x-backend).
type replica struct {
	name, addr string
	stop       func()
}

// twoListeners returns listeners on 127.0.0.1 and 127.0.0.2 with one free
// port (an EndpointSlice has one port for all its endpoints) and the port.
func twoListeners(t *testing.T) ([2]net.Listener, int) {
	t.Helper()
	for range 50 {
		port := freePort(t)
		l1, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
		if err != nil {
			l1.Close()
			continue
		}
		return [2]net.Listener{l1, l2}, port
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return [2]net.Listener{}, 0
}

// startReplicas starts two HTTP replicas, "one" on 127.0.0.1 and "two" on
// 127.0.0.2, on one port, and returns them and the port. A stopped
// replica refuses connections.
func startReplicas(t *testing.T) ([2]*replica, int) {
	ls, port := twoListeners(t)
	var rs [2]*replica
	for i, l := range ls {
		name := []string{"one", "two"}[i]
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			fmt.Fprint(w, name)
		}), ReadHeaderTimeout: 5 * time.Second}
		done := make(chan struct{})
		go func() { _ = srv.Serve(l); close(done) }()
		rs[i] = &replica{name: name, addr: l.Addr().(*net.TCPAddr).IP.String(), stop: func() { _ = srv.Close(); <-done }}
		t.Cleanup(rs[i].stop)
	}
	return rs, port
}

// sessionRoutesYAML: the HTTPRoute sticky for sticky.example.com, whose
// rules all go to the Service sticky: /cookie with a session cookie named
// sticky, /retried the same with a retry (attempts only: connection
// errors), /permanent with a permanent cookie (Max-Age one hour) of a
// generated name, /expiring with a permanent cookie brief of three seconds
// (slack for a loaded machine), /header with the header x-session, /none
// without session persistence; and /outsider, for the Service outsider. With the
// HTTPS listener's Secret sticky-cert (.Cert, .Key: base64 PEM).
const sessionRoutesYAML = `apiVersion: v1
kind: Secret
metadata: {name: sticky-cert, namespace: default}
type: kubernetes.io/tls
data:
  tls.crt: {{.Cert}}
  tls.key: {{.Key}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: sticky, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [sticky.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /cookie}}]
    sessionPersistence: {type: Cookie, cookie: {name: sticky}}
    backendRefs: [{name: sticky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /retried}}]
    sessionPersistence: {type: Cookie, cookie: {name: sticky}}
    retry: {attempts: 2}
    backendRefs: [{name: sticky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /permanent}}]
    sessionPersistence: {absoluteTimeout: 1h, cookie: {lifetimeType: Permanent}}
    backendRefs: [{name: sticky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /expiring}}]
    sessionPersistence: {absoluteTimeout: 3s, cookie: {name: brief, lifetimeType: Permanent}}
    backendRefs: [{name: sticky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /header}}]
    sessionPersistence: {type: Header, header: {name: x-session}}
    backendRefs: [{name: sticky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /none}}]
    backendRefs: [{name: sticky, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /outsider}}]
    backendRefs: [{name: outsider, port: 80}]
`

// sessionFixture serves sessionRoutesYAML with the Service sticky on the
// addresses of rs (at port) and outsider on its own server; renderSticky
// rewrites the Service's EndpointSlice with only the replicas given.
type sessionFixture struct {
	*fixture
	// https is the port of the HTTPS listener (a certificate for
	// sticky.example.com of the CA roots), where the route is too.
	https        int
	roots        *x509.CertPool
	rs           [2]*replica
	port         int
	outsider     int
	renderSticky func(rs ...*replica)
}

func startSession(t *testing.T) *sessionFixture {
	rs, port := startReplicas(t)
	ca := newCA(t, "e2e session CA")
	cert := ca.issue(t, "sticky.example.com")
	s := &sessionFixture{rs: rs, port: port, outsider: portOf(backend(t, "outsider")), https: freePort(t), roots: x509.NewCertPool()}
	s.roots.AddCert(ca.cert)
	s.fixture = startWith(t, func(f *fixture) {
		s.renderSticky = func(live ...*replica) {
			addrs := make([]string, 0, len(live))
			for _, r := range live {
				addrs = append(addrs, r.addr)
			}
			render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
				"GatewayPort": f.gwPort,
				"Listeners":   []string{fmt.Sprintf("{name: https, protocol: HTTPS, port: %d, tls: {certificateRefs: [{name: sticky-cert}]}}", s.https)},
				"Backends": []gatewayBackend{
					{Name: "sticky", Port: port, Addresses: addrs},
					{Name: "outsider", Port: s.outsider},
				},
			})
		}
		s.renderSticky(rs[0], rs[1])
		render(t, filepath.Join(f.dir, "routes.yaml"), sessionRoutesYAML, map[string]string{
			"Cert": base64.StdEncoding.EncodeToString(cert.certPEM), "Key": base64.StdEncoding.EncodeToString(cert.keyPEM)})
	})
	took := poll(t, "sticky.example.com served", func() error {
		if r := s.send(s.gwPort, "sticky.example.com", "/none"); r.status != 200 || (r.body != "one" && r.body != "two") {
			return fmt.Errorf("%d %q", r.status, r.body)
		}
		return nil
	})
	t.Logf("sticky route answered after %s", took.Round(time.Millisecond))
	return s
}

// spread sends sessionRequests requests for path with the headers given
// and counts the answers by body, those other than 200 as "status <n>".
func (s *sessionFixture) spread(path string, headers ...string) map[string]int {
	got := map[string]int{}
	for range sessionRequests {
		r := s.send(s.gwPort, "sticky.example.com", path, headers...)
		if r.status != 200 {
			got[fmt.Sprintf("status %d", r.status)]++
			continue
		}
		got[r.body]++
	}
	return got
}

// replicaNamed is the replica whose name is body.
func (s *sessionFixture) replicaNamed(t *testing.T, body string) (pinned, other *replica) {
	t.Helper()
	switch body {
	case s.rs[0].name:
		return s.rs[0], s.rs[1]
	case s.rs[1].name:
		return s.rs[1], s.rs[0]
	}
	t.Fatalf("answer %q is no replica's", body)
	return nil, nil
}

// sessionCookie is the Set-Cookie of r named name, and its value.
func sessionCookie(t *testing.T, r reply, name string) (setCookie, value string) {
	t.Helper()
	for _, sc := range r.header.Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(sc); err == nil && c.Name == name {
			return sc, c.Value
		}
	}
	t.Fatalf("no Set-Cookie %s in %v", name, r.header)
	return "", ""
}

// TestSessionPersistenceCookie shows a rule's cookie sessionPersistence:
// the first answer sets the cookie (Path=/, HttpOnly, SameSite=Strict, no
// Max-Age or Expires: a session cookie), and every request that carries
// it, alone or among other cookies, reaches the replica that set it, while
// requests without it, or on a rule without sessionPersistence (with the
// cookie or not), reach both replicas. On the HTTPS listener the cookie is
// Secure too. A permanent cookie's absoluteTimeout is its Max-Age, and
// Envoy renews the cookie once it has expired. A cookie a client writes
// reaches the replica it names, but never an endpoint of another Service.
// When the pinned replica has stopped, a rule with retry retries on the
// other one at once; when it is gone (out of the Service's EndpointSlice
// too, as Kubernetes does for a pod that stops), the request with the
// cookie reaches the other one on any rule and its answer sets a new
// cookie, which then sticks to it.
func TestSessionPersistenceCookie(t *testing.T) {
	s := startSession(t)

	if got := s.spread("/none"); got["one"] == 0 || got["two"] == 0 {
		t.Fatalf("without sessionPersistence: %v, want both replicas", got)
	} else {
		t.Logf("without sessionPersistence: %v", got)
	}
	if got := s.spread("/cookie"); got["one"] == 0 || got["two"] == 0 {
		t.Fatalf("sessionPersistence, requests without the cookie: %v, want both replicas", got)
	} else {
		t.Logf("sessionPersistence, requests without the cookie: %v", got)
	}

	first := s.send(s.gwPort, "sticky.example.com", "/cookie")
	set, value := sessionCookie(t, first, "sticky")
	t.Logf("first answer %q: Set-Cookie: %s", first.body, set)
	for _, want := range []string{"Path=/", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(set, want) {
			t.Errorf("Set-Cookie %q lacks %s", set, want)
		}
	}
	if strings.Contains(set, "Max-Age") || strings.Contains(set, "Expires") {
		t.Errorf("session cookie %q has Max-Age or Expires", set)
	}
	pinned, other := s.replicaNamed(t, first.body)
	if got := s.spread("/cookie", "Cookie", "sticky="+value); got[pinned.name] != sessionRequests {
		t.Fatalf("with the cookie: %v, want all %d on %s", got, sessionRequests, pinned.name)
	}
	t.Logf("with the cookie: all %d on %s", sessionRequests, pinned.name)
	// Among the application's own cookies (GEP-1619: "MUST be able to
	// handle multiple cookies").
	if got := s.spread("/cookie", "Cookie", "app=1; sticky="+value+"; theme=dark"); got[pinned.name] != sessionRequests {
		t.Fatalf("with the cookie among others: %v, want all %d on %s", got, sessionRequests, pinned.name)
	}

	// The cookie's value is the base64 of Envoy's cookie message, whose
	// field 1 is the endpoint's "address:port": a client can write one.
	// Naming the other replica, it reaches that replica: a client picks
	// its replica among the rule's endpoints. Naming the outsider
	// Service's endpoint, which is no host of the sticky cluster, it is
	// load balanced as if it had none: a cookie never reaches an endpoint
	// outside the backend the route chose.
	forge := func(addr string) string {
		return "sticky=" + base64.StdEncoding.EncodeToString(append([]byte{0x0a, byte(len(addr))}, addr...))
	}
	if got := s.spread("/cookie", "Cookie", forge(fmt.Sprintf("%s:%d", other.addr, s.port))); got[other.name] != sessionRequests {
		t.Fatalf("forged cookie naming replica %s: %v, want all on it", other.name, got)
	} else {
		t.Logf("forged cookie naming replica %s: %v", other.name, got)
	}
	if got := s.spread("/cookie", "Cookie", forge(fmt.Sprintf("127.0.0.1:%d", s.outsider))); got["one"]+got["two"] != sessionRequests || got["one"] == 0 || got["two"] == 0 {
		t.Fatalf("forged cookie naming the outsider: %v, want both replicas and never the outsider", got)
	} else {
		t.Logf("forged cookie naming the outsider: %v", got)
	}

	if got := s.spread("/none", "Cookie", "sticky="+value); got["one"] == 0 || got["two"] == 0 {
		t.Fatalf("the cookie on the rule without sessionPersistence: %v, want both replicas", got)
	}

	// On the HTTPS listener the cookie is Secure as well.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: s.roots, ServerName: "sticky.example.com"}}}
	defer client.CloseIdleConnections()
	poll(t, "the HTTPS listener", func() error {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/cookie", s.https), nil)
		req.Host = "sticky.example.com"
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		set := resp.Header.Get("Set-Cookie")
		if resp.StatusCode != 200 || !strings.HasPrefix(set, "sticky=") || !strings.Contains(set, "; Secure") || !strings.Contains(set, "SameSite=Strict") {
			return fmt.Errorf("%d, Set-Cookie %q, want sticky=...; SameSite=Strict; Secure", resp.StatusCode, set)
		}
		t.Logf("over HTTPS: Set-Cookie: %s", set)
		return nil
	})

	perm := s.send(s.gwPort, "sticky.example.com", "/permanent")
	if !regexp.MustCompile(`^session-[0-9a-f]{16}=`).MatchString(perm.header.Get("Set-Cookie")) ||
		!strings.Contains(perm.header.Get("Set-Cookie"), "Max-Age=3600") {
		t.Errorf("permanent cookie: Set-Cookie %q, want a generated name and Max-Age=3600", perm.header.Get("Set-Cookie"))
	} else {
		t.Logf("permanent cookie: Set-Cookie: %s", perm.header.Get("Set-Cookie"))
	}

	// A permanent cookie expires at the proxy too: within its three seconds, an
	// answer to a request that carries it sets no cookie (the endpoint is
	// the cookie's); after it, the answer sets a new one, whichever
	// endpoint served it.
	brief := s.send(s.gwPort, "sticky.example.com", "/expiring")
	_, briefValue := sessionCookie(t, brief, "brief")
	if r := s.send(s.gwPort, "sticky.example.com", "/expiring", "Cookie", "brief="+briefValue); r.body != brief.body || r.header.Get("Set-Cookie") != "" {
		t.Errorf("within absoluteTimeout: %q, Set-Cookie %q; want %q and none", r.body, r.header.Get("Set-Cookie"), brief.body)
	}
	time.Sleep(4100 * time.Millisecond)
	if r := s.send(s.gwPort, "sticky.example.com", "/expiring", "Cookie", "brief="+briefValue); r.status != 200 || !strings.HasPrefix(r.header.Get("Set-Cookie"), "brief=") {
		t.Errorf("after absoluteTimeout: %d, Set-Cookie %q; want a new cookie", r.status, r.header.Get("Set-Cookie"))
	} else {
		t.Logf("after absoluteTimeout: the cookie is renewed: %s", r.header.Get("Set-Cookie"))
	}

	// The pinned replica stops, and leaves the EndpointSlice. Until it
	// has left, Envoy still sends the session's requests to it (no
	// health checking: what it answers then is logged, not asserted); a
	// rule with retry retries the refused connection on the other
	// replica, whose answer sets a new cookie.
	pinned.stop()
	listed := s.send(s.gwPort, "sticky.example.com", "/cookie", "Cookie", "sticky="+value)
	t.Logf("with the cookie of the stopped replica, still listed: %d %q", listed.status, listed.body)
	if r := s.send(s.gwPort, "sticky.example.com", "/retried", "Cookie", "sticky="+value); r.status != 200 || r.body != other.name || !strings.HasPrefix(r.header.Get("Set-Cookie"), "sticky=") {
		t.Errorf("with retry, the cookie of the stopped replica, still listed: %d %q, Set-Cookie %q; want %s and a new cookie", r.status, r.body, r.header.Get("Set-Cookie"), other.name)
	} else {
		t.Logf("with retry, the cookie of the stopped replica, still listed: %s, Set-Cookie: %s", r.body, r.header.Get("Set-Cookie"))
	}
	s.renderSticky(other)
	poll(t, "the stopped replica out of the cluster", func() error {
		if got := s.spread("/none"); got[other.name] != sessionRequests {
			return fmt.Errorf("%v", got)
		}
		return nil
	})
	moved := s.send(s.gwPort, "sticky.example.com", "/cookie", "Cookie", "sticky="+value)
	if moved.status != 200 || moved.body != other.name {
		t.Fatalf("with the cookie of the stopped replica: %d %q, want %s", moved.status, moved.body, other.name)
	}
	set2, value2 := sessionCookie(t, moved, "sticky")
	if value2 == value {
		t.Fatalf("the answer of the other replica kept the old cookie %q", set2)
	}
	t.Logf("with the cookie of the stopped replica: %s, new Set-Cookie: %s", moved.body, set2)
	if got := s.spread("/cookie", "Cookie", "sticky="+value2); got[other.name] != sessionRequests {
		t.Fatalf("with the new cookie: %v, want all on %s", got, other.name)
	}

	s.waitOutput("sticky status", 0, regexp.MustCompile(regexp.QuoteMeta(
		"HTTPRoute default/sticky -> default/gw: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)")), l4Deadline)
}

// TestSessionPersistenceHeader is TestSessionPersistenceCookie for a
// header: the first answer carries the header x-session, and every
// request that carries it back reaches the same replica, until that
// replica is gone: then the other one answers, with a new x-session.
func TestSessionPersistenceHeader(t *testing.T) {
	s := startSession(t)

	if got := s.spread("/header"); got["one"] == 0 || got["two"] == 0 {
		t.Fatalf("requests without the header: %v, want both replicas", got)
	}
	first := s.send(s.gwPort, "sticky.example.com", "/header")
	session := first.header.Get("x-session")
	if session == "" {
		t.Fatalf("first answer %q has no x-session header: %v", first.body, first.header)
	}
	t.Logf("first answer %q: x-session: %s", first.body, session)
	pinned, other := s.replicaNamed(t, first.body)
	if got := s.spread("/header", "x-session", session); got[pinned.name] != sessionRequests {
		t.Fatalf("with the header: %v, want all %d on %s", got, sessionRequests, pinned.name)
	}
	t.Logf("with the header: all %d on %s", sessionRequests, pinned.name)
	if got := s.spread("/none", "x-session", session); got["one"] == 0 || got["two"] == 0 {
		t.Fatalf("the header on the rule without sessionPersistence: %v, want both replicas", got)
	}

	pinned.stop()
	s.renderSticky(other)
	poll(t, "the stopped replica out of the cluster", func() error {
		if got := s.spread("/none"); got[other.name] != sessionRequests {
			return fmt.Errorf("%v", got)
		}
		return nil
	})
	moved := s.send(s.gwPort, "sticky.example.com", "/header", "x-session", session)
	if moved.status != 200 || moved.body != other.name {
		t.Fatalf("with the header of the stopped replica: %d %q, want %s", moved.status, moved.body, other.name)
	}
	session2 := moved.header.Get("x-session")
	if session2 == "" || session2 == session {
		t.Fatalf("the other replica's answer has x-session %q, want a new one", session2)
	}
	t.Logf("with the header of the stopped replica: %s, new x-session: %s", moved.body, session2)
	if got := s.spread("/header", "x-session", session2); got[other.name] != sessionRequests {
		t.Fatalf("with the new header: %v, want all on %s", got, other.name)
	}
}

// grpcSessionRoutesYAML: the GRPCRoute grpc-sticky for grpc.example.com,
// UnaryCall with the session header x-grpc-session and EmptyCall without,
// both to the Service grpc-sticky.
const grpcSessionRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc-sticky, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [grpc.example.com]
  rules:
  - matches: [{method: {service: grpc.testing.TestService, method: UnaryCall}}]
    sessionPersistence: {type: Header, header: {name: x-grpc-session}}
    backendRefs: [{name: grpc-sticky, port: 80}]
  - matches: [{method: {service: grpc.testing.TestService, method: EmptyCall}}]
    backendRefs: [{name: grpc-sticky, port: 80}]
`

// TestSessionPersistenceGRPC shows a GRPCRoute rule's header
// sessionPersistence with two grpc-go replicas of one Service: the first
// answer's response metadata carries x-grpc-session, and every call that
// sends it back reaches the same replica, while calls without it, or of
// the rule without sessionPersistence, reach both.
func TestSessionPersistenceGRPC(t *testing.T) {
	ls, port := twoListeners(t)
	for i, l := range ls {
		s := grpc.NewServer()
		testpb.RegisterTestServiceServer(s, &grpcBackend{name: []string{"one", "two"}[i]})
		go func() { _ = s.Serve(l) }()
		t.Cleanup(s.Stop)
	}
	f := startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends":    []gatewayBackend{{Name: "grpc-sticky", Port: port, AppProtocol: "kubernetes.io/h2c", Addresses: []string{"127.0.0.1", "127.0.0.2"}}},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), grpcSessionRoutesYAML, nil)
	})
	conn := dialGateway(t, f.gwPort, "grpc.example.com")
	const unary, empty = "/grpc.testing.TestService/UnaryCall", "/grpc.testing.TestService/EmptyCall"
	took := poll(t, "grpc.example.com served", func() error {
		if r := grpcCall(conn, unary, &testpb.SimpleRequest{}, &testpb.SimpleResponse{}); r.code != codes.OK {
			return fmt.Errorf("%s", r)
		}
		return nil
	})
	t.Logf("GRPCRoute answered after %s", took.Round(time.Millisecond))

	// spread makes sessionRequests calls of method with the metadata kv
	// and counts the answers by x-backend.
	spread := func(method string, kv ...string) map[string]int {
		got := map[string]int{}
		for range sessionRequests {
			var r grpcResult
			if method == unary {
				r = grpcCall(conn, method, &testpb.SimpleRequest{}, &testpb.SimpleResponse{}, kv...)
			} else {
				r = grpcCall(conn, method, &testpb.Empty{}, &testpb.Empty{}, kv...)
			}
			if r.code != codes.OK {
				got[r.code.String()]++
				continue
			}
			got[strings.Join(r.header.Get("x-backend"), ",")]++
		}
		return got
	}
	if got := spread(unary); got["one"] == 0 || got["two"] == 0 {
		t.Fatalf("calls without x-grpc-session: %v, want both replicas", got)
	}
	first := grpcCall(conn, unary, &testpb.SimpleRequest{}, &testpb.SimpleResponse{})
	session := first.header.Get("x-grpc-session")
	if first.code != codes.OK || len(session) != 1 {
		t.Fatalf("first call: %s, x-grpc-session %q; want one value", first, session)
	}
	pinned := first.header.Get("x-backend")[0]
	t.Logf("first call answered by %s: x-grpc-session: %s", pinned, session[0])
	if got := spread(unary, "x-grpc-session", session[0]); got[pinned] != sessionRequests {
		t.Fatalf("with x-grpc-session: %v, want all %d on %s", got, sessionRequests, pinned)
	}
	t.Logf("with x-grpc-session: all %d on %s", sessionRequests, pinned)
	if got := spread(empty, "x-grpc-session", session[0]); got["one"] == 0 || got["two"] == 0 {
		t.Fatalf("x-grpc-session on the rule without sessionPersistence: %v, want both replicas", got)
	}
}
