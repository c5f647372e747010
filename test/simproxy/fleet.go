package simproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"time"
)

// Fleet is simulated proxies connected to one xDS server from this
// process. Its proxies stop when Close is called.
type Fleet struct {
	addr, scope string
	creds       func() (*tls.Config, error)
	ctx         context.Context
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	// Bytes is the encoded size of every response the proxies received
	// (payload only: no gRPC framing nor TLS).
	Bytes atomic.Int64
	// Errs carries the proxies' fatal errors (a refused stream, missing
	// credentials), each prefixed with the proxy's id.
	Errs chan error
	// Proxies are the proxies connected, in the order of Connect.
	Proxies []*Proxy
}

// NewFleet returns an empty fleet whose proxies will connect to the xDS
// server at addr (host:port) as nodes of scope (the node's cluster), with
// the TLS configuration creds returns (Credentials) when each connects.
func NewFleet(addr, scope string, creds func() (*tls.Config, error)) *Fleet {
	ctx, cancel := context.WithCancel(context.Background())
	return &Fleet{addr: addr, scope: scope, creds: creds, ctx: ctx, cancel: cancel, Errs: make(chan error, 1024)}
}

// Close stops every proxy and waits until their streams have ended.
func (f *Fleet) Close() {
	f.cancel()
	f.wg.Wait()
}

// Connect starts a proxy of node id and adds it to the fleet. Its fatal
// error, if any, goes to Errs.
func (f *Fleet) Connect(id string) *Proxy {
	p := &Proxy{ID: id, scope: f.scope, Synced: make(chan struct{}), bytes: &f.Bytes}
	f.wg.Go(func() {
		creds, err := f.creds()
		if err == nil {
			err = p.run(f.ctx, f.addr, creds)
		}
		if err != nil {
			select {
			case f.Errs <- fmt.Errorf("%s: %w", p.ID, err):
			default:
			}
		}
	})
	f.Proxies = append(f.Proxies, p)
	return p
}

// Grow connects proxies "<prefix><i>" until the fleet has n, spread over
// a second, as a fleet whose controller came back does (Envoy's
// reconnection is jittered), then waits until every one is synced. It
// fails with the first fatal error of a proxy, or when one is not synced
// within timeout.
func (f *Fleet) Grow(n int, prefix string, timeout time.Duration) error {
	for i := len(f.Proxies); i < n; i++ {
		f.Connect(fmt.Sprintf("%s%d", prefix, i))
		time.Sleep(time.Second / time.Duration(n))
	}
	deadline := time.After(timeout)
	for _, p := range f.Proxies {
		select {
		case <-p.Synced:
		case err := <-f.Errs:
			return err
		case <-deadline:
			return fmt.Errorf("%s not synced after %s", p.ID, timeout)
		}
	}
	return nil
}

// addresses matches the "read tcp A->B: " of a network error, which
// differs for every connection.
var addresses = regexp.MustCompile(`(read|write) tcp \S+->\S+: `)

// Failures returns how many streams the proxies opened again after a
// failure, and how many proxies last failed with each message (its
// connection's addresses left out).
func (f *Fleet) Failures() (reconnects int64, last map[string]int) {
	last = map[string]int{}
	for _, p := range f.Proxies {
		reconnects += p.Reconnects.Load()
		if e, ok := p.LastErr.Load().(string); ok {
			last[addresses.ReplaceAllString(e, "")]++
		}
	}
	return reconnects, last
}

// Arrival is when one change's route configuration reached the fleet:
// the first proxy's receipt of it and the last proxy's ACK, and the bytes
// the proxies received meanwhile (every type, payload only).
type Arrival struct {
	First, Last time.Time
	Bytes       int64
}

// Spread is the time from the first receipt to the last ACK: how long the
// xDS server took to bring every proxy the change it published.
func (a Arrival) Spread() time.Duration { return a.Last.Sub(a.First) }

// ErrNoArrival is returned by AwaitRoutes when a proxy has not ACKed a
// new route configuration within the timeout.
var ErrNoArrival = errors.New("no new route configuration ACKed")

// AwaitRoutes notes each proxy's route configuration responses, calls
// change (which makes one), and waits until every proxy has ACKed at
// least one more, for at most timeout after change returned. It fails
// with change's error, a proxy's fatal error, or ErrNoArrival (wrapped
// with the proxy's id).
func (f *Fleet) AwaitRoutes(change func() error, timeout time.Duration) (Arrival, error) {
	before := make([]int64, len(f.Proxies))
	for i, p := range f.Proxies {
		before[i] = p.RDS.Load()
	}
	bytes0 := f.Bytes.Load()
	if err := change(); err != nil {
		return Arrival{}, err
	}
	deadline := time.Now().Add(timeout)
	var first, last int64
	for i, p := range f.Proxies {
		for p.RDS.Load() == before[i] {
			if time.Now().After(deadline) {
				return Arrival{}, fmt.Errorf("%s: %w within %s", p.ID, ErrNoArrival, timeout)
			}
			select {
			case err := <-f.Errs:
				return Arrival{}, err
			case <-time.After(time.Millisecond):
			}
		}
		if r := p.RDSRcv.Load(); first == 0 || r < first {
			first = r
		}
		last = max(last, p.RDSAck.Load())
	}
	return Arrival{First: time.Unix(0, first), Last: time.Unix(0, last), Bytes: f.Bytes.Load() - bytes0}, nil
}
