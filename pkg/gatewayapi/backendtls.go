package gatewayapi

// BackendTLSPolicy (GEP-1897, gateway.networking.k8s.io/v1): how Envoy
// originates TLS to the Service ports a policy targets. Its attachment,
// precedence, conflicts and status.ancestors (one entry per Gateway of ours
// whose routes reach a targeted port) are every policy kind's (policy.go);
// here are its validation, what it renders and its registration.

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// backendTLSPolicyKind registers BackendTLSPolicy (policy.go): it
// targets Services and their ports, and renders the TLS of the backends of
// HTTPRoutes, GRPCRoutes, TLSRoutes and Ingresses (serviceBackend), of
// XTelemetryPolicy collectors (telemetry.go) and of SecurityPolicy extAuth
// services (securityextauth.go); the
// effect of a policy is the *ir.BackendTLS Envoy verifies.
var backendTLSPolicyKind = registerPolicyKind(resources.BackendTLSPolicyKind, policyKindSpec[*gwapiv1.BackendTLSPolicy]{
	targets: []targetKind{targetService},
	targetRefs: func(p *gwapiv1.BackendTLSPolicy) []gwapiv1.LocalPolicyTargetReferenceWithSectionName {
		return p.Spec.TargetRefs
	},
	status:        func(p *gwapiv1.BackendTLSPolicy) *gwapiv1.PolicyStatus { return &p.Status },
	validate:      (*translator).backendTLSPolicy,
	resolvedRefs:  true,
	references:    backendTLSReferences,
	backendRoutes: []string{KindHTTPRoute, KindGRPCRoute, KindTLSRoute, KindIngress, KindXTelemetryPolicy, "Gateway", KindListenerSet, KindSecurityPolicy},
	backend:       backendTLS,
})

// backendTLSReferences are the ConfigMaps a policy's caCertificateRefs
// name (core ConfigMaps, in the policy's namespace).
func backendTLSReferences(p *gwapiv1.BackendTLSPolicy) (secrets, configMaps []types.NamespacedName) {
	for _, ref := range p.Spec.Validation.CACertificateRefs {
		if ref.Group == "" && ref.Kind == "ConfigMap" {
			configMaps = append(configMaps, nn(p.Namespace, string(ref.Name)))
		}
	}
	return nil, configMaps
}

// backendTLS renders the policy of a Service port on b, a backend of a
// route of kind: Envoy originates TLS as the policy says (Backend.TLS);
// a policy that cannot be honoured marks a TLSRoute's backend TLSInvalid
// (settled per listener: listenerState backendTLS) and replaces any other
// kind's backend with an Invalid one (its share answers the failure
// status, never plaintext).
func backendTLS(st *policyState, kind string, b *ir.Backend) *ir.Backend {
	switch tls, _ := st.effect.(*ir.BackendTLS); {
	case tls != nil:
		b.TLS = tls.DeepCopy()
	case kind == KindTLSRoute:
		b.TLSInvalid = true
	default:
		return &ir.Backend{Name: b.Name, Invalid: true}
	}
	return b
}

// backendTLSPolicy validates one policy (backendTLSValidation) and records
// its effect, or why it is not Accepted, and its ResolvedRefs problems.
func (t *translator) backendTLSPolicy(p *gwapiv1.BackendTLSPolicy, st *policyState) {
	tls, invalid, refs := t.backendTLSValidation(p.Namespace, p.Spec.Validation, "")
	st.notAccepted, st.refs = invalid, refs
	if tls != nil {
		st.effect = tls
	}
}

