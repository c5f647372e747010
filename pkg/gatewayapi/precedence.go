package gatewayapi

import (
	"cmp"
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
	kind    string
	ns      string
	name    string
	rule    int
	match   int
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
		compareTime(a.created, b.created),
		cmp.Compare(a.ns, b.ns),
		cmp.Compare(a.name, b.name),
		cmp.Compare(a.rule, b.rule),
		cmp.Compare(a.match, b.match),
		cmp.Compare(a.kind, b.kind),
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
