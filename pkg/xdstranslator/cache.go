package xdstranslator

// What a Cache keeps from one translation to the next, per scope:
//   - per route configuration, the virtual host of each run of IR routes
//     that share a hostname (by the run's first route), with the Envoy
//     route of each IR route: the IR of an unchanged route is the same
//     object from one translation to the next (pkg/gatewayapi's Cache),
//     so an unchanged virtual host, or route, is found by identity (and by
//     its place: memo.List), not rendered;
//   - each route configuration, reused when its virtual hosts are;
//   - the clusters, with the number of virtual hosts that use each (and
//     whether a listener used it in this translation): a cluster is
//     rendered when its backend first appears or changes, and goes when
//     nothing uses it any more. Clusters keep their ClusterLoadAssignment,
//     so a change of endpoints alone changes that one resource.
//
// Listeners are rendered every time: there are few.

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/memo"
)

// Cache carries rendered Envoy resources from one translation to the next
// (Cache.Translate). It is not safe for concurrent use; the zero value is
// not usable (NewCache).
type Cache struct {
	scopes map[string]*scopeCache
}

// NewCache returns an empty Cache: its first translation renders
// everything.
func NewCache() *Cache { return &Cache{scopes: map[string]*scopeCache{}} }

// Translate renders x into xDS resources per scope, like the package's
// Translate, reusing the resources of the IR objects that the previous
// translation of c saw: x must treat its objects as immutable (an IR route
// that changes is a new object), as pkg/gatewayapi's Cache does. The
// resources returned may be shared with earlier translations of c: they
// must not be modified. After an error, c must not be used again.
func (c *Cache) Translate(x *ir.IR) (map[string]*Resources, error) {
	if x == nil {
		return map[string]*Resources{}, nil
	}
	scopes := map[string]*scopeBuilder{}
	var order []string
	for _, gw := range x.Gateways {
		s, ok := scopes[gw.Scope]
		if !ok {
			sc := c.scopes[gw.Scope]
			if sc == nil {
				sc = newScopeCache()
				c.scopes[gw.Scope] = sc
			}
			s = newScopeBuilder(sc)
			s.domain = ir.RateLimitDomain(gw.Scope)
			scopes[gw.Scope] = s
			order = append(order, gw.Scope)
		}
		for _, l := range gw.Listeners {
			s.addListener(gw, l)
		}
	}
	for name := range c.scopes {
		if scopes[name] == nil {
			delete(c.scopes, name)
		}
	}
	out := make(map[string]*Resources, len(scopes))
	for _, name := range order {
		r, err := scopes[name].build()
		if err != nil {
			return nil, fmt.Errorf("scope %s: %w", name, err)
		}
		out[name] = r
	}
	return out, nil
}

// scopeCache is what a Cache keeps of one scope.
type scopeCache struct {
	configs  map[string]*configMemo
	clusters clusterStore
}

func newScopeCache() *scopeCache {
	return &scopeCache{configs: map[string]*configMemo{}, clusters: clusterStore{entries: map[string]*clusterEntry{}}}
}

// routeMemo is the Envoy route of an IR route on a listener whose Gateway
// port is port, the optional filters it uses, and the backends it sends
// to.
type routeMemo struct {
	port  uint32
	route *routev3.Route
	use   filterUse
	used  []*ir.Backend
}

// vhostMemo is a virtual host and what it was rendered from, its IR
// routes with their Envoy routes; it holds a reference to the clusters of
// its backends (used) while it is cached. It is not modified once made:
// the Origins of earlier translations read its IR routes.
type vhostMemo struct {
	routes memo.List[*ir.HTTPRoute, *routeMemo]
	port   uint32
	vhost  *routev3.VirtualHost
	use    filterUse
	used   []*ir.Backend
	// auth are the listener's checks the virtual host enables
	// (ir.Listener ExtAuth).
	auth []*ir.ExtAuth
}

// configMemo is a route configuration, its virtual hosts, and the
// virtual hosts of its runs of routes (by their first route); memos are
// those of the last translation (for Origins).
type configMemo struct {
	vhosts []*routev3.VirtualHost
	config *routev3.RouteConfiguration
	use    filterUse
	runs   memo.List[*ir.HTTPRoute, *vhostMemo]
	memos  []*vhostMemo
}

// hostRoutes is a run of IR routes of listener l for one hostname:
// l.HTTPRoutes[start:end].
type hostRoutes struct {
	l          *ir.Listener
	start, end int32
}

func (r hostRoutes) routes() []*ir.HTTPRoute { return r.l.HTTPRoutes[r.start:r.end] }
func (r hostRoutes) host() string            { return strings.ToLower(r.l.HTTPRoutes[r.start].Hostname) }

