package kubernetes

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// TestListResourcesListsEveryKind: with one object of every kind of the
// snapshot's registry in the API server, ListResources returns each of
// them in its list of the snapshot, Namespaces with their labels (read as
// metadata), and no Secret or ConfigMap (only references bring those in).
func TestListResourcesListsEveryKind(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	clusterScoped := map[resources.Kind]bool{resources.GatewayClassKind: true, resources.NamespaceKind: true, resources.IngressClassKind: true}
	var objs []client.Object
	for _, k := range resources.Kinds() {
		o := k.New()
		o.SetName("one-" + k.Name())
		if !clusterScoped[k] {
			o.SetNamespace("default")
		}
		o.SetLabels(map[string]string{"kind": k.Name()})
		objs = append(objs, o)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	res, err := ListResources(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resources.Kinds() {
		got := k.Objects(res)
		if k == resources.SecretKind || k == resources.ConfigMapKind {
			if len(got) != 0 {
				t.Errorf("%s: listed %d objects, want none", k.Name(), len(got))
			}
			continue
		}
		if len(got) != 1 || got[0].GetName() != "one-"+k.Name() || got[0].GetLabels()["kind"] != k.Name() {
			t.Errorf("%s: listed %v, want one-%s with its labels", k.Name(), got, k.Name())
		}
	}
}
