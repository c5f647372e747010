package gatewayapi

// What every route kind shares: which parentRefs name Gateways of ours,
// attachment to their listeners (sectionName and port, allowedRoutes kinds
// and namespaces, hostname intersection), the rule that routes of two kinds
// may not share a hostname on one listener, status.parents, and adding a
// route's IR to the listeners it attached to. A kind's own file
// (httproute.go, grpcroute.go) turns its objects into routeStates with
// newRoute and translates its rules; nothing here reads a kind's type.

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// routeState is one route of any kind during translation.
type routeState struct {
	key        RouteKey
	created    metav1.Time
	generation int64
	// hostnames are spec.hostnames, lower-cased (none for kinds without).
	hostnames []string
	// spec is a route-level schema problem (routeSpecProblem): no parent
	// accepts the route.
	spec *problem
	// rules are the route's rules, translated once whatever the parents.
	rules *routeRules
	// parents are the parentRefs that name Gateways of ours.
	parents []*parentState
}

// parentState is one parentRef of a route that names a Gateway of ours,
// or a ListenerSet attached to one (set; gw is then its Gateway).
type parentState struct {
	ref gwapiv1.ParentReference
	gw  *gatewayState
	set *listenerSetState
	// listeners are those the route attaches to through ref.
	listeners []*listenerState
	// refused is why the route is not accepted by this parent.
	refused *problem
	// taken lists the listeners ref selected where a route of another kind
	// already holds one of the route's hostnames (resolveKindConflicts).
	taken []string
	// attached and attachRefused are listeners and refused as attachRoute
	// left them, before resolveKindConflicts: a route read in an earlier
	// run starts its conflicts over from them (restoreAttachment).
	attached      []*listenerState
	attachRefused *problem
	// hosts are the route's hostnames on each listener of attached
	// (routeHostnames), in the same order.
	hosts [][]string
}

// How routes are translated (Cache.translateRoutes, incremental.go, runs
// these steps for the routes that changed, or for all of them):
//   - readRoute: a route object's parents of ours, its rules translated
//     once whatever the parents (httpRoute, grpcRoute, l4Route), and
//     attachRoute: the listeners its parentRefs select;
//   - resolveKindConflicts: routes of two kinds sharing a hostname on a
//     listener;
//   - finishRoute: its status, and its rules added to the listeners' IR.

// readRoute reads a route object of kind (a route kind's name: RouteKinds)
// with the kind's reader: nil when no parentRef names a Gateway of ours,
// else its routeState, attached.
func (t *translator) readRoute(kind string, obj any) *routeState {
	r := RouteKindNamed(kind).read(t, obj)
	if r != nil {
		t.attachRoute(r)
	}
	return r
}

// restoreAttachment makes r's parents what attachRoute left them, for
// resolveKindConflicts to run again.
func (r *routeState) restoreAttachment() {
	for _, p := range r.parents {
		p.listeners, p.refused, p.taken = p.attached, p.attachRefused, nil
	}
}

// newRoute starts the translation of a route: it returns nil when no
// parentRef names a Gateway of ours (the route is not ours to report on),
// else a routeState with its parents; the caller adds spec and rules.
func (t *translator) newRoute(key RouteKey, meta *metav1.ObjectMeta, refs []gwapiv1.ParentReference, hostnames []gwapiv1.Hostname) *routeState {
	r := &routeState{key: key, created: meta.CreationTimestamp, generation: meta.Generation}
	r.parents = t.ourParents(r, refs)
	if len(r.parents) == 0 {
		return nil
	}
	for _, h := range hostnames {
		r.hostnames = append(r.hostnames, strings.ToLower(string(h)))
	}
	return r
}

