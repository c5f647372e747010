package e2e

// TrafficPolicy through the real controller and Envoy: a burst over a
// local rate limit gets 429 with Retry-After and the X-RateLimit headers
// while another client (another source address, another header value)
// still passes; shadow mode lets the burst through and counts it;
// compressed responses (gzip, br, zstd) decode to the bytes the backend
// sent; a request body over the limit gets 413 whether it has a
// Content-Length or is chunked, one under it passes.

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// routeEachYAML is an HTTPRoute of Gateway gw per entry of .Routes, each
// named after it, for host <name>.example.com, to Service app: the start
// of the policy tests' inputs.
const routeEachYAML = `{{range .Routes}}apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: {{.}}, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [{{.}}.example.com]
  rules:
  - backendRefs: [{name: app, port: 80}]
---
{{end}}`

// trafficYAML: HTTPRoute limited (limited.example.com: 5 requests per
// hour per client address), peruser (peruser.example.com: 3 per hour per
// value of x-user), shadow (shadow.example.com: 2 per hour, shadow: the
// buckets are not refilled during a test),
// compress (compress.example.com: Brotli, Zstd, Gzip, text/plain, 100
// bytes or more) and body (body.example.com: bodies up to 1Ki).
// {{.Route}} is the route name prefix the policies target ("" normally).
const trafficYAML = routeEachYAML + `apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: limited, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {{.Prefix}}limited}]
  rateLimit:
    local:
      rules:
      - {requests: 5, unit: Hour, by: ClientIP}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: peruser, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {{.Prefix}}peruser}]
  rateLimit:
    local:
      rules:
      - {requests: 3, unit: Hour, by: Header, header: x-user}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: shadow, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {{.Prefix}}shadow}]
  rateLimit:
    local:
      shadow: true
      rules:
      - {requests: 2, unit: Hour}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: compress, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {{.Prefix}}compress}]
  compression:
    algorithms: [Brotli, Zstd, Gzip]
    contentTypes: [text/plain]
    minSize: 100
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: TrafficPolicy
metadata: {name: body, namespace: default}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: {{.Prefix}}body}]
  requestBody: {maxSize: 1Ki}
`

// trafficFixture serves trafficYAML; app answers GET with page (text/plain)
// and POST with the number of body bytes it read, and counts requests.
type trafficFixture struct {
	*fixture
	hits atomic.Int64
	// other is a client whose connections come from 127.0.0.2.
	other *http.Client
}

// page is what app sends: 8 KiB of text that compresses well.
var page = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 190)

func startTraffic(t *testing.T) *trafficFixture {
	s := &trafficFixture{}
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if r.Header.Get("Upgrade") == "websocket" {
			upgradeEcho(w)
			return
		}
		if r.Method == http.MethodPost {
			n, err := io.Copy(io.Discard, r.Body)
			fmt.Fprintf(w, "read %d bytes err=%v", n, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, page)
	}), ReadHeaderTimeout: 5 * time.Second}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Serve(lis) }()
	t.Cleanup(func() { _ = app.Close() })
	prefix := ""
	if os.Getenv("XDS_E2E_PROTECTION_REMOVED") == "1" {
		prefix = "elsewhere-" // the policies target no route
	}
	s.fixture = startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends":    []gatewayBackend{{Name: "app", Port: lis.Addr().(*net.TCPAddr).Port}},
		})
		render(t, filepath.Join(f.dir, "traffic.yaml"), trafficYAML, map[string]any{
			"Routes": []string{"limited", "peruser", "shadow", "compress", "body"}, "Prefix": prefix,
		})
	})
	s.client = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	s.other = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		DisableCompression: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		},
	}}
	// Wait on the body route (a limited route would spend its tokens).
	took := poll(t, "routes served", func() error {
		if r := s.on(s.client, http.MethodGet, "body.example.com", nil, -1); r.status != 200 {
			return fmt.Errorf("body.example.com: %d %q", r.status, r.body)
		}
		return nil
	})
	t.Logf("routes answered after %s", took.Round(time.Millisecond))
	return s
}

// on sends a request to host through Envoy with c: method, the body
// (nil for none) sent with a Content-Length when length is not -1,
// chunked otherwise, and the headers given (name, value pairs).
func (s *trafficFixture) on(c *http.Client, method, host string, body []byte, length int64, headers ...string) reply {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
		if length < 0 {
			rd = io.MultiReader(rd) // no Len: the client sends it chunked
		}
	}
	req, _ := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d/", s.gwPort), rd)
	req.Host = host
	if body != nil && length >= 0 {
		req.ContentLength = length
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return exchange(c, req)
}

