package gatewayapi

// Incremental translation: a Cache keeps one translation's state for the
// next, so that a change costs what it touches.
//
// What a run redoes:
//   - Gateway-level inputs (GatewayClasses, Gateways, ListenerSets,
//     Namespaces, ConfigMaps, ClusterTrustBundles, ReferenceGrants, policies of every
//     kind (policy.go),
//     the options' effect) changed: everything, from scratch (reset). They
//     are few and change rarely, and every route reads them.
//   - A Namespace or a ReferenceGrant changed: the routes that read the
//     Namespace's labels (a listener's allowedRoutes selector) or asked a
//     ReferenceGrant of its namespace (a cross-namespace backendRef) are
//     translated again, as for a Service (rotate.go reindex); when
//     Gateway-level state read them, everything.
//   - A Secret changed: nothing when no Gateway-level state read it (an
//     Ingress's Secret is pkg/ingress's to follow); the certificates of
//     the listeners whose certificateRefs read it, loaded again, when
//     each listener's certificates stay usable (a rotation: rotate.go);
//     else (another reader, or a listener whose certificates become or
//     stop being usable) everything, from scratch.
//   - Otherwise the Gateways, listeners and policies of the last run stay,
//     and only the routes that changed are translated again: a route object
//     that is new, gone or another pointer; a route that read a Service
//     whose object or EndpointSlices changed (serviceDep); and, because
//     routes of two kinds may not share a hostname on a listener, every
//     route of another kind whose hostnames intersect those of a route
//     translated again on a listener they share (conflicts), transitively.
//     The routes not translated again cannot meet the others in
//     resolveKindConflicts, so resolving it among the routes translated
//     again gives what resolving it among all routes gives.
//   - A route translated again takes back what it added (undoFinish: its
//     listeners' attachedRoutes, its IR routes, marked stale) and adds
//     anew. Listeners keep their routes in precedence order and insert the
//     new ones (mergeRoutes) instead of sorting everything.
//
// A full translation is a run of an empty Cache: everything is new. The
// property test of pkg/translate checks that a Cache's run gives what a
// full translation of the same snapshot gives.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/pkg/memo"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// Cache carries a translation's state to the next one (Cache.Translate).
// It is not safe for concurrent use. The zero value is an empty cache.
type Cache struct {
	t       *translator
	res     *resources.Resources
	optsKey string
	routes  map[RouteKey]*routeMemo
	// deps are the routes that read each Service (and its EndpointSlices)
	// and each XBackend (and the Pods it selects).
	deps map[depKey]*serviceDep
	// gatewayReads are the Services and XBackends Gateway-level state
	// read at the last reset (translator gatewayReads).
	gatewayReads map[depKey]bool
	// xbAncestors count, per XBackend and Gateway, the routes of that
	// Gateway that use the XBackend (xbackendstatus.go).
	xbAncestors map[xbackendAncestor]int
	// routeStatus is the status of every route of ours, which the last
	// Result shares: the next run copies it before it changes it.
	routeStatus  map[RouteKey]*gwapiv1.RouteStatus
	statusShared bool
	// classes, gatewayWarnings: what the Gateway-level translation gave.
	classes         map[string]*gwapiv1.GatewayClassStatus
	gatewayWarnings []string
	// sliceWarnings are the EndpointSlices' warnings (sliceWarning), by
	// namespace/name; warned the routes whose memo has warnings.
	sliceWarnings map[types.NamespacedName]string
	warned        map[RouteKey]bool
	// translated counts the routes the last Translate translated (read or
	// finished again), full says whether it started over.
	translated int
	full       bool
	// changed are the Services (their objects or EndpointSlices) and
	// Secrets that changed in the last Translate that did not start over
	// (Refs ServiceChanged, SecretChanged).
	changed map[depKey]bool
}

// LastRun says what the last Translate did: whether it started over (a
// full translation), and how many routes it translated (read again, or
// finished again because of a route of another kind).
func (c *Cache) LastRun() (full bool, routes int) { return c.full, c.translated }

