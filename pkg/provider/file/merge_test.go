package file

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// randomDocs is 0 to 5 documents of Services, ConfigMaps and Namespaces
// whose namespaces and names collide often (duplicates within and across
// files) and sort differently as "namespace/name" strings than as pairs
// ("a-b" < "a/" but "a" < "a-b"); each carries a label v, unique per
// document, that tells which definition was kept.
func randomDocs(rng *rand.Rand, step int) string {
	var docs []string
	for i := range rng.IntN(6) {
		ns := []string{"a", "a-b", "b"}[rng.IntN(3)]
		name := []string{"x", "x-y", "w", "x.z"}[rng.IntN(4)]
		kind := []string{"Service", "ConfigMap", "Namespace"}[rng.IntN(3)]
		if kind == "Namespace" {
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {v: \"%d-%d\"}}\n", name, step, i))
			continue
		}
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: %s\nmetadata: {name: %s, namespace: %s, labels: {v: \"%d-%d\"}}\n", kind, name, ns, step, i))
	}
	return strings.Join(docs, "---\n")
}

// snapshotLines describes every list of res: per kind, each object's
// namespace, name and label v, in the list's order.
func snapshotLines(res *resources.Resources) []string {
	var out []string
	for _, k := range resources.Kinds() {
		for _, o := range k.Objects(res) {
			out = append(out, fmt.Sprintf("%s %s/%s v=%s", k.Name(), o.GetNamespace(), o.GetName(), o.GetLabels()["v"]))
		}
	}
	return out
}

// TestLoaderMatchesAFreshReadOfEveryStep: over 400 random steps (a file
// of three rewritten with random documents, or removed), the Loader's
// snapshot equals, list by list and object by object (the first
// definition kept), the reference: every object of a fresh read added in
// file order, the first of each key only, then Resources.Sort; its
// duplicate problems are those of a fresh read; and it remembers the
// first-seen time and generation of no key that no file holds.
func TestLoaderMatchesAFreshReadOfEveryStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 4))
	dir := t.TempDir()
	files := []string{"a.yaml", "b.yaml", "sub/c.yaml"}
	var l Loader
	for step := range 400 {
		f := files[rng.IntN(len(files))]
		if rng.IntN(5) == 0 {
			_ = os.Remove(filepath.Join(dir, f))
		} else {
			write(t, dir, f, randomDocs(rng, step))
		}
		got, err := l.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		// The reference, from a fresh decode of every file.
		paths, err := Files(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := &resources.Resources{}
		seen := map[string]bool{}
		dups := 0
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			objs, problems := decodeFile(p, data)
			if len(problems) > 0 {
				t.Fatalf("step %d: %v", step, problems)
			}
			for _, o := range objs {
				if seen[o.Key] {
					dups++
					continue
				}
				seen[o.Key] = true
				want.Add(o.Obj)
			}
		}
		want.Sort()
		if g, w := snapshotLines(got.Resources), snapshotLines(want); !slices.Equal(g, w) {
			t.Fatalf("step %d: the Loader's snapshot\n%s\nwant\n%s", step, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
		if len(got.Problems) != dups {
			t.Fatalf("step %d: %d problems %v, want %d duplicates", step, len(got.Problems), got.Problems, dups)
		}
		for k := range l.firstSeen {
			if !seen[k] {
				t.Fatalf("step %d: the Loader remembers when it first saw %s, which no file holds", step, k)
			}
		}
		for k := range l.generations {
			if !seen[k] {
				t.Fatalf("step %d: the Loader remembers the generation of %s, which no file holds", step, k)
			}
		}
		for k := range seen {
			if _, ok := l.firstSeen[k]; !ok {
				t.Fatalf("step %d: %s has no first-seen time", step, k)
			}
		}
	}
}

// TestLoaderKeepsFirstSeenOfAnObjectThatMoves: an object moved from one
// file to another in one write keeps its creation timestamp (a key held
// by any file is remembered).
func TestLoaderKeepsFirstSeenOfAnObjectThatMoves(t *testing.T) {
	dir := t.TempDir()
	now := metav1.Now().Rfc3339Copy()
	l := Loader{Now: func() time.Time { return now.Time }}
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: a}\n"
	write(t, dir, "a.yaml", svc)
	if _, err := l.Load(dir); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour)
	l.Now = func() time.Time { return later }
	write(t, dir, "a.yaml", "")
	write(t, dir, "b.yaml", svc)
	res, err := l.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Resources.Services) != 1 || !res.Resources.Services[0].CreationTimestamp.Time.Equal(now.Time) {
		t.Fatalf("services %v, want s created at %s", res.Resources.Services, now)
	}
}