// virtualHosts renders the virtual hosts of route configuration config,
// one per run of routes, or returns what it rendered before from the same
// routes.
func (s *scopeBuilder) virtualHosts(config string, runs []hostRoutes) ([]*vhostMemo, error) {
	m := s.cache.configs[config]
	if m == nil {
		m = &configMemo{}
		s.cache.configs[config] = m
	}
	keys := make([]*ir.HTTPRoute, len(runs))
	for i, r := range runs {
		keys[i] = r.l.HTTPRoutes[r.start]
	}
	var err error
	// stale is the virtual host of a run whose routes changed: the new one
	// takes its routes that did not.
	var stale *vhostMemo
	out := m.runs.Update(keys, func(j int, v *vhostMemo) bool {
		if v.port == runs[j].l.GatewayPort && slices.Equal(v.routes.Keys(), runs[j].routes()) && sameExtAuth(v.auth, runs[j].l.ExtAuth) {
			return true
		}
		stale = v
		return false
	}, func(j int) *vhostMemo {
		v, e := s.virtualHost(runs[j], stale)
		stale = nil
		if e != nil && err == nil {
			err = e
		}
		return v
	}, s.release)
	return out, err
}

// virtualHost renders the virtual host of a run of routes, with the
// Envoy routes of stale (when not nil) whose IR routes are still there,
// and counts its use of its clusters.
func (s *scopeBuilder) virtualHost(run hostRoutes, stale *vhostMemo) (*vhostMemo, error) {
	host, routes, port := run.host(), run.routes(), run.l.GatewayPort
	m := &vhostMemo{port: port, vhost: &routev3.VirtualHost{Name: virtualHostName(run.l, host), Domains: []string{host}}}
	if stale != nil {
		m.routes = stale.routes
	}
	var err error
	rms := m.routes.Update(routes, func(_ int, rm *routeMemo) bool { return rm.port == port }, func(j int) *routeMemo {
		route, use, used, e := s.route(routes[j], port)
		if e != nil && err == nil {
			err = fmt.Errorf("route %s: %w", routes[j].Name, e)
		}
		return &routeMemo{port: port, route: route, use: use, used: used}
	}, nil)
	if err != nil {
		return m, err
	}
	m.vhost.Routes = make([]*routev3.Route, 0, len(rms))
	for _, rm := range rms {
		m.vhost.Routes = append(m.vhost.Routes, rm.route)
		m.use.add(rm.use)
		m.used = append(m.used, rm.used...)
	}
	// A listener's checks apply to every route of its virtual hosts
	// (extauth.go).
	m.auth = run.l.ExtAuth
	for k, a := range run.l.ExtAuth {
		f, enable := extAuthz(a, k)
		if m.vhost.TypedPerFilterConfig == nil {
			m.vhost.TypedPerFilterConfig = map[string]*anypb.Any{}
		}
		m.vhost.TypedPerFilterConfig[f.name] = enable
		m.use.addAuthz(f)
		m.used = append(m.used, a.Backend)
		if l := bodyBufferLimit(a); l != nil && (m.vhost.RequestBodyBufferLimit == nil || l.Value > m.vhost.RequestBodyBufferLimit.Value) {
			m.vhost.RequestBodyBufferLimit = l
		}
	}
	for _, b := range m.used {
		s.cache.clusters.acquire(b)
	}
	return m, nil
}

// sameExtAuth says whether a and b are the same checks.
func sameExtAuth(a, b []*ir.ExtAuth) bool {
	return slices.EqualFunc(a, b, func(x, y *ir.ExtAuth) bool { return x == y || reflect.DeepEqual(x, y) })
}

// release gives back a virtual host's use of its clusters.
func (s *scopeBuilder) release(m *vhostMemo) {
	for _, b := range m.used {
		s.cache.clusters.release(b)
	}
}

// sweep ends a translation of the scope: it forgets the route
// configurations it did not use, and releases their clusters.
func (s *scopeBuilder) sweep() {
	for name, m := range s.cache.configs {
		if !s.configs[name] {
			for _, v := range m.runs.Values() {
				s.release(v)
			}
			delete(s.cache.configs, name)
		}
	}
}

// clusterStore holds the clusters of a scope: those of the cached virtual
// hosts (refs) and those the listeners used in this translation.
type clusterStore struct {
	entries map[string]*clusterEntry
	// names are the entries' names, sorted, but for added ones; sorted
	// are their entries, in the same order, as of the last finish.
	names  []string
	added  []string
	sorted []*clusterEntry
	// run counts translations; listenerUse are the names the listeners
	// used in this one, lastUse in the last one.
	run                  uint64
	listenerUse, lastUse []string
	// released are the entries whose refs fell to 0 in this translation.
	released []string
	// changed says that an entry came, went or was rendered again since
	// the lists were made; clusters, endpoints and certs are the lists.
	changed             bool
	clusters, endpoints []types.Resource
	certs               []*ir.Certificate
}

type clusterEntry struct {
	refs int
	// usedRun is the translation that last used the cluster for a
	// listener, plus one.
	usedRun uint64
	backend *ir.Backend
	cluster *clusterv3.Cluster
	cla     *endpointv3.ClusterLoadAssignment
}