// routeMemo is what a Cache keeps of one route object: what reading it
// gave, and what finishing it added.
type routeMemo struct {
	obj any
	// stale: a Service the route read, or its EndpointSlices, changed.
	stale bool
	// state is the route read and attached (readRoute), nil when no
	// parentRef names a Gateway of ours.
	state    *routeState
	warnings []string
	// services are the Services and XBackends the route read; ancestors the policy
	// ancestors it makes (policy.go: routeAncestors, backendPolicies); wants its
	// hostnames on each listener it attached to (listenerState wants).
	services  []depKey
	ancestors []ancestor
	// xbAncestors are the XBackends the route uses, with each Gateway of
	// its parents (Cache xbAncestors).
	xbAncestors []xbackendAncestor
	wants       []want
	// done is what finishRoute added.
	done finished
}

type want struct {
	l     *listenerState
	hosts []string
}

// serviceDep lists the routes that read a Service or an XBackend.
type serviceDep struct{ routes []RouteKey }

// depKey is an object routes read beside their own: a Service or an
// XBackend (Kind, the registry's name), by namespace/name.
type depKey struct {
	Kind string
	types.NamespacedName
}

func compareDepKeys(a, b depKey) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), compareNN(a.NamespacedName, b.NamespacedName))
}

// routeChange is a route to translate again: obj is its object now (nil:
// gone) when changed says that its object changed; else the object is
// the one read before, and an input it read changed.
type routeChange struct {
	key     RouteKey
	obj     any
	changed bool
}

// NewCache returns an empty Cache: its first translation is a full one.
func NewCache() *Cache { return &Cache{} }

// Translate computes the IR and the status for res, like the package's
// Translate, reusing what the previous translation of c computed for what
// did not change. res must be sorted (resources.Resources.Sort) and, like
// every object in it, is not modified; an object handed to c must never be
// modified afterwards (a changed object is a new pointer): c recognises
// unchanged objects by identity. The Result shares unchanged IR routes,
// route statuses and the map of them (Status.Routes, until the next run
// changes it) with the Cache and earlier Results: none of them may be
// modified.
func (c *Cache) Translate(res *resources.Resources, opts Options) *Result {
	if res == nil {
		res = &resources.Resources{}
	}
	key := optionsKey(res, opts)
	c.changed = nil
	var dirty []routeChange
	full := c.t == nil || key != c.optsKey || !sameGatewayInputs(c.res, res)
	if !full {
		var ok bool
		dirty, ok = c.update(res, opts)
		full = !ok
	}
	if full {
		dirty = c.reset(res, opts, key)
	}
	c.translateRoutes(dirty, full)
	c.res, c.full = res, full
	out := c.result()
	c.t.recording = false // Refs' lookups after this are an Ingress's
	return out
}

// sameGatewayInputs says whether a and b hold the same Gateway-level
// objects (same pointers, same order), Secrets, Namespaces and
// ReferenceGrants left out (update follows them: rotate.go).
func sameGatewayInputs(a, b *resources.Resources) bool {
	return a != nil && slices.Equal(a.GatewayClasses, b.GatewayClasses) && slices.Equal(a.Gateways, b.Gateways) &&
		slices.Equal(a.ListenerSets, b.ListenerSets) &&
		slices.Equal(a.ConfigMaps, b.ConfigMaps) && samePolicies(a, b) &&
		slices.Equal(a.ClusterTrustBundles, b.ClusterTrustBundles)
}

// samePolicies says whether a and b hold the same policies of every kind
// (same pointers, same order).
func samePolicies(a, b *resources.Resources) bool {
	for _, k := range policyKinds {
		if !k.same(a, b) {
			return false
		}
	}
	return true
}

