package kubernetes

import (
	"testing"
	"time"
)

// TestRunAt: when the pipeline runs for pending changes (100 ms debounce,
// 1 s at most): a lone change after a quiet period at once, a lone change
// right after one run (a stray event's) at once too, a lone change right
// after two runs when the earlier run's debounce window ends (not a whole
// debounce after the change), a burst once it has been quiet for the
// debounce, and a burst that keeps coming after the longest wait.
func TestRunAt(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	const debounce, maxDebounce = 100 * time.Millisecond, time.Second
	for _, c := range []struct {
		name                 string
		earlier, first, last time.Time // earlier: the run before the last
		kicks                int
		want                 time.Time
	}{
		{"the first change ever (at once)", time.Time{}, ms(0), ms(0), 1, time.Time{}.Add(debounce)},
		{"a lone change after a quiet period (due before it: at once)", ms(0), ms(500), ms(500), 1, ms(100)},
		{"a lone change 30 ms after one run that followed a quiet period (at once)", ms(-400), ms(30), ms(30), 1, ms(-300)},
		{"a lone change 30 ms after the second of two runs 20 ms apart", ms(0), ms(50), ms(50), 1, ms(100)},
		{"a second change 20 ms after the first", ms(0), ms(30), ms(50), 2, ms(150)},
		{"a burst that keeps coming", ms(0), ms(30), ms(990), 40, ms(1030)},
	} {
		if got := runAt(c.earlier, c.first, c.last, c.kicks, debounce, maxDebounce); !got.Equal(c.want) {
			t.Errorf("%s: runs at %s, want %s", c.name, got.Sub(t0), c.want.Sub(t0))
		}
	}
}
