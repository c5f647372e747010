package quarantine

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/translate"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

func key(i int) gatewayapi.RouteKey {
	return gatewayapi.RouteKey{Kind: gatewayapi.KindHTTPRoute, Namespace: fmt.Sprintf("ns%d", i), Name: "r"}
}

// render is a scope's route configuration with one Envoy route per object
// of objs (generation -> the route's prefix, so that a new generation is
// a change), minus the held ones at their generation, with their origins.
func render(objs map[gatewayapi.RouteKey]int64, holds map[gatewayapi.RouteKey]translate.Hold) *xdstranslator.Resources {
	vh := &routev3.VirtualHost{Name: "vh", Domains: []string{"*"}}
	origins := map[string]ir.Origin{}
	for _, k := range slices.SortedFunc(maps.Keys(objs), compareKeys) {
		if h, held := holds[k]; held && h.Generation == objs[k] {
			continue
		}
		name := fmt.Sprintf("httproute/%s/%s/rule/0/match/0", k.Namespace, k.Name)
		origins[name] = ir.Origin{Object: k}
		vh.Routes = append(vh.Routes, &routev3.Route{
			Name:  name,
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: fmt.Sprintf("/g%d", objs[k])}},
		})
	}
	return &xdstranslator.Resources{Routes: []types.Resource{&routev3.RouteConfiguration{Name: "rc", VirtualHosts: []*routev3.VirtualHost{vh}}},
		Origins: xdstranslator.OriginsOf(origins)}
}

// envoy judges versions as Envoy would: it refuses (NACKs) any route
// configuration with a route of a bad object at its bad generation, and
// accepts the others; it only judges versions it was sent (publish).
type envoy struct {
	bad      map[gatewayapi.RouteKey]int64
	versions map[string]*xdstranslator.Resources
	typeURL  string
}

func (e *envoy) publish(r *xdstranslator.Resources) string {
	prints := Fingerprints(r)
	var parts []string
	for _, k := range slices.SortedFunc(maps.Keys(prints), compareKeys) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, prints[k]))
	}
	v := strings.Join(parts, ",")
	e.versions[v] = r
	return v
}

