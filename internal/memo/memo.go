// Package memo keeps what a computation derived from immutable inputs
// (keyed by their identity: a pointer, or a name and a pointer) from one
// run of the computation to the next, and forgets what a run no longer
// used. The incremental stages of the pipeline (pkg/xdstranslator,
// pkg/xdsvalidate, pkg/ir, pkg/xdsserver) share it.
package memo

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
