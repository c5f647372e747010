package gatewayapi

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// maxWeight is the largest backendRef weight the Gateway API allows.
const maxWeight = 1000000

// backendRefs resolves a rule's backendRefs into a weighted group. Each
// invalid ref stays in the group, marked Invalid with its weight, so that
// its share of requests is answered with 500 (HTTPRouteRule backendRefs).
// It returns nil when there are no refs or none resolves: the rule then
// answers the failure status as a whole. Weight defaults to 1.
func (rc *ruleContext) backendRefs(refs []gwapiv1.HTTPBackendRef) *ir.BackendGroup {
	group := &ir.BackendGroup{}
	valid := 0
	for k, ref := range refs {
		w := deref(ref.Weight, 1)
		if w < 0 || w > maxWeight {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "backendRef %d: weight %d is outside 0-%d", k, w, maxWeight)
			w = min(max(w, 0), maxWeight)
		}
		if ref.Port != nil && (*ref.Port < 1 || *ref.Port > 65535) {
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "backendRef %d: port %d is outside 1-65535", k, *ref.Port)
		}
		if ref.Namespace != nil {
			if p := checkNamespace(string(*ref.Namespace)); p != "" {
				rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "backendRef %d: namespace %s %s", k, q(string(*ref.Namespace)), p)
			}
		}
		b, p := rc.resolve(ref.BackendObjectReference)
		if p != nil {
			rc.refProblem(gwapiv1.RouteConditionReason(p.reason), "backendRef %d: %s", k, p.msg)
			b = rc.invalidBackend(k)
		}
		b.Weight = uint32(w)
		if !b.Invalid && rc.backendFilters(k, ref.Filters, b) {
			// An ExtensionRef filter on the backendRef cannot be resolved:
			// the requests it would process get the failure status.
			b = rc.invalidBackend(k)
			b.Weight = uint32(w)
		}
		if !b.Invalid {
			valid++
		}
		group.Backends = append(group.Backends, b)
	}
	if valid == 0 {
		return nil
	}
	return group
}

// invalidBackend stands for backendRef k of the rule when it cannot be
// used: "invalid/<kind>/<namespace>/<name>/rule/<i>/backend/<k>".
func (rc *ruleContext) invalidBackend(k int) *ir.Backend {
	key := rc.route.key
	return &ir.Backend{
		Name:    fmt.Sprintf("invalid/%s/%s/%s/rule/%d/backend/%d", strings.ToLower(key.Kind), key.Namespace, key.Name, rc.index, k),
		Invalid: true,
	}
}

// resolve resolves a backendRef (or a mirror's) of the rule's route
// (resolveBackend). When the route's kind needs HTTP/2 (rc.http2) and the
// Service port says HTTP/1.1 (no appProtocol, http, kubernetes.io/ws), the
// backend speaks h2c and its cluster is "service/<ns>/<name>/<port>/h2c",
// apart from the HTTP/1.1 one an HTTPRoute to the same port uses.
//
// L4 kinds (rc.l4) relay bytes or datagrams: their backend is the Service's
// TCP (or, for UDPRoute, UDP) port, and its cluster
// "service/<ns>/<name>/<port>/tcp" (or "/udp") is apart from the HTTP one.
func (rc *ruleContext) resolve(ref gwapiv1.BackendObjectReference) (*ir.Backend, *problem) {
	transport := corev1.ProtocolTCP
	if rc.l4 == ir.AppProtocolUDP {
		transport = corev1.ProtocolUDP
	}
	b, p := rc.t.resolveBackend(rc.route, ref, transport)
	switch {
	case p != nil:
	case b.Protocol == ir.AppProtocolTCP && rc.l4 == "":
		b, p = nil, &problem{string(gwapiv1.RouteReasonUnsupportedProtocol), fmt.Sprintf("backend %s has protocol TCP, which an HTTP or gRPC route cannot use", b.Name)}
	case rc.l4 != "":
		b.Protocol = rc.l4
		b.Name += "/" + strings.ToLower(string(rc.l4))
	case rc.http2:
		asHTTP2(b)
	}
	return b, p
}

