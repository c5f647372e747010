package e2e

// BackendPolicy through the real controller and Envoy, backends on
// loopback: a failover benchmark (two replicas under a steady load, one
// killed: how many requests fail, and for how long, without a policy,
// with outlier detection and with active health checks), ring hash on a
// header, a circuit breaker's overflow, and the PROXY protocol (versions
// 1 and 2) read by a backend that parses it.
//
// With XDS_E2E_PROTECTION_REMOVED=1 in the environment every policy
// targets a Service that does not exist: the tests' protection removed,
// to show that they fail then.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// backendPolicyYAML: Services ring (RingHash on header x-user), narrow
// (one slow endpoint; at most 1 connection and 1 pending request),
// proxy-v1 and proxy-v2 (a backend that reads the PROXY protocol),
// outlier (passive: 3 5xx in a row eject for 30s; maxEjectionPercent
// left at its default 10, which still ejects one of the two) and probed
// (an HTTP probe of /healthz every 500ms, 2 failures make an endpoint
// unhealthy); Service unprotected has none. The
// HTTPRoute policies sends /<service> to each. {{.Target}} prefixes
// every policy's Service name ("" normally).
const backendPolicyYAML = `apiVersion: gateway.xds-controller.dev/v1alpha1
kind: BackendPolicy
metadata: {name: ring, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: {{.Target}}ring}]
  loadBalancer:
    type: RingHash
    hashKey: {type: Header, header: {name: x-user}}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: BackendPolicy
metadata: {name: narrow, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: {{.Target}}narrow, sectionName: http}]
  circuitBreaker: {maxConnections: 1, maxPendingRequests: 1}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: BackendPolicy
metadata: {name: proxy-v1, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: {{.Target}}proxy-v1}]
  proxyProtocol: {version: V1}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: BackendPolicy
metadata: {name: proxy-v2, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: {{.Target}}proxy-v2}]
  proxyProtocol: {version: V2}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: BackendPolicy
metadata: {name: outlier, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: {{.Target}}outlier}]
  healthCheck:
    passive: {consecutive5xxErrors: 3, interval: 1s, baseEjectionTime: 30s}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: BackendPolicy
metadata: {name: probed, namespace: default}
spec:
  targetRefs: [{group: "", kind: Service, name: {{.Target}}probed}]
  healthCheck:
    active:
      type: HTTP
      interval: 500ms
      timeout: 250ms
      unhealthyThreshold: 2
      http: {path: /healthz}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: policies, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [backend.example.com]
  rules:{{range .Services}}
  - matches: [{path: {type: PathPrefix, value: /{{.}}}}]
    backendRefs: [{name: {{.}}, port: 80}]{{end}}
`

// policyFixture is the fixture of backendPolicyYAML and its backends.
type policyFixture struct {
	*fixture
	// pairs are the two replicas of ring, unprotected, outlier and
	// probed, each Service its own pair.
	pairs map[string][2]*replica
	// proxied are the PROXY headers the proxy backends read, by
	// Service, in order.
	mu      sync.Mutex
	proxied map[string][]string
}

// policyServices are the Services of backendPolicyYAML with two replicas.
var policyServices = []string{"ring", "unprotected", "outlier", "probed"}

func startBackendPolicies(t *testing.T) *policyFixture {
	p := &policyFixture{pairs: map[string][2]*replica{}, proxied: map[string][]string{}}
	var backends []gatewayBackend
	for _, s := range policyServices {
		rs, port := startReplicas(t)
		p.pairs[s] = rs
		backends = append(backends, gatewayBackend{Name: s, Port: port, Addresses: []string{rs[0].addr, rs[1].addr}})
	}
	backends = append(backends, gatewayBackend{Name: "narrow", Port: slowBackend(t, time.Second)})
	for _, s := range []string{"proxy-v1", "proxy-v2"} {
		backends = append(backends, gatewayBackend{Name: s, Port: p.proxyBackend(t, s)})
	}
	target := ""
	if os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1" {
		target = "elsewhere-"
	}
	p.fixture = startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{"GatewayPort": f.gwPort, "Backends": backends})
		render(t, filepath.Join(f.dir, "policies.yaml"), backendPolicyYAML, map[string]any{
			"Target":   target,
			"Services": append([]string{"narrow", "proxy-v1", "proxy-v2"}, policyServices...),
		})
	})
	took := poll(t, "routes served", func() error {
		for _, s := range policyServices {
			if r := p.send(p.gwPort, "backend.example.com", "/"+s); r.status != 200 {
				return fmt.Errorf("/%s: %d %q", s, r.status, r.body)
			}
		}
		return nil
	})
	t.Logf("routes answered after %s", took.Round(time.Millisecond))
	if target == "" {
		for _, name := range []string{"ring", "narrow", "proxy-v1", "proxy-v2", "outlier", "probed"} {
			want := "BackendPolicy default/" + name + " -> default/gw: Accepted=True(Accepted)"
			p.waitOutput(name+" status", 0, regexp.MustCompile(regexp.QuoteMeta(want)), l4Deadline)
		}
	}
	return p
}

