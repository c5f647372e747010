package gatewayapi

// ListenerPolicy (gateway.xds-controller.dev/v1alpha1, ours): how the
// listeners of the Gateways and ListenerSets it targets meet their
// clients. Its attachment, precedence (listener over ListenerSet over
// Gateway, the policy as a whole), conflicts and status.ancestors are
// every policy kind's (policy.go); here are its validation, what it
// renders (ir.Listener Client, and NoAccessLog) and its registration.
// docs/traffic-policy.md is the user's view.
//
// Shared ports. Several IR listeners may become one Envoy listener: the
// listeners of one address and port of a scope (a Gateway's HTTP
// listeners with different hostnames; in standalone mode, Gateways of one
// fleet on one port). What belongs to the Envoy listener cannot differ
// between them: the PROXY protocol listener filter always, and on an
// HTTP port the connection manager's options (client IP, HTTP/1, access
// log), which its HTTP listeners share. When they disagree
// (settleSharedPorts), the port keeps the default for that setting and
// every policy that set it there is Accepted=False reason Conflicted: a
// tenant never changes how another tenant's listener is served. TLS
// parameters are per filter chain (each HTTPS listener has its own), and
// so are an HTTPS listener's connection manager options. HTTP/3 is a UDP
// Envoy listener on the port: the HTTPS listeners of the port must agree
// on it (TLS listeners on the port take no part), and a UDP listener of
// the scope on the same address and port takes the port from it (http3
// Conflicted).
//
// HTTP/3 needs an HTTPS listener: a policy asking for it whose targets
// hold none (an HTTP, TLS or TCP listener named by sectionName, a
// Gateway without HTTPS listeners) is Accepted=False reason Invalid
// (http3Targets); on a Gateway with HTTP and HTTPS listeners it serves
// the HTTPS ones.

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// KindListenerPolicy is the registry name of ListenerPolicy.
var KindListenerPolicy = resources.ListenerPolicyKind.Name()

// listenerPolicyKind registers ListenerPolicy (policy.go): it targets
// Gateways and ListenerSets (and their listeners) and renders their IR
// listeners; the effect of a policy is a *listenerEffect, nil when it
// cannot be honoured (its listeners keep every default).
var listenerPolicyKind = registerPolicyKind(resources.ListenerPolicyKind, policyKindSpec[*v1alpha1.ListenerPolicy]{
	targets: []targetKind{targetGateway, targetListenerSet},
	targetRefs: func(p *v1alpha1.ListenerPolicy) []gwapiv1.LocalPolicyTargetReferenceWithSectionName {
		return p.Spec.TargetRefs
	},
	status: func(p *v1alpha1.ListenerPolicy) *gwapiv1.PolicyStatus { return &p.Status },
	validate: func(t *translator, p *v1alpha1.ListenerPolicy, st *policyState) {
		listenerPolicy(p, st)
		t.http3Targets(p, st)
	},
	listener: applyListenerPolicy,
})

// listenerEffect is what a valid policy renders on a listener: its
// ClientSettings (shared, never modified) and whether it turns the access
// log off.
type listenerEffect struct {
	client ir.ClientSettings
	logOff bool
}

// applyListenerPolicy renders the effective policy of listener l: TLS on
// HTTPS listeners and TLS listeners in mode Terminate; PROXY protocol on
// every TCP-based listener; client IP, HTTP/1 and the access log on HTTP
// and HTTPS listeners; HTTP/3 on HTTPS listeners. A field that does not
// apply to the listener's protocol is left out.
func applyListenerPolicy(st *policyState, _ *listenerState, l *ir.Listener) {
	e, _ := st.effect.(*listenerEffect)
	if e == nil {
		return
	}
	c := ir.ClientSettings{}
	terminates := l.TLS != nil && l.TLS.Mode == ir.TLSTerminate
	if terminates && (l.Protocol == ir.ProtocolHTTPS || l.Protocol == ir.ProtocolTLS) {
		c.TLS = e.client.TLS
	}
	if terminates && l.Protocol == ir.ProtocolHTTPS {
		c.HTTP3 = e.client.HTTP3
	}
	if l.Protocol != ir.ProtocolUDP {
		c.ProxyProtocol = e.client.ProxyProtocol
	}
	if l.Protocol == ir.ProtocolHTTP || l.Protocol == ir.ProtocolHTTPS {
		c.ClientIP, c.HTTP1, c.AccessLog = e.client.ClientIP, e.client.HTTP1, e.client.AccessLog
		l.NoAccessLog = l.NoAccessLog || e.logOff
	}
	if c != (ir.ClientSettings{}) {
		l.Client = &c
	}
}

