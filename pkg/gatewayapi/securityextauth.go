package gatewayapi

// SecurityPolicy spec.extAuth: the Gateway API's HTTPExternalAuthFilter
// (the HTTPRoute ExternalAuth filter's type) at any attachment level of
// the policy. It is validated and resolved by the filter's own function,
// extAuth (extauth.go), with the policy standing for the route: its
// backendRef in the policy's namespace, or in another one whose
// ReferenceGrant lets SecurityPolicies (gateway.xds-controller.dev) of the
// policy's namespace use it; a BackendTLSPolicy on the port applies. The
// check lands in ir.HTTPFilters SecurityExtAuth of every IR route the
// policy covers and is rendered as the filter's is (pkg/xdstranslator
// extauth.go): a route rule with its own ExternalAuth filter asks both,
// the policy's first, and a request must pass both.

import (
	"fmt"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// securityExtAuth validates spec.extAuth of policy p and resolves its
// backendRef: bad is a value the API or we do not accept (the type's CEL
// rules: grpc set with GRPC, http with HTTP; extAuth's rules: protocol
// and its config, http.path, header names,
// forwardBody.maxSize up to MaxExtAuthBody, port and namespace), refs a
// backendRef that does not resolve (reasons BackendNotFound, InvalidKind,
// RefNotPermitted) or whose BackendTLSPolicy cannot be honoured. In both
// cases out is nil, and the routes the policy covers answer 500.
func (t *translator) securityExtAuth(p *v1alpha1.SecurityPolicy, f *gwapiv1.HTTPExternalAuthFilter) (out *ir.ExtAuth, bad, refs *problem) {
	// The type's CEL rules, which the CRD holds and standalone mode has
	// no API server to apply: grpc with GRPC, http with HTTP.
	switch {
	case f.ExternalAuthProtocol == gwapiv1.HTTPRouteExternalAuthGRPCProtocol && f.GRPCAuthConfig == nil:
		return nil, &problem{"", "extAuth: grpc must be specified when protocol is GRPC"}, nil
	case f.ExternalAuthProtocol == gwapiv1.HTTPRouteExternalAuthHTTPProtocol && f.HTTPAuthConfig == nil:
		return nil, &problem{"", "extAuth: http must be specified when protocol is HTTP"}, nil
	}
	referrer := &routeState{key: RouteKey{Kind: KindSecurityPolicy, Namespace: p.Namespace, Name: p.Name}}
	res := t.extAuth(referrer, f)
	svc := string(deref(f.BackendRef.Namespace, gwapiv1.Namespace(p.Namespace))) + "/" + string(f.BackendRef.Name)
	switch {
	case len(res.bad) > 0:
		return nil, &problem{"", "extAuth: " + strings.Join(res.bad, "; ")}, nil
	case res.ref != nil:
		return nil, nil, &problem{res.ref.reason, "extAuth.backendRef: " + res.ref.msg}
	case res.auth == nil:
		return nil, nil, &problem{string(gwapiv1.RouteReasonBackendNotFound), fmt.Sprintf("extAuth.backendRef: the BackendTLSPolicy of %s cannot be honoured (see its status)", svc)}
	}
	return res.auth, nil, nil
}

// applyPolicyClientCert gives the TLS backend of r's SecurityPolicy check
// (r an IR route of a listener of g, owned by the caller, the policies
// just applied) g's client certificate, as applyBackendClientCert does
// for the rule's own check; the policy's check is copied, never changed
// in place (every route of the policy shares it). A clientCertificateRef
// that does not resolve makes r answer 500: the check is never made
// without the certificate the Gateway was told to present, nor skipped.
func (g *gatewayState) applyPolicyClientCert(r *ir.HTTPRoute) {
	a := r.Filters.SecurityExtAuth
	if g.backendCert == nil || a == nil || a.Backend.TLS == nil || a.Backend.TLS.ClientCertificate != nil {
		return
	}
	c := a.DeepCopy()
	if c.Backend = g.backendCert.apply(c.Backend); c.Backend.Invalid {
		r.Filters = ir.HTTPFilters{ResponseHeaders: r.Filters.ResponseHeaders}
		r.Backends, r.SessionPersistence, r.Retry = nil, nil, nil
		r.DirectResponse = &ir.DirectResponse{StatusCode: 500}
		return
	}
	r.Filters.SecurityExtAuth = c
}