// slowBackend serves HTTP on 127.0.0.1, answering "slow" after delay,
// and returns its port.
func slowBackend(t *testing.T, delay time.Duration) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		fmt.Fprint(w, "slow")
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// proxyBackend serves HTTP on 127.0.0.1 behind a PROXY protocol header
// (version 1 or 2) that every connection must start with: it records the
// header's source address under name and answers it ("src=ip:port"); a
// connection without a header is closed. It returns the port.
func (p *policyFixture) proxyBackend(t *testing.T, name string) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pl := &proxyListener{Listener: l, seen: func(src string) {
		p.mu.Lock()
		p.proxied[name] = append(p.proxied[name], src)
		p.mu.Unlock()
	}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src, _ := r.Context().Value(proxySource{}).(string)
		fmt.Fprintf(w, "src=%s", src)
	}), ReadHeaderTimeout: 5 * time.Second, ConnContext: func(ctx context.Context, c net.Conn) context.Context {
		if pc, ok := c.(*proxyConn); ok {
			return context.WithValue(ctx, proxySource{}, pc.src)
		}
		return ctx
	}}
	go func() { _ = srv.Serve(pl) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// proxyListener accepts connections that start with a PROXY header.
type proxyListener struct {
	net.Listener
	seen func(src string)
}

func (l *proxyListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		br := bufio.NewReader(c)
		src, err := readProxyHeader(br)
		if err != nil {
			c.Close()
			continue
		}
		_ = c.SetReadDeadline(time.Time{})
		l.seen(src)
		_, addr, _ := strings.Cut(src, " ")
		return &proxyConn{Conn: c, r: br, src: addr}, nil
	}
}

// proxySource keys a request context's PROXY header source address.
type proxySource struct{}

// proxyConn is a connection past its PROXY header.
type proxyConn struct {
	net.Conn
	r   *bufio.Reader
	src string
}

func (c *proxyConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// proxyV2Signature starts a PROXY protocol version 2 header.
var proxyV2Signature = []byte("\r\n\r\n\x00\r\nQUIT\n")

// readProxyHeader reads a PROXY protocol header, version 1 ("PROXY TCP4
// src dst sport dport\r\n") or 2 (the signature, version and command,
// family, length, addresses), and returns "v1 ip:port" or "v2 ip:port",
// the source address it carries.
func readProxyHeader(r *bufio.Reader) (string, error) {
	head, err := r.Peek(12)
	if err != nil {
		return "", err
	}
	if bytes.Equal(head, proxyV2Signature) {
		var fixed [16]byte
		if _, err := io.ReadFull(r, fixed[:]); err != nil {
			return "", err
		}
		if fixed[12]>>4 != 2 || fixed[13] != 0x11 { // version 2; TCP over IPv4
			return "", fmt.Errorf("PROXY v2: version/command %#x, family %#x", fixed[12], fixed[13])
		}
		body := make([]byte, binary.BigEndian.Uint16(fixed[14:]))
		if _, err := io.ReadFull(r, body); err != nil || len(body) < 12 {
			return "", fmt.Errorf("PROXY v2 addresses: %v", err)
		}
		return fmt.Sprintf("v2 %s", net.JoinHostPort(net.IP(body[0:4]).String(), fmt.Sprint(binary.BigEndian.Uint16(body[8:10])))), nil
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	f := strings.Fields(strings.TrimSuffix(line, "\r\n"))
	if len(f) != 6 || f[0] != "PROXY" || f[1] != "TCP4" {
		return "", fmt.Errorf("not a PROXY v1 header: %q", line)
	}
	return "v1 " + net.JoinHostPort(f[2], f[4]), nil
}

func TestBackendPolicy(t *testing.T) {
	p := startBackendPolicies(t)

	t.Run("ring hash keeps a key on one replica", func(t *testing.T) {
		for _, user := range []string{"alice", "bob"} {
			got := map[string]int{}
			for range 50 {
				r := p.send(p.gwPort, "backend.example.com", "/ring", "x-user", user)
				got[fmt.Sprintf("%d %s", r.status, r.body)]++
			}
			if len(got) != 1 {
				t.Fatalf("x-user %s: %v over 50 requests; want one replica", user, got)
			}
			t.Logf("x-user %s: %v", user, got)
		}
		// Many keys spread over both replicas (the ring is not one
		// replica's).
		got := map[string]int{}
		for i := range 40 {
			got[p.send(p.gwPort, "backend.example.com", "/ring", "x-user", fmt.Sprint("user-", i)).body]++
		}
		if got["one"] == 0 || got["two"] == 0 {
			t.Fatalf("40 keys: %v; want both replicas", got)
		}
		t.Logf("40 keys: %v", got)
	})

	t.Run("circuit breaker answers the overflow 503", func(t *testing.T) {
		const burst = 10
		type answer struct {
			status     int
			overloaded string
		}
		answers := make(chan answer, burst)
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: burst}}
		for range burst {
			go func() {
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/narrow", p.gwPort), nil)
				req.Host = "backend.example.com"
				r := exchange(client, req)
				answers <- answer{r.status, r.header.Get("x-envoy-overloaded")}
			}()
		}
		counts := map[int]int{}
		for range burst {
			a := <-answers
			counts[a.status]++
			if a.status == 503 && a.overloaded != "true" {
				t.Errorf("a 503 without x-envoy-overloaded: true (%q)", a.overloaded)
			}
		}
		// One request on the one connection, one pending: the rest
		// overflow at once.
		if counts[503] < burst-3 || counts[200] < 1 {
			t.Fatalf("burst of %d: %v; want at most 1 active and 1 pending request served, the rest 503", burst, counts)
		}
		t.Logf("burst of %d to a 1s backend (max 1 connection, 1 pending): %v", burst, counts)
	})

	t.Run("PROXY protocol carries the client's address", func(t *testing.T) {
		for _, s := range []string{"proxy-v1", "proxy-v2"} {
			// Two clients on connections of their own: each header is
			// its own client's (Envoy pools upstream connections per
			// downstream address when it sends PROXY headers).
			for range 2 {
				var local string
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/%s", p.gwPort, s), nil)
				req.Host = "backend.example.com"
				req = req.WithContext(httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
					GotConn: func(i httptrace.GotConnInfo) { local = i.Conn.LocalAddr().String() },
				}))
				r := exchange(&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}, req)
				if r.status != 200 || r.body != "src="+local {
					p.mu.Lock()
					t.Logf("headers read: %v", p.proxied)
					p.mu.Unlock()
					t.Fatalf("%s: %d %q; want 200 src=%s (the client's own address)", s, r.status, r.body, local)
				}
				t.Logf("%s: client %s, backend read %q", s, local, r.body)
			}
			p.mu.Lock()
			seen := p.proxied[s]
			p.mu.Unlock()
			version := strings.TrimPrefix(s, "proxy-")
			for _, h := range seen {
				if !strings.HasPrefix(h, version+" ") {
					t.Errorf("%s: a header of another version: %q", s, h)
				}
			}
		}
	})
}