func (e *envoy) Verdict(scope, version, _ string) (bool, *xdsserver.Nack) {
	r := e.versions[version]
	if r == nil {
		return false, nil
	}
	for _, res := range r.Routes {
		for _, vh := range res.(*routev3.RouteConfiguration).VirtualHosts {
			for _, rt := range vh.Routes {
				o, _ := r.Origins.Of(rt.Name)
				k := o.Object
				if g, bad := e.bad[k]; bad && rt.Match.GetPrefix() == fmt.Sprintf("/g%d", g) {
					typ := cmpOr(e.typeURL, resource.RouteType)
					return false, &xdsserver.Nack{Scope: scope, NodeID: "envoy-1", TypeURL: typ, Version: version, Detail: "invalid regex " + k.Namespace}
				}
			}
		}
	}
	return true, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// converge runs the loop of a controller: translate with the holds,
// publish, read the verdicts, again while the holds change; it returns the
// number of publications.
func converge(t *testing.T, q *Quarantine, e *envoy, objs map[gatewayapi.RouteKey]int64) int {
	t.Helper()
	for n := 1; n <= 64; n++ {
		r := render(objs, q.Holds()["s"])
		q.Published("s", e.publish(r), r, func(k gatewayapi.RouteKey) (int64, bool) { g, ok := objs[k]; return g, ok })
		if !q.Update(e) {
			return n
		}
	}
	t.Fatal("the holds never settle")
	return 0
}

func served(e *envoy, q *Quarantine, objs map[gatewayapi.RouteKey]int64) []gatewayapi.RouteKey {
	return slices.SortedFunc(maps.Keys(Fingerprints(render(objs, q.Holds()["s"]))), compareKeys)
}

func TestBisectionFindsTheCulprits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		added    int   // objects added at once after the accepted version
		culprits []int // of those
	}{
		{"one new object", 1, []int{3}},
		{"one of eight", 8, []int{7}},
		{"two of sixteen", 16, []int{4, 17}},
		{"all three", 3, []int{3, 4, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
			e := &envoy{bad: map[gatewayapi.RouteKey]int64{}, versions: map[string]*xdstranslator.Resources{}}
			objs := map[gatewayapi.RouteKey]int64{key(0): 1, key(1): 1, key(2): 1}
			if n := converge(t, q, e, objs); n != 1 {
				t.Fatalf("the first version took %d publications", n)
			}
			for i := 3; i < 3+tc.added; i++ {
				objs[key(i)] = 1
			}
			var want []gatewayapi.RouteKey
			for _, c := range tc.culprits {
				e.bad[key(c)] = 1
				want = append(want, key(c))
			}
			slices.SortFunc(want, compareKeys)
			n := converge(t, q, e, objs)
			t.Logf("%d objects added, culprits %v: %d publications", tc.added, tc.culprits, n)
			holds := q.Holds()["s"]
			if got := slices.SortedFunc(maps.Keys(holds), compareKeys); !slices.Equal(got, want) {
				t.Fatalf("held %v, want %v", got, want)
			}
			for k, h := range holds {
				if !h.Culprit || h.Generation != 1 || !strings.Contains(h.Message, "invalid regex "+k.Namespace) || !strings.Contains(h.Message, "envoy-1") {
					t.Errorf("hold of %s: %+v", k, h)
				}
			}
			if got := len(served(e, q, objs)); got != len(objs)-len(want) {
				t.Errorf("%d objects served, want %d", got, len(objs)-len(want))
			}
			// Every served version after the culprits are held is accepted.
			if ok, nack := e.Verdict("s", e.publish(render(objs, holds)), resource.RouteType); !ok || nack != nil {
				t.Errorf("the final version is not accepted: %v", nack)
			}

			// A culprit that changes (a new generation) is tried again:
			// fixed, it is served; the other culprits stay held.
			objs[want[0]] = 2
			converge(t, q, e, objs)
			holds = q.Holds()["s"]
			if _, held := holds[want[0]]; held {
				t.Errorf("%s is still held after its fix: %+v", want[0], holds)
			}
			if len(holds) != len(want)-1 {
				t.Errorf("held %v, want the other culprits", holds)
			}
			// A culprit changed into another refused version is held at
			// that generation.
			if len(want) > 1 {
				objs[want[1]] = 2
				e.bad[want[1]] = 2
				converge(t, q, e, objs)
				if h := q.Holds()["s"][want[1]]; !h.Culprit || h.Generation != 2 {
					t.Errorf("%s changed into a refused generation: hold %+v", want[1], h)
				}
			}
			// A deleted culprit's hold goes.
			for k := range q.Holds()["s"] {
				delete(objs, k)
			}
			converge(t, q, e, objs)
			if h := q.Holds()["s"]; len(h) != 0 {
				t.Errorf("holds of deleted objects: %v", h)
			}
		})
	}
}

// A NACK that no route object can be blamed for (another type), or
// without an accepted version to compare with, holds nothing: the scope
// stays as xdsserver leaves it.
func TestUnattributedNacksHoldNothing(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	objs := map[gatewayapi.RouteKey]int64{key(0): 1, key(1): 1}

	q := New(log)
	e := &envoy{bad: map[gatewayapi.RouteKey]int64{key(1): 1}, versions: map[string]*xdstranslator.Resources{}}
	converge(t, q, e, objs)
	if h := q.Holds(); len(h) != 0 {
		t.Errorf("without an accepted version: holds %v", h)
	}

	q = New(log)
	e = &envoy{bad: map[gatewayapi.RouteKey]int64{}, versions: map[string]*xdstranslator.Resources{}, typeURL: resource.ListenerType}
	converge(t, q, e, objs)
	objs[key(2)] = 1
	e.bad[key(2)] = 1
	r := render(objs, nil)
	v := e.publish(r)
	q.Published("s", v, r, func(k gatewayapi.RouteKey) (int64, bool) { g, ok := objs[k]; return g, ok })
	views := map[string]xdsserver.ScopeView{"s": {Rejected: &xdsserver.Nack{Version: v}}}
	if q.View(views)["s"].Rejected != nil {
		t.Error("a NACK read before Update judged its version shows the scope Rejected")
	}
	if q.Update(e) || len(q.Holds()) != 0 {
		t.Errorf("a Listener NACK: holds %v", q.Holds())
	}
	if q.View(views)["s"].Rejected == nil || q.Attributed("s", v) {
		t.Error("an unattributed NACK is hidden from the scope's view")
	}
}

