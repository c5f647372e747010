package file

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// Loader reads a config path again and again, as standalone mode does on
// every change, and behaves like an API server across the reads:
//
//   - an object without metadata.creationTimestamp gets the time the Loader
//     first saw it, so that "oldest wins" rules (listener ports, route
//     precedence) keep favouring the object that was there first;
//   - when a file has a document that cannot be loaded, the objects that the
//     file held at its last clean read and that are now missing are kept
//     (a half-finished edit does not take a route down), and Result.Kept
//     names them;
//   - an object without metadata.generation gets 1 when the Loader first
//     sees it, and one more whenever a read finds it changed apart from its
//     metadata and status, as the API server numbers spec changes (status
//     observedGeneration, and pkg/quarantine, which tries a held object
//     again when its generation changes, read it);
//   - a file whose bytes are those of the last read is not decoded again:
//     its objects of the last read are used as they are (decoding is most
//     of a reload's cost: 3000 routes take about half a second), so one
//     more file costs what that file costs. The objects are shared between
//     reads, so nothing downstream may modify them (the translators never
//     do). A file's objects are kept sorted by namespace and name, so
//     that the snapshot is a merge of sorted files, not a sort; and what
//     the Loader remembers per object (first seen, generation) is
//     forgotten by counting the files that hold each key, updated for the
//     files that changed, so that a read where one file changed costs a
//     pass over the objects and no hashing of them.
//
// A Loader is not safe for concurrent use.
type Loader struct {
	// Now returns the current time; time.Now when nil.
	Now       func() time.Time
	firstSeen map[string]metav1.Time
	lastGood  map[string][]Object
	decoded   map[string]decodedFile
	// generations: key -> the generation given and the digest of the
	// object's content without metadata and status.
	generations map[string]numbered
	// held: file -> the keys of the objects it gave at its last read
	// (kept ones included); holders: key -> how many files hold it.
	held    map[string][]string
	holders map[string]int
	letGo   []string
}

// numbered is the generation a Loader gave an object, for its content.
type numbered struct {
	generation int64
	digest     [sha256.Size]byte
}

// decodedFile is the last decode of one file.
type decodedFile struct {
	data []byte
	objs []Object
	errs []*LoadError
}

// decode decodes data of file f, or returns the last decode of the same
// bytes (fresh false).
func (l *Loader) decode(f string, data []byte) (objs []Object, errs []*LoadError, fresh bool) {
	if d, ok := l.decoded[f]; ok && bytes.Equal(d.data, data) {
		// Capacity = length: an append (kept objects) copies.
		return d.objs[:len(d.objs):len(d.objs)], d.errs, false
	}
	objs, errs = decodeFile(f, data)
	objs = objs[:len(objs):len(objs)]
	l.decoded[f] = decodedFile{data: data, objs: objs, errs: errs}
	return objs, errs, true
}

// hold records that file f now gives the objects objs (nil: none): their
// keys are held at once, the keys f held before are let go at the end of
// the read (release), so that an object that moved between files stays
// known.
func (l *Loader) hold(f string, objs []Object) {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
		l.holders[o.Key]++
	}
	l.letGo = append(l.letGo, l.held[f]...)
	if objs == nil {
		delete(l.held, f)
		return
	}
	l.held[f] = keys
}

// release lets go of the keys hold put aside, and forgets the first-seen
// time and generation of every key no file holds any longer.
func (l *Loader) release() {
	for _, k := range l.letGo {
		if l.holders[k]--; l.holders[k] <= 0 {
			delete(l.holders, k)
			delete(l.firstSeen, k)
			delete(l.generations, k)
		}
	}
	l.letGo = l.letGo[:0]
}

