package resources

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

// TestRegistryCoversResources: every list of Resources is one kind of the
// registry, an object of a kind is added to that kind's list and to no
// other, and Sort orders each list by namespace/name.
func TestRegistryCoversResources(t *testing.T) {
	fields := reflect.TypeFor[Resources]().NumField()
	if got := len(Kinds()); got != fields {
		t.Fatalf("registry has %d kinds, Resources has %d lists", got, fields)
	}
	seen := map[string]bool{}
	for _, k := range Kinds() {
		if seen[k.Name()] {
			t.Fatalf("kind %s registered twice", k.Name())
		}
		seen[k.Name()] = true
		if KindNamed(k.Name()) != k {
			t.Errorf("KindNamed(%q) is not the registered kind", k.Name())
		}
		var r Resources
		b, a := k.New(), k.New()
		b.SetNamespace("ns")
		b.SetName("b")
		a.SetNamespace("ns")
		a.SetName("a")
		if !r.Add(b) || !r.Add(a) {
			t.Fatalf("%s: Add refused an object of the kind", k.Name())
		}
		for _, o := range Kinds() {
			want := 0
			if o == k {
				want = 2
			}
			if o.Len(&r) != want {
				t.Errorf("after adding two %s, %s holds %d objects, want %d", k.Name(), o.Name(), o.Len(&r), want)
			}
		}
		r.Sort()
		if objs := k.Objects(&r); objs[0] != a || objs[1] != b {
			t.Errorf("%s: Sort left %s, %s", k.Name(), objs[0].GetName(), objs[1].GetName())
		}
		if o, ok := k.Get(&r, "ns", "b"); !ok || o != b {
			t.Errorf("%s: Get(ns/b) = %v, %v; want the object b", k.Name(), o, ok)
		}
		if o, ok := k.Get(&r, "ns", "c"); ok {
			t.Errorf("%s: Get(ns/c) found %s", k.Name(), o.GetName())
		}
		k.SetObjects(&r, []Object{b})
		if objs := k.Objects(&r); len(objs) != 1 || objs[0] != b {
			t.Errorf("%s: SetObjects did not replace the list", k.Name())
		}
	}
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, k := range Kinds() {
		gvks, _, err := s.ObjectKinds(k.New())
		if err != nil || len(gvks) == 0 || gvks[0].Kind != k.Name() || gvks[0].Group != k.Group() {
			t.Errorf("%s: the scheme knows it as %v (%v), want group %q", k.Name(), gvks, err, k.Group())
		}
	}
	if KindNamed("NoSuchKind") != nil {
		t.Error("KindNamed found a kind that is not registered")
	}
}