// optionsKey is what opts decide for res: the controller name, how
// addresses are bound, the refused parameters, and every Gateway's scope,
// route statistics (Options.RouteStats), edge limits (Options.Edge) and bind ports. Two translations whose keys are equal may share their
// Gateway-level state.
func optionsKey(res *resources.Resources, opts Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %v %q %v\n", opts.ControllerName, opts.AddressesOnService, opts.DNSResolvers, opts.ProxyPorts)
	oidcOptionsKey(&b, opts)
	if p := opts.InvalidParameters; p != nil {
		for _, k := range slices.Sorted(maps.Keys(p.GatewayClasses)) {
			fmt.Fprintf(&b, "class %q %q\n", k, p.GatewayClasses[k])
		}
		for _, k := range slices.SortedFunc(maps.Keys(p.Gateways), compareNN) {
			fmt.Fprintf(&b, "gateway %s %q\n", k, p.Gateways[k])
		}
	}
	ports := map[types.NamespacedName][]gwapiv1.PortNumber{}
	for _, ls := range res.ListenerSets {
		if ls == nil {
			continue
		}
		if gw, ok := ListenerSetParent(ls); ok {
			for _, l := range ls.Spec.Listeners {
				ports[gw] = append(ports[gw], l.Port)
			}
		}
	}
	for _, gw := range res.Gateways {
		if gw == nil {
			continue
		}
		fmt.Fprintf(&b, "%s/%s %s %v", gw.Namespace, gw.Name, opts.ScopeOf(gw), opts.RouteStats != nil && opts.RouteStats(gw))
		if e := opts.EdgeOf(gw); e != nil {
			edge, _ := json.Marshal(e)
			fmt.Fprintf(&b, " edge=%s", edge)
		}
		for _, l := range gw.Spec.Listeners {
			fmt.Fprintf(&b, " %d", opts.BindPortOf(gw, l.Port))
		}
		for _, p := range ports[nn(gw.Namespace, gw.Name)] {
			fmt.Fprintf(&b, " %d", opts.BindPortOf(gw, p))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func compareNN(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// reset starts over: the Gateway-level translation of res, and every
// route object to translate, in the order of compareRouteKeys.
func (c *Cache) reset(res *resources.Resources, opts Options, key string) []routeChange {
	t := newTranslator(res, opts)
	t.levelReads, t.certReads, t.recording = map[depKey]bool{}, map[types.NamespacedName][]*listenerState{}, true
	n := 0
	for _, k := range routeKindTable {
		n += k.Kind.Len(res)
	}
	*c = Cache{
		t: t, optsKey: key, routes: make(map[RouteKey]*routeMemo, n), deps: make(map[depKey]*serviceDep, len(res.Services)), xbAncestors: map[xbackendAncestor]int{},
		routeStatus: make(map[RouteKey]*gwapiv1.RouteStatus, n), sliceWarnings: map[types.NamespacedName]string{}, warned: map[RouteKey]bool{},
	}
	t.indexBackends(func(k types.NamespacedName, w string) { c.sliceWarnings[k] = w })
	t.translateGatewayClasses()
	t.translateGateways()
	t.gatewayReads = map[depKey]bool{}
	t.readPolicies()
	t.resolveListenerFilters()
	c.gatewayReads, t.gatewayReads = t.gatewayReads, nil
	c.classes = t.status.GatewayClasses
	c.gatewayWarnings, t.status.Warnings = t.status.Warnings, nil
	dirty := make([]routeChange, 0, n)
	for _, k := range routeKindTable {
		k.each(res, &dirty)
	}
	return dirty
}

// The changes update finds in the backend kinds: key, object before and
// after (nil: none).
type (
	svcChange struct {
		k        types.NamespacedName
		old, new *corev1.Service
	}
	sliceChange struct {
		k        types.NamespacedName
		old, new *discoveryv1.EndpointSlice
	}
	xbChange struct {
		k        types.NamespacedName
		old, new *gwapixv1alpha1.XBackend
	}
	podChange struct{ old, new *corev1.Pod }
)

// update applies what changed from the last snapshot to res to the
// Services and EndpointSlices, and returns the routes to translate again
// (a route may be there twice). ok is false when a list of res is not
// sorted (the caller then starts over).
func (c *Cache) update(res *resources.Resources, opts Options) (dirty []routeChange, ok bool) {
	var svcs []svcChange
	var eps []sliceChange
	var xbs []xbChange
	var pods []podChange
	var secrets []secretChange
	var level []depKey
	ok = diffSorted(c.res.Secrets, res.Secrets, func(k types.NamespacedName, o, n *corev1.Secret) { secrets = append(secrets, secretChange{k, o, n}) }) &&
		diffSorted(c.res.Namespaces, res.Namespaces, func(k types.NamespacedName, _, _ *corev1.Namespace) { level = append(level, depKey{namespaceKind, k}) }) &&
		diffSorted(c.res.ReferenceGrants, res.ReferenceGrants, func(k types.NamespacedName, _, _ *gwapiv1.ReferenceGrant) {
			level = append(level, depKey{referenceGrantKind, nn(k.Namespace, "")})
		}) &&
		diffSorted(c.res.Services, res.Services, func(k types.NamespacedName, o, n *corev1.Service) { svcs = append(svcs, svcChange{k, o, n}) }) &&
		diffSorted(c.res.EndpointSlices, res.EndpointSlices, func(k types.NamespacedName, o, n *discoveryv1.EndpointSlice) {
			eps = append(eps, sliceChange{k, o, n})
		}) &&
		diffSorted(c.res.XBackends, res.XBackends, func(k types.NamespacedName, o, n *gwapixv1alpha1.XBackend) { xbs = append(xbs, xbChange{k, o, n}) }) &&
		diffSorted(c.res.Pods, res.Pods, func(_ types.NamespacedName, o, n *corev1.Pod) { pods = append(pods, podChange{o, n}) })
	for _, rk := range routeKindTable {
		if !ok {
			break
		}
		ok = rk.diff(c.res, res, &dirty)
	}
	if !ok {
		return nil, false
	}
	t := c.t
	c.changed = map[depKey]bool{}
	for _, ch := range secrets {
		c.changed[depKey{secretKind, ch.k}] = true
	}
	for _, ch := range svcs {
		c.changed[depKey{resources.ServiceKind.Name(), ch.k}] = true
	}
	for _, ch := range eps {
		for _, es := range []*discoveryv1.EndpointSlice{ch.old, ch.new} {
			if k, ok := sliceService(es); ok {
				c.changed[depKey{resources.ServiceKind.Name(), k}] = true
			}
		}
	}
	t.recording = true
	if c.readByGateways(svcs, eps, xbs, pods) || !c.rotate(secrets) || !c.reindex(res, level) {
		return nil, false // Gateway-level state read it: start over
	}
	t.res, t.opts = res, opts
	readers := func(kind string, k types.NamespacedName) {
		if d := c.deps[depKey{kind, k}]; d != nil {
			for _, rk := range d.routes {
				if m := c.routes[rk]; m != nil && !m.stale {
					m.stale = true
					dirty = append(dirty, routeChange{key: rk})
				}
			}
		}
	}
	for _, k := range level {
		readers(k.Kind, k.NamespacedName)
	}
	for _, ch := range svcs {
		if ch.new == nil {
			delete(t.services, ch.k)
		} else {
			t.services[ch.k] = ch.new
		}
		readers(resources.ServiceKind.Name(), ch.k)
	}
	if len(xbs) > 0 {
		for _, ch := range xbs {
			readers(resources.XBackendKind.Name(), ch.k)
		}
		t.indexXBackends()
	}
	// A Pod change reaches the routes of the XBackends that selected it
	// before or select it now.
	xbReaders := func(k types.NamespacedName) { readers(resources.XBackendKind.Name(), k) }
	for _, ch := range pods {
		t.xbackendsSelecting(ch.old, xbReaders)
		t.xbackendsSelecting(ch.new, xbReaders)
	}
	if len(pods) > 0 || len(xbs) > 0 {
		t.indexPods()
	}
	for _, ch := range eps {
		delete(c.sliceWarnings, ch.k)
		if svc, ok := sliceService(ch.old); ok {
			t.slices[svc] = slices.DeleteFunc(slices.Clone(t.slices[svc]), func(es *discoveryv1.EndpointSlice) bool { return es == ch.old })
			if len(t.slices[svc]) == 0 {
				delete(t.slices, svc)
			}
			readers(resources.ServiceKind.Name(), svc)
		}
		if svc, ok := sliceService(ch.new); ok {
			if w := sliceWarning(ch.new); w != "" {
				c.sliceWarnings[ch.k] = w
			}
			list := t.slices[svc]
			i, _ := slices.BinarySearchFunc(list, ch.new, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
			t.slices[svc] = slices.Insert(slices.Clone(list), i, ch.new)
			readers(resources.ServiceKind.Name(), svc)
		}
	}
	return dirty, true
}

// sliceService is the Service an EndpointSlice belongs to (its
// kubernetes.io/service-name label, in its namespace).
func sliceService(es *discoveryv1.EndpointSlice) (types.NamespacedName, bool) {
	if es == nil || es.Labels[discoveryv1.LabelServiceName] == "" {
		return types.NamespacedName{}, false
	}
	return nn(es.Namespace, es.Labels[discoveryv1.LabelServiceName]), true
}

// translateRoutes translates the routes dirty and the routes their
// changes reach through conflicts between kinds. full says that dirty are
// every route, unique and in order (compareRouteKeys), and that nothing
// was translated before.
func (c *Cache) translateRoutes(dirty []routeChange, full bool) {
	t := c.t
	if !full {
		// One entry per route (the one that says the object changed, if
		// any), sorted.
		byKey := make(map[RouteKey]routeChange, len(dirty))
		for _, ch := range dirty {
			if prev, ok := byKey[ch.key]; !ok || !prev.changed {
				byKey[ch.key] = ch
			}
		}
		dirty = slices.SortedFunc(maps.Values(byKey), func(a, b routeChange) int { return compareRouteKeys(a.key, b.key) })
		if c.statusShared {
			c.routeStatus = maps.Clone(c.routeStatus)
		}
	}
	c.statusShared = false
	// enqueue adds a route that a conflict reaches (not in a full run,
	// where every route is in dirty already).
	var enqueue func(RouteKey)
	if !full {
		queued := make(map[RouteKey]bool, len(dirty))
		for _, ch := range dirty {
			queued[ch.key] = true
		}
		enqueue = func(k RouteKey) {
			if !queued[k] {
				queued[k] = true
				dirty = append(dirty, routeChange{key: k})
			}
		}
	}
	// memos are the memos read in a full run, by index in dirty.
	var memos []*routeMemo
	if full {
		memos = make([]*routeMemo, len(dirty))
	}
	for i := 0; i < len(dirty); i++ {
		k, obj := dirty[i].key, dirty[i].obj
		var m *routeMemo
		if !full {
			m = c.routes[k] // a full run has read nothing yet
		}
		if m != nil {
			c.undoFinish(m)
			if !full {
				conflicts(k, m.wants, enqueue)
			}
			if !dirty[i].changed && !m.stale {
				continue // read before, and still valid
			}
			c.dropRead(k, m)
			if !dirty[i].changed {
				obj = m.obj
			}
		}
		if obj == nil {
			continue
		}
		m = c.read(k, obj)
		if full {
			memos[i] = m
		} else {
			addWants(k, m)
			conflicts(k, m.wants, enqueue)
		}
	}
	if full {
		addAllWants(dirty, memos)
	}
	if !full {
		slices.SortFunc(dirty, func(a, b routeChange) int { return compareRouteKeys(a.key, b.key) })
	}
	states := make([]*routeState, 0, len(dirty))
	for _, ch := range dirty {
		if m := c.routes[ch.key]; m != nil && m.state != nil {
			m.state.restoreAttachment()
			states = append(states, m.state)
			for _, p := range m.state.parents {
				for _, l := range p.attached {
					l.held = nil
				}
			}
		}
	}
	resolveKindConflicts(states)
	c.translated = len(dirty)
	for _, ch := range dirty {
		m := c.routes[ch.key]
		if m == nil || m.state == nil {
			delete(c.routeStatus, ch.key)
			continue
		}
		m.done = t.finishRoute(m.state)
		c.routeStatus[ch.key] = m.done.status
	}
}

// compareRouteKeys orders routes as a full translation reads them: by
// kind (in the order of routeKindTable: HTTPRoute, GRPCRoute, TLSRoute,
// TCPRoute, UDPRoute), then namespace/name.
func compareRouteKeys(a, b RouteKey) int {
	return cmp.Or(cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// kindOrder is the place of the route kind called kind in a full
// translation.
func kindOrder(kind string) int {
	if k := RouteKindNamed(kind); k != nil {
		return k.order
	}
	return len(routeKindTable)
}

// conflicts enqueues the routes of kinds other than k's whose hostnames
// on one of the listeners of wants intersect k's there.
func conflicts(k RouteKey, wants []want, enqueue func(RouteKey)) {
	for _, w := range wants {
		for kind, others := range w.l.wants {
			if kind == k.Kind {
				continue
			}
			for _, o := range others {
				if intersectAny(w.hosts, o.hosts) {
					enqueue(o.key)
				}
			}
		}
	}
}

func intersectAny(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if hostsIntersect(x, y) {
				return true
			}
		}
	}
	return false
}

// read reads the route object obj (readRoute), records what it read and
// where it attached (the memo's wants, which the caller adds to the
// listeners: addWants), and keeps the result as the route's memo.
func (c *Cache) read(k RouteKey, obj any) *routeMemo {
	t := c.t
	m := &routeMemo{obj: obj}
	t.reading = m
	before := len(t.status.Warnings)
	m.state = t.readRoute(k.Kind, obj)
	t.routeAncestors(m.state)
	t.reading = nil
	if len(t.status.Warnings) > before {
		m.warnings = slices.Clone(t.status.Warnings[before:])
		t.status.Warnings = t.status.Warnings[:before]
		c.warned[k] = true
	}
	slices.SortFunc(m.services, compareDepKeys)
	m.services = slices.Compact(m.services)
	for _, s := range m.services {
		d := c.deps[s]
		if d == nil {
			d = &serviceDep{}
			c.deps[s] = d
		}
		d.routes = append(d.routes, k)
	}
	for _, a := range m.ancestors {
		a.policy.ancestors[a.gw]++
	}
	if m.state != nil {
		for _, s := range m.services {
			if s.Kind != resources.XBackendKind.Name() || t.xbackends[s.NamespacedName] == nil {
				continue
			}
			for _, p := range m.state.parents {
				a := xbackendAncestor{s.NamespacedName, p.gw.nn}
				m.xbAncestors = append(m.xbAncestors, a)
				c.xbAncestors[a]++
			}
		}
	}
	if m.state != nil {
		for _, p := range m.state.parents {
			if p.attachRefused != nil {
				continue
			}
			for i, l := range p.attached {
				m.wants = append(m.wants, want{l, p.hosts[i]})
			}
		}
	}
	c.routes[k] = m
	return m
}

// addWants adds the wants of route k (its memo m) to its listeners
// (listenerState wants).
func addWants(k RouteKey, m *routeMemo) {
	for _, w := range m.wants {
		if w.l.wants == nil {
			w.l.wants = map[string][]heldHosts{}
		}
		w.l.wants[k.Kind] = append(w.l.wants[k.Kind], heldHosts{key: k, hosts: w.hosts})
	}
}

// addAllWants adds the wants of the routes of dirty (memos, read in a
// full translation, by index in dirty; nil for none) to their listeners,
// in order, on lists grown once to their size, a run of routes of one kind
// at a time.
func addAllWants(dirty []routeChange, memos []*routeMemo) {
	for start := 0; start < len(dirty); {
		kind, end := dirty[start].key.Kind, start
		counts := map[*listenerState]int{}
		for ; end < len(dirty) && dirty[end].key.Kind == kind; end++ {
			if memos[end] == nil {
				continue
			}
			for _, w := range memos[end].wants {
				counts[w.l]++
			}
		}
		for l, n := range counts {
			if l.wants == nil {
				l.wants = map[string][]heldHosts{}
			}
			l.wants[kind] = slices.Grow(l.wants[kind], n)
		}
		for i := start; i < end; i++ {
			if memos[i] != nil {
				addWants(dirty[i].key, memos[i])
			}
		}
		start = end
	}
}

// dropRead takes back what read recorded for route k.
func (c *Cache) dropRead(k RouteKey, m *routeMemo) {
	for _, s := range m.services {
		if d := c.deps[s]; d != nil {
			d.routes = slices.DeleteFunc(d.routes, func(r RouteKey) bool { return r == k })
			if len(d.routes) == 0 {
				delete(c.deps, s)
			}
		}
	}
	for _, a := range m.ancestors {
		a.policy.ancestors[a.gw]--
	}
	for _, a := range m.xbAncestors {
		if c.xbAncestors[a]--; c.xbAncestors[a] <= 0 {
			delete(c.xbAncestors, a)
		}
	}
	for _, w := range m.wants {
		w.l.wants[k.Kind] = slices.DeleteFunc(w.l.wants[k.Kind], func(h heldHosts) bool { return h.key == k })
	}
	delete(c.warned, k)
	delete(c.routes, k)
}

// undoFinish takes back what finishRoute added for m.
func (c *Cache) undoFinish(m *routeMemo) {
	for _, l := range m.done.attachedTo {
		l.attached--
		l.changed = true
	}
	for _, e := range m.done.entries {
		e.stale = true
	}
	for _, e := range m.done.l4 {
		for _, l := range m.done.attachedTo {
			l.l4Routes = slices.DeleteFunc(l.l4Routes, func(x *l4Entry) bool { return x == e })
		}
	}
	m.done = finished{}
}

// eachObject calls f with every object of a sorted list (nil ones left
// out; of several with one namespace/name, the first).
func eachObject[E any, T interface {
	*E
	metav1.Object
}](list []T, f func(types.NamespacedName, T)) {
	var last T
	for _, o := range list {
		if o == nil {
			continue
		}
		if last != nil && last.GetNamespace() == o.GetNamespace() && last.GetName() == o.GetName() {
			continue
		}
		last = o
		f(nn(o.GetNamespace(), o.GetName()), o)
	}
}

// diffSorted walks two lists sorted by namespace/name (resources.Sort),
// the objects of the last snapshot and of this one, and calls changed for
// every namespace/name whose object is new (old nil), gone (new nil) or
// another pointer (memo.Diff: nil entries are left out and, of several
// objects with one namespace/name, the first counts, as eachObject does).
// It reports false when cur is not sorted.
func diffSorted[E any, T interface {
	*E
	metav1.Object
}](prev, cur []T, changed func(k types.NamespacedName, old, new T)) bool {
	key := func(o T) types.NamespacedName { return nn(o.GetNamespace(), o.GetName()) }
	return memo.Diff(prev, cur, func(a, b T) int { return compareNN(key(a), key(b)) }, func(old, new T) {
		if new != nil {
			changed(key(new), old, new)
		} else {
			changed(key(old), old, new)
		}
	})
}

// readByGateways says whether a change among svcs, eps, xbs and pods
// reaches what Gateway-level state read (gatewayReads): a Service, its
// EndpointSlices, an XBackend or a Pod such an XBackend selects.
func (c *Cache) readByGateways(svcs []svcChange, eps []sliceChange, xbs []xbChange, pods []podChange) bool {
	if len(c.gatewayReads) == 0 {
		return false
	}
	svc := func(k types.NamespacedName) bool { return c.gatewayReads[depKey{resources.ServiceKind.Name(), k}] }
	xb := func(k types.NamespacedName) bool { return c.gatewayReads[depKey{resources.XBackendKind.Name(), k}] }
	for _, ch := range svcs {
		if svc(ch.k) {
			return true
		}
	}
	for _, ch := range eps {
		for _, es := range []*discoveryv1.EndpointSlice{ch.old, ch.new} {
			if k, ok := sliceService(es); ok && svc(k) {
				return true
			}
		}
	}
	for _, ch := range xbs {
		if xb(ch.k) {
			return true
		}
	}
	hit := false
	for _, ch := range pods {
		for _, p := range []*corev1.Pod{ch.old, ch.new} {
			c.t.xbackendsSelecting(p, func(k types.NamespacedName) { hit = hit || xb(k) })
		}
	}
	return hit
}