// tlsVersions are the TLS versions a policy may name, in order.
var tlsVersions = []v1alpha1.TLSVersion{v1alpha1.TLSVersion12, v1alpha1.TLSVersion13}

// tls12CipherSuites are the TLS 1.2 cipher suites Envoy's BoringSSL
// knows by these names (Envoy TlsParameters cipher_suites: its default
// list and the legacy suites it documents); Envoy refuses a listener
// naming another.
var tls12CipherSuites = []string{
	"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
	"ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA",
	"ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA",
	"AES128-GCM-SHA256", "AES256-GCM-SHA384", "AES128-SHA", "AES256-SHA",
}

// alpnProtocols are the ALPN protocols a listener may offer.
var alpnProtocols = []string{"h2", "http/1.1"}

// Bounds of the schema (listenerpolicy_types.go), for standalone files.
const (
	maxTrustedHops    = 16
	maxAccessLogText  = 4096
	maxAccessLogField = 64
)

// listenerPolicy validates one policy (ListenerPolicySpec, with the CRD's
// schema and CEL rules, which standalone mode has no API server to
// apply): a violation is Accepted=False reason Invalid, naming the field,
// and the policy renders nothing.
func listenerPolicy(p *v1alpha1.ListenerPolicy, st *policyState) {
	e, msg := listenerSettings(p)
	if msg != "" {
		st.notAccepted = &problem{string(gwapiv1.PolicyReasonInvalid), msg}
		return
	}
	st.effect = e
}

// listenerSettings reads p's spec into its effect, or says why it is not
// valid.
func listenerSettings(p *v1alpha1.ListenerPolicy) (*listenerEffect, string) {
	spec := p.Spec
	if msg := checkTargetRefs(spec.TargetRefs); msg != "" {
		return nil, msg
	}
	e := &listenerEffect{}
	if t := spec.TLS; t != nil {
		ct, msg := clientTLS(t)
		if msg != "" {
			return nil, "tls." + msg
		}
		e.client.TLS = ct
	}
	if pp := spec.ProxyProtocol; pp != nil {
		e.client.ProxyProtocol = &ir.ProxyProtocol{Optional: pp.Optional}
	}
	if c := spec.ClientIP; c != nil {
		d, msg := clientIP(c)
		if msg != "" {
			return nil, "clientIP" + msg
		}
		e.client.ClientIP = d
	}
	if h := spec.HTTP1; h != nil {
		o := &ir.HTTP1Options{AcceptHTTP10: h.AcceptHTTP10}
		if h.DefaultHostForHTTP10 != nil {
			host := string(*h.DefaultHostForHTTP10)
			if !h.AcceptHTTP10 {
				return nil, "http1.defaultHostForHTTP10 needs acceptHTTP10"
			}
			if msg := checkHostname(host); msg != "" || strings.HasPrefix(host, "*") {
				return nil, "http1.defaultHostForHTTP10 " + q(host) + " is not a host name (lower-case RFC 1123 labels, no wildcard)"
			}
			o.DefaultHost = host
		}
		e.client.HTTP1 = o
	}
	if a := spec.AccessLog; a != nil {
		n := 0
		if a.Disabled {
			e.logOff, n = true, n+1
		}
		if a.Text != nil {
			n++
			text := *a.Text
			if len(text) == 0 || len(text) > maxAccessLogText {
				return nil, fmt.Sprintf("accessLog.text: %d bytes; 1 to %d are allowed", len(text), maxAccessLogText)
			}
			if msg := ValidateAccessLogFormat(text); msg != "" {
				return nil, "accessLog.text: " + msg
			}
			if !strings.HasSuffix(text, "\n") {
				text += "\n"
			}
			e.client.AccessLog = &ir.AccessLogFormat{Text: text}
		}
		if a.JSON != nil {
			n++
			if k := len(a.JSON); k < 1 || k > maxAccessLogField {
				return nil, fmt.Sprintf("accessLog.json: %d fields; 1 to %d are allowed", k, maxAccessLogField)
			}
			f := &ir.AccessLogFormat{}
			for _, name := range sortedKeys(a.JSON) {
				if name == "" {
					return nil, "accessLog.json: a field has an empty name"
				}
				if msg := ValidateAccessLogFormat(a.JSON[name]); msg != "" {
					return nil, fmt.Sprintf("accessLog.json[%s]: %s", q(name), msg)
				}
				f.JSON = append(f.JSON, ir.AccessLogField{Name: name, Format: a.JSON[name]})
			}
			e.client.AccessLog = f
		}
		if n > 1 {
			return nil, "accessLog: at most one of disabled, text and json"
		}
	}
	if spec.HTTP3 != nil {
		if t := e.client.TLS; t != nil && t.MaxVersion == ir.TLS12 {
			return nil, "http3: QUIC is TLS 1.3, which tls.maxVersion 1.2 refuses"
		}
		e.client.HTTP3 = &ir.HTTP3{}
	}
	if e.client == (ir.ClientSettings{}) && !e.logOff && spec.AccessLog == nil {
		return nil, "at least one of tls, proxyProtocol, clientIP, http1, accessLog and http3 is required"
	}
	return e, ""
}

