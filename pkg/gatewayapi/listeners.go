package gatewayapi

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// listenerState is one listener of a Gateway during translation: one of
// the Gateway's own spec.listeners, or one of an admitted ListenerSet's
// (set is then that ListenerSet; the ListenerEntry is read as the Listener
// of the same fields).
type listenerState struct {
	gw   *gatewayState
	set  *listenerSetState
	spec *gwapiv1.Listener
	name string
	// hostname is spec.hostname, "" for none.
	hostname string
	protocol ir.Protocol
	bindPort uint32

	// supportedKinds are the route kinds that may attach (status
	// supportedKinds): allowedRoutes.kinds minus the unsupported ones, or
	// the protocol's default kinds.
	supportedKinds []gwapiv1.RouteGroupKind
	// from and selector are allowedRoutes.namespaces.
	from     gwapiv1.FromNamespaces
	selector labels.Selector

	// duplicate marks a second listener of the same name: it gets neither
	// status (listener status is a map keyed by name) nor configuration.
	duplicate bool
	// notAccepted: Accepted=False with this reason (unsupported protocol,
	// port unavailable, unsupported value).
	notAccepted *problem
	// conflict: Conflicted=True, and Accepted=False and Programmed=False
	// with the same reason (ProtocolConflict, HostnameConflict).
	conflict *problem
	// certProblem: ResolvedRefs=False for certificateRefs; the listener
	// is not programmed.
	certProblem *problem
	// kindsProblem: ResolvedRefs=False reason InvalidRouteKinds; the
	// listener still serves the valid kinds.
	kindsProblem *problem
	// overlappingTLS: OverlappingTLSConfig=True reason OverlappingHostnames.
	overlappingTLS bool
	// filterProblem: ResolvedRefs=False for a listener filter's backendRef
	// (extauth.go); the listener is not programmed.
	filterProblem *problem
	// extAuth are the listener's ExternalAuth filters, in order.
	extAuth []*ir.ExtAuth

	tls *ir.ListenerTLS

	// What routes put here. A Cache keeps the listener from one run to
	// the next while its Gateway's inputs do not change, and with it
	// these fields: routes that change take back what they added
	// (Cache.undoFinish) and add again.

	// attached counts the routes attached with Accepted=True.
	attached int32
	// routes are the IR routes of this listener in precedence order
	// (sortRoutes), as of the last refresh; added are those added since.
	routes []*routeEntry
	added  []*routeEntry
	// l4Routes are the L4 routes of this listener, unordered (l4RoutesOf
	// orders them).
	l4Routes []*l4Entry
	// changed says that routes were added or taken back since the last
	// refresh, which computes irRoutes and irL4, the listener's IR routes.
	changed  bool
	irRoutes []*ir.HTTPRoute
	irL4     []*ir.L4Route
	// fallCopies are the copies of broader routes in the virtual hosts
	// they cover, as of the last refresh (withFallthrough).
	fallCopies map[fallthroughKey]*routeEntry
	// wants are the hostnames each route attached here has on this
	// listener before conflicts between kinds (routeHostnames), by kind
	// and route: a route that changes makes the routes of other kinds
	// whose hostnames intersect its own translate again (Cache.conflicts).
	wants map[string][]heldHosts
	// held are the hostnames the routes attached so far hold, by route
	// kind, for resolveKindConflicts (keyed by kind so that a route only
	// looks at the other kinds' entries: a listener with thousands of
	// routes of one kind costs nothing).
	held map[string][]heldHosts
}

// protocolKinds are the route kinds each supported listener protocol
// accepts (Gateway listener protocol), as the route kinds' table says
// (routekinds.go): HTTPRoute and GRPCRoute on HTTP and HTTPS, TLSRoute on
// TLS (both tls modes), TCPRoute on TCP, UDPRoute on UDP. HTTP and HTTPS
// listeners accept HTTP/2 without an upgrade, as GRPCRoute requires: the
// HTTP connection manager detects h2c with prior knowledge on HTTP
// listeners, and HTTPS listeners offer h2 in ALPN (pkg/xdstranslator).
var protocolKinds = kindsOfProtocol()