// burst sends n GETs to host with c and counts the answers by status;
// check is called on each 429.
func (s *trafficFixture) burst(c *http.Client, host string, n int, check func(reply), headers ...string) map[int]int {
	counts := map[int]int{}
	for range n {
		r := s.on(c, http.MethodGet, host, nil, -1, headers...)
		counts[r.status]++
		if r.status == 429 && check != nil {
			check(r)
		}
	}
	return counts
}

func TestTrafficPolicyLocalRateLimit(t *testing.T) {
	s := startTraffic(t)

	// Per client address: 5 per hour. A burst of 12 from 127.0.0.1.
	var checked bool
	before := s.hits.Load()
	got := s.burst(s.client, "limited.example.com", 12, func(r reply) {
		if checked {
			return
		}
		checked = true
		t.Logf("a refusal: %d %q retry-after=%q x-ratelimit-limit=%q x-ratelimit-remaining=%q x-ratelimit-reset=%q",
			r.status, r.body, r.header.Get("Retry-After"), r.header.Get("X-Ratelimit-Limit"), r.header.Get("X-Ratelimit-Remaining"), r.header.Get("X-Ratelimit-Reset"))
		if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
			t.Errorf("429 without a Retry-After: %v", r.header)
		}
		if r.header.Get("X-Ratelimit-Limit") == "" || r.header.Get("X-Ratelimit-Remaining") != "0" {
			t.Errorf("429 without the X-RateLimit headers: %v", r.header)
		}
	})
	t.Logf("limited.example.com, 12 requests from 127.0.0.1: %d x 200, %d x 429 (app got %d)", got[200], got[429], s.hits.Load()-before)
	if got[200] != 5 || got[429] != 7 {
		t.Errorf("127.0.0.1's burst: %v; want 5 x 200 and 7 x 429", got)
	}
	// Another client address has a bucket of its own.
	other := s.burst(s.other, "limited.example.com", 3, nil)
	t.Logf("limited.example.com, then 3 requests from 127.0.0.2: %d x 200, %d x 429", other[200], other[429])
	if other[200] != 3 {
		t.Errorf("127.0.0.2 after 127.0.0.1's burst: %v; want 3 x 200", other)
	}

	// Per header value: 3 per hour per x-user; a request without it is
	// not counted.
	alice := s.burst(s.client, "peruser.example.com", 6, nil, "x-user", "alice")
	bob := s.burst(s.client, "peruser.example.com", 2, nil, "x-user", "bob")
	anon := s.burst(s.client, "peruser.example.com", 5, nil)
	t.Logf("peruser.example.com: alice 6 requests: %d x 200, %d x 429; bob 2: %d x 200; without x-user 5: %d x 200",
		alice[200], alice[429], bob[200], anon[200])
	if alice[200] != 3 || alice[429] != 3 || bob[200] != 2 || anon[200] != 5 {
		t.Errorf("per user: alice %v, bob %v, without the header %v; want 3+3, 2, 5", alice, bob, anon)
	}
}

func TestTrafficPolicyShadowRateLimit(t *testing.T) {
	s := startTraffic(t)
	got := s.burst(s.client, "shadow.example.com", 10, nil)
	limited := s.adminStat(t, "http_local_rate_limiter.http_local_rate_limit.rate_limited")
	t.Logf("shadow.example.com (2 per hour, shadow), 10 requests: %d x 200, %d x 429; Envoy counted %d rate limited", got[200], got[429], limited)
	if got[200] != 10 {
		t.Errorf("shadow mode refused requests: %v", got)
	}
	if limited < 8 {
		t.Errorf("shadow mode counted %d requests over the limit; want 8", limited)
	}
}

// adminStat reads a counter from Envoy's admin /stats (0 when absent).
func (s *trafficFixture) adminStat(t *testing.T, name string) int {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/stats?filter=%s", s.admin, name))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	total := 0
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && strings.HasSuffix(k, name) {
			var n int
			fmt.Sscan(v, &n)
			total += n
		}
	}
	return total
}