// clientTLS validates spec.tls (the message after "tls.").
func clientTLS(t *v1alpha1.ListenerTLSSettings) (*ir.ClientTLS, string) {
	out := &ir.ClientTLS{}
	for _, v := range []struct {
		name string
		v    *v1alpha1.TLSVersion
		to   *ir.TLSVersion
	}{{"minVersion", t.MinVersion, &out.MinVersion}, {"maxVersion", t.MaxVersion, &out.MaxVersion}} {
		if v.v == nil {
			continue
		}
		if !slices.Contains(tlsVersions, *v.v) {
			return nil, fmt.Sprintf("%s %s is not a TLS version of 1.2 and 1.3", v.name, q(string(*v.v)))
		}
		*v.to = ir.TLSVersion(*v.v)
	}
	if out.MinVersion != "" && out.MaxVersion != "" && out.MinVersion > out.MaxVersion {
		return nil, "minVersion must not be above maxVersion"
	}
	if t.CipherSuites != nil {
		if n := len(t.CipherSuites); n < 1 || n > maxItems16 {
			return nil, fmt.Sprintf("cipherSuites: %d entries; 1 to %d are required", n, maxItems16)
		}
		if out.MinVersion == ir.TLS13 {
			return nil, "cipherSuites apply to TLS 1.2, which minVersion 1.3 refuses"
		}
		for i, c := range t.CipherSuites {
			if !slices.Contains(tls12CipherSuites, c) {
				return nil, fmt.Sprintf("cipherSuites[%d] %s is not a TLS 1.2 cipher suite Envoy knows (%s)", i, q(c), strings.Join(tls12CipherSuites, ", "))
			}
			if slices.Contains(t.CipherSuites[:i], c) {
				return nil, fmt.Sprintf("cipherSuites[%d] %s is listed twice", i, q(c))
			}
		}
		out.CipherSuites = slices.Clone(t.CipherSuites)
	}
	if t.ALPNProtocols != nil {
		if n := len(t.ALPNProtocols); n < 1 || n > len(alpnProtocols) {
			return nil, fmt.Sprintf("alpnProtocols: %d entries; 1 to %d are required", n, len(alpnProtocols))
		}
		for i, a := range t.ALPNProtocols {
			if !slices.Contains(alpnProtocols, a) {
				return nil, fmt.Sprintf("alpnProtocols[%d] %s is not h2 or http/1.1", i, q(a))
			}
			if slices.Contains(t.ALPNProtocols[:i], a) {
				return nil, fmt.Sprintf("alpnProtocols[%d] %s is listed twice", i, q(a))
			}
		}
		out.ALPN = slices.Clone(t.ALPNProtocols)
	}
	return out, ""
}

