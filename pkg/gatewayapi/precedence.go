package gatewayapi

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	origin  string
	created metav1.Time
	ns      string
	name    string
	rule    int
	match   int
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
// order, then match order.
func sortRoutes(rs []*routeEntry) {
	slices.SortStableFunc(rs, func(a, b *routeEntry) int {
		return cmp.Or(
			compareHosts(a.route.Hostname, b.route.Hostname),
			compareHosts(a.origin, b.origin),
			slices.Compare(a.rank, b.rank),
			compareTime(a.created, b.created),
			cmp.Compare(a.ns, b.ns),
			cmp.Compare(a.name, b.name),
			cmp.Compare(a.rule, b.rule),
			cmp.Compare(a.match, b.match),
		)
	})
}

// withFallthrough returns a listener's routes rs plus, in every virtual
// host h among them, a copy of each route of a broader virtual host of
// theirs that covers h ("*", or a "*." wildcard whose suffix h has): a
// request for h matches that route's hostname too, so what h's own routes
// do not match falls through to it. HTTPRoute spec.hostnames: "precedence
// must be given to rules from the HTTPRoute with the largest number of
// characters in a matching hostname" (precedence, not exclusion); Envoy
// picks one virtual host per request, the most specific, so the broader
// routes must be in it. The copies keep their origin, which is broader
// than h's own routes' (routeHosts), so sortRoutes puts them after. A
// route match is in a virtual host once: one that h has already (a route
// naming both h and a wildcard covering it) is not copied, and of one that
// several broader virtual hosts have, the copy with the most specific
// origin is kept. Routes of two kinds never have intersecting hostnames on
// a listener (resolveKindConflicts), so a copy never mixes kinds in a
// virtual host.
func withFallthrough(rs []*routeEntry) []*routeEntry {
	// hosts are the virtual hosts by name, each with its route matches
	// (IR route names).
	hosts := map[string]map[string]bool{}
	// broad are the routes of "*" and wildcard hosts, the only ones that
	// cover another host.
	var broad []*routeEntry
	for _, e := range rs {
		if hosts[e.route.Hostname] == nil {
			hosts[e.route.Hostname] = map[string]bool{}
		}
		hosts[e.route.Hostname][e.route.Name] = true
		if h := e.route.Hostname; h == "*" || isWildcard(h) {
			broad = append(broad, e)
		}
	}
	if len(broad) == 0 {
		return rs
	}
	out := slices.Clone(rs)
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		copies := map[string]*routeEntry{}
		var order []string
		for _, e := range broad {
			name := e.route.Name
			if hosts[h][name] || !coversHost(e.route.Hostname, h) {
				continue
			}
			if c, ok := copies[name]; !ok {
				order = append(order, name)
			} else if compareHosts(e.origin, c.origin) >= 0 {
				continue
			}
			copies[name] = e
		}
		for _, name := range order {
			c := *copies[name]
			c.route = c.route.DeepCopy()
			c.route.Hostname = h
			out = append(out, &c)
		}
	}
	return out
}

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
