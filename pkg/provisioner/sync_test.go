package provisioner

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/xds-controller/xds-controller/pkg/infra"
)

// TestSyncSkipsWhatDidNotChange: a sync of the same objects right after
// one that succeeded makes no API request (a pipeline run that changed
// only routes costs the API server nothing); a changed object is applied
// again, with its reads and prune lists.
func TestSyncSkipsWhatDidNotChange(t *testing.T) {
	requests := 0
	stray := false // the next Service list holds one object not desired
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			requests++
			return nil // a live object without our applied hash: applied
		},
		List: func(_ context.Context, _ client.WithWatch, list client.ObjectList, _ ...client.ListOption) error {
			requests++
			if l, ok := list.(*metav1.PartialObjectMetadataList); ok && stray && l.GroupVersionKind().Kind == "ServiceList" {
				stray = false
				l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old"}})
			}
			return nil
		},
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
			requests++
			return nil
		},
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			requests++
			return nil
		},
	}).Build()
	a := &infra.Applier{Client: c}
	svc := func(port int32) []client.Object {
		return []client.Object{&corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: port}}},
		}}
	}
	scope := infra.PruneScope{Namespace: "ns", Selector: labels.Everything()}
	var p Provisioner
	ctx := context.Background()
	sync := func(objs []client.Object) (bool, int) {
		t.Helper()
		before := requests
		skipped, err := p.sync(ctx, a, "Gateway ns/gw", scope, objs)
		if err != nil {
			t.Fatal(err)
		}
		return skipped, requests - before
	}
	if skipped, n := sync(svc(80)); skipped || n == 0 {
		t.Fatalf("first sync: skipped %v after %d requests", skipped, n)
	}
	if skipped, n := sync(svc(80)); !skipped || n != 0 {
		t.Errorf("the same objects again: skipped %v, %d requests; want skipped, none", skipped, n)
	}
	if skipped, n := sync(svc(81)); skipped || n < 1+1+len(infra.PrunedKinds) {
		t.Errorf("a changed Service: skipped %v, %d requests; want its read, its apply and a list per pruned kind", skipped, n)
	}
	// A prune that deletes forgets every remembered sync: what it deleted
	// may be what another one wrote.
	p.done("shared fleet x", "fp")
	stray = true
	sync(svc(82))
	if p.fresh("shared fleet x", "fp") {
		t.Error("a prune deleted an object, and another sync is still remembered")
	}
	if skipped, _ := sync(svc(82)); !skipped {
		t.Error("the sync that pruned is not remembered")
	}
}