// asHTTP2 makes b, a resolved HTTP backend, speak HTTP/2 (a GRPCRoute's,
// an OTLP/gRPC collector): a port that says HTTP/1.1 speaks h2c, in a
// cluster of its own, "<name>/h2c".
func asHTTP2(b *ir.Backend) {
	if b.Protocol == ir.AppProtocolHTTP1 {
		b.Protocol = ir.AppProtocolH2C
		b.Name += "/h2c"
	}
}

// backendFilters applies HTTPBackendRef filters to b, the backend of
// backendRef k: Request- and ResponseHeaderModifier are supported, once
// each, and so is URLRewrite on kinds that have it (HTTPRoute; Gateway API
// v1.7.0 HTTPRouteBackendURLRewrite); ExtensionRef is a reference that
// cannot be resolved (reported, and true is returned); other types are
// UnsupportedValue. A RequestHeaderModifier that sets Host, or a URLRewrite
// hostname, rewrites the Host of the requests sent to b (b.HostRewrite,
// Envoy's WeightedCluster ClusterWeight host_rewrite_literal), unless the
// rule rewrites it already (rc.ruleHost) or the backendRef does twice: then
// the rule is UnsupportedValue, as a request's Host has one rewrite
// (headers.go). A URLRewrite path is recorded in rc.backendPaths for
// hoistBackendPath.
func (rc *ruleContext) backendFilters(k int, fs []gwapiv1.HTTPRouteFilter, b *ir.Backend) (extRef bool) {
	seen := map[gwapiv1.HTTPRouteFilterType]bool{}
	setHost := func(where, what, host string) {
		switch {
		case host == "":
		case rc.ruleHost != "":
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%s: %s sets Host, which the rule rewrites already (%s); a request's Host has one rewrite: set Host on each backendRef instead", where, what, rc.ruleHost)
		case b.HostRewrite != "":
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%s: %s sets Host, which another filter of the backendRef sets already; a request's Host has one rewrite", where, what)
		default:
			b.HostRewrite = host
		}
	}
	for i, f := range fs {
		where := fmt.Sprintf("backendRef %d: filter %d", k, i)
		switch {
		case f.Type == gwapiv1.HTTPRouteFilterRequestHeaderModifier && f.RequestHeaderModifier != nil && !seen[f.Type]:
			var host string
			b.RequestHeaders, host = rc.headerModifier(where, f.RequestHeaderModifier, true)
			setHost(where, "RequestHeaderModifier", host)
		case f.Type == gwapiv1.HTTPRouteFilterURLRewrite && f.URLRewrite != nil && !seen[f.Type] &&
			(rc.filterTypes == nil || rc.filterTypes[f.Type]):
			setHost(where, "URLRewrite", rc.rewriteHostname(i, fmt.Sprintf("backendRef %d: urlRewrite", k), f.URLRewrite.Hostname))
			if p := rc.pathModifier(i, fmt.Sprintf("backendRef %d: urlRewrite", k), f.URLRewrite.Path, rc.ruleMatches); p != nil {
				if rc.backendPaths == nil {
					rc.backendPaths = map[int]*ir.PathModifier{}
				}
				rc.backendPaths[k] = p
			}
		case f.Type == gwapiv1.HTTPRouteFilterResponseHeaderModifier && f.ResponseHeaderModifier != nil && !seen[f.Type]:
			b.ResponseHeaders, _ = rc.headerModifier(where, f.ResponseHeaderModifier, false)
		case f.Type == gwapiv1.HTTPRouteFilterExtensionRef:
			rc.refProblem(gwapiv1.RouteReasonInvalidKind, "%s: ExtensionRef is not a filter kind xds-controller supports; its share answers %d", where, rc.failure)
			extRef = true
		default:
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "%s: %q is not supported on a backendRef (or is repeated, or lacks its field)", where, f.Type)
		}
		seen[f.Type] = true
	}
	return extRef
}