// ourParents returns the parentRefs of a route that name Gateways of ours
// or ListenerSets whose parentRef names one, in spec order, without exact
// duplicates. ParentRef group and kind default to gateway.networking.k8s.io
// and Gateway, the namespace to the route's. Refs to anything else (other
// kinds, other controllers' Gateways, missing Gateways) get no status
// entry: they are not ours to report on. A ref to a Gateway that does not
// exist, or whose GatewayClass does not, has no owner at all: it gets a
// Status.Warnings entry instead; so does a ref to a ListenerSet that does
// not exist.
func (t *translator) ourParents(r *routeState, refs []gwapiv1.ParentReference) []*parentState {
	var out []*parentState
	for _, ref := range refs {
		if deref(ref.Group, gwapiv1.GroupName) != gwapiv1.GroupName {
			continue
		}
		ns := string(deref(ref.Namespace, gwapiv1.Namespace(r.key.Namespace)))
		var p *parentState
		switch string(deref(ref.Kind, "Gateway")) {
		case "Gateway":
			gs := t.gatewayIndex[nn(ns, string(ref.Name))]
			if gs == nil {
				switch gw := t.allGateways[nn(ns, string(ref.Name))]; {
				case gw == nil:
					t.warnf("%s: parentRef %s: no such Gateway; the route is not attached to it", r.key, show(ns+"/"+string(ref.Name)))
				case !t.allClasses[string(gw.Spec.GatewayClassName)]:
					t.warnf("%s: parentRef %s: the Gateway's GatewayClass %s does not exist; the route is not attached to it", r.key, show(ns+"/"+string(ref.Name)), show(string(gw.Spec.GatewayClassName)))
				}
				continue
			}
			p = &parentState{ref: ref, gw: gs}
		case KindListenerSet:
			s := t.listenerSetIndex[nn(ns, string(ref.Name))]
			if s == nil {
				if !t.listenerSetExists(nn(ns, string(ref.Name))) {
					t.warnf("%s: parentRef %s: no such ListenerSet; the route is not attached to it", r.key, show(ns+"/"+string(ref.Name)))
				}
				continue
			}
			p = &parentState{ref: ref, gw: s.gw, set: s}
		default:
			continue
		}
		if !slices.ContainsFunc(out, func(o *parentState) bool { return reflect.DeepEqual(o.ref, ref) }) {
			out = append(out, p)
		}
	}
	return out
}

// listenerSetExists says whether the snapshot holds the ListenerSet k,
// ours or not.
func (t *translator) listenerSetExists(k types.NamespacedName) bool {
	return slices.ContainsFunc(t.res.ListenerSets, func(ls *gwapiv1.ListenerSet) bool {
		return ls != nil && ls.Namespace == k.Namespace && ls.Name == k.Name
	})
}

// describe names the parent in messages: "Gateway <ns>/<name>" or
// "ListenerSet <ns>/<name>".
func (p *parentState) describe() string {
	if p.set != nil {
		return p.set.describe()
	}
	return "Gateway " + p.gw.nn.String()
}

// routeSpecProblem checks the route-level schema rules that the route
// kinds share: every hostname a Hostname, at most maxHostnames hostnames
// and maxRules rules (16 and 16 for HTTPRoute and GRPCRoute; 1024 and 1 for
// TLSRoute), at most 128 matches in all. A route that breaks them would
// not pass the API server; here it is not accepted by any parent
// (Accepted=False reason UnsupportedValue) and none of its rules is served.
func routeSpecProblem(hostnames []gwapiv1.Hostname, maxHostnames, rules, maxRules, matches int) *problem {
	var msgs []string
	if n := len(hostnames); n > maxHostnames {
		msgs = append(msgs, fmt.Sprintf("%d hostnames; at most %d are allowed", n, maxHostnames))
	}
	var bad []string
	why := ""
	for _, h := range hostnames {
		if p := checkHostname(string(h)); p != "" {
			bad, why = append(bad, q(string(h))), p
		}
	}
	switch {
	case len(bad) == 1:
		msgs = append(msgs, fmt.Sprintf("hostname %s %s", bad[0], why))
	case len(bad) > 1:
		msgs = append(msgs, fmt.Sprintf("hostnames %s are not valid: each must be lower-case RFC 1123 labels of at most 63 characters, at most 253 characters, with an optional \"*.\" wildcard as the first label only, and not an IP address", strings.Join(bad, ", ")))
	}
	if rules > maxRules {
		msgs = append(msgs, fmt.Sprintf("%d rules; at most %d are allowed", rules, maxRules))
	}
	if matches > maxMatchesPerRoute {
		msgs = append(msgs, fmt.Sprintf("%d matches across all rules; at most %d are allowed", matches, maxMatchesPerRoute))
	}
	if len(msgs) == 0 {
		return nil
	}
	return &problem{string(gwapiv1.RouteReasonUnsupportedValue), "invalid spec: " + joinMessages(msgs)}
}

