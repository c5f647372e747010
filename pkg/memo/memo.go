// Package memo keeps what a computation derived from immutable inputs
// (keyed by their identity, a pointer) from one run of the computation to
// the next, and forgets what a run no longer used: a Table by key, a List
// by position in a list that changes little; Same and SameMap recognise
// a list or map handed over unchanged. The incremental stages of
// the pipeline (pkg/xdstranslator, pkg/xdsvalidate, pkg/ir,
// pkg/xdsserver) share it.
package memo

import "reflect"

// Table maps keys to values for the runs of one computation. A run looks
// its keys up (Get) or stores new values (Put), then ends with Sweep,
// which forgets the keys the run did not use. Not safe for concurrent
// use; the zero value is empty.
type Table[K comparable, V any] struct {
	m   map[K]*entry[V]
	run uint64
}

type entry[V any] struct {
	v    V
	used uint64
}

// Get returns the value stored for k, and whether there is one; a hit
// counts as a use in this run.
func (t *Table[K, V]) Get(k K) (V, bool) {
	e, ok := t.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	e.used = t.run
	return e.v, true
}

// Put stores v for k (replacing what was there), used in this run.
func (t *Table[K, V]) Put(k K, v V) {
	if t.m == nil {
		t.m = map[K]*entry[V]{}
	}
	if e, ok := t.m[k]; ok {
		e.v, e.used = v, t.run
		return
	}
	t.m[k] = &entry[V]{v: v, used: t.run}
}

// Sweep ends a run: it forgets every key that the run neither got nor
// put, calling evict (when not nil) for each, and starts the next run.
func (t *Table[K, V]) Sweep(evict func(K, V)) {
	for k, e := range t.m {
		if e.used != t.run {
			delete(t.m, k)
			if evict != nil {
				evict(k, e.v)
			}
		}
	}
	t.run++
}

// Len is the number of keys stored.
func (t *Table[K, V]) Len() int { return len(t.m) }

// List keeps the values computed for the keys of a list whose order
// changes little from one run to the next (resources sorted by name, a
// listener's routes in precedence order), and finds them again in the
// next run's list by walking both lists side by side, comparing keys: an
// insertion, a deletion or a replacement costs one computation, not one
// lookup per key. Keys that moved further are found through an index of
// the last run's list, built when first needed. The zero value is empty.
type List[K comparable, V any] struct {
	keys []K
	vals []V
}

// Update returns the values for keys, which the caller must not modify
// afterwards: a key of the last run's list keeps its value when keep
// (nil: always) says so, the others get compute(j) (j indexes keys). It
// calls drop (when not nil) with every value of the last run not kept,
// once all are computed.
func (l *List[K, V]) Update(keys []K, keep func(j int, v V) bool, compute func(j int) V, drop func(V)) []V {
	prev, vals := l.keys, l.vals
	if keep == nil && len(keys) > 0 && Same(keys, prev) {
		return vals // the very list of the last run, which nobody modified
	}
	out := make([]V, len(keys))
	used := make([]bool, len(prev))
	var index map[K]int
	// find returns where k (keys[j]) was in prev, looking at prev[i] first
	// (-1: nowhere), and the position in prev to look at next.
	find := func(j int, k K, i int) (int, int) {
		if len(prev) == 0 {
			return -1, i // nothing to find (and no index to build)
		}
		next := func(p int) (int, int) { return p, p + 1 }
		switch {
		case i < len(prev) && prev[i] == k:
			return next(i)
		case i+1 < len(prev) && prev[i+1] == k: // prev[i] went
			return next(i + 1)
		case i < len(prev) && j+1 < len(keys) && keys[j+1] == prev[i]: // k came
			return -1, i
		case i+1 < len(prev) && j+1 < len(keys) && keys[j+1] == prev[i+1], i+1 == len(prev) && j+1 == len(keys): // k replaced prev[i]
			return -1, i + 1
		}
		if index == nil {
			index = make(map[K]int, len(prev))
			for p := len(prev) - 1; p >= 0; p-- {
				index[prev[p]] = p
			}
		}
		if p, ok := index[k]; ok {
			return next(p)
		}
		return -1, i
	}
	i := 0
	for j, k := range keys {
		var p int
		p, i = find(j, k, i)
		if p >= 0 && !used[p] && (keep == nil || keep(j, vals[p])) {
			out[j], used[p] = vals[p], true
			continue
		}
		out[j] = compute(j)
	}
	if drop != nil {
		for p, u := range used {
			if !u {
				drop(vals[p])
			}
		}
	}
	l.keys, l.vals = keys, out
	return out
}

// Keys and Values are the keys and values of the last Update.
func (l *List[K, V]) Keys() []K   { return l.keys }
func (l *List[K, V]) Values() []V { return l.vals }

// Diff walks two lists sorted by key (compare orders two elements by
// key), the last run's and this one's, and calls changed for every key
// whose element differs: new (old is the zero value), gone (new is) or
// another element. Where the lists hold the same elements it compares
// nothing but elements (==). Zero elements are left out and, of several
// elements with one key, the first counts. It reports false, having
// called changed for some keys perhaps, when cur is not sorted.
func Diff[T comparable](prev, cur []T, compare func(a, b T) int, changed func(old, new T)) bool {
	var zero, lastPrev, lastCur T
	i, j := 0, 0
	for i < len(prev) || j < len(cur) {
		if i < len(prev) && j < len(cur) && prev[i] == cur[j] {
			if prev[i] != zero {
				lastPrev, lastCur = prev[i], cur[j]
			}
			i, j = i+1, j+1
			continue
		}
		if i < len(prev) && (prev[i] == zero || lastPrev != zero && compare(prev[i], lastPrev) == 0) {
			i++
			continue
		}
		if j < len(cur) && (cur[j] == zero || lastCur != zero && compare(cur[j], lastCur) == 0) {
			j++
			continue
		}
		var d int
		switch {
		case i == len(prev):
			d = 1
		case j == len(cur):
			d = -1
		default:
			d = compare(prev[i], cur[j])
		}
		if d < 0 {
			changed(prev[i], zero)
			lastPrev = prev[i]
			i++
			continue
		}
		if lastCur != zero && compare(lastCur, cur[j]) > 0 {
			return false
		}
		if d == 0 {
			changed(prev[i], cur[j])
			lastPrev = prev[i]
			i++
		} else {
			changed(zero, cur[j])
		}
		lastCur = cur[j]
		j++
	}
	return true
}

// Same says whether a and b are the very same list: the same length and,
// when not empty, the same first element in memory (the incremental
// stages hand out an unchanged list as the slice of the last run). Two
// empty lists are the same.
func Same[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// SameMap says whether a and b are the very same map (not merely equal):
// a stage hands out an unchanged map as the map of the last run. Two nil
// maps are the same.
func SameMap[M ~map[K]V, K comparable, V any](a, b M) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
