// Package file is the standalone provider: it reads Kubernetes objects from
// YAML files into a resource snapshot, and watches the files for changes.
//
// A file may hold several YAML documents separated by "---". Objects
// without a namespace get "default", as kubectl would give them. Every
// document that cannot be used is reported as a LoadError naming its file
// and object; the other objects are loaded all the same.
package file

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

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

var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, gwapiv1.Install, gwapiv1beta1.Install} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// Load reads path, a YAML file or a folder whose *.yaml, *.yml and *.json
// files (recursively, in lexical order) are read. It returns the sorted
// snapshot of every object that could be decoded, and one LoadError per
// document that could not. The error is non-nil only when path itself
// cannot be read.
func Load(path string) (*resources.Resources, []*LoadError, error) {
	files, err := Files(path)
	if err != nil {
		return nil, nil, err
	}
	res := &resources.Resources{}
	var problems []*LoadError
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			problems = append(problems, &LoadError{File: f, Object: "file", Err: err})
			continue
		}
		problems = append(problems, Decode(f, data, res)...)
	}
	res.Sort()
	return res, problems, nil
}

// Files lists the YAML and JSON files Load reads for path, sorted.
func Files(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
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
		switch filepath.Ext(p) {
		case ".yaml", ".yml", ".json":
			if !strings.HasPrefix(d.Name(), ".") {
				files = append(files, p)
			}
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// Decode adds every object in data, one or more YAML documents read from
// file, to res, and returns a LoadError for each document it could not use.
func Decode(file string, data []byte, res *resources.Resources) []*LoadError {
	var problems []*LoadError
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			problems = append(problems, &LoadError{File: file, Object: fmt.Sprintf("document %d", n), Err: err})
			break
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		if err := decodeOne(doc, res); err != nil {
			problems = append(problems, &LoadError{File: file, Object: describe(doc, n), Err: err})
		}
	}
	return problems
}

func decodeOne(doc []byte, res *resources.Resources) error {
	obj, gvk, err := decoder.Decode(doc, nil, nil)
	if err != nil {
		return err
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return fmt.Errorf("%s is not an object with metadata", gvk.Kind)
	}
	if m.GetName() == "" {
		return errors.New("metadata.name is required")
	}
	switch obj.(type) {
	case *gwapiv1.GatewayClass, *corev1.Namespace:
		m.SetNamespace("")
	default:
		if m.GetNamespace() == "" {
			m.SetNamespace(metav1.NamespaceDefault)
		}
	}
	if m.GetGeneration() == 0 {
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
	if !res.Add(obj) {
		return fmt.Errorf("kind %s (%s) is not read by xds-controller", gvk.Kind, gvk.GroupVersion())
	}
	return nil
}

// describe names a document for an error: "Kind namespace/name" as far as
// the document says, else "document N".
func describe(doc []byte, n int) string {
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := utilyaml.Unmarshal(doc, &meta); err != nil || meta.Kind == "" {
		return fmt.Sprintf("document %d", n)
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