// attachRoute decides, for each parent of r, the listeners it attaches to
// or why it is refused.
func (t *translator) attachRoute(r *routeState) {
	for _, p := range r.parents {
		if r.spec != nil {
			p.refused = r.spec
		} else {
			p.listeners, p.hosts, p.refused = t.attach(r, p)
			if p.refused == nil && r.rules.allInvalid() {
				p.refused = r.rules.unsupported
			}
		}
		p.attached, p.attachRefused = p.listeners, p.refused
	}
}

// attach finds the listeners of the parent p that a route attaches to
// through p.ref (ParentReference sectionName and port; listener
// allowedRoutes kinds and namespaces; hostname intersection), with the
// route's hostnames on each (routeHostnames), or says why there are none: NoMatchingParent (no listener has that sectionName/port,
// or the parent is not accepted), NotAllowedByListeners,
// NoMatchingListenerHostname. A Gateway parent offers its own listeners
// only, a ListenerSet parent its own only (ListenerEntry name: routes
// reach a ListenerSet's listener through the ListenerSet).
func (t *translator) attach(r *routeState, p *parentState) ([]*listenerState, [][]string, *problem) {
	ref, gs := p.ref, p.gw
	if gs.refused != nil {
		return nil, nil, &problem{string(gwapiv1.RouteReasonNoMatchingParent), fmt.Sprintf("Gateway %s is not accepted: %s", gs.nn, gs.refused.msg)}
	}
	listeners := gs.listeners
	if p.set != nil {
		if !p.set.accepted() {
			return nil, nil, &problem{string(gwapiv1.RouteReasonNoMatchingParent), fmt.Sprintf("%s is not accepted", p.set.describe())}
		}
		listeners = p.set.listeners
	}
	var candidates []*listenerState
	for _, l := range listeners {
		if l.duplicate {
			continue
		}
		if ref.SectionName != nil && string(*ref.SectionName) != l.name {
			continue
		}
		if ref.Port != nil && *ref.Port != l.spec.Port {
			continue
		}
		candidates = append(candidates, l)
	}
	if len(candidates) == 0 {
		var sel []string
		if ref.SectionName != nil {
			sel = append(sel, fmt.Sprintf("sectionName %q", *ref.SectionName))
		}
		if ref.Port != nil {
			sel = append(sel, fmt.Sprintf("port %d", *ref.Port))
		}
		return nil, nil, &problem{string(gwapiv1.RouteReasonNoMatchingParent),
			fmt.Sprintf("%s has no listener with %s", p.describe(), strings.Join(sel, " and "))}
	}
	var allowed []*listenerState
	for _, l := range candidates {
		if l.allowsKind(gwapiv1.GroupName, r.key.Kind) && t.allowsNamespace(l, r.key.Namespace) {
			allowed = append(allowed, l)
		}
	}
	if len(allowed) == 0 {
		return nil, nil, &problem{string(gwapiv1.RouteReasonNotAllowedByListeners),
			fmt.Sprintf("no listener of %s allows %ss from namespace %s", p.describe(), r.key.Kind, r.key.Namespace)}
	}
	var out []*listenerState
	var hosts [][]string
	for _, l := range allowed {
		if h := routeHostnames(l.hostname, r.hostnames); len(h) > 0 {
			out, hosts = append(out, l), append(hosts, h)
		}
	}
	if len(out) == 0 {
		return nil, nil, &problem{string(gwapiv1.RouteReasonNoMatchingListenerHostname),
			fmt.Sprintf("no hostname of the route matches a listener hostname of %s", p.describe())}
	}
	return out, hosts, nil
}

