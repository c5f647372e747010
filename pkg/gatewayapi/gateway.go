package gatewayapi

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// defaultAddress is the address Envoy binds when a Gateway requests none.
const defaultAddress = "0.0.0.0"

// gatewayState is one Gateway of ours during translation.
type gatewayState struct {
	obj   *gwapiv1.Gateway
	nn    types.NamespacedName
	scope string
	// address is the IP address every listener binds: spec.addresses in
	// standalone mode, the wildcard when Options.AddressesOnService.
	address string
	// refused, when set, is why the Gateway is not accepted
	// (Accepted=False with this reason).
	refused   *problem
	listeners []*listenerState
	// sets are the ListenerSets the Gateway admits, in the merged list's
	// order (listenersets.go); their listeners follow the Gateway's own.
	sets []*listenerSetState
	// namedBy counts the ListenerSets whose parentRef names the Gateway,
	// admitted or not: a Gateway that allows none and is named by none
	// reports no attachedListenerSets.
	namedBy int
	// insecureFrontend: a listener validates client certificates in mode
	// AllowInsecureFallback (condition InsecureFrontendValidationMode).
	insecureFrontend bool
	// backendCert is spec.tls.backend clientCertificateRef resolved, nil
	// when the Gateway has none (backendcert.go).
	backendCert *backendClientCert
	// routeStats: the HTTP routes on its listeners get a StatName
	// (Options.RouteStats).
	routeStats bool
	// edge: the limits of its HTTP and HTTPS listeners (Options.Edge).
	edge *ir.HTTPEdge
}

func (g *gatewayState) accepted() bool {
	if g.refused != nil {
		return false
	}
	// A Gateway whose listeners are all not accepted has no listener left
	// to serve (Gateway spec.listeners, "Handling indistinct Listeners").
	// The listeners of its ListenerSets count: a Gateway may have none of
	// its own. (Without allListeners' copy: a route's attachment asks
	// this of its parent, 40,000 times over 2,500 ListenerSets.)
	if slices.ContainsFunc(g.listeners, (*listenerState).accepted) {
		return true
	}
	for _, s := range g.sets {
		if slices.ContainsFunc(s.listeners, (*listenerState).accepted) {
			return true
		}
	}
	return false
}

// translateGateways reads every Gateway whose spec.gatewayClassName names
// one of our classes: its addresses, its listeners, the conflicts among
// them, and the ports it shares with older Gateways of the same scope.
func (t *translator) translateGateways() {
	for _, gw := range t.res.Gateways {
		if gw == nil {
			continue
		}
		if _, ok := t.classes[string(gw.Spec.GatewayClassName)]; !ok {
			continue
		}
		if t.gatewayIndex[nn(gw.Namespace, gw.Name)] != nil {
			continue // a duplicate object: the first one wins
		}
		gs := &gatewayState{obj: gw, nn: nn(gw.Namespace, gw.Name), scope: t.scope(gw),
			routeStats: t.opts.RouteStats != nil && t.opts.RouteStats(gw), edge: t.opts.EdgeOf(gw)}
		gs.address, gs.refused = gatewayAddress(gw.Spec.Addresses, t.opts.AddressesOnService)
		if p := gatewaySpecProblem(gw); p != nil {
			gs.refused = p
		}
		if gs.refused == nil {
			gs.refused = t.opts.InvalidParameters.gateway(gs.nn)
		}
		for i := range gw.Spec.Listeners {
			gs.listeners = append(gs.listeners, t.newListener(gs, nil, &gw.Spec.Listeners[i]))
		}
		t.readBackendClientCertificate(gs)
		markDuplicateNames(gs.listeners)
		detectConflicts(gs.listeners)
		t.gateways = append(t.gateways, gs)
		t.gatewayIndex[gs.nn] = gs
	}
	// The snapshot is sorted already; sorting again keeps the IR valid
	// (Gateways sorted by namespace/name) for callers that forgot.
	slices.SortStableFunc(t.gateways, func(a, b *gatewayState) int {
		return cmp.Or(cmp.Compare(a.nn.Namespace, b.nn.Namespace), cmp.Compare(a.nn.Name, b.nn.Name))
	})
	t.translateListenerSets()
	t.claimPorts()
}

