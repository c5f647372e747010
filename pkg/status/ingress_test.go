package status

import (
	"context"
	"sync/atomic"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
)

// TestWriterIngress: UpdateIngresses makes an Ingress's status.loadBalancer
// desired, apart from the Gateway API objects: an Update (of those) leaves
// it desired, so a live status someone cleared is written again on a
// resync; an equal status is not written again; UpdateIngresses without
// it forgets it.
func TestWriterIngress(t *testing.T) {
	s := runtime.NewScheme()
	if err := networkingv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "default", Name: "shop"}
	live := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(live).WithStatusSubresource(&networkingv1.Ingress{}).Build()
	var leading atomic.Bool
	leading.Store(true)
	w := NewWriter(c, c, Options{Leading: leading.Load, QPS: 1000, Burst: 1000})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go w.Run(ctx)

	lb := networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.7"}}}
	loadBalancer := func() networkingv1.IngressLoadBalancerStatus {
		var got networkingv1.Ingress
		if err := c.Get(context.Background(), key, &got); err != nil {
			t.Fatal(err)
		}
		return got.Status.LoadBalancer
	}
	clear := func() {
		var got networkingv1.Ingress
		if err := c.Get(context.Background(), key, &got); err != nil {
			t.Fatal(err)
		}
		got.Status.LoadBalancer = networkingv1.IngressLoadBalancerStatus{}
		if err := c.Status().Update(context.Background(), &got, client.FieldOwner("someone-else")); err != nil {
			t.Fatal(err)
		}
	}

	w.UpdateIngresses(map[types.NamespacedName]*ingress.Status{key: {Class: "web", LoadBalancer: lb}})
	waitFor(t, "the Ingress status write", func() bool { return w.Writes() == 1 })
	if got := loadBalancer(); !EqualIngressLoadBalancer(got, lb) {
		t.Fatalf("status.loadBalancer %+v, want %+v", got, lb)
	}
	// An equal status in another object, as the next translation hands
	// over: compared field by field (all of them exported), unchanged,
	// not written again.
	w.UpdateIngresses(map[types.NamespacedName]*ingress.Status{key: {Class: "web", LoadBalancer: lb}})
	settle(w)
	if n := w.Writes(); n != 1 {
		t.Fatalf("%d writes after an equal status, want 1", n)
	}

	// The Gateway API objects' status, without any: the Ingress stays.
	w.Update(&gatewayapi.Status{})
	clear()
	w.Resync()
	waitFor(t, "the Ingress status written again", func() bool { return w.Writes() == 2 })
	if got := loadBalancer(); !EqualIngressLoadBalancer(got, lb) {
		t.Fatalf("after Update: status.loadBalancer %+v, want %+v", got, lb)
	}

	// Without the Ingress: forgotten, never written again.
	w.UpdateIngresses(nil)
	clear()
	w.Resync()
	settle(w)
	if n := w.Writes(); n != 2 {
		t.Errorf("%d writes, want 2: a forgotten Ingress was written", n)
	}
	if got := loadBalancer(); len(got.Ingress) != 0 {
		t.Errorf("a forgotten Ingress's status.loadBalancer is %+v", got)
	}
}
