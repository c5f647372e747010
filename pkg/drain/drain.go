// Package drain stops an Envoy pod gracefully: the preStop hook of the
// Envoy container (`xds-controller envoy-drain`) tells Envoy, through its
// admin interface on the pod's loopback, to fail its health checks and to
// drain every listener, then waits for the drain time before the kubelet
// sends SIGTERM.
//
// The Envoy image has neither a shell nor an HTTP client, and its admin
// interface listens on 127.0.0.1 only (no pod port may offer a drain
// trigger: any pod of the cluster could call it). So the SVID agent, a
// native sidecar built from the controller's static binary, copies its own
// executable into a folder shared with the Envoy container when it starts
// (InstallSelf), and the Envoy container's preStop hook runs that copy.
package drain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Drainer drains one Envoy through its admin interface.
type Drainer struct {
	// Admin is the admin interface's host:port, e.g. 127.0.0.1:9901.
	Admin string
	// DrainTime is how long Envoy drains before its listeners close: the
	// --drain-time-s Envoy was started with. Drain returns DrainTime after
	// the drain started.
	DrainTime time.Duration
	// Client sends the admin requests (default: a client with a 5 s
	// timeout and no proxy).
	Client *http.Client
	// Wait waits d or until ctx ends (default: a timer); tests replace it.
	Wait func(ctx context.Context, d time.Duration) error
}

// Drain runs the graceful shutdown sequence of Envoy's admin API, in this
// order:
//
//  1. POST /healthcheck/fail: Envoy's health checks fail (the readiness
//     listener's /ready answers 503) and every HTTP connection is drained
//     from now on: HTTP/1.1 responses carry `Connection: close`, HTTP/2
//     connections get a GOAWAY.
//  2. POST /drain_listeners?graceful: the drain sequence starts; with
//     --drain-strategy immediate every connection is told to close at
//     once, listeners keep accepting (and draining) new connections for
//     --drain-time-s, then close. Not `inboundonly`: that option stops only
//     listeners whose traffic_direction is INBOUND, and the Gateway
//     listeners leave it unset; a Gateway's Envoy has no outbound listener.
//  3. waits DrainTime, so that the kubelet's SIGTERM comes after the
//     listeners closed.
//
// It returns the first admin error (a non-2xx answer or a failed request)
// without waiting: an Envoy that does not answer has nothing to drain.
func (d *Drainer) Drain(ctx context.Context) error {
	if d.Admin == "" {
		return errors.New("drain: the admin address is required")
	}
	for _, p := range []string{"/healthcheck/fail", "/drain_listeners?graceful"} {
		if err := d.post(ctx, p); err != nil {
			return err
		}
	}
	wait := d.Wait
	if wait == nil {
		wait = sleep
	}
	return wait(ctx, d.DrainTime)
}

func (d *Drainer) post(ctx context.Context, path string) error {
	c := d.Client
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	}
	url := "http://" + d.Admin + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("drain: POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("drain: POST %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// InstallSelf copies the running executable (os.Executable) to dst, mode
// 0555, through a temporary file in dst's folder renamed over dst (a
// restarted agent replaces the copy atomically; a preStop hook never runs a
// half-written file). The folder must exist, be writable and allow
// executing files (an emptyDir does: the kubelet mounts it without noexec).
func InstallSelf(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("drain: own executable: %w", err)
	}
	return install(self, dst)
}

func install(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*")
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("drain: copying %s to %s: %w", src, dst, err)
	}
	if err := tmp.Chmod(0o555); err != nil {
		tmp.Close()
		return fmt.Errorf("drain: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	return nil
}