// scope is the proxy scope that serves gw (Options.ScopeOf).
func (t *translator) scope(gw *gwapiv1.Gateway) string { return t.opts.ScopeOf(gw) }

// bindPort is the port Envoy binds for a listener port (Options.BindPortOf).
func (t *translator) bindPort(gw *gwapiv1.Gateway, port gwapiv1.PortNumber) uint32 {
	return t.opts.BindPortOf(gw, port)
}

// gatewayAddress reads spec.addresses (Gateway API GatewaySpec.Addresses)
// and returns the IP address every listener binds, with the problem that
// refuses the Gateway, if any.
//
// Only the type IPAddress (the default type) is supported. Its values
// (requestedIPs) are the addresses the Gateway asks for:
//   - onService (Options.AddressesOnService, Kubernetes): they are asked of
//     the Gateway's Service (infra.Renderer) and Envoy binds the wildcard
//     0.0.0.0 in its pods, so any number of them is accepted;
//   - otherwise (standalone mode) Envoy binds the address itself, and it
//     binds one: a second address is refused with Accepted=False reason
//     UnsupportedAddress.
//
// Without an address listeners bind 0.0.0.0. An empty IPAddress value asks
// the implementation to pick one: the Service's load balancer picks (no
// request), standalone binds 0.0.0.0. Other types (Hostname: a Service
// cannot ask its load balancer for a hostname; NamedAddress;
// domain-prefixed types) are refused with reason UnsupportedAddress; an
// IPAddress value or a routability that does not parse (the CRD's
// validation normally catches them: routabilityProblem) is refused with
// reason Invalid. Standalone mode, which has no Service, refuses a
// routability other than the default (Cluster, another scope) with reason
// UnsupportedAddress (routability.go).
func gatewayAddress(addrs []gwapiv1.GatewaySpecAddress, onService bool) (string, *problem) {
	ips, p := requestedIPs(addrs)
	switch {
	case p != nil:
		return "", p
	case !onService && slices.ContainsFunc(addrs, func(a gwapiv1.GatewaySpecAddress) bool {
		return !(AddressRequest{Routability: a.Routability}).Default()
	}):
		return "", &problem{string(gwapiv1.GatewayReasonUnsupportedAddress),
			"standalone mode binds its address itself and has no Service: only addresses of the default routability can be had (not Cluster or another scope)"}
	case onService || len(ips) == 0:
		return defaultAddress, nil
	case len(ips) == 1:
		return ips[0], nil
	default:
		return "", &problem{string(gwapiv1.GatewayReasonUnsupportedAddress),
			fmt.Sprintf("standalone mode binds one IP address per Gateway; %d were requested (%s)", len(ips), strings.Join(ips, ", "))}
	}
}

// requestedIPs are the IPAddress values of spec.addresses in their
// canonical form (netip.Addr.String), in the order given, without
// duplicates and without empty values; the wildcards 0.0.0.0 and :: are
// kept (standalone binds them; RequestedIPs drops them). The problem is
// the first unsupported type or unparsable value (see gatewayAddress).
func requestedIPs(addrs []gwapiv1.GatewaySpecAddress) ([]string, *problem) {
	var ips []string
	for i, a := range addrs {
		typ := deref(a.Type, gwapiv1.IPAddressType)
		switch typ {
		case gwapiv1.IPAddressType:
		case gwapiv1.HostnameAddressType:
			return nil, &problem{string(gwapiv1.GatewayReasonUnsupportedAddress),
				fmt.Sprintf("address %q of type Hostname is not supported: a Gateway's address is an IP address (its Service's, which cannot request a hostname from a load balancer, or in standalone mode the one Envoy binds); use type IPAddress", a.Value)}
		default:
			return nil, &problem{string(gwapiv1.GatewayReasonUnsupportedAddress),
				fmt.Sprintf("address type %q is not supported; only IPAddress is", typ)}
		}
		if m := routabilityProblem(a.Routability); m != "" {
			return nil, &problem{string(gwapiv1.GatewayReasonInvalid), fmt.Sprintf("spec.addresses[%d]: %s", i, m)}
		}
		if a.Value == "" {
			continue
		}
		ip, err := netip.ParseAddr(a.Value)
		if err != nil || ip.Zone() != "" {
			return nil, &problem{string(gwapiv1.GatewayReasonInvalid),
				fmt.Sprintf("address %q is not an IP address", a.Value)}
		}
		if s := ip.String(); !slices.Contains(ips, s) {
			ips = append(ips, s)
		}
	}
	return ips, nil
}

