package identity

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Per-client limits of the identity service (Server.Limiter). An agent asks
// once per SVID (at half of the SVID's lifetime) and, after a failure,
// retries after 1, 2, 4 ... 30 s (agent.Backoff): six requests in its first
// 31 s of failures, well within the burst.
const (
	// DefaultClientBurst is how many requests one client may send at once.
	DefaultClientBurst = 10
	// DefaultClientRate is the sustained rate of one client: one request
	// every 6 s (10 a minute).
	DefaultClientRate = rate.Limit(1.0 / 6)
	// maxClients bounds the clients tracked at once; beyond it, new clients
	// share one limiter (a flood from many addresses is then limited as one
	// client, while the clients already tracked keep their own).
	maxClients = 1 << 16
	// sweepEvery is how often clients whose bucket is full again (idle for
	// burst/rate) are forgotten.
	sweepEvery = time.Minute
)

// ClientLimiter is a token bucket per client (golang.org/x/time/rate): per
// source IP address, IPv6 addresses by their /64 (what one host commonly
// owns). It is safe for concurrent use. The limit is per source address,
// not per claimed ServiceAccount: the claim is unverified when the limit
// applies, and a limit per claim would let anyone spend a victim fleet's
// budget.
type ClientLimiter struct {
	rate  rate.Limit
	burst int

	mu        sync.Mutex
	clients   map[netip.Prefix]*rate.Limiter
	overflow  *rate.Limiter
	lastSweep time.Time
}

// NewClientLimiter allows each client burst requests at once and r per
// second after that.
func NewClientLimiter(r rate.Limit, burst int) *ClientLimiter {
	return &ClientLimiter{rate: r, burst: burst, clients: map[netip.Prefix]*rate.Limiter{}, overflow: rate.NewLimiter(r, burst)}
}

// Allow takes one request of the client at remoteAddr ("ip:port", as
// http.Request.RemoteAddr) at now. When the client is over its limit it
// returns false and how long until its next request would be allowed. An
// address that does not parse counts as one client with every other such
// address.
func (l *ClientLimiter) Allow(remoteAddr string, now time.Time) (bool, time.Duration) {
	key := clientKey(remoteAddr)
	l.mu.Lock()
	if now.Sub(l.lastSweep) >= sweepEvery {
		for k, lim := range l.clients {
			if lim.TokensAt(now) >= float64(l.burst) {
				delete(l.clients, k)
			}
		}
		l.lastSweep = now
	}
	lim := l.clients[key]
	if lim == nil {
		lim = l.overflow
		if len(l.clients) < maxClients {
			lim = rate.NewLimiter(l.rate, l.burst)
			l.clients[key] = lim
		}
	}
	l.mu.Unlock()
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Duration(0)
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// clientKey is the client of remoteAddr: its IPv4 address as a /32, its
// IPv6 address's /64; the zero prefix when it does not parse.
func clientKey(remoteAddr string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}