// entry returns the entry of b's cluster: new, or rendered again when b
// is not what it was rendered from (sameCluster).
func (cs *clusterStore) entry(b *ir.Backend) *clusterEntry {
	e := cs.entries[b.Name]
	switch {
	case e == nil:
		e = &clusterEntry{}
		cs.entries[b.Name] = e
		cs.added = append(cs.added, b.Name)
	case e.backend == b:
		return e
	case sameCluster(e.backend, b):
		e.backend = b
		return e
	}
	e.backend = b
	e.cluster, e.cla = cluster(b)
	cs.changed = true
	return e
}

// acquire and release count a virtual host's use of b's cluster.
func (cs *clusterStore) acquire(b *ir.Backend) { cs.entry(b).refs++ }

func (cs *clusterStore) release(b *ir.Backend) {
	if e := cs.entries[b.Name]; e != nil {
		if e.refs--; e.refs == 0 {
			cs.released = append(cs.released, b.Name)
		}
	}
}

// use records a listener's use of b's cluster in this translation.
func (cs *clusterStore) use(b *ir.Backend) {
	e := cs.entry(b)
	if e.usedRun != cs.run+1 {
		e.usedRun = cs.run + 1
		cs.listenerUse = append(cs.listenerUse, b.Name)
	}
}

// finish ends a translation: it drops the clusters nothing uses any more
// and returns the clusters, their ClusterLoadAssignments and the client
// certificates their backends present, sorted by name.
func (cs *clusterStore) finish() (clusters, endpoints []types.Resource, certs []*ir.Certificate) {
	gone := map[string]bool{}
	for _, list := range [][]string{cs.released, cs.lastUse} {
		for _, name := range list {
			if e := cs.entries[name]; e != nil && e.refs == 0 && e.usedRun != cs.run+1 {
				delete(cs.entries, name)
				gone[name] = true
			}
		}
	}
	cs.released, cs.lastUse, cs.listenerUse = nil, cs.listenerUse, nil
	cs.run++
	if len(gone) > 0 {
		cs.names = slices.DeleteFunc(cs.names, func(n string) bool { return gone[n] })
		cs.added = slices.DeleteFunc(cs.added, func(n string) bool { return gone[n] })
		cs.changed = true
	}
	if len(cs.added) > 0 {
		cs.names = mergeSorted(cs.names, cs.added)
		cs.added = nil
		cs.sorted = nil
	}
	if !cs.changed && cs.clusters != nil {
		return cs.clusters, cs.endpoints, cs.certs
	}
	if len(gone) > 0 || len(cs.sorted) != len(cs.names) {
		cs.sorted = make([]*clusterEntry, len(cs.names))
		for i, name := range cs.names {
			cs.sorted[i] = cs.entries[name]
		}
	}
	cs.changed = false
	clusters = make([]types.Resource, 0, len(cs.names))
	for _, e := range cs.sorted {
		clusters = append(clusters, e.cluster)
		if e.cla != nil {
			endpoints = append(endpoints, e.cla)
		}
		if e.backend.TLS != nil && e.backend.TLS.ClientCertificate != nil {
			certs = append(certs, e.backend.TLS.ClientCertificate)
		}
	}
	cs.clusters, cs.endpoints, cs.certs = clusters, endpoints, certs
	return clusters, endpoints, certs
}

// mergeSorted inserts added (unsorted, not in sorted) into sorted; few by
// binary search, many by sorting everything again.
func mergeSorted(sorted, added []string) []string {
	if len(added)*8 > len(sorted) {
		out := append(sorted, added...)
		slices.Sort(out)
		return out
	}
	for _, n := range added {
		i, _ := slices.BinarySearch(sorted, n)
		sorted = slices.Insert(sorted, i, n)
	}
	return sorted
}

// sameCluster says whether clusters rendered from a and b are equal: what
// cluster and loadAssignment read (name, protocol, endpoints, DNS
// resolvers, TLS, retry budget) is.
func sameCluster(a, b *ir.Backend) bool {
	return a.Name == b.Name && a.Protocol == b.Protocol && slices.Equal(a.Endpoints, b.Endpoints) && slices.Equal(a.DNSResolvers, b.DNSResolvers) && a.DNSNoSearch == b.DNSNoSearch &&
		(a.TLS == b.TLS || a.TLS != nil && b.TLS != nil && reflect.DeepEqual(a.TLS, b.TLS)) &&
		(a.RetryBudget == b.RetryBudget || a.RetryBudget != nil && b.RetryBudget != nil && *a.RetryBudget == *b.RetryBudget) &&
		(a.Policy == b.Policy || a.Policy != nil && b.Policy != nil && reflect.DeepEqual(a.Policy, b.Policy))
}

// mergeByName merges two lists sorted by resource name.
func mergeByName(a, b []types.Resource) []types.Resource {
	if len(b) == 0 {
		return a
	}
	out := make([]types.Resource, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if cmp.Compare(resourceName(a[0]), resourceName(b[0])) <= 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}