// newListener validates one spec listener: protocol (Gateway listener
// protocol), port, allowedRoutes kinds and namespaces, and for HTTPS its TLS
// certificates. Conflicts with other listeners are found afterwards.
func (t *translator) newListener(gs *gatewayState, set *listenerSetState, spec *gwapiv1.Listener) *listenerState {
	l := &listenerState{
		gw:       gs,
		set:      set,
		spec:     spec,
		name:     string(spec.Name),
		hostname: strings.ToLower(string(deref(spec.Hostname, ""))),
		protocol: ir.Protocol(spec.Protocol),
		bindPort: t.bindPort(gs.obj, spec.Port),
		from:     gwapiv1.NamespacesFromSame,
	}
	kinds, ok := protocolKinds[spec.Protocol]
	if !ok {
		l.supportedKinds = []gwapiv1.RouteGroupKind{}
		l.notAccepted = &problem{string(gwapiv1.ListenerReasonUnsupportedProtocol),
			fmt.Sprintf("protocol %q is not supported (supported: HTTP, HTTPS, TLS, TCP, UDP)", spec.Protocol)}
		return l
	}
	if l.bindPort == 0 {
		l.notAccepted = &problem{string(gwapiv1.ListenerReasonPortUnavailable), fmt.Sprintf("port %d cannot be bound", spec.Port)}
	}
	l.supportedKinds, l.kindsProblem = allowedKinds(spec.AllowedRoutes, kinds)
	if p := l.readNamespaces(spec.AllowedRoutes); p != nil && l.notAccepted == nil {
		l.notAccepted = p
	}
	if spec.Protocol == gwapiv1.HTTPSProtocolType || spec.Protocol == gwapiv1.TLSProtocolType {
		t.listenerTLS(l)
	}
	l.listenerFilters()
	return l
}

// allowedKinds reads allowedRoutes.kinds against the kinds the protocol
// supports. Unsupported kinds are dropped and reported (ResolvedRefs=False
// reason InvalidRouteKinds); an empty list means the protocol's kinds.
func allowedKinds(ar *gwapiv1.AllowedRoutes, supported []gwapiv1.RouteGroupKind) ([]gwapiv1.RouteGroupKind, *problem) {
	if ar == nil || len(ar.Kinds) == 0 {
		return supported, nil
	}
	out := []gwapiv1.RouteGroupKind{}
	var bad []string
	for _, k := range ar.Kinds {
		group := deref(k.Group, gwapiv1.GroupName)
		found := false
		for _, s := range supported {
			if *s.Group == group && s.Kind == k.Kind {
				found = true
			}
		}
		if !found {
			bad = append(bad, fmt.Sprintf("%s/%s", group, k.Kind))
			continue
		}
		dup := false
		for _, o := range out {
			if *o.Group == group && o.Kind == k.Kind {
				dup = true
			}
		}
		if !dup {
			out = append(out, gwapiv1.RouteGroupKind{Group: ptr(group), Kind: k.Kind})
		}
	}
	if len(bad) == 0 {
		return out, nil
	}
	return out, &problem{string(gwapiv1.ListenerReasonInvalidRouteKinds),
		"route kinds not supported by this listener: " + strings.Join(bad, ", ")}
}

// readNamespaces reads allowedRoutes.namespaces: From defaults to Same; a
// Selector is matched against Namespace labels. An invalid selector or an
// unknown From value makes the listener not accepted (UnsupportedValue).
func (l *listenerState) readNamespaces(ar *gwapiv1.AllowedRoutes) *problem {
	if ar == nil || ar.Namespaces == nil {
		return nil
	}
	l.from = deref(ar.Namespaces.From, gwapiv1.NamespacesFromSame)
	switch l.from {
	case gwapiv1.NamespacesFromSame, gwapiv1.NamespacesFromAll, gwapiv1.NamespacesFromNone:
	case gwapiv1.NamespacesFromSelector:
		sel, err := metav1.LabelSelectorAsSelector(ar.Namespaces.Selector)
		if err != nil {
			l.selector = labels.Nothing()
			return &problem{string(gwapiv1.ListenerReasonUnsupportedValue), "allowedRoutes.namespaces.selector is invalid: " + err.Error()}
		}
		l.selector = sel
	default:
		from := l.from
		l.from = gwapiv1.NamespacesFromNone
		return &problem{string(gwapiv1.ListenerReasonUnsupportedValue), fmt.Sprintf("allowedRoutes.namespaces.from %q is not supported", from)}
	}
	return nil
}