func (l *listenerState) allowsKind(group, kind string) bool {
	for _, k := range l.supportedKinds {
		if string(deref(k.Group, gwapiv1.GroupName)) == group && string(k.Kind) == kind {
			return true
		}
	}
	return false
}

// allowsNamespace applies allowedRoutes.namespaces.from: Same (the
// namespace of the Gateway or ListenerSet that declares the listener), All, Selector (labels of the route's namespace),
// None.
func (t *translator) allowsNamespace(l *listenerState, ns string) bool {
	switch l.from {
	case gwapiv1.NamespacesFromAll:
		return true
	case gwapiv1.NamespacesFromSame:
		return ns == l.namespace()
	case gwapiv1.NamespacesFromSelector:
		return l.selector != nil && l.selector.Matches(t.namespaceLabels(ns))
	}
	return false
}

// heldHosts are the hostnames a route of one kind holds on a listener.
type heldHosts struct {
	key   RouteKey
	hosts []string
}

// resolveKindConflicts applies GRPCRouteSpec hostnames: when an HTTPRoute
// and a GRPCRoute (in general: routes of two kinds) attach to one listener
// with intersecting hostnames, exactly one of them is accepted there: the
// oldest (creationTimestamp), then the first by "namespace/name" (then by
// kind, which the spec leaves open). Routes are taken in that order and a
// route loses every listener where a route of another kind taken before it
// holds an intersecting hostname; a parentRef that loses all of its
// listeners is refused with reason NotAllowedByListeners (the spec names no
// reason). Neither route silently shadows the other.
//
// Every parent of routes must be as attachRoute left it (its listeners
// are those attached, restoreAttachment), and the listeners' held empty.
func resolveKindConflicts(routes []*routeState) {
	order := slices.Clone(routes)
	slices.SortStableFunc(order, func(a, b *routeState) int {
		return cmp.Or(compareTime(a.created, b.created), cmp.Compare(a.key.Namespace, b.key.Namespace),
			cmp.Compare(a.key.Name, b.key.Name), cmp.Compare(a.key.Kind, b.key.Kind))
	})
	sizeHeld(order)
	for _, r := range order {
		for _, p := range r.parents {
			if p.refused != nil {
				continue
			}
			// kept are the listeners not taken: p.listeners itself
			// until one is (it is attached, which stays as it is).
			kept, taken := p.listeners, false
			for i, l := range p.listeners {
				hosts := p.hosts[i]
				if other, host := l.heldByOtherKind(r.key, hosts); other != nil {
					p.taken = append(p.taken, fmt.Sprintf("%s (%s holds %s there)", l.name, other, host))
					if !taken {
						kept, taken = slices.Clone(p.listeners[:i]), true
					}
					continue
				}
				l.held[r.key.Kind] = append(l.held[r.key.Kind], heldHosts{key: r.key, hosts: hosts})
				if taken {
					kept = append(kept, l)
				}
			}
			p.listeners = kept
			if len(kept) == 0 {
				p.refused = &problem{string(gwapiv1.RouteReasonNotAllowedByListeners), fmt.Sprintf(
					"an HTTPRoute and a GRPCRoute may not share a hostname on a listener, and the older route wins: on %s, listener %s",
					p.describe(), strings.Join(p.taken, "; "))}
			}
		}
	}
}

// sizeHeld makes the held lists of the listeners routes attach to (not
// refused) at the size of those routes of each kind, an upper bound.
func sizeHeld(routes []*routeState) {
	var kinds []string
	for _, r := range routes {
		if !slices.Contains(kinds, r.key.Kind) {
			kinds = append(kinds, r.key.Kind)
		}
	}
	for _, kind := range kinds {
		counts := map[*listenerState]int{}
		for _, r := range routes {
			if r.key.Kind != kind {
				continue
			}
			for _, p := range r.parents {
				if p.refused != nil {
					continue
				}
				for _, l := range p.listeners {
					counts[l]++
				}
			}
		}
		for l, n := range counts {
			if l.held == nil {
				l.held = map[string][]heldHosts{}
			}
			l.held[kind] = make([]heldHosts, 0, n)
		}
	}
}

