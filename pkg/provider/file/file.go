// Package file is the standalone provider: it reads Kubernetes objects from
// YAML files into a resource snapshot, and watches the files for changes.
//
// A file may hold several YAML documents separated by "---". Objects
// without a namespace get "default", as kubectl would give them. Every
// document that cannot be used is reported as a LoadError naming its file
// and object; the other objects are loaded all the same.
package file

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// LoadError is one document that could not be loaded.
type LoadError struct {
	// File is the path of the file that holds the document.
	File string
	// Object is "Kind namespace/name" when the document said that much,
	// else "document N" (1-based).
	Object string
	Err    error
}

func (e *LoadError) Error() string { return fmt.Sprintf("%s: %s: %v", e.File, e.Object, e.Err) }

func (e *LoadError) Unwrap() error { return e.Err }

var decoder = func() kruntime.Decoder {
	s := kruntime.NewScheme()
	if err := resources.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// Load reads path, a YAML file or a folder whose *.yaml, *.yml and *.json
// files (recursively, in lexical order) are read. It returns the sorted
// snapshot of every object that could be decoded, and one LoadError per
// document that could not. An object defined in two documents is taken from
// the first (in file order) and the second is reported. The error is
// non-nil only when path itself cannot be read.
func Load(path string) (*resources.Resources, []*LoadError, error) {
	files, err := Files(path)
	if err != nil {
		return nil, nil, err
	}
	var all []fileObjects
	var problems []*LoadError
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			problems = append(problems, &LoadError{File: f, Object: "file", Err: err})
			continue
		}
		objs, errs := decodeFile(f, data)
		all = append(all, fileObjects{file: f, objects: objs})
		problems = append(problems, errs...)
	}
	res, dups := merge(all)
	return res, append(problems, dups...), nil
}

// Object is one decoded object and its identity.
type Object struct {
	// Key is "Kind namespace/name" (or "Kind name" for cluster-scoped kinds).
	Key string
	Obj kruntime.Object
	// defaultGeneration: the document set no metadata.generation (it is
	// 1; a Loader numbers its changes).
	defaultGeneration bool
	// ns and name are the object's (merge orders by them).
	ns, name string
}

// fileObjects are the objects of one file, sorted by byName (as
// decodeFile returns them).
type fileObjects struct {
	file    string
	objects []Object
}

// merge builds the sorted snapshot from the objects of every file, first
// definition of a key wins. The files' objects, each sorted by namespace
// and name, are merged in that order, a tie going to the earlier file:
// every kind's list comes out sorted, as Resources.Sort would leave it,
// without sorting the snapshot, and the objects of one namespace and
// name are next to each other, where duplicates are found.
func merge(files []fileObjects) (*resources.Resources, []*LoadError) {
	res := &resources.Resources{}
	dup := false
	var group []Object // the objects of the current namespace and name
	add := func(o Object) {
		if len(group) > 0 && byName(group[0], o) != 0 {
			group = group[:0]
		}
		for _, g := range group {
			if g.Key == o.Key {
				dup = true
				return
			}
		}
		group = append(group, o)
		res.Add(o.Obj)
	}
	mergeSorted(files, add)
	if !dup {
		return res, nil
	}
	return res, duplicates(files)
}

// byName orders objects by namespace, then name.
func byName(a, b Object) int {
	return cmp.Or(cmp.Compare(a.ns, b.ns), cmp.Compare(a.name, b.name))
}

