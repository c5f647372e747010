package gatewayapi

import (
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// translateHTTPRoutes attaches every HTTPRoute to the Gateways of ours its
// parentRefs name, adds its rules to the IR of every listener it attached
// to, and computes its status.
func (t *translator) translateHTTPRoutes() {
	for _, hr := range t.res.HTTPRoutes {
		if hr != nil {
			t.translateHTTPRoute(hr)
		}
	}
}

// parentRefTarget is a parentRef of a route that names a Gateway of ours.
type parentRefTarget struct {
	ref gwapiv1.ParentReference
	gw  *gatewayState
}

// ourParents returns the parentRefs of a route that name Gateways of ours,
// in spec order, without exact duplicates. ParentRef group and kind default
// to gateway.networking.k8s.io and Gateway, the namespace to the route's.
// Refs to anything else (other kinds, other controllers' Gateways, missing
// Gateways) get no status entry: they are not ours to report on. A ref to a
// Gateway that does not exist, or whose GatewayClass does not, has no owner
// at all: it gets a Status.Warnings entry instead.
func (t *translator) ourParents(hr *gwapiv1.HTTPRoute) []parentRefTarget {
	var out []parentRefTarget
	for _, ref := range hr.Spec.ParentRefs {
		if deref(ref.Group, gwapiv1.GroupName) != gwapiv1.GroupName || deref(ref.Kind, "Gateway") != "Gateway" {
			continue
		}
		ns := string(deref(ref.Namespace, gwapiv1.Namespace(hr.Namespace)))
		gs := t.gatewayIndex[nn(ns, string(ref.Name))]
		if gs == nil {
			switch gw := t.allGateways[nn(ns, string(ref.Name))]; {
			case gw == nil:
				t.warnf("HTTPRoute %s/%s: parentRef %s: no such Gateway; the route is not attached to it", hr.Namespace, hr.Name, show(ns+"/"+string(ref.Name)))
			case !t.allClasses[string(gw.Spec.GatewayClassName)]:
				t.warnf("HTTPRoute %s/%s: parentRef %s: the Gateway's GatewayClass %s does not exist; the route is not attached to it", hr.Namespace, hr.Name, show(ns+"/"+string(ref.Name)), show(string(gw.Spec.GatewayClassName)))
			}
			continue
		}
		dup := false
		for _, p := range out {
			if reflect.DeepEqual(p.ref, ref) {
				dup = true
			}
		}
		if !dup {
			out = append(out, parentRefTarget{ref: ref, gw: gs})
		}
	}
	return out
}

// routeSpecProblem checks the route-level schema rules of HTTPRouteSpec:
// every hostname a Hostname, at most 16 hostnames and 16 rules, at most 128
// matches in all. A route that breaks them would not pass the API server;
// here it is not accepted by any parent (Accepted=False reason
// UnsupportedValue) and none of its rules is served.
func routeSpecProblem(hr *gwapiv1.HTTPRoute) *problem {
	var msgs []string
	if n := len(hr.Spec.Hostnames); n > maxItems16 {
		msgs = append(msgs, fmt.Sprintf("%d hostnames; at most %d are allowed", n, maxItems16))
	}
	var bad []string
	why := ""
	for _, h := range hr.Spec.Hostnames {
		if p := checkHostname(string(h)); p != "" {
			bad, why = append(bad, q(string(h))), p
		}
	}
	switch {
	case len(bad) == 1:
		msgs = append(msgs, fmt.Sprintf("hostname %s %s", bad[0], why))
	case len(bad) > 1:
		msgs = append(msgs, fmt.Sprintf("hostnames %s are not valid: each must be lower-case RFC 1123 labels, at most 253 characters, with an optional \"*.\" wildcard as the first label only", strings.Join(bad, ", ")))
	}
	if n := len(hr.Spec.Rules); n > maxItems16 {
		msgs = append(msgs, fmt.Sprintf("%d rules; at most %d are allowed", n, maxItems16))
	}
	matches := 0
	for _, r := range hr.Spec.Rules {
		matches += len(r.Matches)
	}
	if matches > maxMatchesPerRoute {
		msgs = append(msgs, fmt.Sprintf("%d matches across all rules; at most %d are allowed", matches, maxMatchesPerRoute))
	}
	if len(msgs) == 0 {
		return nil
	}
	return &problem{string(gwapiv1.RouteReasonUnsupportedValue), "invalid spec: " + joinMessages(msgs)}
}

// translateHTTPRoute handles one route: its rules are translated once, then
// each parentRef of ours attaches it (or says why not) and, where it
// attached, its rules join the listeners' routes.
//
// A route attached only to listeners that are not programmed (a port
// another Gateway holds, a conflict, bad certificates) is still
// Accepted=True and counts in their attachedRoutes, as the spec requires
// (ListenerStatus attachedRoutes: listener status does not impact
// attachment); its Accepted message says which listeners do not serve it.
func (t *translator) translateHTTPRoute(hr *gwapiv1.HTTPRoute) {
	parents := t.ourParents(hr)
	if len(parents) == 0 {
		return
	}
	specProblem := routeSpecProblem(hr)
	rules := t.translateRules(hr)
	gen := hr.Generation
	st := &gwapiv1.RouteStatus{Parents: []gwapiv1.RouteParentStatus{}}
	for _, p := range parents {
		ps := gwapiv1.RouteParentStatus{ParentRef: p.ref, ControllerName: t.controller}
		var listeners []*listenerState
		refused := specProblem
		if refused == nil {
			listeners, refused = t.attach(hr, p.ref, p.gw)
		}
		if refused == nil && rules.allInvalid() {
			refused = rules.unsupported
		}
		if refused != nil {
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionAccepted, false, refused.reason, refused.msg, gen))
		} else {
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionAccepted, true, gwapiv1.RouteReasonAccepted, acceptedMessage(p.gw, listeners), gen))
		}
		if rules.refs != nil {
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionResolvedRefs, false, rules.refs.reason, rules.refs.msg, gen))
		} else {
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionResolvedRefs, true, gwapiv1.RouteReasonResolvedRefs, "all references resolved", gen))
		}
		if refused == nil && rules.unsupported != nil {
			// Some rules are invalid, some valid: the invalid ones answer
			// 500 instead of being served (RouteConditionPartiallyInvalid,
			// the "Drop Rule(s)" approach).
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionPartiallyInvalid, true, gwapiv1.RouteReasonUnsupportedValue,
				fmt.Sprintf("Dropped Rule(s) %s: %s (a dropped rule answers 500 where its matches are valid)", rules.invalidIndexes(), rules.unsupported.msg), gen))
		}
		st.Parents = append(st.Parents, ps)
		if refused != nil {
			continue
		}
		for _, l := range listeners {
			k := nn(hr.Namespace, hr.Name)
			if l.routeSeen[k] {
				continue
			}
			l.routeSeen[k] = true
			l.attached++
			if l.programmed() {
				t.addRoutes(l, hr, rules)
			}
		}
	}
	t.status.Routes[RouteKey{Kind: KindHTTPRoute, Namespace: hr.Namespace, Name: hr.Name}] = st
}