// The scope's view loses a NACK that was traced to objects: its Gateways
// are not Rejected as a whole.
func TestViewHidesAttributedNacks(t *testing.T) {
	q := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	e := &envoy{bad: map[gatewayapi.RouteKey]int64{}, versions: map[string]*xdstranslator.Resources{}}
	objs := map[gatewayapi.RouteKey]int64{key(0): 1}
	converge(t, q, e, objs)
	objs[key(1)] = 1
	e.bad[key(1)] = 1
	r := render(objs, nil)
	v := e.publish(r)
	q.Published("s", v, r, func(k gatewayapi.RouteKey) (int64, bool) { g, ok := objs[k]; return g, ok })
	if !q.Update(e) {
		t.Fatal("a refused new route does not change the holds")
	}
	views := map[string]xdsserver.ScopeView{"s": {Generation: 3, Rejected: &xdsserver.Nack{Version: v}}, "other": {Rejected: &xdsserver.Nack{Version: v}}}
	got := q.View(views)
	if got["s"].Rejected != nil || got["s"].Generation != 3 {
		t.Errorf("scope s: %+v", got["s"])
	}
	if got["other"].Rejected == nil {
		t.Error("another scope's NACK is hidden")
	}
	if views["s"].Rejected == nil {
		t.Error("View modified its argument")
	}
}

func TestSuspects(t *testing.T) {
	objs := map[gatewayapi.RouteKey]int64{key(0): 1, key(1): 1, key(2): 1}
	good := Fingerprints(render(objs, nil))
	if len(good) != 3 {
		t.Fatalf("fingerprints %v", good)
	}
	objs[key(1)] = 2 // changed
	objs[key(3)] = 1 // new
	delete(objs, key(2))
	got := Suspects(good, Fingerprints(render(objs, nil)))
	if want := []gatewayapi.RouteKey{key(1), key(3)}; !slices.Equal(got, want) {
		t.Errorf("suspects %v, want %v", got, want)
	}
	if s := Suspects(good, good); s != nil {
		t.Errorf("the same version: suspects %v", s)
	}
	// Another route configuration or virtual host is another route.
	a := render(map[gatewayapi.RouteKey]int64{key(0): 1}, nil)
	b := render(map[gatewayapi.RouteKey]int64{key(0): 1}, nil)
	b.Routes[0].(*routev3.RouteConfiguration).VirtualHosts[0].Domains = []string{"a.example.com"}
	if s := Suspects(Fingerprints(a), Fingerprints(b)); len(s) != 1 {
		t.Errorf("a route moved to another virtual host: suspects %v", s)
	}
}

// counting counts the verdicts asked for.
type counting struct {
	*envoy
	n int
}

func (c *counting) Verdict(scope, version, typeURL string) (bool, *xdsserver.Nack) {
	c.n++
	return c.envoy.Verdict(scope, version, typeURL)
}

// A run that publishes the same version again, with nothing held, costs no
// verdict: runs of other scopes do not make every scope's verdict read
// again.
func TestSameVersionAgainCostsNothing(t *testing.T) {
	q := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	e := &envoy{bad: map[gatewayapi.RouteKey]int64{}, versions: map[string]*xdstranslator.Resources{}}
	objs := map[gatewayapi.RouteKey]int64{key(0): 1}
	converge(t, q, e, objs)
	c := &counting{envoy: e}
	r := render(objs, nil)
	for range 3 {
		q.Published("s", e.publish(r), r, func(k gatewayapi.RouteKey) (int64, bool) { g, ok := objs[k]; return g, ok })
		q.Update(c)
	}
	if c.n != 0 {
		t.Errorf("%d verdicts read for a version already judged", c.n)
	}
}
