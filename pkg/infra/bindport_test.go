package infra

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

func shared(*gwapiv1.Gateway) v1alpha1.Mode { return v1alpha1.ModeShared }

func TestDedicatedBindPorts(t *testing.T) {
	for _, tc := range []struct {
		ports []int
		want  map[int32]uint32
	}{
		{[]int{80, 443, 8080}, map[int32]uint32{80: 10080, 443: 10443, 8080: 8080}},
		{[]int{1023, 1024}, map[int32]uint32{1023: 11023, 1024: 1024}},
	} {
		gw := gateway("ns", "gw", 0, tc.ports...)
		got := DedicatedBindPorts(gw)
		for p, want := range tc.want {
			if got[p] != want {
				t.Errorf("%v: port %d -> %d, want %d", tc.ports, p, got[p], want)
			}
			if b := BindPort(v1alpha1.ModeDedicated, gw, p); b != want {
				t.Errorf("BindPort(%d) = %d, want %d", p, b, want)
			}
		}
	}
	// 80 would take 10080, which another listener holds; 19001 and 9901 are
	// the bootstrap's. All four end up distinct and outside the reserved ports.
	gw := gateway("ns", "gw", 0, 80, 10080, 19001, 9901)
	got := DedicatedBindPorts(gw)
	if got[10080] != 10080 {
		t.Errorf("10080 -> %d", got[10080])
	}
	seen := map[uint32]bool{}
	for p, b := range got {
		if b == 0 || seen[b] || reservedPorts[b] {
			t.Errorf("port %d -> %d (duplicate, zero or reserved): %v", p, b, got)
		}
		seen[b] = true
	}
	if got[80] < SharedPortMin || got[80] > SharedPortMax {
		t.Errorf("80 -> %d, want a port of the shared range", got[80])
	}
}

func assertNoCollisions(t *testing.T, gws []*gwapiv1.Gateway, bp *BindPorts) {
	t.Helper()
	owner := map[uint32]ListenerKey{}
	for _, gw := range gws {
		for _, p := range listenerPorts(gw) {
			k := ListenerKey{types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}, p}
			b, ok := bp.Lookup(k)
			if !ok || b < SharedPortMin || b > SharedPortMax {
				t.Fatalf("%v -> %d (assigned %v), want in [%d, %d]", k, b, ok, SharedPortMin, SharedPortMax)
			}
			if o, dup := owner[b]; dup {
				t.Fatalf("%v and %v both bind %d", o, k, b)
			}
			owner[b] = k
		}
	}
}

func TestAssignBindPortsCollisionFree(t *testing.T) {
	// 3,000 Gateways with two ports each: birthday collisions of home
	// ports are certain (6,000 keys in 12,768 ports).
	var gws []*gwapiv1.Gateway
	for i := range 3000 {
		gws = append(gws, gateway(fmt.Sprintf("ns%d", i%7), fmt.Sprintf("gw-%d", i), i/10, 80, 443))
	}
	bp := AssignBindPorts(gws, shared, nil)
	assertNoCollisions(t, gws, bp)
	homes := 0
	for _, gw := range gws {
		nn := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
		for _, p := range []int32{80, 443} {
			if b, _ := bp.Lookup(ListenerKey{nn, p}); b == homePort(nn, p) {
				homes++
			}
		}
	}
	if homes == 6000 || homes < 4000 {
		t.Errorf("%d of 6000 on their home port: the test should see some collisions, and most should be home", homes)
	}
	// Deterministic, whatever the input order.
	rev := make([]*gwapiv1.Gateway, len(gws))
	for i, gw := range gws {
		rev[len(gws)-1-i] = gw
	}
	bp2 := AssignBindPorts(rev, shared, nil)
	for k, v := range bp.ports {
		if bp2.ports[k] != v {
			t.Fatalf("order-dependent: %v %d vs %d", k, v, bp2.ports[k])
		}
	}
}