// clientIP validates spec.clientIP (the message after "clientIP").
func clientIP(c *v1alpha1.ClientIPSettings) (*ir.ClientIPDetection, string) {
	if (c.XFFNumTrustedHops == nil) == (c.CustomHeader == nil) {
		return nil, ": exactly one of xffNumTrustedHops and customHeader is required"
	}
	if h := c.XFFNumTrustedHops; h != nil {
		if *h < 0 || *h > maxTrustedHops {
			return nil, fmt.Sprintf(".xffNumTrustedHops %d is not in 0-%d", *h, maxTrustedHops)
		}
		return &ir.ClientIPDetection{XFFNumTrustedHops: uint32(*h)}, ""
	}
	name := string(*c.CustomHeader)
	if msg := checkHeaderName(name); msg != "" {
		return nil, ".customHeader " + msg
	}
	if strings.EqualFold(name, "x-forwarded-for") {
		return nil, ".customHeader X-Forwarded-For holds a list of addresses: use xffNumTrustedHops"
	}
	return &ir.ClientIPDetection{CustomHeader: strings.ToLower(name)}, ""
}

// builtListener is an IR listener of the translation and the listener it
// was made from (result: settleSharedPorts).
type builtListener struct {
	scope string
	ls    *listenerState
	il    *ir.Listener
}

// sharedPort is one Envoy listener of a scope: an address and port
// (ports are TCP unless udp).
type sharedPort struct {
	scope, address string
	port           uint32
	udp            bool
}

// clientField is a setting of ir.ClientSettings that belongs to the Envoy
// listener (or an HTTP port's shared connection manager): its name in the
// spec, whether it does on a port of protocol p, and its value on l.
type clientField struct {
	name   string
	shared func(p ir.Protocol) bool
	get    func(l *ir.Listener) any
	clear  func(l *ir.Listener)
	// member, when set, says which listeners of the port take part (the
	// others neither decide nor lose the setting).
	member func(l *ir.Listener) bool
}

// httpPort says whether listeners of protocol p share one connection
// manager on their port.
func httpPort(p ir.Protocol) bool { return p == ir.ProtocolHTTP }

// portFields are the settings listeners sharing an Envoy listener must
// agree on (see the package comment above).
var portFields = []clientField{
	{"proxyProtocol", func(ir.Protocol) bool { return true },
		func(l *ir.Listener) any { return clientOf(l).ProxyProtocol },
		func(l *ir.Listener) { clientOf(l).ProxyProtocol = nil }, nil},
	{"clientIP", httpPort,
		func(l *ir.Listener) any { return clientOf(l).ClientIP },
		func(l *ir.Listener) { clientOf(l).ClientIP = nil }, nil},
	{"http1", httpPort,
		func(l *ir.Listener) any { return clientOf(l).HTTP1 },
		func(l *ir.Listener) { clientOf(l).HTTP1 = nil }, nil},
	{"accessLog", httpPort,
		func(l *ir.Listener) any {
			return struct {
				off bool
				f   *ir.AccessLogFormat
			}{l.NoAccessLog, clientOf(l).AccessLog}
		},
		func(l *ir.Listener) { clientOf(l).AccessLog, l.NoAccessLog = nil, false }, nil},
	{"http3", func(ir.Protocol) bool { return true },
		func(l *ir.Listener) any { return clientOf(l).HTTP3 },
		func(l *ir.Listener) { clientOf(l).HTTP3 = nil },
		func(l *ir.Listener) bool { return l.Protocol == ir.ProtocolHTTPS }},
}

// clientOf is l's ClientSettings, a zero value (a copy, so never stored)
// when it has none.
func clientOf(l *ir.Listener) *ir.ClientSettings {
	if l.Client == nil {
		return &ir.ClientSettings{}
	}
	return l.Client
}