func TestTrafficPolicyCompression(t *testing.T) {
	s := startTraffic(t)
	decoders := map[string]func(io.Reader) (io.Reader, error){
		"gzip": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
		"br":   func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil },
		"zstd": func(r io.Reader) (io.Reader, error) { return zstd.NewReader(r) },
	}
	for _, tc := range []struct{ accept, want string }{
		{"gzip", "gzip"}, {"br", "br"}, {"zstd", "zstd"},
		// Equal q-values: the policy's first (Brotli), then the client's
		// order; "*" is the policy's first.
		{"gzip, deflate, br, zstd", "br"}, {"zstd, gzip, br", "br"}, {"gzip, zstd", "gzip"}, {"zstd, gzip", "zstd"}, {"*", "br"},
		// The client's q-values first.
		{"br;q=0.5, zstd;q=0.8, gzip;q=0.1", "zstd"},
		{"identity", ""}, {"", ""},
	} {
		r := s.on(s.client, http.MethodGet, "compress.example.com", nil, -1, "accept-encoding", tc.accept)
		enc := r.header.Get("Content-Encoding")
		plain := []byte(r.body)
		if dec := decoders[enc]; dec != nil {
			rd, err := dec(strings.NewReader(r.body))
			if err == nil {
				plain, err = io.ReadAll(rd)
			}
			if err != nil {
				t.Errorf("accept-encoding %q: %s response does not decode: %v", tc.accept, enc, err)
				continue
			}
		}
		t.Logf("accept-encoding %q: %d, content-encoding %q, %d bytes on the wire, %d decoded", tc.accept, r.status, enc, len(r.body), len(plain))
		if r.status != 200 || enc != tc.want || string(plain) != page {
			t.Errorf("accept-encoding %q: %d, content-encoding %q (want %q), decoded equal to the page: %t", tc.accept, r.status, enc, tc.want, string(plain) == page)
		}
		if enc != "" && (!strings.Contains(strings.ToLower(strings.Join(r.header.Values("Vary"), ",")), "accept-encoding") || r.header.Get("Content-Length") != "") {
			t.Errorf("accept-encoding %q: a %s response with vary %q and content-length %q", tc.accept, enc, r.header.Values("Vary"), r.header.Get("Content-Length"))
		}
	}
	// A route without the policy is never compressed.
	r := s.on(s.client, http.MethodGet, "body.example.com", nil, -1, "accept-encoding", "gzip, br, zstd")
	if enc := r.header.Get("Content-Encoding"); enc != "" || r.body != page {
		t.Errorf("body.example.com (no compression): content-encoding %q", enc)
	}
}

func TestTrafficPolicyRequestBodyLimit(t *testing.T) {
	s := startTraffic(t)
	small, big := bytes.Repeat([]byte("a"), 1000), bytes.Repeat([]byte("b"), 1025)
	for _, tc := range []struct {
		what   string
		body   []byte
		length int64
		want   int
	}{
		{"1000 bytes, content-length", small, int64(len(small)), 200},
		{"1000 bytes, chunked", small, -1, 200},
		{"1025 bytes, content-length", big, int64(len(big)), 413},
		{"1025 bytes, chunked", big, -1, 413},
		{"1 MiB, chunked", bytes.Repeat([]byte("c"), 1<<20), -1, 413},
	} {
		before := s.hits.Load()
		r := s.on(s.client, http.MethodPost, "body.example.com", tc.body, tc.length)
		reached := s.hits.Load() - before
		t.Logf("%s: %d %q (app got %d requests)", tc.what, r.status, r.body, reached)
		if r.status != tc.want {
			t.Errorf("%s: got %d %q; want %d", tc.what, r.status, r.body, tc.want)
		}
		if tc.want == 413 && reached != 0 {
			t.Errorf("%s: app got the request", tc.what)
		}
		if tc.want == 200 && r.body != fmt.Sprintf("read %d bytes err=<nil>", len(tc.body)) {
			t.Errorf("%s: app answered %q", tc.what, r.body)
		}
	}
}

// upgradeEcho answers an upgrade with 101 and then echoes what it reads.
func upgradeEcho(w http.ResponseWriter) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	_ = rw.Flush()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	n, _ := rw.Read(buf)
	_, _ = conn.Write(buf[:n])
}

// TestTrafficPolicyBodyLimitKeepsUpgrades: an upgrade (WebSocket) on a
// route with a body limit is forwarded at once, and its bytes flow both
// ways (the buffer filter must not wait for the end of a request that
// never ends).
func TestTrafficPolicyBodyLimitKeepsUpgrades(t *testing.T) {
	s := startTraffic(t)
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", s.gwPort), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /ws HTTP/1.1\r\nHost: body.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	head := make([]byte, 0, 512)
	buf := make([]byte, 512)
	for !bytes.Contains(head, []byte("\r\n\r\n")) {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("upgrade through body.example.com: %v after %q", err, head)
		}
		head = append(head, buf[:n]...)
	}
	status, _, _ := strings.Cut(string(head), "\r\n")
	t.Logf("upgrade through body.example.com (1Ki limit): %s", status)
	if !strings.Contains(status, " 101 ") {
		t.Fatalf("upgrade: %q", head)
	}
	if _, err := io.WriteString(conn, "hello"); err != nil {
		t.Fatal(err)
	}
	n, err := io.ReadAtLeast(conn, buf, 5)
	if err != nil || string(buf[:n]) != "hello" {
		t.Errorf("echo through the upgraded connection: %q %v", buf[:n], err)
	}
}