// number sets the generation of o, freshly decoded without one: that of
// the last read when its content (all but metadata and status) is the
// same, else one more (1 for an object not seen before).
func (l *Loader) number(o Object) {
	m, ok := o.Obj.(metav1.Object)
	if !ok || !o.defaultGeneration {
		return
	}
	var content map[string]any
	if b, err := json.Marshal(o.Obj); err == nil && json.Unmarshal(b, &content) == nil {
		delete(content, "metadata")
		delete(content, "status")
	}
	b, _ := json.Marshal(content) // map keys sorted: deterministic
	d := sha256.Sum256(b)
	n, seen := l.generations[o.Key]
	switch {
	case !seen:
		n = numbered{generation: 1, digest: d}
	case n.digest != d:
		n = numbered{generation: n.generation + 1, digest: d}
	}
	l.generations[o.Key] = n
	m.SetGeneration(n.generation)
}

// Result is one read of the config.
type Result struct {
	Resources *resources.Resources
	Problems  []*LoadError
	// Kept maps a file with errors to the keys ("Kind namespace/name") of
	// the objects kept from its last clean read.
	Kept map[string][]string
}

// Load reads path (a file or a folder, see Files). It fails only when path
// itself cannot be read.
func (l *Loader) Load(path string) (*Result, error) {
	if l.firstSeen == nil {
		l.firstSeen, l.lastGood, l.decoded = map[string]metav1.Time{}, map[string][]Object{}, map[string]decodedFile{}
		l.generations, l.held, l.holders = map[string]numbered{}, map[string][]string{}, map[string]int{}
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	files, err := Files(path)
	if err != nil {
		return nil, err
	}
	out := &Result{Kept: map[string][]string{}}
	var all []fileObjects
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			out.Problems = append(out.Problems, &LoadError{File: f, Object: "file", Err: err})
			// Its objects are not seen now; when the file comes back they
			// are new (decoded and stamped again).
			delete(l.decoded, f)
			l.hold(f, nil)
			continue
		}
		objs, errs, fresh := l.decode(f, data)
		if fresh {
			for _, o := range objs {
				l.number(o)
			}
		}
		out.Problems = append(out.Problems, errs...)
		if len(errs) == 0 {
			l.lastGood[f] = objs
		} else {
			present := map[string]bool{}
			for _, o := range objs {
				present[o.Key] = true
			}
			for _, o := range l.lastGood[f] {
				if !present[o.Key] {
					objs = append(objs, Object{Key: o.Key, Obj: o.Obj.DeepCopyObject(), ns: o.ns, name: o.name})
					out.Kept[f] = append(out.Kept[f], o.Key)
				}
			}
			if len(out.Kept[f]) > 0 {
				slices.SortStableFunc(objs, byName)
			}
		}
		// A file read as it was, without errors, gives the objects of the
		// last read: stamped then, and held.
		if _, known := l.held[f]; fresh || len(errs) > 0 || !known {
			for _, o := range objs {
				l.stamp(o, now)
			}
			l.hold(f, objs)
		}
		all = append(all, fileObjects{file: f, objects: objs})
	}
	// Forget files that are gone, so that a re-created object is new
	// again.
	listed := make(map[string]bool, len(files))
	for _, f := range files {
		listed[f] = true
	}
	for f := range l.held {
		if !listed[f] {
			l.hold(f, nil)
		}
	}
	l.release()
	for f := range l.lastGood {
		if !listed[f] {
			delete(l.lastGood, f)
		}
	}
	for f := range l.decoded {
		if !listed[f] {
			delete(l.decoded, f)
		}
	}
	res, dups := merge(all)
	out.Resources = res
	out.Problems = append(out.Problems, dups...)
	return out, nil
}

func (l *Loader) stamp(o Object, now func() time.Time) {
	m, ok := o.Obj.(metav1.Object)
	if !ok {
		return
	}
	if ts := m.GetCreationTimestamp(); !ts.IsZero() {
		return
	}
	t, ok := l.firstSeen[o.Key]
	if !ok {
		t = metav1.NewTime(now().Truncate(time.Second))
		l.firstSeen[o.Key] = t
	}
	m.SetCreationTimestamp(t)
}