// attach finds the listeners of gs that a route attaches to through ref
// (ParentReference sectionName and port; listener allowedRoutes kinds and
// namespaces; hostname intersection), or says why there are none:
// NoMatchingParent (no listener has that sectionName/port, or the Gateway
// is not accepted), NotAllowedByListeners, NoMatchingListenerHostname.
func (t *translator) attach(hr *gwapiv1.HTTPRoute, ref gwapiv1.ParentReference, gs *gatewayState) ([]*listenerState, *problem) {
	if gs.refused != nil {
		return nil, &problem{string(gwapiv1.RouteReasonNoMatchingParent), fmt.Sprintf("Gateway %s is not accepted: %s", gs.nn, gs.refused.msg)}
	}
	var candidates []*listenerState
	for _, l := range gs.listeners {
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
		return nil, &problem{string(gwapiv1.RouteReasonNoMatchingParent),
			fmt.Sprintf("Gateway %s has no listener with %s", gs.nn, strings.Join(sel, " and "))}
	}
	var allowed []*listenerState
	for _, l := range candidates {
		if l.allowsKind(gwapiv1.GroupName, "HTTPRoute") && t.allowsNamespace(l, hr.Namespace) {
			allowed = append(allowed, l)
		}
	}
	if len(allowed) == 0 {
		return nil, &problem{string(gwapiv1.RouteReasonNotAllowedByListeners),
			fmt.Sprintf("no listener of Gateway %s allows HTTPRoutes from namespace %s", gs.nn, hr.Namespace)}
	}
	var out []*listenerState
	for _, l := range allowed {
		if len(routeHostnames(l.hostname, hostnameStrings(hr.Spec.Hostnames))) > 0 {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, &problem{string(gwapiv1.RouteReasonNoMatchingListenerHostname),
			fmt.Sprintf("no hostname of the route matches a listener hostname of Gateway %s", gs.nn)}
	}
	return out, nil
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
// Gateway's namespace), All, Selector (labels of the route's namespace),
// None.
func (t *translator) allowsNamespace(l *listenerState, ns string) bool {
	switch l.from {
	case gwapiv1.NamespacesFromAll:
		return true
	case gwapiv1.NamespacesFromSame:
		return ns == l.gw.nn.Namespace
	case gwapiv1.NamespacesFromSelector:
		return l.selector != nil && l.selector.Matches(t.namespaceLabels(ns))
	}
	return false
}

func hostnameStrings(hs []gwapiv1.Hostname) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, string(h))
	}
	return out
}

// addRoutes adds one IR route per hostname, rule and match of hr to l.
func (t *translator) addRoutes(l *listenerState, hr *gwapiv1.HTTPRoute, rules *routeRules) {
	for _, host := range routeHostnames(l.hostname, hostnameStrings(hr.Spec.Hostnames)) {
		for _, r := range rules.rules {
			for j, m := range r.matches {
				route := r.template.DeepCopy()
				route.Name = fmt.Sprintf("httproute/%s/%s/rule/%d/match/%d", hr.Namespace, hr.Name, r.index, j)
				route.Hostname = host
				route.Match = *m.DeepCopy()
				l.routes = append(l.routes, &routeEntry{
					route: route, created: creation(hr.ObjectMeta), ns: hr.Namespace, name: hr.Name, rule: r.index, match: j,
				})
			}
		}
	}
}

func creation(m metav1.ObjectMeta) metav1.Time { return m.CreationTimestamp }

// acceptedMessage is the message of Accepted=True for a route attached to
// listeners of gs: it names the listeners that are not programmed, which
// count the route but do not serve it.
func acceptedMessage(gs *gatewayState, listeners []*listenerState) string {
	var idle []string
	for _, l := range listeners {
		if why := l.notProgrammedReason(); why != "" {
			idle = append(idle, fmt.Sprintf("%s (%s)", l.name, why))
		}
	}
	switch {
	case len(idle) == 0:
		return "route is accepted"
	case len(idle) == len(listeners):
		return fmt.Sprintf("route is accepted, but no listener of Gateway %s it attached to is programmed, so no traffic reaches it there: %s", gs.nn, strings.Join(idle, "; "))
	}
	return fmt.Sprintf("route is accepted; these listeners of Gateway %s are not programmed and do not serve it: %s", gs.nn, strings.Join(idle, "; "))
}
