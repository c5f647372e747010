package gatewayapi

// ListenerSets (GEP-1713, gateway.networking.k8s.io/v1 ListenerSet): which
// ListenerSets a Gateway admits (spec.allowedListeners), the merged
// listener list of the Gateway (its own listeners, then the admitted sets'
// in the spec's order) with the conflict rules applied across it, and each
// ListenerSet's status. A ListenerSet's listeners are listenerStates of its
// Gateway like the Gateway's own (listeners.go): the same validation, TLS,
// conflicts, ports, route attachment and IR.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/resources"
)

// KindListenerSet is the ListenerSet kind (group gateway.networking.k8s.io),
// a parentRef kind routes may name: the registry's name.
var KindListenerSet = resources.ListenerSetKind.Name()

// listenerSetState is one ListenerSet whose parentRef names a Gateway of
// ours.
type listenerSetState struct {
	obj *gwapiv1.ListenerSet
	nn  types.NamespacedName
	gw  *gatewayState
	// refused is why the Gateway does not take the set's listeners
	// (Accepted=False and Programmed=False with this reason: NotAllowed,
	// ParentNotAccepted); the set then has no listeners.
	refused   *problem
	listeners []*listenerState
}

// accepted says whether the set has Accepted=True: admitted by its
// Gateway, and at least one of its listeners is valid (accepted, its
// certificateRefs resolved) on an accepted Gateway.
func (s *listenerSetState) accepted() bool {
	if s.refused != nil || !s.gw.accepted() {
		return false
	}
	return slices.ContainsFunc(s.listeners, (*listenerState).programmable)
}

// describe names the set in messages: "ListenerSet <namespace>/<name>".
func (s *listenerSetState) describe() string { return KindListenerSet + " " + s.nn.String() }

// AdmitsListenerSet applies a Gateway's spec.allowedListeners.namespaces to
// a ListenerSet in namespace setNS: From None (the default, also without
// allowedListeners) admits none, Same the Gateway's namespace, All every
// namespace, Selector the namespaces whose labels (nsLabels) match the
// selector. It returns "" when the set is admitted, else why not (the
// message of reason NotAllowed). Whether the set's parentRef names the
// Gateway is the caller's to check.
func AdmitsListenerSet(gw *gwapiv1.Gateway, setNS string, nsLabels labels.Set) string {
	var ln *gwapiv1.ListenerNamespaces
	if gw.Spec.AllowedListeners != nil {
		ln = gw.Spec.AllowedListeners.Namespaces
	}
	from := gwapiv1.NamespacesFromNone
	if ln != nil {
		from = deref(ln.From, gwapiv1.NamespacesFromNone)
	}
	gwName := gw.Namespace + "/" + gw.Name
	switch from {
	case gwapiv1.NamespacesFromAll:
		return ""
	case gwapiv1.NamespacesFromSame:
		if setNS == gw.Namespace {
			return ""
		}
		return fmt.Sprintf("Gateway %s allows ListenerSets of its own namespace only (spec.allowedListeners.namespaces.from Same)", gwName)
	case gwapiv1.NamespacesFromSelector:
		sel, err := metav1.LabelSelectorAsSelector(ln.Selector)
		if err != nil {
			return fmt.Sprintf("Gateway %s: spec.allowedListeners.namespaces.selector is invalid: %v", gwName, err)
		}
		if sel.Matches(nsLabels) {
			return ""
		}
		return fmt.Sprintf("the labels of namespace %s do not match the spec.allowedListeners.namespaces.selector of Gateway %s", setNS, gwName)
	case gwapiv1.NamespacesFromNone:
		return fmt.Sprintf("Gateway %s allows no ListenerSets (spec.allowedListeners.namespaces.from is None or not set)", gwName)
	}
	return fmt.Sprintf("Gateway %s: spec.allowedListeners.namespaces.from %q is not supported", gwName, from)
}

