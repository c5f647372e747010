package gatewayapi

// XBackend (gateway.networking.x-k8s.io/v1alpha1, experimental channel of
// v1.7.0) as the target of a backendRef of any route kind: resolveBackend
// (backends.go) resolves a reference to one here, with the ReferenceGrant
// rule of Services. Two types:
//   - ExternalHostname: the backend's one endpoint is the host name, which
//     Envoy resolves by DNS (a host-name endpoint makes a STRICT_DNS
//     cluster, pkg/xdstranslator cluster);
//   - EndpointSelector: the ready Pods of the XBackend's namespace whose
//     labels the selector matches, at spec.port.
//
// spec.tls makes Envoy originate TLS (ir.BackendTLS, as a BackendTLSPolicy
// does: backendTLSValidation), with the XBackend's client certificate in
// mode ClientAndServer; spec.protocol picks the upstream protocol as a
// Service port's appProtocol does; spec.sessionPersistence is the
// backend's, as an XBackendTrafficPolicy's is (ruleSession: the rule's
// when the rule has none and its backends agree).

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// XBackendGroup is the API group of XBackend.
const XBackendGroup = gwapixv1alpha1.GroupName

// xbackend returns the XBackend k, recorded as read (recordRead): a
// change to it, or to a Pod it may select, translates its reader again
// (Cache).
func (t *translator) xbackend(k types.NamespacedName) *gwapixv1alpha1.XBackend {
	t.recordRead(depKey{resources.XBackendKind.Name(), k})
	return t.xbackends[k]
}

// xbackendBackend resolves XBackend ns/name, referenced by a backendRef of
// route r with port (0: none), to a backend named "xbackend/<ns>/<name>"
// that carries the XBackend's endpoints, protocol and TLS. It fails with
// BackendNotFound when the XBackend does not exist, is not valid
// (checkXBackend), or the backendRef names another port than spec.port.
func (t *translator) xbackendBackend(ns, name string, port int32, transport corev1.Protocol) (*ir.Backend, *problem) {
	full := ns + "/" + name
	xb := t.xbackend(nn(ns, name))
	if xb == nil {
		return nil, &problem{string(gwapiv1.RouteReasonBackendNotFound), fmt.Sprintf("XBackend %s not found", full)}
	}
	spec := &xb.Spec
	if port != 0 && port != int32(spec.Port.Number) {
		return nil, &problem{string(gwapiv1.RouteReasonBackendNotFound),
			fmt.Sprintf("XBackend %s: backendRef port %d is not its spec.port.number %d (leave the port out)", full, port, spec.Port.Number)}
	}
	b := &ir.Backend{Name: "xbackend/" + full}
	if msg := t.checkXBackend(xb, b); msg != "" {
		return nil, &problem{string(gwapiv1.RouteReasonBackendNotFound), fmt.Sprintf("XBackend %s is not valid: %s", full, msg)}
	}
	switch spec.Type {
	case gwapixv1alpha1.BackendTypeExternalHostname:
		b.Endpoints = []ir.Endpoint{{Address: string(spec.ExternalHostname.Hostname), Port: uint32(spec.Port.Number)}}
		b.DNSResolvers, b.DNSNoSearch = slices.Clone(t.opts.DNSResolvers), true
	case gwapixv1alpha1.BackendTypeEndpointSelector:
		b.Endpoints = t.podEndpoints(ns, selectorOf(xb), uint32(spec.Port.Number))
	}
	if transport == corev1.ProtocolUDP && b.TLS != nil {
		return nil, &problem{string(gwapiv1.RouteReasonUnsupportedProtocol), fmt.Sprintf("XBackend %s originates TLS, which a UDPRoute cannot relay", full)}
	}
	return b, nil
}

