package main

import (
	"context"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
)

func svc(name string, typ corev1.ServiceType, want string, ingress ...string) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec:       corev1.ServiceSpec{Type: typ, LoadBalancerIP: want},
	}
	for _, ip := range ingress {
		s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	return s
}

// newAllocator returns an allocator over a pool of n addresses from
// 10.244.1.10, whose lister holds objs.
func newAllocator(t *testing.T, n int, objs ...*corev1.Service) (*allocator, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Services()
	for _, o := range objs {
		if _, err := cs.CoreV1().Services(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := inf.Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	first := netip.MustParseAddr("10.244.1.10")
	last := first
	for i := 1; i < n; i++ {
		last = last.Next()
	}
	return &allocator{
		client: cs, lister: inf.Lister(), first: first, last: last,
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		reserved: map[netip.Addr]string{},
	}, cs
}

func status(t *testing.T, cs *fake.Clientset, name string) []string {
	t.Helper()
	s, err := cs.CoreV1().Services("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range s.Status.LoadBalancer.Ingress {
		out = append(out, in.IP)
	}
	return out
}

func TestAssignsLowestFreeAddress(t *testing.T) {
	a, cs := newAllocator(t, 3,
		svc("used", corev1.ServiceTypeLoadBalancer, "", "10.244.1.10"),
		svc("new", corev1.ServiceTypeLoadBalancer, ""),
		svc("plain", corev1.ServiceTypeClusterIP, ""))
	for _, k := range []string{"ns/used", "ns/new", "ns/plain"} {
		if err := a.sync(context.Background(), k); err != nil {
			t.Fatalf("sync %s: %v", k, err)
		}
	}
	if got := status(t, cs, "new"); len(got) != 1 || got[0] != "10.244.1.11" {
		t.Errorf("new got %v, want [10.244.1.11]", got)
	}
	if got := status(t, cs, "used"); len(got) != 1 || got[0] != "10.244.1.10" {
		t.Errorf("used changed to %v", got)
	}
	if got := status(t, cs, "plain"); len(got) != 0 {
		t.Errorf("ClusterIP Service got %v", got)
	}
}

func TestHonoursRequestedAddressAndExhaustion(t *testing.T) {
	a, cs := newAllocator(t, 2,
		svc("want", corev1.ServiceTypeLoadBalancer, "10.244.1.11"),
		svc("outside", corev1.ServiceTypeLoadBalancer, "192.0.2.9"),
		svc("third", corev1.ServiceTypeLoadBalancer, ""))
	ctx := context.Background()
	if err := a.sync(ctx, "ns/want"); err != nil {
		t.Fatal(err)
	}
	if got := status(t, cs, "want"); len(got) != 1 || got[0] != "10.244.1.11" {
		t.Errorf("want got %v, want [10.244.1.11]", got)
	}
	if err := a.sync(ctx, "ns/outside"); err != nil {
		t.Fatal(err)
	}
	if got := status(t, cs, "outside"); len(got) != 1 || got[0] != "10.244.1.10" {
		t.Errorf("an address outside the pool must not be used: got %v", got)
	}
	if err := a.sync(ctx, "ns/third"); err == nil {
		t.Errorf("pool of 2 gave a third address: %v", status(t, cs, "third"))
	}
}

func TestReleasesWhenNoLongerLoadBalancer(t *testing.T) {
	s := svc("was-lb", corev1.ServiceTypeClusterIP, "", "10.244.1.10")
	a, cs := newAllocator(t, 2, s)
	a.reserved[netip.MustParseAddr("10.244.1.10")] = "ns/was-lb"
	if err := a.sync(context.Background(), "ns/was-lb"); err != nil {
		t.Fatal(err)
	}
	if got := status(t, cs, "was-lb"); len(got) != 0 {
		t.Errorf("status kept %v", got)
	}
	if len(a.reserved) != 0 {
		t.Errorf("reservation kept: %v", a.reserved)
	}
}

func TestMovesWhenRequestedAddressChanges(t *testing.T) {
	s := svc("gw", corev1.ServiceTypeLoadBalancer, "10.244.1.12", "10.244.1.10")
	a, cs := newAllocator(t, 3, s, svc("other", corev1.ServiceTypeLoadBalancer, "", "10.244.1.11"))
	a.reserved[netip.MustParseAddr("10.244.1.10")] = "ns/gw"
	ctx := context.Background()
	if err := a.sync(ctx, "ns/gw"); err != nil {
		t.Fatal(err)
	}
	if got := status(t, cs, "gw"); len(got) != 1 || got[0] != "10.244.1.12" {
		t.Errorf("gw got %v, want it moved to [10.244.1.12]", got)
	}
	if k, ok := a.reserved[netip.MustParseAddr("10.244.1.10")]; ok {
		t.Errorf("the old address is still reserved for %s", k)
	}

	// Asking for a taken address keeps the current one.
	taken := svc("gw2", corev1.ServiceTypeLoadBalancer, "10.244.1.11", "10.244.1.10")
	a, cs = newAllocator(t, 3, taken, svc("other", corev1.ServiceTypeLoadBalancer, "", "10.244.1.11"))
	if err := a.sync(ctx, "ns/gw2"); err != nil {
		t.Fatal(err)
	}
	if got := status(t, cs, "gw2"); len(got) != 1 || got[0] != "10.244.1.10" {
		t.Errorf("gw2 got %v, want it kept at [10.244.1.10]", got)
	}
	if len(a.reserved) != 0 {
		t.Errorf("a failed move left reservations: %v", a.reserved)
	}
}