// ListenerSetParent is the Gateway a ListenerSet's spec.parentRef names
// (group gateway.networking.k8s.io and kind Gateway by default, namespace
// the set's own by default); ok is false when it names another group or
// kind.
func ListenerSetParent(ls *gwapiv1.ListenerSet) (gw types.NamespacedName, ok bool) {
	ref := ls.Spec.ParentRef
	if deref(ref.Group, gwapiv1.GroupName) != gwapiv1.GroupName || deref(ref.Kind, "Gateway") != "Gateway" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: string(deref(ref.Namespace, gwapiv1.Namespace(ls.Namespace))), Name: string(ref.Name)}, true
}

// SortListenerSets orders the ListenerSets of one Gateway as the merged
// listener list takes them (ListenerSetSpec listeners): oldest
// creationTimestamp first, then by "<namespace>/<name>".
func SortListenerSets(sets []*gwapiv1.ListenerSet) {
	slices.SortStableFunc(sets, func(a, b *gwapiv1.ListenerSet) int {
		return cmp.Or(compareTime(a.CreationTimestamp, b.CreationTimestamp),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}

// entryListener reads a ListenerEntry as the Listener of the same fields.
func entryListener(e *gwapiv1.ListenerEntry) *gwapiv1.Listener {
	return &gwapiv1.Listener{Name: e.Name, Hostname: e.Hostname, Port: e.Port, Protocol: e.Protocol, TLS: e.TLS, AllowedRoutes: e.AllowedRoutes, Filters: e.Filters}
}

// translateListenerSets reads every ListenerSet whose parentRef names a
// Gateway of ours, admits it or not (AdmitsListenerSet; a Gateway refused
// as a whole takes none: ParentNotAccepted), and appends the admitted
// sets' listeners to their Gateway in the spec's order (SortListenerSets).
// The conflict rules then apply across each Gateway's merged list
// (detectSetConflicts). ListenerSets whose parentRef names no Gateway of
// ours are not ours to report on; one naming a Gateway that does not exist
// gets a warning.
func (t *translator) translateListenerSets() {
	t.listenerSetIndex = map[types.NamespacedName]*listenerSetState{}
	byGateway := map[*gatewayState][]*gwapiv1.ListenerSet{}
	for _, ls := range t.res.ListenerSets {
		if ls == nil || t.listenerSetIndex[nn(ls.Namespace, ls.Name)] != nil {
			continue
		}
		parent, ok := ListenerSetParent(ls)
		if !ok {
			continue
		}
		gs := t.gatewayIndex[parent]
		if gs == nil {
			if t.allGateways[parent] == nil {
				t.warnf("ListenerSet %s/%s: parentRef %s: no such Gateway", ls.Namespace, ls.Name, show(parent.String()))
			}
			continue
		}
		gs.namedBy++
		s := &listenerSetState{obj: ls, nn: nn(ls.Namespace, ls.Name), gw: gs}
		t.listenerSetIndex[s.nn] = s
		t.listenerSets = append(t.listenerSets, s)
		switch {
		case gs.refused != nil:
			s.refused = &problem{string(gwapiv1.ListenerSetReasonParentNotAccepted), fmt.Sprintf("Gateway %s is not accepted: %s", gs.nn, gs.refused.msg)}
		default:
			if why := AdmitsListenerSet(gs.obj, ls.Namespace, t.namespaceLabels(ls.Namespace)); why != "" {
				s.refused = &problem{string(gwapiv1.ListenerSetReasonNotAllowed), why}
			}
		}
		if s.refused == nil {
			var entries []gwapiv1.Listener
			for i := range ls.Spec.Listeners {
				entries = append(entries, *entryListener(&ls.Spec.Listeners[i]))
			}
			if msgs := listenersSpecProblems(entries, KindListenerSet); len(msgs) > 0 {
				// What the CRD's schema refuses in a cluster (standalone
				// mode has no API server to check it).
				s.refused = &problem{string(gwapiv1.ListenerSetReasonListenersNotValid), "invalid spec: " + strings.Join(msgs, "; ")}
			}
		}
		if s.refused == nil {
			byGateway[gs] = append(byGateway[gs], ls)
		}
	}
	for _, gs := range t.gateways {
		sets := byGateway[gs]
		SortListenerSets(sets)
		for _, ls := range sets {
			s := t.listenerSetIndex[nn(ls.Namespace, ls.Name)]
			for i := range ls.Spec.Listeners {
				s.listeners = append(s.listeners, t.newListener(gs, s, entryListener(&ls.Spec.Listeners[i])))
			}
			markDuplicateNames(s.listeners)
			gs.sets = append(gs.sets, s)
		}
		detectSetConflicts(gs)
		detectOverlappingTLS(gs.allListeners())
	}
}

// allListeners is the Gateway's merged listener list: its own listeners,
// then those of its admitted ListenerSets in order.
func (g *gatewayState) allListeners() []*listenerState {
	out := slices.Clone(g.listeners)
	for _, s := range g.sets {
		out = append(out, s.listeners...)
	}
	return out
}

// detectSetConflicts applies the Distinct Listeners rules (conflicts.go)
// to the listeners of g's ListenerSets, with the merged list's precedence
// (ListenerSetSpec listeners: the parent Gateway first, then the sets in
// order): a set's listener is Conflicted when a listener before it in the
// merged list that is not Conflicted itself, on the same port, has a
// protocol that cannot share the port (ProtocolConflict) or the same
// protocol class and hostname (HostnameConflict). The earlier listener
// keeps its state; the Gateway's own listeners are never refused because
// of a ListenerSet, and a Conflicted listener holds nothing.
func detectSetConflicts(g *gatewayState) {
	var earlier []*listenerState
	for _, l := range g.listeners {
		if l.conflict == nil {
			earlier = append(earlier, l)
		}
	}
	for _, s := range g.sets {
		for _, l := range s.listeners {
			if l.duplicate || protocolKinds[l.spec.Protocol] == nil {
				continue
			}
			if l.conflict = conflictWithEarlier(l, earlier); l.conflict == nil {
				earlier = append(earlier, l)
			}
		}
	}
}

// conflictWithEarlier is the conflict of l with the first listener of
// earlier that it cannot coexist with, or nil.
func conflictWithEarlier(l *listenerState, earlier []*listenerState) *problem {
	for _, e := range earlier {
		if e.duplicate || e.spec.Port != l.spec.Port || protocolKinds[e.spec.Protocol] == nil {
			continue
		}
		a, b := portClass(e.protocol), portClass(l.protocol)
		if a == "udp" || b == "udp" {
			if a == b && e.hostname == l.hostname {
				return &problem{string(gwapiv1.ListenerReasonHostnameConflict), fmt.Sprintf("listener %s of %s already serves UDP port %d", e.name, e.owner(), l.spec.Port)}
			}
			continue
		}
		if a != b {
			return &problem{string(gwapiv1.ListenerReasonProtocolConflict),
				fmt.Sprintf("port %d is already used by listener %s of %s with protocol %s, which cannot share it with %s", l.spec.Port, e.name, e.owner(), e.protocol, l.protocol)}
		}
		if e.hostname == l.hostname {
			host := cmp.Or(l.hostname, "(any)")
			return &problem{string(gwapiv1.ListenerReasonHostnameConflict),
				fmt.Sprintf("listener %s of %s already serves hostname %s on port %d", e.name, e.owner(), host, l.spec.Port)}
		}
	}
	return nil
}

// owner names the object that declares l: "Gateway <ns>/<name>" or
// "ListenerSet <ns>/<name>".
func (l *listenerState) owner() string {
	if l.set != nil {
		return l.set.describe()
	}
	return "Gateway " + l.gw.nn.String()
}

// buildStatus renders the ListenerSet's status (ListenerSetStatus):
//   - refused (NotAllowed, ParentNotAccepted, or ListenersNotValid for a
//     spec the CRD's schema would refuse): Accepted=False and
//     Programmed=False with that reason, no listeners;
//   - no valid listener, or the Gateway not accepted: Accepted=False and
//     Programmed=False reason ListenersNotValid;
//   - else Accepted=True (reason Accepted, or ListenersNotValid when some
//     listener is not valid) and Programmed=True reason Programmed.
//
// status.listeners has one entry per listener with the conditions,
// supportedKinds and attachedRoutes a Gateway's listener gets.
func (s *listenerSetState) buildStatus() *gwapiv1.ListenerSetStatus {
	gen := s.obj.Generation
	st := &gwapiv1.ListenerSetStatus{}
	set := func(accepted bool, reason gwapiv1.ListenerSetConditionReason, msg string, programmed bool, preason gwapiv1.ListenerSetConditionReason, pmsg string) {
		setCondition(&st.Conditions, condition(gwapiv1.ListenerSetConditionAccepted, accepted, reason, msg, gen))
		setCondition(&st.Conditions, condition(gwapiv1.ListenerSetConditionProgrammed, programmed, preason, pmsg, gen))
	}
	var bad, good []string
	for _, l := range s.listeners {
		if l.duplicate {
			continue
		}
		st.Listeners = append(st.Listeners, gwapiv1.ListenerEntryStatus(l.buildStatus()))
		if l.programmable() {
			good = append(good, l.name)
		} else {
			bad = append(bad, l.name)
		}
	}
	switch {
	case s.refused != nil:
		r := gwapiv1.ListenerSetConditionReason(s.refused.reason)
		set(false, r, s.refused.msg, false, r, s.refused.msg)
	case !s.gw.accepted():
		msg := fmt.Sprintf("Gateway %s is not accepted", s.gw.nn)
		set(false, gwapiv1.ListenerSetReasonParentNotAccepted, msg, false, gwapiv1.ListenerSetReasonParentNotAccepted, msg)
	case len(good) == 0:
		msg := "no listener is valid; see the listener conditions"
		if len(s.listeners) == 0 {
			msg = "the ListenerSet has no listeners"
		}
		set(false, gwapiv1.ListenerSetReasonListenersNotValid, msg, false, gwapiv1.ListenerSetReasonListenersNotValid, msg)
	case len(bad) > 0:
		set(true, gwapiv1.ListenerSetReasonListenersNotValid, "listeners not valid: "+strings.Join(bad, ", ")+"; see the listener conditions",
			true, gwapiv1.ListenerSetReasonProgrammed, "listeners programmed: "+strings.Join(good, ", "))
	default:
		set(true, gwapiv1.ListenerSetReasonAccepted, "ListenerSet is accepted",
			true, gwapiv1.ListenerSetReasonProgrammed, "listeners programmed: "+strings.Join(good, ", "))
	}
	return st
}

// MergeListenerSets returns gateways (in the same order) with, for each
// Gateway that admits ListenerSets of res (ListenerSetParent,
// AdmitsListenerSet against res.Namespaces' labels), a copy whose
// spec.listeners also holds the admitted sets' listeners in the merged
// list's order (SortListenerSets). It is for what reads a Gateway's ports
// (the provisioner's bind ports and Service ports): the listeners of a
// ListenerSet are served by its Gateway's Envoy fleet, on its Service. The
// copies' listener names may repeat; conflicts are the translator's.
// Gateways without admitted sets are returned as they are; nothing is
// modified.
func MergeListenerSets(gateways []*gwapiv1.Gateway, res *resources.Resources) []*gwapiv1.Gateway {
	byParent := map[types.NamespacedName][]*gwapiv1.ListenerSet{}
	for _, ls := range res.ListenerSets {
		if ls == nil {
			continue
		}
		if parent, ok := ListenerSetParent(ls); ok {
			byParent[parent] = append(byParent[parent], ls)
		}
	}
	nsLabels := map[string]labels.Set{}
	for _, n := range res.Namespaces {
		if n != nil {
			nsLabels[n.Name] = n.Labels
		}
	}
	out := make([]*gwapiv1.Gateway, len(gateways))
	for i, gw := range gateways {
		out[i] = gw
		var admitted []*gwapiv1.ListenerSet
		for _, ls := range byParent[nn(gw.Namespace, gw.Name)] {
			if AdmitsListenerSet(gw, ls.Namespace, nsLabels[ls.Namespace]) == "" {
				admitted = append(admitted, ls)
			}
		}
		if len(admitted) == 0 {
			continue
		}
		SortListenerSets(admitted)
		merged := gw.DeepCopy()
		for _, ls := range admitted {
			for j := range ls.Spec.Listeners {
				merged.Spec.Listeners = append(merged.Spec.Listeners, *entryListener(ls.Spec.Listeners[j].DeepCopy()))
			}
		}
		out[i] = merged
	}
	return out
}