// namespace is the namespace of the object that declares the listener
// (its Gateway or ListenerSet): allowedRoutes namespaces "Same" and
// certificateRefs without a namespace are relative to it.
func (l *listenerState) namespace() string {
	if l.set != nil {
		return l.set.nn.Namespace
	}
	return l.gw.nn.Namespace
}

// ownerKind is the kind of the object that declares the listener, the
// "from" kind of the ReferenceGrants its certificateRefs need.
func (l *listenerState) ownerKind() string {
	if l.set != nil {
		return KindListenerSet
	}
	return "Gateway"
}

// generation is the generation of the object that declares the listener,
// the observedGeneration of its conditions.
func (l *listenerState) generation() int64 {
	if l.set != nil {
		return l.set.obj.Generation
	}
	return l.gw.obj.Generation
}

// accepted says whether the listener has Accepted=True.
func (l *listenerState) accepted() bool {
	return !l.duplicate && l.notAccepted == nil && l.conflict == nil
}

// programmable says whether the listener would be programmed, before
// ports are shared out among Gateways.
func (l *listenerState) programmable() bool {
	return l.accepted() && l.certProblem == nil && l.filterProblem == nil
}

// programmed says whether the listener goes into the IR.
func (l *listenerState) programmed() bool {
	return l.programmable() && l.gw.refused == nil
}

// notProgrammedReason says why the listener is not programmed ("reason:
// message"), or "" when it is.
func (l *listenerState) notProgrammedReason() string {
	switch {
	case l.duplicate:
		return "a second listener of the same name"
	case l.conflict != nil:
		return l.conflict.reason + ": " + l.conflict.msg
	case l.notAccepted != nil:
		return l.notAccepted.reason + ": " + l.notAccepted.msg
	case l.certProblem != nil:
		return l.certProblem.reason + ": " + l.certProblem.msg
	case l.filterProblem != nil:
		return l.filterProblem.reason + ": " + l.filterProblem.msg
	case l.gw.refused != nil:
		return "the Gateway is not accepted"
	}
	return ""
}