// resolveBackend resolves a BackendObjectReference made by the route key
// to a Service port and its endpoints (serviceBackend), or to an XBackend
// (group gateway.networking.x-k8s.io, xbackendBackend). Other kinds are
// InvalidKind; an object in another namespace needs a ReferenceGrant from
// routes of key's kind in key's namespace to its kind (else
// RefNotPermitted).
// A policy's reference (telemetry.go) is resolved the same way, r
// standing for the policy: its key only (its kind, of the group the
// registry names, and namespace/name), no parents.
func (t *translator) resolveBackend(r *routeState, ref gwapiv1.BackendObjectReference, transport corev1.Protocol) (*ir.Backend, *problem) {
	key := r.key
	routeNS := key.Namespace
	group := string(deref(ref.Group, ""))
	kind := string(deref(ref.Kind, "Service"))
	ns := string(deref(ref.Namespace, gwapiv1.Namespace(routeNS)))
	name := ns + "/" + string(ref.Name)
	switch {
	case group == "" && kind == "Service", group == XBackendGroup && kind == resources.XBackendKind.Name():
	default:
		return nil, &problem{string(gwapiv1.RouteReasonInvalidKind), fmt.Sprintf("%s %s is not a core Service or an XBackend", groupKind(group, kind), name)}
	}
	fromGroup := gwapiv1.GroupName
	if k := resources.KindNamed(key.Kind); k != nil {
		fromGroup = k.Group()
	}
	if ns != routeNS && !t.grantAllows(fromGroup, key.Kind, routeNS, group, kind, ns, string(ref.Name)) {
		return nil, &problem{string(gwapiv1.RouteReasonRefNotPermitted),
			fmt.Sprintf("%s %s: no ReferenceGrant in namespace %s allows %ss of namespace %s to use it", kind, name, ns, key.Kind, routeNS)}
	}
	var port ServicePort
	if ref.Port != nil {
		port.Number = int32(*ref.Port)
	}
	if kind != "Service" {
		return t.xbackendBackend(ns, string(ref.Name), port.Number, transport)
	}
	return t.serviceBackend(r, ns, string(ref.Name), port, transport)
}

// ServicePort selects a port of a Service: by Number (a backendRef's port;
// an Ingress ServiceBackendPort number) or, when Number is 0, by Name (an
// Ingress ServiceBackendPort name: the Service port's name).
type ServicePort struct {
	Number int32
	Name   string
}

// serviceBackend resolves port of Service ns/name for the route r (of any
// kind, Ingress included) to its endpoints. The Service must exist and
// port must select one of its ports of protocol transport, TCP or UDP
// (else BackendNotFound). The Backend is named after the port's number, so
// references by number and by name share one cluster.
//
// Policies that render backends apply to it (backendPolicies, policy.go):
// a BackendTLSPolicy targeting the port makes Envoy originate TLS as it
// says (Backend.TLS) for HTTPRoutes, GRPCRoutes and Ingresses (GEP-1897),
// and for TLSRoutes where a Terminate listener serves them (addL4Route:
// Backend.TLS, or Backend.TLSInvalid when it cannot be honoured; a
// Passthrough listener relays the client's TLS as it is); TCPRoutes and
// UDPRoutes relay their bytes as they are. One that cannot be honoured
// makes an HTTP backend Invalid (its share answers the failure status,
// never plaintext) without a problem of the route's own: the policy's
// status says why.
func (t *translator) serviceBackend(r *routeState, ns, svcName string, port ServicePort, transport corev1.Protocol) (*ir.Backend, *problem) {
	name := ns + "/" + svcName
	svc := t.service(nn(ns, svcName))
	if svc == nil {
		return nil, &problem{string(gwapiv1.RouteReasonBackendNotFound), fmt.Sprintf("Service %s not found", name)}
	}
	if port.Number == 0 && port.Name == "" {
		return nil, &problem{string(gwapiv1.RouteReasonBackendNotFound), fmt.Sprintf("Service %s: backendRef port is required", name)}
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if (port.Number != 0 && p.Port == port.Number || port.Number == 0 && p.Name == port.Name) && cmp.Or(p.Protocol, corev1.ProtocolTCP) == transport {
			sp = p
			break
		}
	}
	if sp == nil {
		if port.Number == 0 {
			return nil, &problem{string(gwapiv1.RouteReasonBackendNotFound), fmt.Sprintf("Service %s has no %s port named %s", name, transport, q(port.Name))}
		}
		return nil, &problem{string(gwapiv1.RouteReasonBackendNotFound), fmt.Sprintf("Service %s has no %s port %d", name, transport, port.Number)}
	}
	b := &ir.Backend{
		Name:      "service/" + ns + "/" + svcName + "/" + strconv.Itoa(int(sp.Port)),
		Protocol:  appProtocol(sp.AppProtocol),
		Endpoints: t.endpoints(svc, sp),
	}
	return t.backendPolicies(r, svc, sp, b), nil
}