// heldByOtherKind returns a route of a kind other than key's that holds a
// hostname intersecting hosts on l, and that hostname.
func (l *listenerState) heldByOtherKind(key RouteKey, hosts []string) (*RouteKey, string) {
	if _, own := l.held[key.Kind]; len(l.held) == 0 || len(l.held) == 1 && own {
		return nil, ""
	}
	for _, kind := range slices.Sorted(maps.Keys(l.held)) {
		if kind == key.Kind {
			continue
		}
		for i := range l.held[kind] {
			h := &l.held[kind][i]
			for _, a := range h.hosts {
				for _, b := range hosts {
					if hostsIntersect(a, b) {
						return &h.key, a
					}
				}
			}
		}
	}
	return nil, ""
}

// finished is what finishRoute produced for one route: its status and
// what it added to listeners (which a later run takes back when the route
// changes: Cache.undoFinish).
type finished struct {
	status *gwapiv1.RouteStatus
	// attachedTo are the listeners whose attachedRoutes count the route.
	attachedTo []*listenerState
	entries    []*routeEntry
	l4         []*l4Entry
}

// finishRoute computes r's status.parents and adds its rules to the
// listeners it attached to (listenerState added and l4Routes).
//
// A route attached only to listeners that are not programmed (a port
// another Gateway holds, a conflict, bad certificates) is still
// Accepted=True and counts in their attachedRoutes, as the spec requires
// (ListenerStatus attachedRoutes: listener status does not impact
// attachment); its Accepted message says which listeners do not serve it.
func (t *translator) finishRoute(r *routeState) finished {
	var out finished
	gen := r.generation
	rules := r.rules
	st := &gwapiv1.RouteStatus{Parents: make([]gwapiv1.RouteParentStatus, 0, len(r.parents))}
	for _, p := range r.parents {
		ps := gwapiv1.RouteParentStatus{ParentRef: p.ref, ControllerName: t.controller}
		// Accepted, ResolvedRefs and perhaps PartiallyInvalid.
		n := 2
		if p.refused == nil && rules.unsupported != nil {
			n++
		}
		ps.Conditions = make([]metav1.Condition, 0, n)
		if p.refused != nil {
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionAccepted, false, p.refused.reason, p.refused.msg, gen))
		} else {
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionAccepted, true, gwapiv1.RouteReasonAccepted, acceptedMessage(p), gen))
		}
		if rules.refs != nil {
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionResolvedRefs, false, rules.refs.reason, rules.refs.msg, gen))
		} else {
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionResolvedRefs, true, gwapiv1.RouteReasonResolvedRefs, "all references resolved", gen))
		}
		if p.refused == nil && rules.unsupported != nil {
			// Some rules are invalid, some valid: the invalid ones answer
			// an error instead of being served (RouteConditionPartiallyInvalid,
			// the "Drop Rule(s)" approach).
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionPartiallyInvalid, true, gwapiv1.RouteReasonUnsupportedValue,
				fmt.Sprintf("Dropped Rule(s) %s: %s (a dropped rule answers %d where its matches are valid)", rules.invalidIndexes(), rules.unsupported.msg, rules.failure), gen))
		}
		st.Parents = append(st.Parents, ps)
		if p.refused != nil {
			continue
		}
		for _, l := range p.listeners {
			// Two parentRefs may select one listener: it counts the
			// route once.
			if slices.Contains(out.attachedTo, l) {
				continue
			}
			out.attachedTo = append(out.attachedTo, l)
			l.attached++
			l.changed = true
			switch {
			case !l.programmed():
			case r.rules.l4:
				out.l4 = append(out.l4, l.addL4Route(r)...)
			default:
				out.entries = append(out.entries, t.routePolicies(r, l, l.addRoutes(r))...)
			}
		}
	}
	out.status = st
	return out
}