// buildStatus renders the listener status: supportedKinds, attachedRoutes,
// and conditions Accepted, Programmed, ResolvedRefs, Conflicted (and
// OverlappingTLSConfig when true; it is never set False).
func (l *listenerState) buildStatus() gwapiv1.ListenerStatus {
	gen := l.generation()
	st := gwapiv1.ListenerStatus{
		Name:           l.spec.Name,
		SupportedKinds: l.supportedKinds,
		AttachedRoutes: l.attached,
		Conditions:     []metav1.Condition{},
	}
	add := func(c metav1.Condition) { setCondition(&st.Conditions, c) }
	switch {
	case l.conflict != nil:
		add(condition(gwapiv1.ListenerConditionAccepted, false, l.conflict.reason, l.conflict.msg, gen))
		add(condition(gwapiv1.ListenerConditionProgrammed, false, l.conflict.reason, l.conflict.msg, gen))
	case l.notAccepted != nil:
		add(condition(gwapiv1.ListenerConditionAccepted, false, l.notAccepted.reason, l.notAccepted.msg, gen))
		add(condition(gwapiv1.ListenerConditionProgrammed, false, gwapiv1.ListenerReasonInvalid, l.notAccepted.msg, gen))
	default:
		add(condition(gwapiv1.ListenerConditionAccepted, true, gwapiv1.ListenerReasonAccepted, "listener is accepted", gen))
		switch {
		case l.certProblem != nil:
			add(condition(gwapiv1.ListenerConditionProgrammed, false, gwapiv1.ListenerReasonInvalid, "invalid certificateRefs: "+l.certProblem.msg, gen))
		case l.filterProblem != nil:
			add(condition(gwapiv1.ListenerConditionProgrammed, false, gwapiv1.ListenerReasonInvalid, "invalid listener filter: "+l.filterProblem.msg, gen))
		case l.gw.refused != nil:
			add(condition(gwapiv1.ListenerConditionProgrammed, false, gwapiv1.ListenerReasonInvalid, "the Gateway is not accepted", gen))
		default:
			add(condition(gwapiv1.ListenerConditionProgrammed, true, gwapiv1.ListenerReasonProgrammed, "listener is programmed", gen))
		}
	}
	switch {
	case l.certProblem != nil:
		msg := l.certProblem.msg
		if l.kindsProblem != nil {
			msg = joinMessages([]string{msg, l.kindsProblem.msg})
		}
		add(condition(gwapiv1.ListenerConditionResolvedRefs, false, l.certProblem.reason, msg, gen))
	case l.filterProblem != nil:
		msg := l.filterProblem.msg
		if l.kindsProblem != nil {
			msg = joinMessages([]string{msg, l.kindsProblem.msg})
		}
		add(condition(gwapiv1.ListenerConditionResolvedRefs, false, l.filterProblem.reason, msg, gen))
	case l.kindsProblem != nil:
		add(condition(gwapiv1.ListenerConditionResolvedRefs, false, l.kindsProblem.reason, l.kindsProblem.msg, gen))
	default:
		add(condition(gwapiv1.ListenerConditionResolvedRefs, true, gwapiv1.ListenerReasonResolvedRefs, "all references resolved", gen))
	}
	if l.conflict != nil {
		add(condition(gwapiv1.ListenerConditionConflicted, true, l.conflict.reason, l.conflict.msg, gen))
	} else {
		add(condition(gwapiv1.ListenerConditionConflicted, false, gwapiv1.ListenerReasonNoConflicts, "no conflicts", gen))
	}
	if l.overlappingTLS {
		add(condition(gwapiv1.ListenerConditionOverlappingTLSConfig, true, gwapiv1.ListenerReasonOverlappingHostnames,
			"another HTTPS listener on this port has an overlapping hostname; HTTP/2 connection coalescing may send requests to the wrong listener", gen))
	}
	return st
}

// irListener is the IR listener of a programmed listener, without routes.
// A ListenerSet's listener is named after its Gateway and its ListenerSet
// ("<namespace>/<gateway>/<set namespace>/<set name>/<listener>"): listener
// names are unique only within the object that declares them.
func (l *listenerState) irListener() *ir.Listener {
	name := l.gw.nn.Namespace + "/" + l.gw.nn.Name + "/" + l.name
	set := ""
	if l.set != nil {
		set = l.set.nn.String()
		name = l.gw.nn.Namespace + "/" + l.gw.nn.Name + "/" + set + "/" + l.name
	}
	il := &ir.Listener{
		Name:        name,
		ListenerSet: set,
		Protocol:    l.protocol,
		Address:     l.gw.address,
		Port:        l.bindPort,
		GatewayPort: uint32(l.spec.Port),
		Hostname:    l.hostname,
		TLS:         l.tls,
	}
	if l.protocol == ir.ProtocolHTTP || l.protocol == ir.ProtocolHTTPS {
		il.Edge = l.gw.edge.DeepCopy()
		il.ExtAuth = l.extAuth
	}
	return il
}

func ptr[T any](v T) *T { return &v }

// refresh brings irRoutes and irL4 up to date with what routes added and
// took back since the last refresh: the routes in precedence order, with
// the copies of broader routes in the virtual hosts they cover
// (withFallthrough).
func (l *listenerState) refresh() {
	if !l.changed {
		return
	}
	l.changed = false
	l.routes = mergeRoutes(l.routes, l.added)
	l.added = nil
	var routes []*routeEntry
	routes, l.fallCopies = withFallthrough(l.routes, l.fallCopies)
	l.irRoutes = nil
	if len(routes) > 0 {
		l.irRoutes = make([]*ir.HTTPRoute, len(routes))
		for i, e := range routes {
			l.irRoutes[i] = e.route
		}
	}
	l.irL4 = l.l4RoutesOf()
}
