package main

import (
	"context"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
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
		svc("auto", corev1.ServiceTypeLoadBalancer, ""),
		svc("third", corev1.ServiceTypeLoadBalancer, ""))
	ctx := context.Background()
	for _, k := range []string{"ns/want", "ns/outside", "ns/auto"} {
		if err := a.sync(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if got := status(t, cs, "want"); len(got) != 1 || got[0] != "10.244.1.11" {
		t.Errorf("want got %v, want [10.244.1.11]", got)
	}
	if got := status(t, cs, "outside"); len(got) != 0 {
		t.Errorf("an address outside the pool must not be used, nor another one given: got %v", got)
	}
	if c := refusedCondition(t, cs, "outside"); c == nil || c.Status != metav1.ConditionTrue || c.Message != "192.0.2.9 is outside the pool 10.244.1.10-10.244.1.11" {
		t.Errorf("outside: condition %+v", c)
	}
	if got := status(t, cs, "auto"); len(got) != 1 || got[0] != "10.244.1.10" {
		t.Errorf("auto got %v, want [10.244.1.10]", got)
	}
	if err := a.sync(ctx, "ns/third"); err == nil {
		t.Errorf("pool of 2 gave a third address: %v", status(t, cs, "third"))
	}
}

// relist points a's lister at what cs holds now (the informer's view after
// the watch caught up).
func relist(t *testing.T, a *allocator, cs *fake.Clientset) {
	t.Helper()
	l, err := cs.CoreV1().Services("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for i := range l.Items {
		if err := idx.Add(&l.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	a.lister = listersv1.NewServiceLister(idx)
}

func refusedCondition(t *testing.T, cs *fake.Clientset, name string) *metav1.Condition {
	t.Helper()
	s, err := cs.CoreV1().Services("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(s.Status.Conditions, conditionRefused)
}

// The annotation metallb.io/loadBalancerIPs asks for several addresses:
// those in the pool and free are given, the others refused with a reason
// each; when the request changes the Service gets exactly the new set and
// the condition goes away once nothing is refused.
func TestSeveralRequestedAddresses(t *testing.T) {
	gw := svc("gw", corev1.ServiceTypeLoadBalancer, "", "10.244.1.10")
	gw.Annotations = map[string]string{annotationIPs: "192.0.2.1, 10.244.1.11,bogus,10.244.1.12"}
	a, cs := newAllocator(t, 4, gw, svc("other", corev1.ServiceTypeLoadBalancer, "", "10.244.1.11"))
	ctx := context.Background()
	if err := a.sync(ctx, "ns/gw"); err != nil {
		t.Fatal(err)
	}
	if got := status(t, cs, "gw"); len(got) != 1 || got[0] != "10.244.1.12" {
		t.Errorf("gw got %v, want [10.244.1.12]", got)
	}
	want := `"bogus" is not an IP address; 192.0.2.1 is outside the pool 10.244.1.10-10.244.1.13; 10.244.1.11 is in use by Service ns/other`
	if c := refusedCondition(t, cs, "gw"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "AddressesRefused" || c.Message != want {
		t.Errorf("condition %+v, want message %q", c, want)
	}
	if _, ok := a.reserved[netip.MustParseAddr("10.244.1.10")]; ok {
		t.Errorf("the address given up is still reserved: %v", a.reserved)
	}

	// Only usable addresses left: the condition is removed.
	live, err := cs.CoreV1().Services("ns").Get(ctx, "gw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.Annotations[annotationIPs] = "10.244.1.13,10.244.1.12"
	if _, err := cs.CoreV1().Services("ns").Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	relist(t, a, cs)
	if err := a.sync(ctx, "ns/gw"); err != nil {
		t.Fatal(err)
	}
	if got := status(t, cs, "gw"); len(got) != 2 || got[0] != "10.244.1.13" || got[1] != "10.244.1.12" {
		t.Errorf("gw got %v, want [10.244.1.13 10.244.1.12]", got)
	}
	if c := refusedCondition(t, cs, "gw"); c != nil {
		t.Errorf("condition kept: %+v", c)
	}
}

// Addresses from -static-start on are given only on request.
func TestStaticRangeOnlyOnRequest(t *testing.T) {
	a, cs := newAllocator(t, 3,
		svc("a", corev1.ServiceTypeLoadBalancer, ""),
		svc("b", corev1.ServiceTypeLoadBalancer, ""),
		svc("static", corev1.ServiceTypeLoadBalancer, "10.244.1.12"))
	a.static = netip.MustParseAddr("10.244.1.11")
	ctx := context.Background()
	if err := a.sync(ctx, "ns/a"); err != nil {
		t.Fatal(err)
	}
	if err := a.sync(ctx, "ns/b"); err == nil {
		t.Errorf("b got an address of the static range: %v", status(t, cs, "b"))
	}
	if err := a.sync(ctx, "ns/static"); err != nil {
		t.Fatal(err)
	}
	if got := status(t, cs, "static"); len(got) != 1 || got[0] != "10.244.1.12" {
		t.Errorf("static got %v, want [10.244.1.12]", got)
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

	// Asking for a taken address gives it up: the Service gets exactly
	// what it asks for, or nothing, and the condition says why.
	taken := svc("gw2", corev1.ServiceTypeLoadBalancer, "10.244.1.11", "10.244.1.10")
	a, cs = newAllocator(t, 3, taken, svc("other", corev1.ServiceTypeLoadBalancer, "", "10.244.1.11"))
	a.reserved[netip.MustParseAddr("10.244.1.10")] = "ns/gw2"
	if err := a.sync(ctx, "ns/gw2"); err != nil {
		t.Fatal(err)
	}
	if got := status(t, cs, "gw2"); len(got) != 0 {
		t.Errorf("gw2 got %v, want nothing", got)
	}
	if c := refusedCondition(t, cs, "gw2"); c == nil || c.Message != "10.244.1.11 is in use by Service ns/other" {
		t.Errorf("gw2: condition %+v", c)
	}
	if len(a.reserved) != 0 {
		t.Errorf("a refused move left reservations: %v", a.reserved)
	}
}
