package xdsvalidate

// What a Cache keeps from one Check to the next: the findings of every
// resource, and of every virtual host of a route configuration, found
// again by identity and place (memo.List). Findings are problems, and
// references to clusters and route configurations, which are checked at
// every Check against what the scope holds then; a group of findings
// (a resource's, a virtual host's) remembers the generation of those names
// in which it held no problem, and is skipped while they do not change.

import (
	"fmt"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	"github.com/xds-controller/xds-controller/pkg/memo"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// Cache keeps the findings of one scope's resources from one Check to the
// next (Cache.Check): a resource, or a virtual host of a route
// configuration, that is the same object as in an earlier Check is not
// checked again, but for its references to clusters and route
// configurations, which depend on what else the scope holds. Not safe for
// concurrent use; the zero value is not usable (NewCache).
type Cache struct {
	// lists are the findings of Listeners, RouteConfigurations, Clusters,
	// ClusterLoadAssignments and Secrets; configs those of each route
	// configuration's virtual hosts, by name.
	lists   [5]memo.List[types.Resource, *group]
	configs map[string]*memo.List[*routev3.VirtualHost, *vhostFindings]
	// clusters and routes are the names of the scope's clusters and
	// route configurations, and gen counts their changes.
	clusters nameSet
	routes   map[string]bool
	gen      uint64
}

// vhostFindings are what a virtual host holds: whether it fails its
// protoc-gen-validate rules, the failures of its routes (when it does),
// and what the walk found.
type vhostFindings struct {
	fails  bool
	routes []Problem
	walk   group
}

// finding is one of: a problem found, a reference to check, a group of
// findings, or the walks of a route configuration's virtual hosts.
type finding struct {
	problem *Problem
	ref     *reference
	group   *group
	vhosts  []*vhostFindings
}

// reference is a reference found at w to a cluster or route
// configuration (kind) name.
type reference struct {
	w          where
	kind, name string
}

// group is the findings of a resource or virtual host; clean is the
// generation of names in which they held no problem (0: never).
type group struct {
	items []finding
	clean uint64
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{configs: map[string]*memo.List[*routev3.VirtualHost, *vhostFindings]{}, clusters: nameSet{set: map[string]bool{}}, gen: 1}
}

// Check returns every problem of r, in resource order, with the origin of
// the route each is in (r.Origins), like the package's Check, reusing the
// findings of the resources that earlier Checks of c saw: r's resources
// must not be modified once checked (Check itself modifies none; while it
// checks a route configuration it takes its virtual hosts out and puts
// them back).
func (c *Cache) Check(r *xdstranslator.Resources) []Problem {
	if r == nil {
		return nil
	}
	routes := names(r.Routes)
	clusters, changed := c.clusters.update(r.Clusters)
	if changed || !sameSet(routes, c.routes) {
		c.gen++
	}
	c.routes = routes
	ch := &checker{cache: c, clusters: clusters, routes: routes, gen: c.gen}
	for i, l := range [][]types.Resource{r.Listeners, r.Routes, r.Clusters, r.Endpoints, r.Secrets} {
		found := c.lists[i].Update(l, nil, func(j int) *group {
			sub := &checker{cache: c}
			sub.resource(l[j])
			if len(sub.findings) == 0 {
				return nil
			}
			return &group{items: sub.findings}
		}, nil)
		for _, g := range found {
			if g != nil {
				ch.findings = append(ch.findings, finding{group: g})
			}
		}
	}
	for name := range c.configs {
		if !routes[name] {
			delete(c.configs, name)
		}
	}
	var out []Problem
	ch.expand(ch.findings, &out)
	for i := range out {
		if out[i].Route != "" {
			out[i].Origin, _ = r.Origins.Of(out[i].Route)
		}
	}
	return out
}

// expand appends the problems of items to out, references checked, and
// reports whether there were none.
func (c *checker) expand(items []finding, out *[]Problem) bool {
	clean := true
	for _, f := range items {
		switch {
		case f.problem != nil:
			*out = append(*out, *f.problem)
			clean = false
		case f.ref != nil:
			if msg := c.unresolved(f.ref); msg != "" {
				*out = append(*out, f.ref.w.problem(msg))
				clean = false
			}
		case f.group != nil:
			clean = c.expandGroup(f.group, out) && clean
		default:
			for _, v := range f.vhosts {
				clean = c.expandGroup(&v.walk, out) && clean
			}
		}
	}
	return clean
}

// expandGroup expands g unless it held no problem with the names of this
// generation.
func (c *checker) expandGroup(g *group, out *[]Problem) bool {
	if g.clean == c.gen {
		return true
	}
	if !c.expand(g.items, out) {
		return false
	}
	g.clean = c.gen
	return true
}

// unresolved says why a reference does not resolve, or "".
func (c *checker) unresolved(r *reference) string {
	if r.kind == "cluster" {
		if !c.clusters[r.name] {
			return fmt.Sprintf("cluster %q does not exist", r.name)
		}
		return ""
	}
	if !c.routes[r.name] {
		return fmt.Sprintf("route configuration %q does not exist", r.name)
	}
	return ""
}

func names(l []types.Resource) map[string]bool {
	m := make(map[string]bool, len(l))
	for _, r := range l {
		m[cachev3.GetResourceName(r)] = true
	}
	return m
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// nameSet is the set of names of a list of resources sorted by name,
// updated from one list to the next by what differs.
type nameSet struct {
	set  map[string]bool
	prev []types.Resource
}

// update makes the set cur's names and reports whether it changed.
func (n *nameSet) update(cur []types.Resource) (map[string]bool, bool) {
	if len(n.prev) == 0 {
		// Every name is new: the set is cur's, made at its size.
		n.set, n.prev = names(cur), cur
		return n.set, len(cur) > 0
	}
	changed := false
	sorted := memo.Diff(n.prev, cur, func(a, b types.Resource) int {
		return strings.Compare(cachev3.GetResourceName(a), cachev3.GetResourceName(b))
	}, func(old, new types.Resource) {
		switch {
		case new == nil:
			delete(n.set, cachev3.GetResourceName(old))
			changed = true
		case old == nil:
			n.set[cachev3.GetResourceName(new)] = true
			changed = true
		}
	})
	if !sorted || len(n.set) != len(cur) {
		// Not sorted, or names repeated: count them all again.
		n.set, changed = names(cur), true
	}
	n.prev = cur
	return n.set, changed
}
