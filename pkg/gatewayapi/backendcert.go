package gatewayapi

// The Gateway's backend client certificate (Gateway spec.tls.backend
// clientCertificateRef, GatewayBackendTLS): the certificate Envoy presents
// when it originates TLS to a backend of a route attached to the Gateway,
// i.e. to a Service port a BackendTLSPolicy applies to (backends.go).
//
// Rules are translated once whatever their parents (rules.go), but the
// certificate is the Gateway's: it is applied where a route's IR is added
// to a listener of one Gateway (addRoutes), and it names the backend's
// cluster, so that in a shared fleet Gateways with different client
// certificates (or none) never share a cluster to the same Service port.

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// clientCertificateField is how messages name the field.
const clientCertificateField = "tls.backend.clientCertificateRef"

// readBackendClientCertificate resolves gs's spec.tls.backend
// clientCertificateRef, if any, with the rules of listener certificateRefs
// (certificate): a core Secret of type kubernetes.io/tls with a valid key
// pair in tls.crt and tls.key (else reason InvalidClientCertificateRef; the
// spec makes other kinds and Secret types implementation-specific, and we
// support none), in the Gateway's namespace or granted by a ReferenceGrant
// from Gateways (else RefNotPermitted).
func (t *translator) readBackendClientCertificate(gs *gatewayState) {
	tc := gs.obj.Spec.TLS
	if tc == nil || tc.Backend == nil || tc.Backend.ClientCertificateRef == nil {
		return
	}
	gs.backendCert = &backendClientCert{}
	gs.backendCert.cert, gs.backendCert.problem = t.certificate("Gateway", gs.obj.Namespace, clientCertificateField,
		string(gwapiv1.GatewayReasonInvalidClientCertificateRef), *tc.Backend.ClientCertificateRef)
}

// backendClientCert is a Gateway's resolved clientCertificateRef: cert, or
// the problem that keeps it from being used.
type backendClientCert struct {
	cert    *ir.Certificate
	problem *problem
}

// ClientCertificateSegment separates a backend's name from the Secret of
// the client certificate its cluster presents:
// "service/<ns>/<name>/<port>/client-certificate/<secret-ns>/<secret>".
const ClientCertificateSegment = "/client-certificate/"

// unresolvedClientCertificate ends the name of a TLS backend of a Gateway
// whose clientCertificateRef does not resolve.
const unresolvedClientCertificate = "/client-certificate-unresolved"

// applyBackendClientCert gives the TLS backends of route (an IR route just
// copied for a listener of g, owned by the caller) g's client certificate:
// the backendRefs' and the mirrors'. A backend without TLS (no
// BackendTLSPolicy) is left alone, and so is every backend of a Gateway
// without clientCertificateRef: its cluster name stays the Service port's.
//
// When the reference does not resolve, the TLS backends are invalid: their
// share answers the route's failure status (500, 503 for GRPCRoute) rather
// than a handshake without the certificate the Gateway was told to
// present; the Gateway's ResolvedRefs condition says why, its listeners and
// its other backends keep serving.
func (g *gatewayState) applyBackendClientCert(route *ir.HTTPRoute) {
	if g.backendCert == nil {
		return
	}
	if route.Backends != nil {
		for i, b := range route.Backends.Backends {
			route.Backends.Backends[i] = g.backendCert.apply(b)
		}
	}
	for _, m := range route.Filters.Mirrors {
		m.Backend = g.backendCert.apply(m.Backend)
	}
	if a := route.Filters.ExtAuth; a != nil {
		if a.Backend = g.backendCert.apply(a.Backend); a.Backend.Invalid {
			// The check cannot be made as the Gateway says: the route
			// answers the failure status, never forwards unchecked.
			route.Filters = ir.HTTPFilters{}
			route.Backends, route.SessionPersistence = nil, nil
			route.DirectResponse = &ir.DirectResponse{StatusCode: 500} // HTTPRoute only
		}
	}
}

// apply returns b as the Gateway with client certificate c reaches it.
func (c *backendClientCert) apply(b *ir.Backend) *ir.Backend {
	if b == nil || b.Invalid || b.TLS == nil || b.TLS.ClientCertificate != nil {
		return b // an XBackend in mode ClientAndServer presents its own
	}
	if c.problem != nil {
		return &ir.Backend{Name: b.Name + unresolvedClientCertificate, Weight: b.Weight, Invalid: true}
	}
	b.Name += ClientCertificateSegment + c.cert.Name
	b.TLS.ClientCertificate = c.cert
	return b
}

// resolvedRefs is the Gateway's ResolvedRefs condition, set when the
// Gateway has a clientCertificateRef (the only reference of a Gateway
// outside its listeners that we resolve): False with the reference's
// reason (InvalidClientCertificateRef or RefNotPermitted); else False
// reason ListenersNotResolved when a listener has ResolvedRefs=False; else
// True (GatewayConditionResolvedRefs). nil for other Gateways, whose status
// is unchanged.
func (g *gatewayState) resolvedRefs() *metav1.Condition {
	if g.backendCert == nil {
		return nil
	}
	gen := g.obj.Generation
	if p := g.backendCert.problem; p != nil {
		c := condition(gwapiv1.GatewayConditionResolvedRefs, false, p.reason,
			p.msg+"; backends with a BackendTLSPolicy answer an error status instead of connecting without the client certificate", gen)
		return &c
	}
	var bad []string
	for _, l := range g.listeners {
		if !l.duplicate && (l.certProblem != nil || l.kindsProblem != nil || l.filterProblem != nil) {
			bad = append(bad, l.name)
		}
	}
	if len(bad) > 0 {
		c := condition(gwapiv1.GatewayConditionResolvedRefs, false, gwapiv1.GatewayReasonListenersNotResolved,
			"listeners with unresolved references: "+strings.Join(bad, ", ")+"; see the listener conditions", gen)
		return &c
	}
	c := condition(gwapiv1.GatewayConditionResolvedRefs, true, gwapiv1.GatewayReasonResolvedRefs, "all references resolved", gen)
	return &c
}
