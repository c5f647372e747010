package gatewayapi

// What the Gateway API translator shares with the other producers of the
// same IR (pkg/ingress): the proxy scope and bind port of a Gateway, the
// resolution of Service backends and of serving certificates (Refs, a view
// over a Cache's indexes), and the hostname rule. One mechanism each:
// Translate uses the same functions.

import (
	"cmp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// ScopeOf is the proxy scope (Envoy fleet) that serves gw: Options.Scope,
// else (or when it answers "") "gatewayclass/<class>", the shared fleet of
// gw's class.
func (o Options) ScopeOf(gw *gwapiv1.Gateway) string {
	if o.Scope != nil {
		if s := o.Scope(gw); s != "" {
			return s
		}
	}
	return "gatewayclass/" + string(gw.Spec.GatewayClassName)
}

// EdgeOf is Options.Edge of gw, nil without one.
func (o Options) EdgeOf(gw *gwapiv1.Gateway) *ir.HTTPEdge {
	if o.Edge == nil {
		return nil
	}
	return o.Edge(gw)
}

// BindPortOf is the port Envoy binds for gw's listener port:
// Options.BindPort, else the port itself. 0 means the port cannot be bound
// (outside 1-65535, or mapped outside it).
func (o Options) BindPortOf(gw *gwapiv1.Gateway, port gwapiv1.PortNumber) uint32 {
	if port < 1 || port > 65535 {
		return 0
	}
	if o.BindPort != nil {
		p := o.BindPort(gw, port)
		if p > 65535 {
			return 0
		}
		return p
	}
	return uint32(port)
}

// ParametersRefused is why the caller refused gw's parametersRef (or its
// class's; Options.InvalidParameters), "" when it did not.
func (o Options) ParametersRefused(gw types.NamespacedName) string {
	if p := o.InvalidParameters.gateway(gw); p != nil {
		return p.msg
	}
	return ""
}

// ValidHostname checks a host name against the Gateway API Hostname
// schema, which is the Ingress API's rule for IngressRule host too:
// lower-case RFC 1123 labels, at most 253 characters, an optional "*."
// wildcard as the first label only. It returns why h is not valid, or "".
func ValidHostname(h string) string { return checkHostname(h) }

// ValidHeaderName checks an HTTP header name (Gateway API HTTPHeaderName:
// an RFC 7230 token of 1-256 characters); it returns why n is not one, or
// "".
func ValidHeaderName(n string) string { return checkHeaderName(n) }

// CompareHosts orders virtual host names as a listener's routes are
// grouped (sortRoutes): exact names first, then "*." wildcards, then "*";
// longer first; then by name.
func CompareHosts(a, b string) int { return compareHosts(a, b) }

// Refs resolves references for a producer of IR other than Translate (an
// Ingress translator) with Translate's own rules, on the same snapshot:
// GatewayClasses and Gateways by name, Service ports by number or name to
// their endpoints (EndpointSlices, or the Service's cluster IP without
// any), the policies that render backends applied (backendPolicies:
// BackendTLSPolicy), serving certificates from
// kubernetes.io/tls Secrets (ReferenceGrants applied), and HTTPRoute
// filters. Get it from the Cache that translated the snapshot
// (Cache.Refs); it only reads, and is not safe for concurrent use.
type Refs struct {
	t *translator
	c *Cache
}

// Refs is a view over the indexes of c's last translation (its
// GatewayClasses of ours, every Gateway, Services, EndpointSlices,
// Secrets, ReferenceGrants and the policy target index), which Translate keeps
// up to date run by run: resolving a reference costs a lookup, nothing is
// indexed again. It answers for the snapshot and options of c's last
// Translate (an empty snapshot before the first) until c's next
// Translate, and records nothing in c.
func (c *Cache) Refs() *Refs {
	if c.t == nil {
		return &Refs{t: newTranslator(&resources.Resources{}, Options{})}
	}
	return &Refs{t: c.t, c: c}
}

// StartedOver says whether the Cache's last Translate started over (a
// full translation: any answer of r may have changed since the run
// before), or r answers for no Cache's translation.
func (r *Refs) StartedOver() bool { return r.c == nil || r.c.full }

// ServiceChanged says whether the Service ns/name, or one of its
// EndpointSlices, changed (appeared, went, or is another object) in the
// Cache's last Translate, when it did not start over (StartedOver): what
// ServiceBackend answers for it may differ from the run before.
func (r *Refs) ServiceChanged(k types.NamespacedName) bool {
	return r.c != nil && r.c.changed[depKey{resources.ServiceKind.Name(), k}]
}

// SecretChanged says the same of the Secret ns/name (Certificate,
// BasicAuthUsers).
func (r *Refs) SecretChanged(k types.NamespacedName) bool {
	return r.c != nil && r.c.changed[depKey{secretKind, k}]
}

// OurGatewayClass says whether name is a GatewayClass of our controller
// (spec.controllerName).
func (r *Refs) OurGatewayClass(name string) bool {
	_, ok := r.t.classes[name]
	return ok
}

// GatewayExists says whether the snapshot holds the Gateway k, ours or not.
func (r *Refs) GatewayExists(k types.NamespacedName) bool {
	_, ok := r.t.allGateways[k]
	return ok
}

// ServiceBackend resolves port of the Service ns/name, referenced by the
// object of kind (KindIngress; "Ingress" messages name it) ns/from, to an
// HTTP backend: the Backend of cluster "service/<ns>/<name>/<port
// number>" with its ready endpoints and the protocol of the port's
// appProtocol, TLS as a BackendTLSPolicy targeting the port says. The
// reference is in the referrer's namespace (an Ingress cannot name another
// one). It returns why the port cannot be used: the Service does not exist,
// has no TCP port of that number or name. A Backend with Invalid set (a
// BackendTLSPolicy that cannot be honoured) must not receive traffic; the
// policy's own status says why.
func (r *Refs) ServiceBackend(kind, ns, from, name string, port ServicePort) (*ir.Backend, string) {
	rs := &routeState{key: RouteKey{Kind: kind, Namespace: ns, Name: from}}
	b, p := r.t.serviceBackend(rs, ns, name, port, corev1.ProtocolTCP)
	if p != nil {
		return nil, p.msg
	}
	return b, ""
}

// Certificate loads the Secret ns/name, referenced by an object of kind
// in the same namespace from its field (which names it in messages), as a
// serving certificate with the rules of a Gateway listener's
// certificateRefs: a kubernetes.io/tls Secret whose tls.crt and tls.key
// form a valid key pair. The certificate is named "<ns>/<name>", as a
// Gateway's is. It returns why the Secret cannot be used.
func (r *Refs) Certificate(kind, ns, field, name string) (*ir.Certificate, string) {
	c, p := r.t.certificate(kind, ns, field, string(gwapiv1.ListenerReasonInvalidCertificateRef), gwapiv1.SecretObjectReference{Name: gwapiv1.ObjectName(name)})
	if p != nil {
		return nil, p.msg
	}
	return c, ""
}

// Filters translates HTTPRoute filters and timeouts for a rule of the
// object of kind ns/name (an Ingress path whose annotations ask for them)
// whose match is match, with HTTPRoute's own rules and validation
// (filters.go, headers.go; timeouts as HTTPRouteRule timeouts): the IR
// filters and timeouts, and why they cannot be used (each message without
// the rule and filter indexes HTTPRoute's status would give). With
// problems the results must not be served. Filters that reference other
// objects (RequestMirror, ExtensionRef) are for routes only: refused here.
func (r *Refs) Filters(kind, ns, name string, match ir.HTTPMatch, fs []gwapiv1.HTTPRouteFilter, to *gwapiv1.HTTPRouteTimeouts) (ir.HTTPFilters, *ir.Timeouts, []string) {
	rc := &ruleContext{t: r.t, route: &routeState{key: RouteKey{Kind: kind, Namespace: ns, Name: name}}, failure: 500,
		filterTypes: map[gwapiv1.HTTPRouteFilterType]bool{
			gwapiv1.HTTPRouteFilterRequestHeaderModifier: true, gwapiv1.HTTPRouteFilterResponseHeaderModifier: true,
			gwapiv1.HTTPRouteFilterRequestRedirect: true, gwapiv1.HTTPRouteFilterURLRewrite: true, gwapiv1.HTTPRouteFilterCORS: true,
		}}
	matches := []ir.HTTPMatch{match}
	rc.ruleMatches = matches
	filters, _ := rc.filters(fs, matches)
	timeouts := rc.timeouts(to)
	var msgs []string
	for _, p := range append(rc.unsupported, rc.refs...) {
		m := strings.TrimPrefix(p.msg, "rule 0: ")
		if i := strings.Index(m, ": "); strings.HasPrefix(m, "filter ") && i > 0 {
			m = m[i+2:]
		}
		msgs = append(msgs, m)
	}
	return filters, timeouts, msgs
}

// OldestFirst orders objects oldest first: creationTimestamp, then
// namespace/name: who wins a conflict (the Gateway API resolves conflicts
// between routes so, and pkg/ingress those between Ingresses).
func OldestFirst(a, b metav1.Object) int {
	return cmp.Or(compareTime(a.GetCreationTimestamp(), b.GetCreationTimestamp()),
		cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
}

// AnnotationStandsForIngressClass marks a Gateway that is no API object
// but stands for an IngressClass on the Envoy fleets (pkg/ingress
// ClassGateway); its value is the class's name. The objects rendered for
// such a Gateway are owned by the IngressClass (pkg/infra), and its status
// is never written.
const AnnotationStandsForIngressClass = "xds-controller.dev/ingress-class"
