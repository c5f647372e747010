package e2e

// Attacks on the edge (issue 25 item 7), loopback only and bounded in
// count and time: each sends what a hostile client would through the
// standalone Envoy with the hardened defaults (xdstranslator.DefaultEdge,
// bootstrap.Overload), while a normal client keeps asking.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// normalClient sends GET a.example.com/ through f's Gateway on a new
// connection every 50 ms until stop is closed, and returns how many
// answered 200, the failures, and the slowest answer (valid once done is
// closed).
func normalClient(f *fixture, stop <-chan struct{}) (ok *atomic.Int32, failures func() []string, done <-chan struct{}, slowest *time.Duration) {
	ok = &atomic.Int32{}
	slowest = new(time.Duration)
	var mu sync.Mutex
	var failed []string
	d := make(chan struct{})
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		defer close(d)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", f.gwPort), nil)
			req.Host = "a.example.com"
			sent := time.Now()
			resp, err := client.Do(req)
			*slowest = max(*slowest, time.Since(sent))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			switch {
			case err == nil && resp.StatusCode == 200:
				ok.Add(1)
			default:
				mu.Lock()
				if err != nil {
					failed = append(failed, err.Error())
				} else {
					failed = append(failed, resp.Status)
				}
				mu.Unlock()
			}
		}
	}()
	return ok, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), failed...) }, d, slowest
}

// TestEdgeSlowHeaders: 300 clients that send their request headers one
// byte a second (slowloris) are each answered 408 and disconnected by the
// request headers timeout (10 s by default) within 10 s of their first
// byte, plus a margin of 5 s; meanwhile a normal client, on a new
// connection every 50 ms, is served throughout. Envoy counts every cut in
// downstream_rq_header_timeout.
func TestEdgeSlowHeaders(t *testing.T) {
	const (
		slow    = 300
		timeout = 10 * time.Second // xdstranslator.DefaultEdge.RequestHeadersTimeout
		margin  = 5 * time.Second
	)
	f := start(t)
	f.await("a.example.com", "/", 200, "alpha /")

	stop := make(chan struct{})
	ok, failures, clientDone, slowest := normalClient(f, stop)
	type result struct {
		cut   time.Duration // from the first byte to the end of the connection
		reply string
		err   error
	}
	results := make(chan result, slow)
	began := time.Now()
	deadline := began.Add(timeout + margin + 5*time.Second)
	for range slow {
		go func() {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", f.gwPort), 5*time.Second)
			if err != nil {
				results <- result{err: err}
				return
			}
			defer c.Close()
			first := time.Now()
			closed := make(chan result, 1)
			go func() {
				_ = c.SetReadDeadline(deadline)
				b, err := io.ReadAll(c)
				r := result{cut: time.Since(first), reply: string(b)}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					r.err = fmt.Errorf("still open after %s", time.Since(first).Round(time.Second))
				}
				closed <- r
			}()
			// The request line, then a header that never ends.
			msg := "GET / HTTP/1.1\r\nHost: a.example.com\r\nX-Slow: "
			for i := 0; ; i++ {
				b := "a"
				if i < len(msg) {
					b = msg[i : i+1]
				}
				if _, err := c.Write([]byte(b)); err != nil {
					break // Envoy closed the connection
				}
				select {
				case r := <-closed:
					results <- r
					return
				case <-time.After(time.Second):
				}
			}
			results <- <-closed
		}()
	}
	var worst time.Duration
	var open, not408 []string
	for range slow {
		r := <-results
		switch {
		case r.err != nil:
			open = append(open, r.err.Error())
		case !strings.HasPrefix(r.reply, "HTTP/1.1 408"):
			not408 = append(not408, fmt.Sprintf("%q after %s", firstLine(r.reply), r.cut.Round(time.Millisecond)))
		}
		worst = max(worst, r.cut)
	}
	close(stop)
	<-clientDone
	cuts, err := envoyCounter(f.admin, "http.default/gw/http.downstream_rq_header_timeout")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d slow-header connections: %d still open at the end, %d cut without 408, the last cut %s after its first byte; "+
		"Envoy's downstream_rq_header_timeout %d; the normal client: %d answered 200 (the slowest in %s), %d failed, in %s",
		slow, len(open), len(not408), worst.Round(time.Millisecond), cuts, ok.Load(), slowest.Round(time.Millisecond), len(failures()), time.Since(began).Round(time.Millisecond))
	if len(open) > 0 {
		t.Errorf("%d of %d slow-header connections were not cut: %s", len(open), slow, open[0])
	}
	if len(not408) > 0 {
		t.Errorf("%d slow-header connections ended without 408: %v", len(not408), not408[:min(3, len(not408))])
	}
	if worst > timeout+margin {
		t.Errorf("a slow-header connection lasted %s, want at most %s", worst, timeout+margin)
	}
	if cuts < slow {
		t.Errorf("downstream_rq_header_timeout = %d, want %d", cuts, slow)
	}
	if fl := failures(); len(fl) > 0 || ok.Load() == 0 {
		t.Errorf("the normal client: %d answered, %d failed (%v)", ok.Load(), len(fl), fl[:min(3, len(fl))])
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\r\n")
	return l
}