// addRoutes adds one IR route per hostname, rule and match of r to l
// (listenerState added), whose TLS backends present l's Gateway's client
// certificate (applyBackendClientCert), and returns their entries. The IR
// routes share what they hold (backends, filters, match values) with the
// rule's template and matches, which nothing modifies once translated;
// only a Gateway with a client certificate, which rewrites backends, gets
// a deep copy of the template.
func (l *listenerState) addRoutes(r *routeState) []*routeEntry {
	start := len(l.added)
	for _, h := range routeHosts(l.hostname, r.hostnames) {
		for _, ru := range r.rules.rules {
			for j, m := range ru.matches {
				var route *ir.HTTPRoute
				if l.gw.backendCert != nil {
					route = ru.template.DeepCopy()
					l.gw.applyBackendClientCert(route)
				} else {
					route = new(ir.HTTPRoute)
					*route = *ru.template
				}
				if sp := route.SessionPersistence; sp != nil && sp.Type == ir.SessionCookie && l.protocol == ir.ProtocolHTTPS {
					// An HTTPS listener's clients get a Secure cookie
					// (GEP-1619 "Secure, HttpOnly, SameSite").
					secure := *sp
					secure.Secure = true
					route.SessionPersistence = &secure
				}
				route.Name = routeMatchName(r.key, ru.index, j)
				route.Origin = ir.Origin{Object: r.key, Rule: ru.index, Match: j}
				if l.gw.routeStats {
					route.StatName = routeRuleName(r.key, ru.index)
				}
				route.Hostname = h.host
				route.Match = m
				l.added = append(l.added, &routeEntry{
					route: route, rank: ru.ranks[j], origin: h.origin, of: r, rule: ru.index, match: j,
				})
			}
		}
	}
	return l.added[start:len(l.added):len(l.added)]
}

// routeMatchName names the IR route (and the Envoy route) of match j of
// rule i of a route: "<kind>/<namespace>/<name>/rule/<i>/match/<j>", kind
// lower-cased ("httproute/default/web/rule/0/match/0"). The name is for
// people (Envoy's config dump, stats, logs): code reads the IR route's
// Origin, set beside it.
func routeMatchName(k RouteKey, rule, match int) string {
	return kindPrefix(k.Kind) + "/" + k.Namespace + "/" + k.Name + "/rule/" + strconv.Itoa(rule) + "/match/" + strconv.Itoa(match)
}

// routeRuleName names rule i of a route, the prefix of its matches' IR
// route names: "<kind>/<namespace>/<name>/rule/<i>" (the IR HTTPRoute
// StatName).
func routeRuleName(k RouteKey, rule int) string {
	return kindPrefix(k.Kind) + "/" + k.Namespace + "/" + k.Name + "/rule/" + strconv.Itoa(rule)
}

// kindPrefix is a route kind lower-cased, as route names start (its
// RouteKind prefix).
func kindPrefix(kind string) string {
	if k := RouteKindNamed(kind); k != nil {
		return k.prefix
	}
	return strings.ToLower(kind)
}

// acceptedMessage is the message of Accepted=True for a route attached
// through p: it names the listeners that are not programmed, which count
// the route but do not serve it, and those a route of another kind holds.
func acceptedMessage(p *parentState) string {
	var idle []string
	for _, l := range p.listeners {
		if why := l.notProgrammedReason(); why != "" {
			idle = append(idle, fmt.Sprintf("%s (%s)", l.name, why))
		}
	}
	msg := "route is accepted"
	switch {
	case len(idle) == 0:
	case len(idle) == len(p.listeners):
		msg = fmt.Sprintf("route is accepted, but no listener of %s it attached to is programmed, so no traffic reaches it there: %s", p.describe(), strings.Join(idle, "; "))
	default:
		msg = fmt.Sprintf("route is accepted; these listeners of %s are not programmed and do not serve it: %s", p.describe(), strings.Join(idle, "; "))
	}
	if len(p.taken) > 0 {
		msg += fmt.Sprintf("; not attached where a route of another kind holds its hostname: %s", strings.Join(p.taken, "; "))
	}
	return msg
}