// failoverRate and failoverRun are the benchmark's load: a request every
// 1/failoverRate for failoverRun, one replica killed at failoverKill.
const (
	failoverRate = 50
	failoverRun  = 8 * time.Second
	failoverKill = 2 * time.Second
)

// failover is what one run of the benchmark measured.
type failover struct {
	sent, failed int
	// first and last are the times of the first and last failure since
	// the kill (0 when none failed).
	first, last time.Duration
}

// runFailover sends requests to path at failoverRate for failoverRun,
// kills one of rs at failoverKill, and counts the failures (not 200).
func (p *policyFixture) runFailover(path string, rs [2]*replica) failover {
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	type result struct {
		at time.Duration
		ok bool
	}
	results := make(chan result, failoverRate*int(failoverRun/time.Second)+16)
	var wg sync.WaitGroup
	began := time.Now()
	tick := time.NewTicker(time.Second / failoverRate)
	defer tick.Stop()
	killed := false
	for now := range tick.C {
		at := now.Sub(began)
		if at >= failoverRun {
			break
		}
		if !killed && at >= failoverKill {
			rs[1].stop()
			killed = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", p.gwPort, path), nil)
			req.Host = "backend.example.com"
			r := exchange(client, req)
			results <- result{at, r.status == 200}
		}()
	}
	wg.Wait()
	close(results)
	var out failover
	var fails []time.Duration
	for r := range results {
		out.sent++
		if !r.ok {
			out.failed++
			fails = append(fails, r.at-failoverKill)
		}
	}
	sort.Slice(fails, func(i, j int) bool { return fails[i] < fails[j] })
	if len(fails) > 0 {
		out.first, out.last = fails[0], fails[len(fails)-1]
	}
	return out
}

// TestBackendPolicyFailover is the failover benchmark: each Service has
// two replicas under failoverRate requests per second for failoverRun;
// one is killed (its listener closed: connections refused) at
// failoverKill. It prints how many requests failed and over how long,
// without a policy (the baseline: half the requests fail until the
// end), with outlier detection and with active health checks; each
// mechanism must fail fewer requests than the baseline (no timed
// assertion: the figures depend on the machine).
func TestBackendPolicyFailover(t *testing.T) {
	p := startBackendPolicies(t)
	got := map[string]failover{}
	for _, s := range []string{"unprotected", "outlier", "probed"} {
		f := p.runFailover("/"+s, p.pairs[s])
		got[s] = f
		t.Logf("failover %-11s: %d of %d requests failed; failures from %s to %s after the kill (window %s)",
			s, f.failed, f.sent, f.first.Round(time.Millisecond), f.last.Round(time.Millisecond), (f.last - f.first).Round(time.Millisecond))
	}
	base := got["unprotected"]
	if base.failed == 0 {
		t.Fatalf("the baseline lost no request: the kill did not happen")
	}
	var errs []error
	for _, s := range []string{"outlier", "probed"} {
		if got[s].failed >= base.failed {
			errs = append(errs, fmt.Errorf("%s: %d failures, no fewer than the %d without a policy", s, got[s].failed, base.failed))
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}
