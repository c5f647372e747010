package memo

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestSweepForgetsWhatARunDidNotUse: a key survives a Sweep when the run
// got or put it, and is evicted (once) otherwise.
func TestSweepForgetsWhatARunDidNotUse(t *testing.T) {
	var tab Table[string, int]
	tab.Put("a", 1)
	tab.Put("b", 2)
	tab.Put("c", 3)
	var evicted []string
	evict := func(k string, v int) { evicted = append(evicted, k) }
	tab.Sweep(evict)
	if len(evicted) != 0 || tab.Len() != 3 {
		t.Fatalf("first run: evicted %v, %d left; want nothing evicted", evicted, tab.Len())
	}
	if v, ok := tab.Get("a"); !ok || v != 1 {
		t.Errorf("Get(a) = %d, %v", v, ok)
	}
	tab.Put("b", 20)
	tab.Sweep(evict)
	if !slices.Equal(evicted, []string{"c"}) || tab.Len() != 2 {
		t.Fatalf("second run: evicted %v, %d left; want c evicted", evicted, tab.Len())
	}
	if v, _ := tab.Get("b"); v != 20 {
		t.Errorf("Get(b) = %d, want the value put last", v)
	}
	if _, ok := tab.Get("c"); ok {
		t.Error("an evicted key is still there")
	}
	evicted = nil
	tab.Sweep(evict)
	if !slices.Equal(evicted, []string{"a"}) || tab.Len() != 1 {
		t.Errorf("the third run evicted %v, want a (it got b)", evicted)
	}
}

// TestListKeepsWhatStayed: values follow their keys through insertions,
// deletions, replacements and moves; keep can refuse one; every value not
// kept is dropped once.
func TestListKeepsWhatStayed(t *testing.T) {
	var l List[string, string]
	computed := 0
	run := func(keys []string, keep func(int, string) bool) ([]string, []string) {
		var dropped []string
		vals := l.Update(keys, keep, func(j int) string {
			computed++
			return fmt.Sprintf("%s#%d", keys[j], computed)
		}, func(v string) { dropped = append(dropped, v) })
		return vals, dropped
	}
	vals, _ := run([]string{"a", "b", "c", "d"}, nil)
	if !slices.Equal(vals, []string{"a#1", "b#2", "c#3", "d#4"}) {
		t.Fatalf("first run: %v", vals)
	}
	// b deleted, x inserted, d replaced by e, a and c kept.
	vals, dropped := run([]string{"a", "c", "x", "e"}, nil)
	if !slices.Equal(vals, []string{"a#1", "c#3", "x#5", "e#6"}) || !slices.Equal(dropped, []string{"b#2", "d#4"}) {
		t.Fatalf("second run: %v, dropped %v", vals, dropped)
	}
	// Moved, repeated, and one refused by keep.
	vals, dropped = run([]string{"e", "x", "a", "a", "c"}, func(_ int, v string) bool { return v != "c#3" })
	if !slices.Equal(vals, []string{"e#6", "x#5", "a#1", "a#7", "c#8"}) || !slices.Equal(dropped, []string{"c#3"}) {
		t.Fatalf("third run: %v, dropped %v", vals, dropped)
	}
}

// TestDiff: the keys whose element is new, gone or another, in key order,
// with the first of several elements of one key counting; an unsorted
// list is reported.
func TestDiff(t *testing.T) {
	type obj struct{ key, v string }
	a, b1, b2, c, d, dup := &obj{"a", "1"}, &obj{"b", "1"}, &obj{"b", "2"}, &obj{"c", "1"}, &obj{"d", "1"}, &obj{"d", "dup"}
	byKey := func(x, y *obj) int { return strings.Compare(x.key, y.key) }
	var got []string
	record := func(old, new *obj) {
		s := func(o *obj) string {
			if o == nil {
				return "-"
			}
			return o.key + o.v
		}
		got = append(got, s(old)+">"+s(new))
	}
	if !Diff([]*obj{a, b1, nil, c}, []*obj{a, b2, d, dup}, byKey, record) {
		t.Fatal("sorted lists reported unsorted")
	}
	if want := []string{"b1>b2", "c1>-", "->d1"}; !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	got = nil
	if Diff([]*obj{a, b1}, []*obj{a, d, b1}, byKey, record) {
		t.Error("an unsorted list was not reported")
	}
}
