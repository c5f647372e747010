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
// Gateways) get no status entry: they are not ours to report on.
func (t *translator) ourParents(routeNS string, refs []gwapiv1.ParentReference) []parentRefTarget {
	var out []parentRefTarget
	for _, ref := range refs {
		if deref(ref.Group, gwapiv1.GroupName) != gwapiv1.GroupName || deref(ref.Kind, "Gateway") != "Gateway" {
			continue
		}
		ns := string(deref(ref.Namespace, gwapiv1.Namespace(routeNS)))
		gs := t.gatewayIndex[nn(ns, string(ref.Name))]
		if gs == nil {
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

// translateHTTPRoute handles one route: its rules are translated once, then
// each parentRef of ours attaches it (or says why not) and, where it
// attached, its rules join the listeners' routes.
func (t *translator) translateHTTPRoute(hr *gwapiv1.HTTPRoute) {
	parents := t.ourParents(hr.Namespace, hr.Spec.ParentRefs)
	if len(parents) == 0 {
		return
	}
	rules := t.translateRules(hr)
	gen := hr.Generation
	st := &gwapiv1.HTTPRouteStatus{RouteStatus: gwapiv1.RouteStatus{Parents: []gwapiv1.RouteParentStatus{}}}
	for _, p := range parents {
		ps := gwapiv1.RouteParentStatus{ParentRef: p.ref, ControllerName: t.controller}
		listeners, refused := t.attach(hr, p.ref, p.gw)
		if refused == nil && rules.allInvalid() {
			refused = rules.unsupported
		}
		if refused != nil {
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionAccepted, false, refused.reason, refused.msg, gen))
		} else {
			setCondition(&ps.Conditions, condition(gwapiv1.RouteConditionAccepted, true, gwapiv1.RouteReasonAccepted, "route is accepted", gen))
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
	t.status.HTTPRoutes[nn(hr.Namespace, hr.Name)] = st
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