// collidingPair finds two Gateway names whose home ports for port 80 are equal.
func collidingPair(t *testing.T) (string, string) {
	seen := map[uint32]string{}
	for i := range 100000 {
		name := fmt.Sprintf("g%d", i)
		h := homePort(types.NamespacedName{Namespace: "ns", Name: name}, 80)
		if o, ok := seen[h]; ok {
			return o, name
		}
		seen[h] = name
	}
	t.Fatal("no collision found")
	return "", ""
}

func TestAssignBindPortsStability(t *testing.T) {
	a, b := collidingPair(t)
	home := homePort(types.NamespacedName{Namespace: "ns", Name: a}, 80)
	key := func(name string) ListenerKey {
		return ListenerKey{types.NamespacedName{Namespace: "ns", Name: name}, 80}
	}

	// The older Gateway keeps the home port; the newer one probes, whatever
	// the names.
	older, newer := gateway("ns", b, 1, 80), gateway("ns", a, 2, 80)
	bp := AssignBindPorts([]*gwapiv1.Gateway{newer, older}, shared, nil)
	if p, _ := bp.Lookup(key(b)); p != home {
		t.Errorf("older Gateway %s: %d, want home %d", b, p, home)
	}
	if p, _ := bp.Lookup(key(a)); p == home {
		t.Errorf("newer Gateway %s also got %d", a, p)
	}

	// Adding Gateways never moves the ports of older ones.
	before := AssignBindPorts([]*gwapiv1.Gateway{older, newer}, shared, nil)
	more := []*gwapiv1.Gateway{older, newer}
	for i := range 500 {
		more = append(more, gateway("other", fmt.Sprintf("n%d", i), 10+i, 80, 443))
	}
	after := AssignBindPorts(more, shared, nil)
	for _, n := range []string{a, b} {
		p1, _ := before.Lookup(key(n))
		p2, _ := after.Lookup(key(n))
		if p1 != p2 {
			t.Errorf("%s moved from %d to %d when newer Gateways came", n, p1, p2)
		}
	}

	// Deleting the older Gateway: without the live Services the newer one
	// would move to its home port; with them (PreviousBindPorts) it stays.
	r := &Renderer{}
	var svcs []corev1.Service
	for _, gw := range []*gwapiv1.Gateway{older, newer} {
		svcs = append(svcs, *r.service(gw, Effective(nil, nil), bp.BindPort, nil))
	}
	prev := PreviousBindPorts(svcs)
	if len(prev) != 2 {
		t.Fatalf("PreviousBindPorts: %v", prev)
	}
	kept := AssignBindPorts([]*gwapiv1.Gateway{newer}, shared, prev)
	p1, _ := bp.Lookup(key(a))
	if p2, _ := kept.Lookup(key(a)); p2 != p1 {
		t.Errorf("with previous: %s moved from %d to %d", a, p1, p2)
	}
	if p2, _ := AssignBindPorts([]*gwapiv1.Gateway{newer}, shared, nil).Lookup(key(a)); p2 != home {
		t.Errorf("without previous: %d, want home %d", p2, home)
	}

	// An older Gateway gaining a listener does not displace a newer one's
	// port when the previous ports are known.
	grown := older.DeepCopy()
	grown.Spec.Listeners = append(grown.Spec.Listeners, gwapiv1.Listener{Name: "x", Port: 8080, Protocol: gwapiv1.HTTPProtocolType})
	g2 := AssignBindPorts([]*gwapiv1.Gateway{grown, newer}, shared, prev)
	assertNoCollisions(t, []*gwapiv1.Gateway{grown, newer}, g2)
	if p2, _ := g2.Lookup(key(a)); p2 != p1 {
		t.Errorf("grown older Gateway displaced %s: %d -> %d", a, p1, p2)
	}

	// A previous port already taken by an older Gateway is not kept twice.
	dup := map[ListenerKey]uint32{key(a): home, key(b): home}
	d := AssignBindPorts([]*gwapiv1.Gateway{older, newer}, shared, dup)
	assertNoCollisions(t, []*gwapiv1.Gateway{older, newer}, d)
}

