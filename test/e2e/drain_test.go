package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/xds-controller/xds-controller/pkg/drain"
)

// TestEnvoyDrain runs the preStop hook's drain (package drain) against a
// real Envoy started the way the Envoy pods are (--drain-time-s,
// --drain-strategy immediate), serving a Gateway from the controller:
// during the drain an HTTP/1.1 keep-alive connection's next response
// carries Connection: close, a new connection is still accepted and told
// the same, an HTTP/2 connection gets a GOAWAY (the client's next request
// goes over a new connection), and /ready answers 503; once Drain has
// returned, the listener closes (connections refused).
func TestEnvoyDrain(t *testing.T) {
	const drainTime = 5 * time.Second
	f := start(t, func(f *fixture) { f.noEnvoy = true })
	f.waitOutput("bootstrap written", 0, regexp.MustCompile(`Envoy bootstrap: `), 30*time.Second)
	log, _ := os.Create(filepath.Join(t.TempDir(), "envoy.log"))
	envoy := exec.Command(f.envoy, "-c", filepath.Join(f.state, "envoy-bootstrap.yaml"), "--disable-hot-restart", "--log-level", "warn",
		"--drain-time-s", fmt.Sprint(int(drainTime/time.Second)), "--drain-strategy", "immediate")
	envoy.Stdout, envoy.Stderr = log, log
	if err := envoy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = envoy.Process.Kill(); _ = envoy.Wait(); log.Close() })
	f.await("a.example.com", "/", 200, "alpha /")

	url := fmt.Sprintf("http://127.0.0.1:%d/", f.gwPort)
	h1 := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1}}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	h2 := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, Protocols: &protocols}}
	defer h1.CloseIdleConnections()
	defer h2.CloseIdleConnections()
	// One request on each client before the drain: the connections the
	// drain must close.
	for proto, c := range map[string]*http.Client{"HTTP/1.1": h1, "HTTP/2.0": h2} {
		r, err := send(c, url)
		if err != nil || r.close || r.proto != proto {
			t.Fatalf("%s before the drain: %+v %v", proto, r, err)
		}
	}

	var during []string
	d := &drain.Drainer{
		Admin:     fmt.Sprintf("127.0.0.1:%d", f.admin),
		DrainTime: drainTime,
		// Called once the drain has started; checks what clients see
		// while Envoy drains, then waits the rest of the drain time.
		Wait: func(ctx context.Context, wait time.Duration) error {
			began := time.Now()
			r, err := send(h1, url)
			if err != nil || !r.reused || !r.close {
				t.Errorf("HTTP/1.1 keep-alive connection during the drain: %+v %v; want its next response with Connection: close", r, err)
			}
			r, err = send(h1, url) // a new connection: still accepted
			if err != nil || r.reused || !r.close {
				t.Errorf("new HTTP/1.1 connection during the drain: %+v %v; want it accepted, with Connection: close", r, err)
			}
			// The GOAWAY reaches the HTTP/2 client asynchronously: poll
			// until a request goes over a new connection.
			for {
				r, err := send(h2, url)
				if err != nil {
					t.Errorf("HTTP/2 during the drain: %v", err)
					break
				}
				if !r.reused {
					t.Logf("HTTP/2: a new connection after the GOAWAY, %s into the drain", time.Since(began).Round(time.Millisecond))
					break
				}
				if time.Since(began) > wait/2 {
					t.Errorf("HTTP/2: the connection is still reused %s into the drain: no GOAWAY", time.Since(began).Round(time.Millisecond))
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/ready", f.admin)); err != nil || body != "DRAINING\n" {
				t.Errorf("/ready during the drain: %q %v, want DRAINING", body, err)
			}
			during = append(during, "checked")
			left := wait - time.Since(began)
			if left < 0 {
				t.Errorf("the checks took %s, longer than the drain time %s: their results are not from the drain", time.Since(began), wait)
				left = 0
			}
			time.Sleep(left)
			return nil
		},
	}
	if err := d.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 {
		t.Fatalf("the drain waited %d times", len(during))
	}
	// Envoy closes its listeners at the end of the drain time, on its own
	// timer: poll.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
		_, err := send(c, url)
		if errors.Is(err, syscall.ECONNREFUSED) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener still accepts connections 30s after the drain: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sent is what a client saw of one request.
type sent struct {
	reused, close bool
	proto         string
}

// send GETs url with Host a.example.com and reports whether the
// connection was reused and the response asked to close it.
func send(c *http.Client, url string) (sent, error) {
	var s sent
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { s.reused = i.Reused },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return s, err
	}
	req.Host = "a.example.com"
	resp, err := c.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	s.close, s.proto = resp.Close, resp.Proto
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("status %d", resp.StatusCode)
	}
	return s, nil
}