// mergeSorted calls add with every object of files, whose objects are
// sorted by byName, in that order; of equal objects, the earlier file's
// first. It keeps a heap of the files by their next object: O(n log F),
// and less for long runs of one file.
func mergeSorted(files []fileObjects, add func(Object)) {
	next := make([]int, len(files)) // per file, its next object
	h := make([]int, 0, len(files)) // a min-heap of file indexes
	less := func(a, b int) bool {
		c := byName(files[a].objects[next[a]], files[b].objects[next[b]])
		return c < 0 || c == 0 && a < b
	}
	down := func(i int) {
		for {
			m, l, r := i, 2*i+1, 2*i+2
			if l < len(h) && less(h[l], h[m]) {
				m = l
			}
			if r < len(h) && less(h[r], h[m]) {
				m = r
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i, f := range files {
		if len(f.objects) > 0 {
			h = append(h, i)
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(h) > 0 {
		f := h[0]
		// The run of f's objects that come before every other file's next
		// one goes out at once, bounded by a binary search (a world's big
		// file beside a small changed one is a few runs).
		end := len(files[f].objects)
		for _, c := range h[1:min(3, len(h))] {
			bound := files[c].objects[next[c]]
			rest := files[f].objects[next[f]:end]
			end = next[f] + sort.Search(len(rest), func(i int) bool {
				k := byName(rest[i], bound)
				return k > 0 || k == 0 && f > c
			})
		}
		for _, o := range files[f].objects[next[f]:end] {
			add(o)
		}
		if next[f] = end; next[f] == len(files[f].objects) {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
}

// duplicates reports every definition of an object after its first, in
// the order of files: what merge dropped.
func duplicates(files []fileObjects) []*LoadError {
	seen := map[string]string{}
	var problems []*LoadError
	for _, f := range files {
		for _, o := range f.objects {
			if first, dup := seen[o.Key]; dup {
				problems = append(problems, &LoadError{File: f.file, Object: o.Key, Err: fmt.Errorf("also defined in %s; this definition is ignored", first)})
				continue
			}
			seen[o.Key] = f.file
		}
	}
	return problems
}

// Files lists the regular YAML and JSON files Load reads for path, sorted.
// Hidden files and folders (names starting with ".") are skipped, and so is
// anything that is not a regular file (a named pipe would block reading).
func Files(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", path)
		}
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && IsConfigName(p) {
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// IsConfigName reports whether a file of this name (a path) is read in a
// folder: its extension is .yaml, .yml or .json, and it is not hidden.
func IsConfigName(name string) bool {
	if strings.HasPrefix(filepath.Base(name), ".") {
		return false
	}
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Decode adds every object in data, one or more YAML documents read from
// file, to res, and returns a LoadError for each document it could not use.
func Decode(file string, data []byte, res *resources.Resources) []*LoadError {
	objs, problems := decodeFile(file, data)
	for _, o := range objs {
		res.Add(o.Obj)
	}
	return problems
}

// decodeFile decodes every document of one file. The objects are sorted
// by namespace and name (byName), stably: of two documents with one key,
// the first stays first, and merge keeps it.
func decodeFile(file string, data []byte) ([]Object, []*LoadError) {
	docs := slices.DeleteFunc(splitDocuments(data), func(d document) bool {
		return len(bytes.TrimSpace(stripComments(d.text))) == 0
	})
	// Documents are decoded on every core (decoding is most of the
	// translate command's time at thousands of routes), each into its own
	// slot, so that the order is the file's.
	type result struct {
		obj Object
		err error
	}
	out := make([]result, len(docs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(docs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(docs); i = int(next.Add(1) - 1) {
				out[i].obj, out[i].err = decodeOne(docs[i].text)
			}
		})
	}
	wg.Wait()
	var objs []Object
	var problems []*LoadError
	for i, r := range out {
		if r.err != nil {
			problems = append(problems, &LoadError{File: file, Object: describe(docs[i].text, docs[i].n, docs[i].line), Err: r.err})
			continue
		}
		objs = append(objs, r.obj)
	}
	slices.SortStableFunc(objs, byName)
	return objs, problems
}

type document struct {
	text []byte
	// n is the document's 1-based index in the file, line the 1-based
	// line of the file where it starts.
	n, line int
}

// splitDocuments splits a YAML stream at "---" separator lines.
func splitDocuments(data []byte) []document {
	var docs []document
	cur := document{n: 1, line: 1}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, line := range lines {
		t := bytes.TrimRight(line, " \t\r\n")
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) || bytes.HasPrefix(t, []byte("---\t")) {
			docs = append(docs, cur)
			cur = document{n: cur.n + 1, line: i + 2}
			continue
		}
		cur.text = append(cur.text, line...)
	}
	return append(docs, cur)
}

// decodeOne decodes one YAML document. It is converted to JSON once,
// strictly (a duplicate key is an error), and decoded by the strict JSON
// decoder (an unknown or duplicate field is an error): the YAML decoder
// would convert it twice.
func decodeOne(doc []byte) (Object, error) {
	j, err := sigsyaml.YAMLToJSONStrict(doc)
	if err != nil {
		return Object{}, err
	}
	obj, gvk, err := decoder.Decode(j, nil, nil)
	if err != nil {
		return Object{}, err
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return Object{}, fmt.Errorf("%s is not an object with metadata", gvk.Kind)
	}
	if m.GetName() == "" {
		return Object{}, errors.New("metadata.name is required")
	}
	key := gvk.Kind + " " + m.GetName()
	switch obj.(type) {
	case *gwapiv1.GatewayClass, *gwapiv1beta1.GatewayClass, *corev1.Namespace, *networkingv1.IngressClass:
		m.SetNamespace("")
	default:
		if m.GetNamespace() == "" {
			m.SetNamespace(metav1.NamespaceDefault)
		}
		key = gvk.Kind + " " + m.GetNamespace() + "/" + m.GetName()
	}
	defaultGeneration := m.GetGeneration() == 0
	if defaultGeneration {
		m.SetGeneration(1)
	}
	if s, ok := obj.(*corev1.Secret); ok {
		// The API server folds stringData into data; so do we.
		for k, v := range s.StringData {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
	if !(&resources.Resources{}).Add(obj) {
		return Object{}, fmt.Errorf("kind %s (%s) is not read by xds-controller", gvk.Kind, gvk.GroupVersion())
	}
	// Converted once: a file read again yields the same v1 object.
	return Object{Key: key, Obj: resources.V1(obj), defaultGeneration: defaultGeneration, ns: m.GetNamespace(), name: m.GetName()}, nil
}

// describe names a document for an error: "Kind namespace/name" as far as
// the document says, else "document N (line L)".
func describe(doc []byte, n, line int) string {
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := utilyaml.Unmarshal(doc, &meta); err != nil || meta.Kind == "" {
		return fmt.Sprintf("document %d (line %d)", n, line)
	}
	name := meta.Metadata.Name
	if meta.Metadata.Namespace != "" {
		name = meta.Metadata.Namespace + "/" + name
	}
	return strings.TrimSpace(meta.Kind + " " + name)
}

func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}