// appProtocol maps a Service port appProtocol to the protocol Envoy
// speaks to the backend: kubernetes.io/h2c is HTTP/2 without TLS, "http2"
// and "grpc" are HTTP/2, anything else (none, http, kubernetes.io/ws) is
// HTTP/1.1.
func appProtocol(p *string) ir.AppProtocol {
	switch deref(p, "") {
	case "kubernetes.io/h2c":
		return ir.AppProtocolH2C
	case "http2", "grpc":
		return ir.AppProtocolHTTP2
	}
	return ir.AppProtocolHTTP1
}

// endpoints lists the ready endpoints of a Service port, sorted by address
// then port, without duplicates.
//
// They come from the EndpointSlices labelled kubernetes.io/service-name in
// the Service's namespace: endpoints whose conditions.ready is unset or
// true, at the slice port whose name equals the Service port's name. A
// hand-written slice without such a port falls back to a numeric
// targetPort (or the port itself when targetPort is unset). An address must
// be of the slice's addressType: an IPv4 address, an IPv6 address, or for
// FQDN a DNS name, which Envoy resolves; others are dropped (and reported
// once per slice in Status.Warnings, see checkEndpointSlices).
//
// When the snapshot holds no EndpointSlice at all for the Service (the
// usual standalone input is a Service alone), the Service's own
// spec.clusterIP at the Service port is the one endpoint, as kube-proxy
// would route it; a headless Service (clusterIP None) then has none.
func (t *translator) endpoints(svc *corev1.Service, sp *corev1.ServicePort) []ir.Endpoint {
	slices_ := t.slices[nn(svc.Namespace, svc.Name)]
	var out []ir.Endpoint
	if len(slices_) == 0 {
		ip := svc.Spec.ClusterIP
		if addr, err := netip.ParseAddr(ip); err == nil && ip != corev1.ClusterIPNone && addr.Zone() == "" {
			out = append(out, ir.Endpoint{Address: addr.String(), Port: uint32(sp.Port)})
		}
		return out
	}
	for _, es := range slices_ {
		port := slicePort(es, sp)
		if port == 0 {
			continue
		}
		for _, ep := range es.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				if addr, ok := sliceAddress(es.AddressType, a); ok {
					out = append(out, ir.Endpoint{Address: addr, Port: port})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b ir.Endpoint) int {
		return cmp.Or(cmp.Compare(a.Address, b.Address), cmp.Compare(a.Port, b.Port))
	})
	return slices.Compact(out)
}

// sliceAddress checks an EndpointSlice address against the slice's
// addressType and returns it in canonical form.
func sliceAddress(typ discoveryv1.AddressType, a string) (string, bool) {
	switch typ {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
		addr, err := netip.ParseAddr(a)
		if err != nil || addr.Zone() != "" || addr.Is4() != (typ == discoveryv1.AddressTypeIPv4) {
			return "", false
		}
		return addr.String(), true
	case discoveryv1.AddressTypeFQDN:
		if checkPreciseHostname(a) != "" {
			return "", false
		}
		return a, true
	}
	return "", false
}

