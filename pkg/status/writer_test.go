package status

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// The writer's HTTPRoute path (merge patch with optimistic concurrency)
// works on the fake client; the server-side apply of Gateways and
// GatewayClasses is covered by test/integration on a real API server.

func newRouteWriter(t *testing.T, leading *atomic.Bool, objs ...client.Object) (*Writer, client.Client) {
	t.Helper()
	s := runtime.NewScheme()
	if err := gwapiv1.Install(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&gwapiv1.HTTPRoute{}, &gwapiv1.GRPCRoute{}, &gwapiv1.BackendTLSPolicy{}).Build()
	w := NewWriter(c, c, Options{
		Leading: leading.Load,
		Now:     func() time.Time { return t1 },
		QPS:     1000,
		Burst:   1000,
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go w.Run(ctx)
	return w, c
}

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle waits until the writer's queue is empty and idle.
func settle(w *Writer) {
	for w.queue.Len() > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
}

func TestWriterRoute(t *testing.T) {
	other := gwapiv1.GatewayController("example.com/other")
	route := &gwapiv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app", Generation: 2},
		Status: gwapiv1.HTTPRouteStatus{RouteStatus: gwapiv1.RouteStatus{Parents: []gwapiv1.RouteParentStatus{
			parent("theirs", other, cond("Accepted", "True", "Accepted", 1, t0)),
			parent("old", ours, cond("Accepted", "True", "Accepted", 1, t0)),
		}}},
	}
	var leading atomic.Bool
	w, c := newRouteWriter(t, &leading, route)
	key := types.NamespacedName{Namespace: "default", Name: "app"}
	desired := &gatewayapi.Status{Routes: map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{
		{Kind: gatewayapi.KindHTTPRoute, Namespace: "default", Name: "app"}: {Parents: []gwapiv1.RouteParentStatus{
			parent("web", ours, cond("Accepted", "True", "Accepted", 2, time.Time{})),
		}},
	}}

	// Not leading: nothing is written.
	w.Update(desired)
	settle(w)
	if w.Writes() != 0 {
		t.Fatalf("a follower wrote %d times", w.Writes())
	}

	// Leading: one write, foreign entry kept, stale entry of ours gone.
	leading.Store(true)
	w.Resync()
	waitFor(t, "the status write", func() bool { return w.Writes() == 1 })
	settle(w)
	var got gwapiv1.HTTPRoute
	if err := c.Get(context.Background(), key, &got); err != nil {
		t.Fatal(err)
	}
	ps := got.Status.Parents
	if len(ps) != 2 || ps[0].ControllerName != other || ps[1].ParentRef.Name != "web" || ps[1].ControllerName != ours {
		t.Fatalf("parents after write: %+v", ps)
	}
	if ps[1].Conditions[0].ObservedGeneration != 2 || !ps[1].Conditions[0].LastTransitionTime.Time.Equal(t1) {
		t.Errorf("our condition: %+v", ps[1].Conditions[0])
	}

	// The same desired status again: no write.
	w.Update(desired)
	settle(w)
	if w.Writes() != 1 {
		t.Errorf("unchanged status written again: %d writes", w.Writes())
	}

	// The route detaches: our entry goes, theirs stays.
	w.Update(WithStaleRoutes(&gatewayapi.Status{}, Routes(&resources.Resources{HTTPRoutes: []*gwapiv1.HTTPRoute{&got}}), ours))
	waitFor(t, "the removal", func() bool { return w.Writes() == 2 })
	settle(w)
	if err := c.Get(context.Background(), key, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Parents) != 1 || got.Status.Parents[0].ControllerName != other {
		t.Errorf("parents after detach: %+v", got.Status.Parents)
	}
}

func TestWriterStopsWhenLeadIsLostBeforeWrite(t *testing.T) {
	route := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app", Generation: 1}}
	var leading atomic.Bool
	leading.Store(true)
	s := runtime.NewScheme()
	_ = gwapiv1.Install(s)
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(route).WithStatusSubresource(&gwapiv1.HTTPRoute{}, &gwapiv1.GRPCRoute{}).Build()
	// The lead is lost after the first check (in process), before the
	// write: beforeWrite's check must refuse.
	calls := 0
	w := NewWriter(c, c, Options{Leading: func() bool { calls++; return calls == 1 }})
	w.desired[Key{Kind: gatewayapi.KindHTTPRoute, Namespace: "default", Name: "app"}] = &gwapiv1.RouteStatus{
		Parents: []gwapiv1.RouteParentStatus{parent("web", ours, cond("Accepted", "True", "Accepted", 1, time.Time{}))},
	}
	if err := w.process(context.Background(), Key{Kind: gatewayapi.KindHTTPRoute, Namespace: "default", Name: "app"}); err != nil {
		t.Fatal(err)
	}
	if w.Writes() != 0 {
		t.Errorf("wrote after losing the lead")
	}
	var got gwapiv1.HTTPRoute
	_ = c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "app"}, &got)
	if len(got.Status.Parents) != 0 {
		t.Errorf("status written after losing the lead: %+v", got.Status.Parents)
	}
}