// checkXBackend checks xb against the XBackend schema (its CEL rules
// included, for objects that skipped the API server: standalone files)
// and fills b's Protocol and TLS from spec.protocol and spec.tls. It
// returns why xb is not valid, or "". An ExternalHostname must not name
// what a Service backendRef reaches (cluster.local), nor the proxy
// itself: localhost and the names under it, which resolve to the
// loopback (RFC 6761 section 6.3; on the port of a Gateway listener a
// request would come back to the gateway again and again), nor a port
// of the proxy's own (Options.ProxyPorts).
//
// spec.protocol (BackendProtocol) maps as a Service port's appProtocol
// (appProtocol): HTTP2 and GRPC to HTTP/2 (over TLS with ALPN h2 when tls
// is on), H2C to HTTP/2 without TLS, HTTP, HTTP11, WSS and MCP (HTTP
// transports) to HTTP/1.1; unset is HTTP/1.1, as a Service port without
// appProtocol. TCP is for L4 routes (which relay bytes whatever the
// protocol says); an HTTP route's backend of protocol TCP is
// UnsupportedProtocol at the route (resolve).
func (t *translator) checkXBackend(xb *gwapixv1alpha1.XBackend, b *ir.Backend) string {
	spec := &xb.Spec
	if spec.Port.Number < 1 || spec.Port.Number > 65535 {
		return fmt.Sprintf("spec.port.number %d is outside 1-65535", spec.Port.Number)
	}
	switch spec.Type {
	case gwapixv1alpha1.BackendTypeExternalHostname:
		if spec.ExternalHostname == nil || spec.EndpointSelector != nil {
			return "type ExternalHostname needs externalHostname, and no endpointSelector"
		}
		h := string(spec.ExternalHostname.Hostname)
		if msg := checkPreciseHostname(h); msg != "" {
			return fmt.Sprintf("externalHostname.hostname %s %s", q(h), msg)
		}
		if h == "cluster.local" || strings.HasSuffix(h, ".cluster.local") {
			return fmt.Sprintf("externalHostname.hostname %s is a cluster domain name (reach Services by a Service backendRef)", q(h))
		}
		if h == "localhost" || strings.HasSuffix(h, ".localhost") {
			return fmt.Sprintf("externalHostname.hostname %s is a loopback name (RFC 6761 section 6.3), which would reach the proxy itself", q(h))
		}
		if spec.SessionPersistence != nil {
			return "sessionPersistence can only be set when type is EndpointSelector"
		}
		if slices.Contains(t.opts.ProxyPorts, uint32(spec.Port.Number)) {
			return fmt.Sprintf("port %d is one the proxy itself listens on (its admin, readiness or metrics), which a host name resolving to the loopback would reach", spec.Port.Number)
		}
	case gwapixv1alpha1.BackendTypeEndpointSelector:
		if spec.EndpointSelector == nil || spec.ExternalHostname != nil {
			return "type EndpointSelector needs endpointSelector, and no externalHostname"
		}
		ml := spec.EndpointSelector.MatchLabels
		if len(ml) == 0 || len(ml) > 64 {
			return fmt.Sprintf("endpointSelector.matchLabels has %d entries (1-64 are allowed)", len(ml))
		}
		for _, k := range slices.Sorted(maps.Keys(ml)) {
			if errs := validation.IsQualifiedName(string(k)); len(errs) > 0 {
				return fmt.Sprintf("endpointSelector.matchLabels key %s: %s", q(string(k)), strings.Join(errs, "; "))
			}
			if errs := validation.IsValidLabelValue(string(ml[k])); len(errs) > 0 {
				return fmt.Sprintf("endpointSelector.matchLabels value %s: %s", q(string(ml[k])), strings.Join(errs, "; "))
			}
		}
		if sp := spec.SessionPersistence; sp != nil {
			// As an XBackendTrafficPolicy's (backendtraffic.go): the
			// backend's, which becomes the rule's (ruleSession).
			var problems []string
			b.SessionPersistence = sessionPersistenceIR(sp, sessionCookieName(resources.XBackendKind.Name(), xb.Namespace, xb.Name, ""),
				func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) })
			if len(problems) > 0 {
				return "sessionPersistence: " + strings.Join(problems, "; ")
			}
		}
	default:
		return fmt.Sprintf("type %s is not ExternalHostname or EndpointSelector", q(string(spec.Type)))
	}
	tlsOn := spec.TLS != nil && spec.TLS.Mode != gwapixv1alpha1.BackendTLSModeNone
	proto := deref(spec.Protocol, gwapixv1alpha1.BackendProtocolHTTP)
	switch proto {
	case gwapixv1alpha1.BackendProtocolHTTP2, gwapixv1alpha1.BackendProtocolGRPC:
		b.Protocol = appProtocol(new("http2"))
		if proto == gwapixv1alpha1.BackendProtocolHTTP2 && !tlsOn {
			return "protocol HTTP2 needs tls (use H2C for HTTP/2 without TLS)"
		}
	case gwapixv1alpha1.BackendProtocolH2C:
		b.Protocol = appProtocol(new("kubernetes.io/h2c"))
		if tlsOn {
			return "protocol H2C needs tls mode None (use HTTP2 for HTTP/2 over TLS)"
		}
	case gwapixv1alpha1.BackendProtocolWSS:
		b.Protocol = appProtocol(nil)
		if !tlsOn {
			return "protocol WSS needs tls"
		}
	case gwapixv1alpha1.BackendProtocolHTTP, gwapixv1alpha1.BackendProtocolHTTP11, gwapixv1alpha1.BackendProtocolMCP:
		b.Protocol = appProtocol(nil)
	case gwapixv1alpha1.BackendProtocolTCP:
		b.Protocol = ir.AppProtocolTCP
	default:
		return fmt.Sprintf("protocol %s is not one of TCP, HTTP, HTTP2, HTTP11, H2C, MCP, GRPC, WSS", q(string(proto)))
	}
	return t.xbackendTLS(xb, b)
}

