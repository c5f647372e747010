package memo

import (
	"slices"
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
