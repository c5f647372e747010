package gatewayapi

// What is TLSRoute's, TCPRoute's and UDPRoute's own: one rule of weighted
// backendRefs each, which a listener relays as bytes (TLS passthrough by
// SNI, or terminated; TCP) or datagrams (UDP). Attachment and status are
// shared (routes.go), and so are backendRefs and ReferenceGrants
// (backends.go).

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// maxTLSRouteHostnames is TLSRouteSpec hostnames' MaxItems.
const maxTLSRouteHostnames = 1024

// tlsRoute reads one TLSRoute: nil when no parentRef names a Gateway of
// ours.
func (t *translator) tlsRoute(r *gwapiv1.TLSRoute) *routeState {
	if r == nil {
		return nil
	}
	rules := make([][]gwapiv1.BackendRef, 0, len(r.Spec.Rules))
	for _, ru := range r.Spec.Rules {
		rules = append(rules, ru.BackendRefs)
	}
	return t.l4Route(RouteKey{Kind: KindTLSRoute, Namespace: r.Namespace, Name: r.Name}, &r.ObjectMeta, t.parentRefs(r.Namespace, r.Spec.CommonRouteSpec), r.Spec.Hostnames, maxTLSRouteHostnames, rules, ir.AppProtocolTCP)
}

// tcpRoute reads one TCPRoute: nil when no parentRef names a Gateway of
// ours.
func (t *translator) tcpRoute(r *gwapiv1.TCPRoute) *routeState {
	if r == nil {
		return nil
	}
	rules := make([][]gwapiv1.BackendRef, 0, len(r.Spec.Rules))
	for _, ru := range r.Spec.Rules {
		rules = append(rules, ru.BackendRefs)
	}
	return t.l4Route(RouteKey{Kind: KindTCPRoute, Namespace: r.Namespace, Name: r.Name}, &r.ObjectMeta, t.parentRefs(r.Namespace, r.Spec.CommonRouteSpec), nil, 0, rules, ir.AppProtocolTCP)
}

// udpRoute reads one UDPRoute: nil when no parentRef names a Gateway of
// ours.
func (t *translator) udpRoute(r *gwapiv1.UDPRoute) *routeState {
	if r == nil {
		return nil
	}
	rules := make([][]gwapiv1.BackendRef, 0, len(r.Spec.Rules))
	for _, ru := range r.Spec.Rules {
		rules = append(rules, ru.BackendRefs)
	}
	return t.l4Route(RouteKey{Kind: KindUDPRoute, Namespace: r.Namespace, Name: r.Name}, &r.ObjectMeta, t.parentRefs(r.Namespace, r.Spec.CommonRouteSpec), nil, 0, rules, ir.AppProtocolUDP)
}

// l4Route reads a route of an L4 kind: its parents, its schema (exactly
// one rule, as TLSRouteSpec, TCPRouteSpec and UDPRouteSpec rules say; at
// most maxHostnames hostnames) and its rule, whose backends Envoy reaches
// over proto (TCP or UDP).
func (t *translator) l4Route(key RouteKey, meta *metav1.ObjectMeta, refs []gwapiv1.ParentReference, hostnames []gwapiv1.Hostname, maxHostnames int, rules [][]gwapiv1.BackendRef, proto ir.AppProtocol) *routeState {
	r := t.newRoute(key, meta, refs, hostnames)
	if r == nil {
		return nil
	}
	r.spec = routeSpecProblem(hostnames, maxHostnames, len(rules), 1, 0)
	if r.spec == nil && len(rules) == 0 {
		r.spec = &problem{string(gwapiv1.RouteReasonUnsupportedValue), "invalid spec: exactly one rule is required"}
	}
	base := ruleContext{l4: proto}
	r.rules = t.translateRules(r, len(rules), base, func(rc *ruleContext) *ruleIR {
		return rc.translateL4Rule(rules[rc.index])
	})
	return r
}

// translateL4Rule resolves an L4 rule's backendRefs (1-16) into a weighted
// group. Invalid backends keep their weight: the connections (or, for UDP,
// the datagrams) they would get are refused, never sent elsewhere; with no
// valid backend the whole route refuses (an empty group).
func (rc *ruleContext) translateL4Rule(refs []gwapiv1.BackendRef) *ruleIR {
	if len(refs) == 0 || len(refs) > maxItems16 {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%d backendRefs; 1 to %d are required", len(refs), maxItems16)
	}
	hrefs := make([]gwapiv1.HTTPBackendRef, 0, len(refs))
	for _, b := range refs {
		hrefs = append(hrefs, gwapiv1.HTTPBackendRef{BackendRef: b})
	}
	group := rc.backendRefs(hrefs)
	if group == nil || len(rc.unsupported) > 0 {
		group = &ir.BackendGroup{}
		for k := range refs {
			b := rc.invalidBackend(k)
			b.Weight = uint32(min(max(deref(refs[k].Weight, 1), 0), maxWeight))
			group.Backends = append(group.Backends, b)
		}
	}
	return &ruleIR{index: rc.index, l4: group}
}