// TestEdgeHTTP2RapidReset: 8 attackers flood Envoy for 5 s with HTTP/2
// (h2c) rapid resets (CVE-2023-44487): on a connection, streams opened and
// reset at once (HEADERS then RST_STREAM), up to 2000 each; when Envoy
// closes the connection, the attacker opens another one (at most 40 each).
// Envoy closes every attacking connection after at most 500 streams (the
// bootstrap's runtime overload.premature_reset_total_stream_count, 500,
// and overload.premature_reset_min_stream_lifetime_seconds, 1: a
// connection whose streams are mostly reset within a second of their
// start), counting each in downstream_rq_too_many_premature_resets, while
// a normal client, on a new connection every 50 ms, is served throughout.
// (Without that protection Envoy's HTTP/2 codec still ends such a
// connection with a GOAWAY, but only after about 1700 streams.)
func TestEdgeHTTP2RapidReset(t *testing.T) {
	const (
		attackers = 8
		perConn   = 2000
		maxConns  = 40
		flood     = 5 * time.Second
	)
	f := start(t)
	f.await("a.example.com", "/", 200, "alpha /")

	stop := make(chan struct{})
	ok, failures, clientDone, slowest := normalClient(f, stop)
	var conns, cut, goaways, sent atomic.Int32
	var mu sync.Mutex
	var survivors []string
	var wg sync.WaitGroup
	began := time.Now()
	for range attackers {
		wg.Go(func() {
			for i := 0; i < maxConns && time.Since(began) < flood; i++ {
				conns.Add(1)
				r := rapidReset(fmt.Sprintf("127.0.0.1:%d", f.gwPort), perConn, time.Now().Add(10*time.Second))
				sent.Add(int32(r.sent))
				if r.goaway {
					goaways.Add(1)
				}
				if !r.closed {
					mu.Lock()
					survivors = append(survivors, fmt.Sprintf("open after %d streams: %v", r.sent, r.err))
					mu.Unlock()
					return
				}
				cut.Add(1)
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	close(stop)
	<-clientDone
	premature, err := envoyCounter(f.admin, "http.default/gw/http.downstream_rq_too_many_premature_resets")
	if err != nil {
		t.Fatal(err)
	}
	resets, _ := envoyCounter(f.admin, "http.default/gw/http.downstream_rq_rx_reset")
	t.Logf("%d attackers, %d rapid-reset connections, %d streams written in %s: %d connections closed by Envoy (%d with a GOAWAY); "+
		"Envoy's downstream_rq_too_many_premature_resets %d, downstream_rq_rx_reset %d; the normal client: %d answered 200 (the slowest in %s), %d failed",
		attackers, conns.Load(), sent.Load(), took.Round(time.Millisecond), cut.Load(), goaways.Load(), premature, resets, ok.Load(), slowest.Round(time.Millisecond), len(failures()))
	if len(survivors) > 0 {
		t.Errorf("%d rapid-reset connections were not closed by Envoy: %v", len(survivors), survivors[:min(3, len(survivors))])
	}
	if n := conns.Load(); n > 0 && resets/int(n) > 500 {
		t.Errorf("Envoy took %d streams per rapid-reset connection, want at most 500 (premature_reset_total_stream_count)", resets/int(n))
	}
	if premature < int(cut.Load()) {
		t.Errorf("downstream_rq_too_many_premature_resets = %d, want one per closed connection (%d)", premature, cut.Load())
	}
	if fl := failures(); len(fl) > 0 || ok.Load() == 0 {
		t.Errorf("the normal client: %d answered, %d failed (%v)", ok.Load(), len(fl), fl[:min(3, len(fl))])
	}
}

// attack is what one rapid-reset connection achieved.
type attack struct {
	// sent streams were written (Envoy may have closed the connection
	// before it read them all).
	sent int
	// closed: Envoy closed the connection before the deadline; goaway: it
	// sent a GOAWAY first.
	closed, goaway bool
	err            error
}

// rapidReset opens an h2c connection (prior knowledge) to addr and writes
// up to n streams, each HEADERS (GET a.example.com/) followed at once by
// RST_STREAM CANCEL, then waits until Envoy closes the connection or the
// deadline passes.
func rapidReset(addr string, n int, deadline time.Time) attack {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return attack{err: err}
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	bw := bufio.NewWriter(c)
	if _, err := bw.WriteString(http2.ClientPreface); err != nil {
		return attack{err: err}
	}
	fr := http2.NewFramer(bw, c)
	if err := fr.WriteSettings(); err != nil {
		return attack{err: err}
	}
	// Read (and drop) what Envoy sends; note a GOAWAY and the end.
	var goaway atomic.Bool
	closed := make(chan error, 1)
	// Envoy's SETTINGS, acknowledged by the writer (one writing goroutine).
	settings := make(chan struct{}, 1)
	go func() {
		for {
			frame, err := fr.ReadFrame()
			if err != nil {
				closed <- err
				return
			}
			switch fr := frame.(type) {
			case *http2.GoAwayFrame:
				goaway.Store(true)
			case *http2.SettingsFrame:
				if !fr.IsAck() {
					select {
					case settings <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, h := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "a.example.com"}, {":path", "/"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: h[0], Value: h[1]})
	}
	block := hb.Bytes()
	a := attack{}
	end := func(err error) attack {
		var ne net.Error
		a.closed = !(errors.As(err, &ne) && ne.Timeout())
		a.goaway, a.err = goaway.Load(), err
		return a
	}
	for id := uint32(1); a.sent < n; id += 2 {
		select {
		case err := <-closed:
			return end(err)
		case <-settings:
			_ = fr.WriteSettingsAck()
		default:
		}
		if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true, EndStream: true}) != nil ||
			fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
			break
		}
		a.sent++
		// Flush every few streams, as a real flood would.
		if a.sent%10 == 0 && bw.Flush() != nil {
			break
		}
	}
	_ = bw.Flush()
	return end(<-closed)
}

// TestEdgeOversizedHeaders: a request whose headers exceed 60 KiB, and one
// with more than 100 headers, are refused with 431 before any route sees
// them; a header name with an underscore is refused with 400
// (headers_with_underscores_action REJECT_REQUEST); the same request
// without them is served. Raw HTTP/1.1 on a new connection each.
func TestEdgeOversizedHeaders(t *testing.T) {
	f := start(t)
	f.await("a.example.com", "/", 200, "alpha /")
	many := ""
	for i := range 101 {
		many += fmt.Sprintf("X-H%d: v\r\n", i)
	}
	for _, c := range []struct {
		name, headers string
		want          string
	}{
		{"plain", "", "HTTP/1.1 200"},
		{"a 64 KiB header", "X-Big: " + strings.Repeat("a", 64<<10) + "\r\n", "HTTP/1.1 431"},
		{"101 headers", many, "HTTP/1.1 431"},
		{"a header name with an underscore", "X_User: admin\r\n", "HTTP/1.1 400"},
	} {
		got, err := rawRequest(f.gwPort, "GET / HTTP/1.1\r\nHost: a.example.com\r\n"+c.headers+"Connection: close\r\n\r\n")
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		t.Logf("%s: %s", c.name, firstLine(got))
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want %s", c.name, firstLine(got), c.want)
		}
	}
	for stat, want := range map[string]int{"http.default/gw/http.downstream_rq_4xx": 3} {
		if n, _ := envoyCounter(f.admin, stat); n < want {
			t.Errorf("%s = %d, want %d", stat, n, want)
		}
	}
}

// rawRequest writes req on a new connection to Envoy's port and returns
// all it answers.
func rawRequest(port int, req string) (string, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		// Envoy may answer and close before it read all we sent.
		b, _ := io.ReadAll(c)
		if len(b) > 0 {
			return string(b), nil
		}
		return "", err
	}
	b, err := io.ReadAll(c)
	if len(b) > 0 {
		return string(b), nil
	}
	return "", err
}

// TestEdgeOverloadHeap: with a heap size below what Envoy uses at rest
// (spec.edge.overload.maxHeapSize 1Mi, through --edge), the overload
// manager shrinks the heap and stops accepting connections and requests:
// its actions are active in the admin's statistics, and the Gateway's
// listener serves nothing.
func TestEdgeOverloadHeap(t *testing.T) {
	f := start(t, func(f *fixture) {
		p := filepath.Join(t.TempDir(), "edge.yaml")
		if err := os.WriteFile(p, []byte("overload: {maxHeapSize: 1Mi}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f.args = append(f.args, "--edge", p)
	})
	actions := []string{
		"overload.envoy.overload_actions.shrink_heap.active",
		"overload.envoy.overload_actions.stop_accepting_connections.active",
		"overload.envoy.overload_actions.stop_accepting_requests.active",
	}
	poll(t, "the overload actions", func() error {
		for _, a := range actions {
			if n, err := envoyCounter(f.admin, a); err != nil || n != 1 {
				return fmt.Errorf("%s = %d (%v)", a, n, err)
			}
		}
		return nil
	})
	pressure, _ := envoyCounter(f.admin, "overload.envoy.resource_monitors.fixed_heap.pressure")
	code, body := f.get("a.example.com", "/")
	t.Logf("fixed_heap pressure %d%%, shrink_heap, stop_accepting_connections and stop_accepting_requests active; a request: %d %.80q", pressure, code, body)
	if code == 200 {
		t.Errorf("an overloaded Envoy served a request")
	}
}