// TestWriterGRPCRoute: a GRPCRoute's parents are written like an
// HTTPRoute's (foreign entries kept), and an HTTPRoute of the same name is
// another object.
func TestWriterGRPCRoute(t *testing.T) {
	other := gwapiv1.GatewayController("example.com/other")
	grpc := &gwapiv1.GRPCRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo", Generation: 1},
		Status: gwapiv1.GRPCRouteStatus{RouteStatus: gwapiv1.RouteStatus{Parents: []gwapiv1.RouteParentStatus{
			parent("theirs", other, cond("Accepted", "True", "Accepted", 1, t0)),
		}}},
	}
	http := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "echo", Generation: 1}}
	var leading atomic.Bool
	leading.Store(true)
	w, c := newRouteWriter(t, &leading, grpc, http)
	w.Update(&gatewayapi.Status{Routes: map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{
		{Kind: gatewayapi.KindGRPCRoute, Namespace: "default", Name: "echo"}: {Parents: []gwapiv1.RouteParentStatus{
			parent("web", ours, cond("Accepted", "True", "Accepted", 1, time.Time{})),
		}},
	}})
	waitFor(t, "the status write", func() bool { return w.Writes() == 1 })
	settle(w)
	var got gwapiv1.GRPCRoute
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "echo"}, &got); err != nil {
		t.Fatal(err)
	}
	if ps := got.Status.Parents; len(ps) != 2 || ps[0].ControllerName != other || ps[1].ParentRef.Name != "web" || ps[1].ControllerName != ours {
		t.Fatalf("GRPCRoute parents after write: %+v", ps)
	}
	var h gwapiv1.HTTPRoute
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "echo"}, &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Status.Parents) != 0 {
		t.Errorf("the HTTPRoute of the same name got %+v", h.Status.Parents)
	}
}

// rendezvousClient holds every status patch until `want` patches are in
// flight at once, or fails after a while: it proves that writes run in
// parallel.
type rendezvousClient struct {
	client.Client
	want    int
	arrived chan struct{}
	release chan struct{}
	count   atomic.Int32
	failed  atomic.Bool
}

type rendezvousStatus struct {
	client.SubResourceWriter
	c *rendezvousClient
}

func (c *rendezvousClient) Status() client.SubResourceWriter {
	return rendezvousStatus{c.Client.Status(), c}
}

func (s rendezvousStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if s.c.count.Add(1) <= int32(s.c.want) {
		s.c.arrived <- struct{}{}
		select {
		case <-s.c.release:
		case <-time.After(5 * time.Second):
			s.c.failed.Store(true)
		}
	}
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// TestWriterWritesInParallel: with Workers 4, four routes' status patches
// are in flight at once (each waits for the others), and every route ends
// up with its status written exactly once.
func TestWriterWritesInParallel(t *testing.T) {
	s := runtime.NewScheme()
	if err := gwapiv1.Install(s); err != nil {
		t.Fatal(err)
	}
	const n = 12
	desired := &gatewayapi.Status{Routes: map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{}}
	var objs []client.Object
	for i := range n {
		name := "r" + string(rune('a'+i))
		objs = append(objs, &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: 1}})
		desired.Routes[gatewayapi.RouteKey{Kind: gatewayapi.KindHTTPRoute, Namespace: "default", Name: name}] = &gwapiv1.RouteStatus{
			Parents: []gwapiv1.RouteParentStatus{parent("web", ours, cond("Accepted", "True", "Accepted", 1, time.Time{}))},
		}
	}
	base := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&gwapiv1.HTTPRoute{}).Build()
	c := &rendezvousClient{Client: base, want: 4, arrived: make(chan struct{}, 4), release: make(chan struct{})}
	w := NewWriter(c, c, Options{Now: func() time.Time { return t1 }, QPS: 1000, Burst: 1000, Workers: 4})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go w.Run(ctx)
	w.Update(desired)
	for i := range c.want {
		select {
		case <-c.arrived:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d status patches were in flight at once; want %d", i, c.want)
		}
	}
	close(c.release)
	waitFor(t, "every route's status", func() bool { return w.Writes() == n })
	settle(w)
	if c.failed.Load() {
		t.Error("a patch waited in vain for the others")
	}
	if w.Writes() != n {
		t.Errorf("%d writes for %d routes", w.Writes(), n)
	}
	for _, o := range objs {
		var got gwapiv1.HTTPRoute
		if err := base.Get(ctx, client.ObjectKeyFromObject(o), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Parents) != 1 || got.Status.Parents[0].ParentRef.Name != "web" {
			t.Errorf("%s: parents %+v", o.GetName(), got.Status.Parents)
		}
	}
}

// TestWriterMetrics: a written route counts in
// xds_controller_status_writes_total{kind="HTTPRoute",result="written"},
// and the status queue's collectors are registered under the
// xds_controller_status_ prefix.
func TestWriterMetrics(t *testing.T) {
	var leading atomic.Bool
	leading.Store(true)
	route := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app", Generation: 1}}
	w, _ := newRouteWriter(t, &leading, route)
	reg := prometheus.NewRegistry()
	if err := w.Register(reg); err != nil {
		t.Fatal(err)
	}
	w.Update(&gatewayapi.Status{Routes: map[gatewayapi.RouteKey]*gwapiv1.RouteStatus{
		{Kind: gatewayapi.KindHTTPRoute, Namespace: "default", Name: "app"}: {Parents: []gwapiv1.RouteParentStatus{
			parent("web", ours, cond("Accepted", "True", "Accepted", 1, time.Time{})),
		}},
	}})
	waitFor(t, "the status write", func() bool { return w.Writes() == 1 })
	settle(w)
	if got := testutil.ToFloat64(w.metrics.writes.WithLabelValues("HTTPRoute", "written")); got != 1 {
		t.Errorf("writes{HTTPRoute,written} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(w.metrics.adds); got < 1 {
		t.Errorf("queue adds = %v, want at least 1", got)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	for _, want := range []string{"xds_controller_status_writes_total", "xds_controller_status_queue_depth", "xds_controller_status_queue_wait_seconds", "xds_controller_status_write_duration_seconds"} {
		if !slices.Contains(names, want) {
			t.Errorf("metric %s not registered; have %v", want, names)
		}
	}
}
