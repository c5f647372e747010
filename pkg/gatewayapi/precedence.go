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
	route   *ir.HTTPRoute
	created metav1.Time
	ns      string
	name    string
	rule    int
	match   int
}

// sortRoutes orders a listener's routes: grouped by virtual host (exact
// hostnames first, longer first; then wildcards, longer first; "*" last),
// and within a host by the HTTPRoute match precedence (HTTPRouteRule
// matches): an Exact path, then a RegularExpression path, then a PathPrefix
// with more characters; then a method match; then more header matches; then
// more query parameter matches; then the oldest route (creationTimestamp);
// then the route first by "namespace/name"; then rule order, then match
// order.
//
// The spec leaves the rank of RegularExpression paths to implementations.
// We put them after Exact and before every PathPrefix (longer pattern
// first), so that a regex rule is not shadowed by a catch-all prefix "/".
func sortRoutes(rs []*routeEntry) {
	slices.SortStableFunc(rs, func(a, b *routeEntry) int {
		return cmp.Or(
			compareHosts(a.route.Hostname, b.route.Hostname),
			comparePaths(a.route.Match.Path, b.route.Match.Path),
			-cmp.Compare(boolInt(a.route.Match.Method != ""), boolInt(b.route.Match.Method != "")),
			-cmp.Compare(len(a.route.Match.Headers), len(b.route.Match.Headers)),
			-cmp.Compare(len(a.route.Match.QueryParams), len(b.route.Match.QueryParams)),
			compareTime(a.created, b.created),
			cmp.Compare(a.ns, b.ns),
			cmp.Compare(a.name, b.name),
			cmp.Compare(a.rule, b.rule),
			cmp.Compare(a.match, b.match),
		)
	})
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

func comparePaths(a, b *ir.StringMatch) int {
	rank := func(m *ir.StringMatch) (int, int) {
		if m == nil {
			return 2, 0 // PathPrefix "/"
		}
		switch m.Type {
		case ir.MatchExact:
			return 0, len(m.Value)
		case ir.MatchRegex:
			return 1, len(m.Value)
		}
		return 2, len(strings.TrimSuffix(m.Value, "/"))
	}
	ra, la := rank(a)
	rb, lb := rank(b)
	return cmp.Or(cmp.Compare(ra, rb), -cmp.Compare(la, lb))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
