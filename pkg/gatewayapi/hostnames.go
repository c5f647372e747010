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

// coversHost says whether virtual host w (a route hostname of a listener:
// a name, a "*."-wildcard or "*") is broader than virtual host h and
// matches every host h matches: w is "*", or a wildcard whose suffix h
// has ("*.example.com" covers "a.example.com" and "*.b.example.com").
func coversHost(w, h string) bool {
	return w != h && (w == "*" || isWildcard(w) && intersectHostname(w, h) == h)
}

// routeHostnames are the IR virtual hosts of a route on a listener
// (HTTPRoute spec.hostnames against listener hostname): each route hostname
// intersected with the listener's, those without intersection dropped. A
// route without hostnames takes the listener's hostname, or "*" (every
// host) when the listener has none. Hostnames compare case-insensitively.
// An empty result means the route does not attach to the listener.
func routeHostnames(listener string, route []string) []string {
	var out []string
	for _, h := range routeHosts(listener, route) {
		out = append(out, h.host)
	}
	return out
}

// routeHost is one virtual host of a route on a listener and the route's
// own hostname it comes from ("*" for a route without hostnames).
type routeHost struct{ host, origin string }

// routeHosts is routeHostnames with each host's origin: the route hostname
// whose intersection with the listener's gave it, the most specific
// (compareHosts) when several give the same host. The origin decides the
// precedence among routes that share a virtual host (HTTPRoute
// spec.hostnames: "evaluate precedence using the original hostnames
// configured on the Route"; Gateway API v1.7.0
// GatewayRouteHostnameIntersectionPrecedence).
func routeHosts(listener string, route []string) []routeHost {
	if len(route) == 0 {
		if listener == "" {
			return []routeHost{{"*", "*"}}
		}
		return []routeHost{{listener, "*"}}
	}
	var out []routeHost
	for _, r := range route {
		r = strings.ToLower(r)
		h := r
		if listener != "" {
			h = intersectHostname(listener, r)
		}
		if h == "" {
			continue
		}
		i := slices.IndexFunc(out, func(x routeHost) bool { return x.host == h })
		switch {
		case i < 0:
			out = append(out, routeHost{h, r})
		case compareHosts(r, out[i].origin) < 0:
			out[i].origin = r
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