// settleSharedPorts finds the listeners of built that share an Envoy
// listener and disagree on a setting of portFields: the setting is
// cleared on all of them (the port keeps the default: for the access log,
// Envoy's format, on), and the ListenerPolicy that set it on each of them
// is Accepted=False reason Conflicted. HTTP/3 on a port whose UDP side a
// UDP listener of the scope binds is cleared the same way. The outcome
// depends on the Gateways and policies alone, so an incremental
// translation, which calls it again with the same translator, gets the
// same.
func (t *translator) settleSharedPorts(built []builtListener) {
	ports := map[sharedPort][]builtListener{}
	var order []sharedPort
	for _, b := range built {
		k := sharedPort{b.scope, b.il.Address, b.il.Port, b.il.Protocol == ir.ProtocolUDP}
		if _, ok := ports[k]; !ok {
			order = append(order, k)
		}
		ports[k] = append(ports[k], b)
	}
	for _, k := range order {
		all := ports[k]
		for _, f := range portFields {
			if !f.shared(all[0].il.Protocol) {
				continue
			}
			group := all
			if f.member != nil {
				group = slices.DeleteFunc(slices.Clone(all), func(b builtListener) bool { return !f.member(b.il) })
			}
			if len(group) < 2 {
				continue
			}
			first := f.get(group[0].il)
			if !slices.ContainsFunc(group[1:], func(b builtListener) bool { return !reflect.DeepEqual(f.get(b.il), first) }) {
				continue
			}
			var who []string
			for _, b := range group {
				who = append(who, b.ls.owner()+" listener "+b.ls.name)
			}
			t.clearPortField(f, group, fmt.Sprintf("%s: %s share one Envoy listener (address %s, port %d) and differ on it; the port keeps the default",
				f.name, strings.Join(who, ", "), k.address, group[0].il.GatewayPort))
		}
		if k.udp {
			continue
		}
		// A UDP listener on the port holds its UDP side: no QUIC there.
		if udp := ports[sharedPort{k.scope, k.address, k.port, true}]; len(udp) > 0 {
			f := portFields[slices.IndexFunc(portFields, func(f clientField) bool { return f.name == "http3" })]
			t.clearPortField(f, all, fmt.Sprintf("http3: %s listener %s (UDP) binds the UDP side of port %d (address %s); HTTP/3 is not served there",
				udp[0].ls.owner(), udp[0].ls.name, all[0].il.GatewayPort, k.address))
		}
	}
}

// clearPortField clears f on the listeners of group that set it, and
// marks the ListenerPolicy that set it on each Accepted=False reason
// Conflicted with msg (unless it is not accepted already).
func (t *translator) clearPortField(f clientField, group []builtListener, msg string) {
	zero := f.get(&ir.Listener{})
	for _, b := range group {
		if reflect.DeepEqual(f.get(b.il), zero) {
			continue // the default here: nothing to clear
		}
		st := t.effectivePolicy(listenerPolicyKind, listenerTargets(make([]policyTarget, 0, 3), b.ls))
		if st != nil && st.effect != nil && st.notAccepted == nil {
			st.notAccepted = &problem{string(gwapiv1.PolicyReasonConflicted), msg}
		}
		f.clear(b.il)
		if b.il.Client != nil && *b.il.Client == (ir.ClientSettings{}) {
			b.il.Client = nil
		}
	}
}

// http3Targets marks p, valid and asking for HTTP/3, Accepted=False
// reason Invalid when the listeners it targets (a listener by
// sectionName, every listener of a Gateway or ListenerSet, a Gateway's
// ListenerSets' included) hold no HTTPS listener: HTTP/3 would reach
// none. Targets that do not exist are left to the ancestors (no status).
func (t *translator) http3Targets(p *v1alpha1.ListenerPolicy, st *policyState) {
	e, _ := st.effect.(*listenerEffect)
	if e == nil || e.client.HTTP3 == nil {
		return
	}
	var others []string
	for _, ref := range p.Spec.TargetRefs {
		var listeners []*listenerState
		switch (targetKind{string(ref.Group), string(ref.Kind)}) {
		case targetGateway:
			if gw := t.gatewayIndex[nn(p.Namespace, string(ref.Name))]; gw != nil {
				listeners = gw.allListeners()
			}
		case targetListenerSet:
			if s := t.listenerSetIndex[nn(p.Namespace, string(ref.Name))]; s != nil {
				listeners = s.listeners
			}
		}
		for _, l := range listeners {
			if ref.SectionName != nil && l.name != string(*ref.SectionName) {
				continue
			}
			if l.protocol == ir.ProtocolHTTPS {
				return
			}
			others = append(others, fmt.Sprintf("%s listener %s (%s)", l.owner(), l.name, l.protocol))
		}
	}
	if len(others) == 0 {
		return
	}
	st.effect = nil
	st.notAccepted = &problem{string(gwapiv1.PolicyReasonInvalid), "http3 serves HTTPS listeners only (QUIC terminates TLS); the policy targets none: " + strings.Join(others, ", ")}
}