// RequestedIPs are the IP addresses gw requests in spec.addresses (type
// IPAddress) of the default routability (empty, or the conformance
// sentinel: a Cluster address is the Service's cluster IP, never asked of a
// load balancer), canonical (netip.Addr.String), in the order given, without
// duplicates: what infra.Renderer asks of the Gateway's Service and what
// pkg/status checks the Service got. It is nil when gw requests none (no
// address, only empty values) or when its spec.addresses are refused (a
// type other than IPAddress, an unparsable value; the translator reports
// those on the Gateway's Accepted condition). The unspecified addresses
// 0.0.0.0 and :: are left out: a Service cannot be given them.
func RequestedIPs(gw *gwapiv1.Gateway) []string {
	var ips []string
	for _, r := range AddressRequests(gw) {
		if r.Default() && r.Value != "" && !slices.Contains(ips, r.Value) {
			ips = append(ips, r.Value)
		}
	}
	if len(ips) == 0 {
		return nil
	}
	return ips
}

// claimPorts gives every address and port of a scope to the oldest Gateway
// (the earlier creationTimestamp; on a tie, which includes two Gateways
// without one, the first by namespace/name) whose listener binds it: a
// listener of a younger Gateway that would bind a port already taken gets
// Accepted=False reason PortUnavailable. A wildcard address (0.0.0.0, ::)
// overlaps every address of the same family, as it does for the kernel.
// Listeners that are not programmed for other reasons claim nothing.
func (t *translator) claimPorts() {
	order := slices.Clone(t.gateways)
	slices.SortStableFunc(order, func(a, b *gatewayState) int {
		return cmp.Or(compareTime(a.obj.CreationTimestamp, b.obj.CreationTimestamp),
			cmp.Compare(a.nn.Namespace, b.nn.Namespace), cmp.Compare(a.nn.Name, b.nn.Name))
	})
	type claim struct {
		addr  netip.Addr
		owner *gatewayState
	}
	claims := map[string][]claim{} // scope + port -> claims
	for _, gs := range order {
		if gs.refused != nil {
			continue
		}
		addr, _ := netip.ParseAddr(gs.address)
		var mine []string
		for _, l := range gs.allListeners() {
			if !l.programmable() {
				continue
			}
			key := fmt.Sprintf("%s\x00%d\x00%v", gs.scope, l.bindPort, l.protocol == "UDP")
			for _, c := range claims[key] {
				if c.owner != gs && addrOverlap(c.addr, addr) {
					why := "which sorts first by namespace/name"
					if compareTime(c.owner.obj.CreationTimestamp, gs.obj.CreationTimestamp) < 0 {
						why = "which was created earlier"
					}
					l.notAccepted = &problem{string(gwapiv1.ListenerReasonPortUnavailable),
						fmt.Sprintf("port %d on %s is already bound by Gateway %s, %s", l.bindPort, gs.address, c.owner.nn, why)}
					break
				}
			}
			if l.notAccepted == nil {
				mine = append(mine, key)
			}
		}
		for _, key := range mine {
			claims[key] = append(claims[key], claim{addr: addr, owner: gs})
		}
	}
}

func addrOverlap(a, b netip.Addr) bool {
	if a == b {
		return true
	}
	if a.Is4() != b.Is4() {
		return false
	}
	return a.IsUnspecified() || b.IsUnspecified()
}

func compareTime(a, b metav1.Time) int {
	return a.Time.Compare(b.Time)
}