// sliceWarning is the Status.Warnings entry of an EndpointSlice of a
// Service (labelled kubernetes.io/service-name: sliceService) whose
// addresses endpoints drops: invalid ones and those not of the slice's
// addressType; "" when there are none.
func sliceWarning(es *discoveryv1.EndpointSlice) string {
	name := es.Namespace + "/" + es.Name
	switch es.AddressType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	default:
		return fmt.Sprintf("EndpointSlice %s: addressType %s is not IPv4, IPv6 or FQDN; its endpoints are not used", name, q(string(es.AddressType)))
	}
	var bad []string
	for _, ep := range es.Endpoints {
		for _, a := range ep.Addresses {
			if _, ok := sliceAddress(es.AddressType, a); !ok {
				bad = append(bad, q(a))
			}
		}
	}
	if len(bad) == 0 {
		return ""
	}
	shown := bad
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(bad)-5))
	}
	return fmt.Sprintf("EndpointSlice %s: dropped %d address(es) that are not valid %s addresses: %s", name, len(bad), es.AddressType, strings.Join(shown, ", "))
}

// slicePort is the port of an EndpointSlice that serves the Service port
// sp, or 0.
func slicePort(es *discoveryv1.EndpointSlice, sp *corev1.ServicePort) uint32 {
	for _, p := range es.Ports {
		if deref(p.Name, "") == sp.Name && p.Port != nil && *p.Port > 0 && *p.Port <= 65535 {
			return uint32(*p.Port)
		}
	}
	if len(es.Ports) > 0 {
		return 0
	}
	if sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal > 0 && sp.TargetPort.IntVal <= 65535 {
		return uint32(sp.TargetPort.IntVal)
	}
	if sp.TargetPort.IntVal == 0 && sp.TargetPort.StrVal == "" && sp.Port > 0 {
		return uint32(sp.Port)
	}
	return 0
}

func durationSeconds(s int32) time.Duration { return time.Duration(s) * time.Second }

// hoistBackendPath makes the path rewrite of the rule's backendRef
// URLRewrite filters (rc.backendPaths) the rule's own (filters.URLRewrite.Path):
// Envoy rewrites the path per route (RouteAction prefix_rewrite,
// regex_rewrite), not per weighted cluster. So every valid backend of group
// (the resolved backendRefs, in order) must have the same path rewrite, and
// the rule none of its own; otherwise the rule is UnsupportedValue.
func (rc *ruleContext) hoistBackendPath(filters *ir.HTTPFilters, group *ir.BackendGroup) {
	if len(rc.backendPaths) == 0 || group == nil {
		return
	}
	var path *ir.PathModifier
	for k, b := range group.Backends {
		if b.Invalid {
			continue
		}
		p := rc.backendPaths[k]
		switch {
		case p == nil:
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "backendRef %d has no URLRewrite path while another backendRef of the rule rewrites the path; Envoy rewrites the path per rule, so every backendRef must rewrite it alike", k)
			return
		case path != nil && *p != *path:
			rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "backendRef %d rewrites the path unlike another backendRef of the rule; Envoy rewrites the path per rule, so every backendRef must rewrite it alike", k)
			return
		}
		path = p
	}
	if path == nil {
		return
	}
	if filters.URLRewrite != nil && filters.URLRewrite.Path != nil {
		rc.unsupportedf(gwapiv1.RouteReasonUnsupportedValue, "the rule's URLRewrite and a backendRef's both rewrite the path; a request's path has one rewrite")
		return
	}
	if filters.URLRewrite == nil {
		filters.URLRewrite = &ir.URLRewrite{}
	}
	filters.URLRewrite.Path = path
}