// xbackendTLS fills b.TLS from xb's spec.tls (BackendTLS): mode None (or no
// tls) is plaintext and takes no validation; ServerOnly verifies the
// backend's certificate as validation says (backendTLSValidation, the
// rules of BackendTLSPolicy; without validation.hostname the SNI and the
// name checked are externalHostname's); ClientAndServer presents
// clientCertificateRef too (a kubernetes.io/tls Secret, resolved as a
// Gateway's clientCertificateRef: certificate, a ReferenceGrant from
// XBackends for another namespace's). It returns why the TLS cannot be
// honoured, or "".
func (t *translator) xbackendTLS(xb *gwapixv1alpha1.XBackend, b *ir.Backend) string {
	tls := xb.Spec.TLS
	if tls == nil || tls.Mode == gwapixv1alpha1.BackendTLSModeNone || tls.Mode == "" {
		if tls != nil && (tls.Validation != nil || tls.ClientCertificateRef != nil) {
			return "tls mode None takes no validation and no clientCertificateRef"
		}
		return ""
	}
	switch tls.Mode {
	case gwapixv1alpha1.BackendTLSModeServerOnly, gwapixv1alpha1.BackendTLSModeClientAndServer:
	default:
		return fmt.Sprintf("tls.mode %s is not None, ServerOnly or ClientAndServer", q(string(tls.Mode)))
	}
	if tls.Validation == nil {
		return "tls.validation is required with tls mode " + string(tls.Mode)
	}
	if (tls.Mode == gwapixv1alpha1.BackendTLSModeClientAndServer) != (tls.ClientCertificateRef != nil) {
		return "tls.clientCertificateRef must be set if and only if tls.mode is ClientAndServer"
	}
	var host string
	if eh := xb.Spec.ExternalHostname; eh != nil {
		host = string(eh.Hostname)
	}
	out, invalid, refs := t.backendTLSValidation(xb.Namespace, *tls.Validation, host)
	switch {
	case invalid != nil:
		return "tls: " + invalid.msg
	case refs != nil:
		return "tls: " + refs.msg
	}
	if ref := tls.ClientCertificateRef; ref != nil {
		c, p := t.certificate(resources.XBackendKind.Name(), xb.Namespace, "tls.clientCertificateRef", string(gwapiv1.BackendTLSPolicyReasonInvalidKind), *ref)
		if p != nil {
			return p.msg
		}
		out.ClientCertificate = c
	}
	b.TLS = out
	return ""
}

// selectorOf is the label selector of an EndpointSelector XBackend.
func selectorOf(xb *gwapixv1alpha1.XBackend) labels.Selector {
	set := labels.Set{}
	for k, v := range xb.Spec.EndpointSelector.MatchLabels {
		set[string(k)] = string(v)
	}
	return labels.SelectorFromSet(set)
}

// podEndpoints are the endpoints of the Pods of namespace ns that sel
// selects, at port: a Pod counts while it is not being deleted and its
// Ready condition is True (as the EndpointSlice controller's ready
// endpoints), with each of its status.podIPs (status.podIP without them).
// Sorted by address then port, without duplicates.
func (t *translator) podEndpoints(ns string, sel labels.Selector, port uint32) []ir.Endpoint {
	var out []ir.Endpoint
	for _, pod := range t.pods[ns] {
		if pod.DeletionTimestamp != nil || !sel.Matches(labels.Set(pod.Labels)) || !podReady(pod) {
			continue
		}
		ips := pod.Status.PodIPs
		if len(ips) == 0 && pod.Status.PodIP != "" {
			ips = []corev1.PodIP{{IP: pod.Status.PodIP}}
		}
		for _, ip := range ips {
			if addr, err := netip.ParseAddr(ip.IP); err == nil && addr.Zone() == "" {
				out = append(out, ir.Endpoint{Address: addr.String(), Port: port})
			}
		}
	}
	slices.SortFunc(out, func(a, b ir.Endpoint) int {
		return cmp.Or(cmp.Compare(a.Address, b.Address), cmp.Compare(a.Port, b.Port))
	})
	return slices.Compact(out)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// xbackendsSelecting calls f with every EndpointSelector XBackend of the
// pod's namespace whose selector matches the pod's labels (nil pod: none).
func (t *translator) xbackendsSelecting(pod *corev1.Pod, f func(types.NamespacedName)) {
	if pod == nil {
		return
	}
	for _, xb := range t.xbackendsByNS[pod.Namespace] {
		if xb.Spec.EndpointSelector != nil && selectorOf(xb).Matches(labels.Set(pod.Labels)) {
			f(nn(xb.Namespace, xb.Name))
		}
	}
}

// ParseDNSResolvers checks DNS server addresses for Options.DNSResolvers:
// each an IP address (port 53) or ip:port (an IPv6 address with a port in
// brackets), without a zone. It returns them as "ip:port", or the first
// that is not valid.
func ParseDNSResolvers(in []string) ([]string, error) {
	var out []string
	for _, s := range in {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			addr, err2 := netip.ParseAddr(s)
			if err2 != nil {
				return nil, fmt.Errorf("%q is not an IP address or ip:port", s)
			}
			ap = netip.AddrPortFrom(addr, 53)
		}
		if ap.Addr().Zone() != "" || ap.Port() == 0 {
			return nil, fmt.Errorf("%q: a DNS server address has no zone and a port other than 0", s)
		}
		out = append(out, ap.String())
	}
	return out, nil
}