// buildStatus renders the Gateway's status: conditions Accepted and
// Programmed, one entry per spec listener (never the listeners of its
// ListenerSets, which their own status reports), and attachedListenerSets,
// the number of its ListenerSets that are accepted (set when the Gateway
// has spec.allowedListeners or a ListenerSet names it).
//
// ResolvedRefs is set for a Gateway with a backend clientCertificateRef
// that is not refused (resolvedRefs).
//
// Accepted: False with the refusal reason (addresses); False reason
// ListenersNotValid when no listener is accepted; True reason
// ListenersNotValid when some listener is not accepted or not programmed;
// else True reason Accepted. Programmed: True when accepted with at least
// one programmed listener (a later issue gates it on Envoy ACKs), else
// False reason Invalid.
func (g *gatewayState) buildStatus() *gwapiv1.GatewayStatus {
	gen := g.obj.Generation
	st := &gwapiv1.GatewayStatus{}
	var bad, programmed []string
	for _, l := range g.listeners {
		if l.duplicate {
			continue
		}
		if l.programmed() {
			programmed = append(programmed, l.name)
		} else {
			bad = append(bad, l.name)
		}
	}
	// The Gateway serves its ListenerSets' listeners too: they count for
	// Programmed (a Gateway may have no listener of its own), never as
	// "not valid" listeners of the Gateway.
	for _, s := range g.sets {
		for _, l := range s.listeners {
			if l.programmed() {
				programmed = append(programmed, s.nn.String()+"/"+l.name)
			}
		}
	}
	switch {
	case g.refused != nil:
		setCondition(&st.Conditions, condition(gwapiv1.GatewayConditionAccepted, false, g.refused.reason, g.refused.msg, gen))
		setCondition(&st.Conditions, condition(gwapiv1.GatewayConditionProgrammed, false, gwapiv1.GatewayReasonInvalid, "the Gateway is not accepted", gen))
	case !g.accepted():
		msg := "no listener is accepted"
		if len(g.listeners) == 0 {
			msg = "the Gateway has no listeners"
		}
		setCondition(&st.Conditions, condition(gwapiv1.GatewayConditionAccepted, false, gwapiv1.GatewayReasonListenersNotValid, msg, gen))
		setCondition(&st.Conditions, condition(gwapiv1.GatewayConditionProgrammed, false, gwapiv1.GatewayReasonInvalid, msg, gen))
	default:
		if len(bad) > 0 {
			setCondition(&st.Conditions, condition(gwapiv1.GatewayConditionAccepted, true, gwapiv1.GatewayReasonListenersNotValid,
				"listeners not valid: "+strings.Join(bad, ", ")+"; see the listener conditions", gen))
		} else {
			setCondition(&st.Conditions, condition(gwapiv1.GatewayConditionAccepted, true, gwapiv1.GatewayReasonAccepted, "Gateway is accepted", gen))
		}
		if len(programmed) > 0 {
			setCondition(&st.Conditions, condition(gwapiv1.GatewayConditionProgrammed, true, gwapiv1.GatewayReasonProgrammed,
				"listeners programmed: "+strings.Join(programmed, ", "), gen))
		} else {
			setCondition(&st.Conditions, condition(gwapiv1.GatewayConditionProgrammed, false, gwapiv1.GatewayReasonInvalid, "no listener can be programmed", gen))
		}
	}
	if c := g.resolvedRefs(); c != nil && g.refused == nil {
		setCondition(&st.Conditions, *c)
	}
	if g.insecureFrontend {
		setCondition(&st.Conditions, condition(gwapiv1.GatewayConditionInsecureFrontendValidationMode, true, gwapiv1.GatewayReasonConfigurationChanged,
			"a listener lets clients without a valid certificate in (tls.frontend validation mode AllowInsecureFallback)", gen))
	}
	if scope := defaultScope(g.obj); scope != "" && g.refused == nil {
		setCondition(&st.Conditions, condition(GatewayConditionDefaultGateway, true, GatewayReasonDefaultGateway,
			"Gateway has default scope "+string(scope)+": it claims the routes whose spec.useDefaultGateways is "+string(scope), gen))
	}
	for _, l := range g.listeners {
		if !l.duplicate {
			st.Listeners = append(st.Listeners, l.buildStatus())
		}
	}
	if g.obj.Spec.AllowedListeners != nil || g.namedBy > 0 {
		attached := int32(0)
		for _, s := range g.sets {
			if s.accepted() {
				attached++
			}
		}
		st.AttachedListenerSets = &attached
	}
	return st
}

// gatewaySpecProblem checks the Gateway spec rules that the CRD schema
// enforces in a cluster (gateway_types.go: listener name, hostname, port
// and protocol patterns and ranges; the CEL rules of spec.listeners and
// ListenerTLSConfig). A Gateway that breaks them would not pass the API
// server; here it is not accepted: Accepted=False reason Invalid, with
// every problem in the message.
func gatewaySpecProblem(gw *gwapiv1.Gateway) *problem {
	msgs := listenersSpecProblems(gw.Spec.Listeners, "Gateway")
	if m := defaultScopeProblem(gw.Spec.DefaultScope); m != "" {
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		return nil
	}
	return &problem{string(gwapiv1.GatewayReasonInvalid), "invalid spec: " + strings.Join(msgs, "; ")}
}

