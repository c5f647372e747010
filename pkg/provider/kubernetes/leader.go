package kubernetes

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaseGuard wraps the leader election lock and records when our last
// successful acquisition or renewal of the Lease started. Other candidates
// can take the Lease only LeaseDuration after they observed that renewal,
// which is later than its start, so the lead is certainly ours until start
// + LeaseDuration; we use the shorter renew deadline as the bound.
type leaseGuard struct {
	resourcelock.Interface
	valid time.Duration

	mu      sync.Mutex
	renewed time.Time // start of our last successful Create/Update as holder
}

func (g *leaseGuard) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := g.Interface.Create(ctx, ler)
	g.observe(start, ler, err)
	return err
}

func (g *leaseGuard) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := g.Interface.Update(ctx, ler)
	g.observe(start, ler, err)
	return err
}

func (g *leaseGuard) observe(start time.Time, ler resourcelock.LeaderElectionRecord, err error) {
	if err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if ler.HolderIdentity == g.Identity() {
		g.renewed = start
	} else {
		g.renewed = time.Time{} // released
	}
}

// fresh reports whether our last renewal is recent enough to be sure we
// still hold the Lease.
func (g *leaseGuard) fresh() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.renewed.IsZero() && time.Since(g.renewed) < g.valid
}

// leadership tells whether this replica may write now.
type leadership struct {
	guard   *leaseGuard // nil without leader election
	running atomic.Bool // the leader runnable runs
}

// Leading reports whether this replica leads: the manager started our
// leader-elected runnable and, with leader election, the Lease renewal is
// fresh.
func (l *leadership) Leading() bool {
	if !l.running.Load() {
		return false
	}
	return l.guard == nil || l.guard.fresh()
}

// leaderRunnable runs only on the elected leader (NeedLeaderElection).
type leaderRunnable struct {
	l       *leadership
	onStart func()
}

func (r *leaderRunnable) Start(ctx context.Context) error {
	r.l.running.Store(true)
	defer r.l.running.Store(false)
	if r.onStart != nil {
		r.onStart()
	}
	<-ctx.Done()
	return nil
}

func (r *leaderRunnable) NeedLeaderElection() bool { return true }
