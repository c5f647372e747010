package file

import (
	"bytes"
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
//   - a file whose bytes are those of the last read is not decoded again:
//     its objects of the last read are used as they are (decoding is most
//     of a reload's cost: 3000 routes take about half a second), so one
//     more file costs what that file costs. The objects are shared between
//     reads, so nothing downstream may modify them (the translators never
//     do).
//
// A Loader is not safe for concurrent use.
type Loader struct {
	// Now returns the current time; time.Now when nil.
	Now       func() time.Time
	firstSeen map[string]metav1.Time
	lastGood  map[string][]Object
	decoded   map[string]decodedFile
}

// decodedFile is the last decode of one file.
type decodedFile struct {
	data []byte
	objs []Object
	errs []*LoadError
}

// decode decodes data of file f, or returns the last decode of the same
// bytes.
func (l *Loader) decode(f string, data []byte) ([]Object, []*LoadError) {
	if d, ok := l.decoded[f]; ok && bytes.Equal(d.data, data) {
		return slices.Clone(d.objs), d.errs
	}
	objs, errs := decodeFile(f, data)
	l.decoded[f] = decodedFile{data: data, objs: slices.Clone(objs), errs: errs}
	return objs, errs
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
	seenNow := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			out.Problems = append(out.Problems, &LoadError{File: f, Object: "file", Err: err})
			// Its objects are not seen now; when the file comes back they
			// are new (decoded and stamped again).
			delete(l.decoded, f)
			continue
		}
		objs, errs := l.decode(f, data)
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
					objs = append(objs, Object{Key: o.Key, Obj: o.Obj.DeepCopyObject()})
					out.Kept[f] = append(out.Kept[f], o.Key)
				}
			}
		}
		for _, o := range objs {
			l.stamp(o, now)
			seenNow[o.Key] = true
		}
		all = append(all, fileObjects{file: f, objects: objs})
	}
	// Forget files and objects that are gone, so that a re-created object is
	// new again.
	for f := range l.lastGood {
		if !slices.Contains(files, f) {
			delete(l.lastGood, f)
		}
	}
	for f := range l.decoded {
		if !slices.Contains(files, f) {
			delete(l.decoded, f)
		}
	}
	for k := range l.firstSeen {
		if !seenNow[k] {
			delete(l.firstSeen, k)
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