// l4Entry is one L4 route of a listener with what orders it.
type l4Entry struct {
	route *ir.L4Route
	// origins are, by SNI name of route.Hostnames, the TLSRoute's own
	// hostname it comes from (routeHosts).
	origins map[string]string
	created metav1.Time
	ns      string
	name    string
}

// addL4Route adds r's rule to l as one IR L4 route, named
// "<kind>/<namespace>/<name>", with the SNI names a TLSRoute matches there
// (its hostnames intersected with the listener's), and returns its entries.
func (l *listenerState) addL4Route(r *routeState) []*l4Entry {
	start := len(l.l4Routes)
	for _, ru := range r.rules.rules {
		route := &ir.L4Route{Name: fmt.Sprintf("%s/%s/%s", strings.ToLower(r.key.Kind), r.key.Namespace, r.key.Name), Backends: *ru.l4.DeepCopy()}
		l.backendTLS(route.Backends.Backends)
		origins := map[string]string{}
		if r.key.Kind == KindTLSRoute {
			for _, h := range routeHosts(l.hostname, r.hostnames) {
				if h.host != "*" {
					route.Hostnames = append(route.Hostnames, h.host)
					origins[h.host] = h.origin
				}
			}
		}
		l.l4Routes = append(l.l4Routes, &l4Entry{route: route, origins: origins, created: r.created, ns: r.key.Namespace, name: r.key.Name})
	}
	return l.l4Routes[start:len(l.l4Routes):len(l.l4Routes)]
}

// l4RoutesOf returns l's L4 routes for the IR, oldest route first, then by
// "namespace/name": where routes claim the same SNI name (TLS) or a whole
// TCP or UDP listener, the first wins; except that an SNI name goes to the
// TLSRoute whose own hostname it comes from is the most specific
// (sniOwners; GatewayRouteHostnameIntersectionPrecedence), the others
// leave it out. A TCP or UDP listener serves only
// its oldest route; the others stay attached (Accepted=True, counted in
// attachedRoutes) and take over when it goes, as TCPRoute conformance
// (TCPRouteMultipleRoutesAttachment) expects.
func (l *listenerState) l4RoutesOf() []*ir.L4Route {
	slices.SortStableFunc(l.l4Routes, func(a, b *l4Entry) int {
		if c := compareTime(a.created, b.created); c != 0 {
			return c
		}
		return strings.Compare(a.ns+"/"+a.name, b.ns+"/"+b.name)
	})
	owner := sniOwners(l.l4Routes)
	var out []*ir.L4Route
	for _, e := range l.l4Routes {
		r := e.route
		if len(r.Hostnames) > 0 {
			kept := slices.DeleteFunc(slices.Clone(r.Hostnames), func(h string) bool { return owner[h] != e })
			if len(kept) == 0 {
				continue // every SNI name of it goes to a more specific route
			}
			if len(kept) < len(r.Hostnames) {
				// A copy: the entry keeps every name for the next run.
				r = &ir.L4Route{Name: r.Name, Hostnames: kept, Backends: r.Backends}
			}
		}
		out = append(out, r)
	}
	if len(out) > 1 && (l.protocol == ir.ProtocolTCP || l.protocol == ir.ProtocolUDP) {
		out = out[:1]
	}
	return out
}

// sniOwners says which entry of es (sorted by age, then "namespace/name")
// serves each SNI name: the one whose own hostname behind it (origins) is
// the most specific (compareHosts), the first of those on a tie.
func sniOwners(es []*l4Entry) map[string]*l4Entry {
	owner := map[string]*l4Entry{}
	for _, e := range es {
		for _, h := range e.route.Hostnames {
			if o, ok := owner[h]; !ok || compareHosts(e.origins[h], o.origins[h]) < 0 {
				owner[h] = e
			}
		}
	}
	return owner
}

// backendTLS settles the BackendTLSPolicy of a TLSRoute's backends on l
// (resolveBackend): a TLS listener in mode Terminate originates TLS as the
// policy says, to a cluster of its own ("/tls" appended to the name, as a
// Passthrough listener may relay to the same Service port without it), and
// refuses the connections of a backend whose policy cannot be honoured
// (TLSInvalid: an Invalid backend, also named ".../tls"). A TCP listener
// originates the TLS an XBackend's spec.tls asks for (the only TLS a
// TCPRoute's backend has: BackendTLSPolicy does not apply to TCPRoutes),
// also to a cluster named ".../tls"; any other listener (a Passthrough
// one) relays the bytes as they are.
func (l *listenerState) backendTLS(bs []*ir.Backend) {
	terminate := l.protocol == ir.ProtocolTLS && l.tls != nil && l.tls.Mode != ir.TLSPassthrough
	originate := terminate || l.protocol == ir.ProtocolTCP
	for i, b := range bs {
		switch {
		case !originate:
			b.TLS, b.TLSInvalid = nil, false
		case b.TLSInvalid:
			bs[i] = &ir.Backend{Name: b.Name + "/tls", Weight: b.Weight, Invalid: true}
		case b.TLS != nil:
			b.Name += "/tls"
		}
	}
}
