package gatewayapi

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// routeEntry is one IR route of a listener with what decides its
// precedence.
type routeEntry struct {
	route *ir.HTTPRoute
	// rank is the match's precedence key within its hostname, defined by
	// the route's kind (httpRank, grpcRank): smaller first.
	rank []int
	// origin is the route's own hostname the virtual host comes from
	// (routeHosts): among routes of one virtual host, the more specific
	// origin comes first.
	origin string
	// of is the route the entry comes from (its key and creation time).
	of    *routeState
	rule  int
	match int
	// stale marks the entry of a route that changed since it was added:
	// the listener drops it (listenerState.refresh).
	stale bool
}

// sortRoutes orders a listener's routes: grouped by virtual host (exact
// hostnames first, longer first; then wildcards, longer first; "*" last),
// within a host by the specificity of the route hostname it comes from
// (origin, same order: a route naming abc.example.com before one whose
// *.example.com met an abc.example.com listener; HTTPRoute spec.hostnames,
// GatewayRouteHostnameIntersectionPrecedence), then by the match precedence of the routes' kind (rank:
// HTTPRouteRule matches for HTTPRoutes, GRPCRouteRule matches for
// GRPCRoutes; an HTTPRoute and a GRPCRoute never share a hostname on a
// listener, resolveKindConflicts); then the oldest route
// (creationTimestamp); then the route first by "namespace/name"; then rule
// order, then match order; then by kind, which never decides (two kinds
// do not share a hostname) but makes the order total, so that inserting
// entries into a sorted list (mergeRoutes) gives what sorting gives.
func sortRoutes(rs []*routeEntry) {
	slices.SortStableFunc(rs, compareEntries)
}

func compareEntries(a, b *routeEntry) int {
	return cmp.Or(
		compareHosts(a.route.Hostname, b.route.Hostname),
		compareHosts(a.origin, b.origin),
		slices.Compare(a.rank, b.rank),
		compareTime(a.of.created, b.of.created),
		cmp.Compare(a.of.key.Namespace, b.of.key.Namespace),
		cmp.Compare(a.of.key.Name, b.of.key.Name),
		cmp.Compare(a.rule, b.rule),
		cmp.Compare(a.match, b.match),
		cmp.Compare(a.of.key.Kind, b.of.key.Kind),
	)
}

// mergeRoutes returns the entries of sorted (in precedence order) that
// are not stale, with added inserted where they belong; sorted's array is
// reused. A few entries are inserted by binary search, many by sorting
// everything again.
func mergeRoutes(sorted, added []*routeEntry) []*routeEntry {
	kept := slices.DeleteFunc(sorted, func(e *routeEntry) bool { return e.stale })
	if len(added) == 0 {
		return kept
	}
	if len(added)*8 > len(kept) {
		out := append(kept, added...)
		sortRoutes(out)
		return out
	}
	sortRoutes(added)
	out := make([]*routeEntry, 0, len(kept)+len(added))
	from := 0
	for _, e := range added {
		at, _ := slices.BinarySearchFunc(kept[from:], e, compareEntries)
		out = append(out, kept[from:from+at]...)
		out = append(out, e)
		from += at
	}
	return append(out, kept[from:]...)
}

// withFallthrough returns a listener's routes rs (sorted: sortRoutes) plus,
// in every virtual host h among them, a copy of each route of a broader
// virtual host of theirs that covers h ("*", or a "*." wildcard whose
// suffix h has), sorted again: a request for h matches that route's
// hostname too, so what h's own routes do not match falls through to it.
// HTTPRoute spec.hostnames: "precedence must be given to rules from the
// HTTPRoute with the largest number of characters in a matching hostname"
// (precedence, not exclusion); Envoy picks one virtual host per request,
// the most specific, so the broader routes must be in it. The copies keep
// their origin, which is broader than h's own routes' (routeHosts), so
// sortRoutes puts them after. A route match is in a virtual host once: one
// that h has already (a route naming both h and a wildcard covering it) is
// not copied, and of one that several broader virtual hosts have, the copy
// with the most specific origin is kept. Routes of two kinds never have
// intersecting hostnames on a listener (resolveKindConflicts), so a copy
// never mixes kinds in a virtual host.
//
// copies are the copies of the last call by route and host: a route still
// there keeps its copy (an unchanged IR object). It returns the copies of
// this call too. Without broad virtual hosts (they sort last) it costs
// nothing.
func withFallthrough(rs []*routeEntry, copies map[fallthroughKey]*routeEntry) ([]*routeEntry, map[fallthroughKey]*routeEntry) {
	// broad are the routes of "*" and wildcard hosts, the only ones that
	// cover another host.
	first := len(rs)
	for first > 0 && isBroad(rs[first-1].route.Hostname) {
		first--
	}
	broad := rs[first:]
	if len(broad) == 0 {
		return rs, nil
	}
	// hosts are the virtual hosts by name, each with its route matches
	// (IR route names).
	hosts := map[string]map[string]bool{}
	for _, e := range rs {
		if hosts[e.route.Hostname] == nil {
			hosts[e.route.Hostname] = map[string]bool{}
		}
		hosts[e.route.Hostname][e.route.Name] = true
	}
	out := slices.Clone(rs)
	made := map[fallthroughKey]*routeEntry{}
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		from := map[string]*routeEntry{}
		var order []string
		for _, e := range broad {
			name := e.route.Name
			if hosts[h][name] || !coversHost(e.route.Hostname, h) {
				continue
			}
			if c, ok := from[name]; !ok {
				order = append(order, name)
			} else if compareHosts(e.origin, c.origin) >= 0 {
				continue
			}
			from[name] = e
		}
		for _, name := range order {
			k := fallthroughKey{from[name], h}
			c := copies[k]
			if c == nil {
				cp := *from[name]
				cp.route = cp.route.DeepCopy()
				cp.route.Hostname = h
				c = &cp
			}
			made[k] = c
			out = append(out, c)
		}
	}
	sortRoutes(out)
	return out, made
}

// fallthroughKey names the copy of a route (entry) in virtual host host.
type fallthroughKey struct {
	entry *routeEntry
	host  string
}

// isBroad says whether a virtual host covers others: "*" or a wildcard.
func isBroad(h string) bool { return h == "*" || isWildcard(h) }

func compareHosts(a, b string) int {
	rank := func(h string) int {
		switch {
		case h == "*":
			return 2
		case strings.HasPrefix(h, "*."):
			return 1
		}
		return 0
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), -cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