func TestAssignBindPortsPerClassAndMode(t *testing.T) {
	a := gateway("ns", "a", 0, 80)
	b := gateway("ns", "b", 0, 80)
	b.Spec.GatewayClassName = "other"
	c := gateway("ns", "c", 0, 80)
	mode := func(gw *gwapiv1.Gateway) v1alpha1.Mode {
		if gw.Name == "c" {
			return v1alpha1.ModeDedicated
		}
		return v1alpha1.ModeShared
	}
	bp := AssignBindPorts([]*gwapiv1.Gateway{a, b, c}, mode, nil)
	if got := bp.BindPort(c, 80); got != 10080 {
		t.Errorf("dedicated c: %d", got)
	}
	// a and b are in different classes (different fleets): both get their home port.
	for _, gw := range []*gwapiv1.Gateway{a, b} {
		if got := bp.BindPort(gw, 80); got != BindPort(v1alpha1.ModeShared, gw, 80) {
			t.Errorf("%s: %d", gw.Name, got)
		}
	}
	// Unknown Gateways fall back to their home port, never 0.
	if got := bp.BindPort(gateway("x", "y", 0), 80); got == 0 {
		t.Error("unknown gateway got 0")
	}
	var nilBP *BindPorts
	if got := nilBP.BindPort(a, 80); got == 0 {
		t.Error("nil BindPorts got 0")
	}
}

// podBoundPorts are the ports a rendered Dedicated Envoy pod binds besides
// its listeners: every container port of its containers and sidecars (the
// agent's startup probe among them), and Envoy's admin port on the pod's
// loopback, read from the bootstrap.
func podBoundPorts(t *testing.T) map[uint32]string {
	t.Helper()
	gw := withInfra(gateway("apps", "web", 0, 80))
	objs, err := testRenderer().Dedicated(DedicatedInput{Gateway: gw, Params: Effective(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}, nil), TrustBundle: testBundle})
	if err != nil {
		t.Fatal(err)
	}
	pod := podTemplateOf(t, objs)
	out := map[uint32]string{}
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		for _, p := range c.Ports {
			out[uint32(p.ContainerPort)] = c.Name + "/" + p.Name
		}
	}
	boot := find[*corev1.ConfigMap](t, objs)[0].Data["bootstrap.yaml"]
	admin := fmt.Sprintf(`address: "127.0.0.1", port_value: %d`, AdminPort)
	if !strings.Contains(boot, admin) {
		t.Fatalf("bootstrap lacks the admin address %q", admin)
	}
	out[AdminPort] = "envoy/admin (loopback)"
	return out
}

// TestDedicatedBindPortsAvoidThePodsPorts: a listener on any port the pod
// binds besides its listeners (19002, the agent's startup probe, among
// them) is remapped to the shared range: Envoy would refuse the listener
// ("Address already in use"). The ports below 1024 map to 10000-11023,
// where the pod binds nothing.
func TestDedicatedBindPortsAvoidThePodsPorts(t *testing.T) {
	bound := podBoundPorts(t)
	if _, ok := bound[AgentProbePort]; !ok || len(bound) < 4 {
		t.Fatalf("the pod's ports: %v, want the admin, readiness, agent probe and metrics ports", bound)
	}
	for p, what := range bound {
		if !reservedPorts[p] {
			t.Errorf("port %d (%s) is bound by every Envoy pod but not reserved", p, what)
		}
		if p >= dedicatedLowPortOffset && p < dedicatedLowPortOffset+1024 {
			t.Errorf("port %d (%s) is where listener port %d binds", p, what, p-dedicatedLowPortOffset)
		}
		got := DedicatedBindPorts(gateway("ns", "gw", 0, int(p)))[int32(p)]
		if got == p || got < SharedPortMin || got > SharedPortMax {
			t.Errorf("listener port %d binds %d, want a port of the shared range (the pod's %s is %d)", p, got, what, p)
		}
	}
}
