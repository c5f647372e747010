package kubernetes

import (
	"testing"
	"time"
)

// TestRunAt: when the pipeline runs for pending changes (100 ms debounce,
// 1 s at most): a lone change after a quiet period at once; a lone change
// right after a run at once too, unless a run began early (inside the
// window of the run before it) in the last second, when it waits for the
// end of the last run's window (not a whole debounce after the change); a
// burst once it has been quiet for the debounce, and a burst that keeps
// coming after the longest wait.
func TestRunAt(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	const debounce, maxDebounce = 100 * time.Millisecond, time.Second
	never := time.Time{}
	for _, c := range []struct {
		name           string
		lastRun, early time.Time
		first, last    time.Time
		kicks          int
		want           time.Time
	}{
		{"the first change ever (at once)", never, never, ms(0), ms(0), 1, never.Add(debounce)},
		{"a lone change after a quiet period (due before it: at once)", ms(0), never, ms(500), ms(500), 1, ms(100)},
		{"a lone change 30 ms after a run, none early yet (at once)", ms(0), never, ms(30), ms(30), 1, ms(30)},
		{"a lone change 30 ms after a run, the last early one 1.5 s ago (at once)", ms(0), ms(-1500), ms(30), ms(30), 1, ms(30)},
		{"a lone change 30 ms after a run, the last early one 0.5 s ago", ms(0), ms(-500), ms(30), ms(30), 1, ms(100)},
		{"a lone change 30 ms after an early run", ms(0), ms(-10), ms(30), ms(30), 1, ms(100)},
		{"a second change 20 ms after the first", ms(0), never, ms(30), ms(50), 2, ms(150)},
		{"a burst that keeps coming", ms(0), never, ms(30), ms(990), 40, ms(1030)},
	} {
		if got := runAt(c.lastRun, c.early, c.first, c.last, c.kicks, debounce, maxDebounce); !got.Equal(c.want) {
			t.Errorf("%s: runs at %s, want %s", c.name, got.Sub(t0), c.want.Sub(t0))
		}
	}
}