// listenersSpecProblems checks the schema rules of the spec.listeners of a
// Gateway or (owner "ListenerSet") of a ListenerSet, whose ListenerEntry
// rules are the same (listenerset_types.go): at most 64 listeners, each
// name, hostname, port and protocol valid, names unique, port, protocol
// and hostname unique, and the CEL rules on tls. It returns one message
// per problem.
func listenersSpecProblems(ls []gwapiv1.Listener, owner string) []string {
	var msgs []string
	add := func(format string, a ...any) { msgs = append(msgs, fmt.Sprintf(format, a...)) }
	if len(ls) > maxGatewayListeners {
		add("spec.listeners has %d listeners; at most %d are allowed", len(ls), maxGatewayListeners)
	}
	names := map[gwapiv1.SectionName]int{}
	type combo struct {
		port     gwapiv1.PortNumber
		protocol gwapiv1.ProtocolType
		hostname string
		set      bool
	}
	combos := map[combo]string{}
	for i := range ls {
		l := &ls[i]
		at := fmt.Sprintf("spec.listeners[%d] (%s)", i, q(string(l.Name)))
		if p := checkSectionName(string(l.Name)); p != "" {
			add("%s: name %s", at, p)
		}
		if prev, ok := names[l.Name]; ok {
			add("%s: listener name %s is already used by spec.listeners[%d]; listener names must be unique within the %s", at, q(string(l.Name)), prev, owner)
		} else {
			names[l.Name] = i
		}
		if l.Hostname != nil {
			if p := checkHostname(string(*l.Hostname)); p != "" {
				add("%s: hostname %s %s", at, q(string(*l.Hostname)), p)
			}
		}
		if l.Port < 1 || l.Port > 65535 {
			add("%s: port %d is outside 1-65535", at, l.Port)
		}
		if len(l.Protocol) == 0 || len(l.Protocol) > maxProtocolLen || !protocolRE.MatchString(string(l.Protocol)) {
			add("%s: protocol %s is not a valid protocol name", at, q(string(l.Protocol)))
		}
		switch l.Protocol {
		case gwapiv1.HTTPProtocolType, gwapiv1.TCPProtocolType, gwapiv1.UDPProtocolType:
			if l.TLS != nil {
				add("%s: tls must not be specified for protocol %s", at, l.Protocol)
			}
		case gwapiv1.HTTPSProtocolType:
			if l.TLS != nil && deref(l.TLS.Mode, "") != "" && *l.TLS.Mode != gwapiv1.TLSModeTerminate {
				add("%s: tls mode must be Terminate for protocol HTTPS", at)
			}
		case gwapiv1.TLSProtocolType:
			if l.TLS == nil || deref(l.TLS.Mode, "") == "" {
				add("%s: tls mode must be set for protocol TLS", at)
			}
		}
		if (l.Protocol == gwapiv1.TCPProtocolType || l.Protocol == gwapiv1.UDPProtocolType) && deref(l.Hostname, "") != "" {
			add("%s: hostname must not be specified for protocol %s", at, l.Protocol)
		}
		if t := l.TLS; t != nil {
			mode := deref(t.Mode, gwapiv1.TLSModeTerminate)
			if mode != gwapiv1.TLSModeTerminate && mode != gwapiv1.TLSModePassthrough {
				add("%s: tls mode %s is not Terminate or Passthrough", at, q(string(mode)))
			}
			if mode == gwapiv1.TLSModeTerminate && len(t.CertificateRefs) == 0 && len(t.Options) == 0 {
				add("%s: tls certificateRefs or options must be specified when mode is Terminate", at)
			}
		}
		c := combo{port: l.Port, protocol: l.Protocol, set: l.Hostname != nil}
		if l.Hostname != nil {
			c.hostname = string(*l.Hostname)
		}
		if prev, ok := combos[c]; ok {
			add("%s: port, protocol and hostname are the same as those of %s; the combination must be unique for each listener", at, prev)
		} else {
			combos[c] = at
		}
	}
	return msgs
}
