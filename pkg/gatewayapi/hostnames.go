package gatewayapi

import (
	"slices"
	"strings"
)

// intersectHostname returns the hostname that both a and b match, the more
// specific of the two, or "" when they share none. Either may be a
// "*."-wildcard, which matches one or more labels ("*.example.com" matches
// "a.example.com" and "a.b.example.com", not "example.com").
func intersectHostname(a, b string) string {
	switch {
	case a == b:
		return a
	case isWildcard(a) && isWildcard(b):
		if strings.HasSuffix(a[1:], b[1:]) {
			return a
		}
		if strings.HasSuffix(b[1:], a[1:]) {
			return b
		}
	case isWildcard(a):
		if strings.HasSuffix(b, a[1:]) {
			return b
		}
	case isWildcard(b):
		if strings.HasSuffix(a, b[1:]) {
			return a
		}
	}
	return ""
}

func isWildcard(h string) bool { return strings.HasPrefix(h, "*.") }

// routeHostnames are the IR virtual hosts of a route on a listener
// (HTTPRoute spec.hostnames against listener hostname): each route hostname
// intersected with the listener's, those without intersection dropped. A
// route without hostnames takes the listener's hostname, or "*" (every
// host) when the listener has none. Hostnames compare case-insensitively.
// An empty result means the route does not attach to the listener.
func routeHostnames(listener string, route []string) []string {
	if len(route) == 0 {
		if listener == "" {
			return []string{"*"}
		}
		return []string{listener}
	}
	var out []string
	for _, r := range route {
		r = strings.ToLower(r)
		h := r
		if listener != "" {
			h = intersectHostname(listener, r)
		}
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// hostsIntersect says whether two route hostnames of one listener
// (routeHostnames: names, "*."-wildcards, or "*" for every host) share a
// host.
func hostsIntersect(a, b string) bool {
	return a == "*" || b == "*" || intersectHostname(a, b) != ""
}
