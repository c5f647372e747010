package ingress

// Incremental translation: a Cache keeps each class's translation from
// one run to the next, so that a run whose change did not touch a class
// costs that class next to nothing.
//
// The unit is the class: its Ingresses merge (per host, a path claimed by
// two Ingresses goes to the older, the oldest default backend answers for
// all, the certificates of all of them share the HTTPS listener), so a
// change to one Ingress can change what the others serve and report.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// Cache carries the translation of each IngressClass of ours to the next
// Translate. A class is translated again when its IngressClass or
// IngressClassParameters object, its Ingresses (the list of objects), what
// the options and Config decide for it (classKey), or a Service or Secret
// it read through gatewayapi.Refs changed, and whenever the Gateway API
// translation started over (gatewayapi.Refs StartedOver: a GatewayClass,
// Gateway, ReferenceGrant, BackendTLSPolicy... changed); else it keeps its
// IR routes and its Ingresses' statuses (the same objects). Objects are
// recognised by identity, as gatewayapi.Cache does. Not safe for
// concurrent use; NewCache.
type Cache struct {
	classes map[string]*classMemo
	// translated counts the classes the last Translate translated.
	translated int
}

// NewCache returns an empty Cache: its first Translate translates every
// class.
func NewCache() *Cache { return &Cache{} }

// LastRun says how many classes the last Translate translated (the
// others were kept).
func (c *Cache) LastRun() (classes int) { return c.translated }

// classMemo is one class's translation and what it was made from.
type classMemo struct {
	obj       *networkingv1.IngressClass
	params    *v1alpha1.IngressClassParameters
	ingresses []*networkingv1.Ingress
	key       string
	reads     []read
	// gateway is the class's IR Gateway (nil when not served), later its
	// listeners' counts (Result later); each run hands out a copy of the
	// Gateway and its listeners, which the merge and pkg/translate
	// change. statuses are the class's Ingresses', oldest first, shared
	// by every run's Result: never modified (Result.Unbind copies).
	gateway  *ir.Gateway
	later    map[*ir.Listener]int
	statuses []*Status
	// routes are the class's IR routes (classState routes), which its
	// next translation keeps where it makes equal ones.
	routes map[routeKey]*ir.HTTPRoute
}

// routeKey names an IR route of a class: its listener (HTTP, where
// redirects to HTTPS are), virtual host and name.
type routeKey struct {
	http           bool
	hostname, name string
}

// read is a Service (with its EndpointSlices) or a Secret a class read.
type read struct {
	secret bool
	k      types.NamespacedName
}

// Translate is the package's Translate, reusing the translation of every
// class that did not change since c's last Translate (Cache). refs must
// be those of the gatewayapi.Cache that translated res just before, as
// for every earlier Translate of c. The Result's statuses may be shared
// with earlier Results: none may be modified.
func (c *Cache) Translate(res *resources.Resources, opts gatewayapi.Options, cfg Config, refs *gatewayapi.Refs) *Result {
	out := &Result{}
	c.translated = 0
	if res == nil {
		res = &resources.Resources{}
	}
	classes := Classes(res, cfg)
	if len(classes) == 0 {
		c.classes = nil
		return out
	}
	byClass := map[string][]*networkingv1.Ingress{}
	n := 0
	for _, ing := range res.Ingresses {
		if ing == nil {
			continue
		}
		if cl := ClassOf(ing, classes); cl != nil {
			byClass[cl.Obj.Name] = append(byClass[cl.Obj.Name], ing)
			n++
		}
	}
	out.Status = make(map[types.NamespacedName]*Status, n)
	out.served, out.later = map[*ir.Gateway][]*Status{}, map[*ir.Listener]int{}
	next := make(map[string]*classMemo, len(classes))
	for _, name := range slices.Sorted(maps.Keys(classes)) {
		cl, ings := classes[name], byClass[name]
		key := classKey(cl, opts, cfg)
		m := c.classes[name]
		if m == nil || refs.StartedOver() || m.obj != cl.Obj || m.params != cl.Params || m.key != key ||
			!slices.Equal(m.ingresses, ings) || slices.ContainsFunc(m.reads, func(r read) bool {
			if r.secret {
				return refs.SecretChanged(r.k)
			}
			return refs.ServiceChanged(r.k)
		}) {
			m = translateClass(cl, ings, key, opts, cfg, refs, m)
			c.translated++
		}
		next[name] = m
		m.emit(out)
	}
	c.classes = next
	return out
}

// classKey is what opts and cfg decide for class cl beside its objects:
// its problem, where its Gateway is served (scope, bind ports, edge
// limits, refused parameters) and the options themselves (their
// functions by identity).
func classKey(cl *Class, opts gatewayapi.Options, cfg Config) string {
	var b strings.Builder
	gw := cl.Gateway
	fmt.Fprintf(&b, "%q %+v %s %q", cl.Problem, cfg, opts.ScopeOf(gw), opts.ParametersRefused(types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}))
	for _, l := range gw.Spec.Listeners {
		fmt.Fprintf(&b, " %d", opts.BindPortOf(gw, l.Port))
	}
	if e := opts.EdgeOf(gw); e != nil {
		edge, _ := json.Marshal(e)
		fmt.Fprintf(&b, " edge=%s", edge)
	}
	fmt.Fprintf(&b, " %v", opts)
	return b.String()
}

// translateClass translates class cl and its Ingresses ings (in the order
// of the snapshot). An IR route equal to one of the class's last
// translation (prev, nil for none) is that one, the same object, so that
// the later stages (IR validation, xDS, pre-validation) take it as
// unchanged: a change to one Ingress costs them its own routes.
func translateClass(cl *Class, ings []*networkingv1.Ingress, key string, opts gatewayapi.Options, cfg Config, refs *gatewayapi.Refs, prev *classMemo) *classMemo {
	t := &translator{opts: opts, cfg: cfg, refs: refs, out: &Result{later: map[*ir.Listener]int{}, served: map[*ir.Gateway][]*Status{}}}
	cs := &classState{class: cl, hosts: map[string][]*entry{}, claims: map[string]*entry{}, kept: map[routeKey]*ir.HTTPRoute{}}
	if prev != nil {
		cs.prev = prev.routes
	}
	for _, ing := range ings {
		cs.ingresses = append(cs.ingresses, &ingressState{obj: ing, st: &Status{Class: cl.Obj.Name, Generation: ing.Generation,
			Key: types.NamespacedName{Namespace: ing.Namespace, Name: ing.Name}}})
	}
	t.translateClass(cs)
	m := &classMemo{obj: cl.Obj, params: cl.Params, ingresses: ings, key: key, reads: t.reads, later: t.out.later, routes: cs.kept}
	if len(t.out.Gateways) > 0 {
		m.gateway = t.out.Gateways[0]
	}
	for _, is := range cs.ingresses {
		m.statuses = append(m.statuses, is.st)
	}
	return m
}

// emit adds the class's translation to out: its statuses, and a copy of
// its Gateway and listeners.
func (m *classMemo) emit(out *Result) {
	for _, st := range m.statuses {
		out.Status[st.Key] = st
	}
	if m.gateway == nil {
		return
	}
	g := *m.gateway
	g.Listeners = make([]*ir.Listener, len(m.gateway.Listeners))
	for i, l := range m.gateway.Listeners {
		cp := *l
		g.Listeners[i] = &cp
		if n := m.later[l]; n > 0 {
			out.later[&cp] = n
		}
	}
	out.Gateways = append(out.Gateways, &g)
	out.served[&g] = m.statuses
}