// backendTLSValidation validates a BackendTLSPolicyValidation of an object
// in namespace ns (a BackendTLSPolicy's spec.validation, an XBackend's
// spec.tls.validation) into the TLS Envoy originates:
// caCertificateRefs name core ConfigMaps in ns whose "ca.crt" holds PEM
// certificates, or ClusterTrustBundles whose trustBundle does (another
// kind is ResolvedRefs=False InvalidKind; a missing ConfigMap,
// ClusterTrustBundle or key, or no certificate in it,
// InvalidCACertificateRef), or
// wellKnownCACertificates is System (the system bundle), never both;
// without a usable CA, invalid has reason NoValidCACertificate. hostname
// (or defaultSNI when hostname is empty: an XBackend's externalHostname)
// is the SNI and, without subjectAltNames, the name the certificate must
// carry; subjectAltNames (Hostname or URI) replace it as the names
// checked. It returns the TLS (nil when invalid), why it is invalid
// (Accepted=False), and the problems of its references (ResolvedRefs).
func (t *translator) backendTLSValidation(ns string, v gwapiv1.BackendTLSPolicyValidation, defaultSNI string) (tls *ir.BackendTLS, invalid, refs *problem) {
	bad := func(format string, a ...any) (*ir.BackendTLS, *problem, *problem) {
		return nil, &problem{string(gwapiv1.PolicyReasonInvalid), fmt.Sprintf(format, a...)}, nil
	}
	sni := string(v.Hostname)
	if sni == "" {
		sni = defaultSNI
	}
	if msg := checkPreciseHostname(sni); msg != "" {
		return bad("validation.hostname %s %s", q(sni), msg)
	}
	out := &ir.BackendTLS{SNI: sni}
	for i, san := range v.SubjectAltNames {
		switch san.Type {
		case gwapiv1.HostnameSubjectAltNameType:
			if msg := checkHostname(string(san.Hostname)); msg != "" || san.URI != "" {
				return bad("validation.subjectAltNames[%d]: a Hostname entry needs a valid hostname, and only it", i)
			}
			out.SubjectAltNames = append(out.SubjectAltNames, string(san.Hostname))
		case gwapiv1.URISubjectAltNameType:
			if !strings.Contains(string(san.URI), "://") || san.Hostname != "" {
				return bad("validation.subjectAltNames[%d]: a URI entry needs an absolute URI, and only it", i)
			}
			out.SubjectAltNames = append(out.SubjectAltNames, string(san.URI))
		default:
			return bad("validation.subjectAltNames[%d]: type %s is not Hostname or URI", i, q(string(san.Type)))
		}
	}
	switch {
	case v.WellKnownCACertificates != nil && len(v.CACertificateRefs) > 0:
		return bad("validation: caCertificateRefs and wellKnownCACertificates are mutually exclusive")
	case v.WellKnownCACertificates != nil:
		if *v.WellKnownCACertificates != gwapiv1.WellKnownCACertificatesSystem {
			return bad("validation.wellKnownCACertificates %s is not supported (System is)", q(string(*v.WellKnownCACertificates)))
		}
		out.WellKnownCACertificates = true
		return out, nil, nil
	}
	var refProblems []*problem
	for _, ref := range v.CACertificateRefs {
		pem, p := t.caCertificates(ns, ref)
		if p != nil {
			refProblems = append(refProblems, p)
			continue
		}
		out.CACertificates = append(out.CACertificates, pem...)
	}
	refs = summarize(refProblems)
	if len(out.CACertificates) == 0 {
		msg := "no caCertificateRefs and no wellKnownCACertificates"
		if refs != nil {
			msg = "no usable CA certificate: " + refs.msg
		}
		return nil, &problem{string(gwapiv1.BackendTLSPolicyReasonNoValidCACertificate), msg}, refs
	}
	return out, nil, refs
}

// caCertificates reads one caCertificateRef of a policy in namespace ns:
// the PEM certificates of a ConfigMap's "ca.crt" in ns, or of a
// ClusterTrustBundle's trustBundle (cluster-scoped, by name: GEP-5075;
// caSource).
func (t *translator) caCertificates(ns string, ref gwapiv1.LocalObjectReference) ([]byte, *problem) {
	src, ok := caSourceOf(ref.Group, ref.Kind, ns, string(ref.Name))
	if !ok {
		return nil, &problem{string(gwapiv1.BackendTLSPolicyReasonInvalidKind), fmt.Sprintf("caCertificateRef %s: %s is not a core ConfigMap or a certificates.k8s.io ClusterTrustBundle", ns+"/"+string(ref.Name), groupKind(ref.Group, ref.Kind))}
	}
	out, msg := t.caBundle(src)
	if msg != "" {
		return nil, &problem{string(gwapiv1.BackendTLSPolicyReasonInvalidCACertificateRef), fmt.Sprintf("caCertificateRef %s: %s", src, msg)}
	}
	return out, nil
}
