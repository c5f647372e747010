package gatewayapi

// Frontend client certificate validation (Gateway spec.tls.frontend,
// GEP-91): which CA certificates the client certificates of a TLS-
// terminating listener must chain to, and whether a client without a
// valid one is let in.

import (
	"fmt"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// frontendValidation applies spec.tls.frontend to a TLS-terminating
// listener l (HTTPS, or TLS in mode Terminate): the perPort entry of the
// listener's port, else default. Its caCertificateRefs must name core
// ConfigMaps whose "ca.crt" holds PEM certificates, in the Gateway's
// namespace or granted by a ReferenceGrant from Gateways, or
// ClusterTrustBundles (frontendCA); a bad one makes
// the listener ResolvedRefs=False (InvalidCACertificateKind,
// RefNotPermitted or InvalidCACertificateRef) and Accepted=False reason
// NoValidCACertificate: it is not served rather than served unchecked. Mode
// AllowValidOnly (the default) requires a client certificate that chains to
// them; AllowInsecureFallback lets every client in (the backend decides)
// and sets the Gateway's InsecureFrontendValidationMode condition.
func (t *translator) frontendValidation(l *listenerState) *ir.ClientValidation {
	tc := l.gw.obj.Spec.TLS
	if tc == nil || tc.Frontend == nil {
		return nil
	}
	v := tc.Frontend.Default.Validation
	for _, pp := range tc.Frontend.PerPort {
		if pp.Port == l.spec.Port {
			v = pp.TLS.Validation
			break
		}
	}
	if v == nil {
		return nil
	}
	out := &ir.ClientValidation{}
	var ps []*problem
	for _, ref := range v.CACertificateRefs {
		pem, p := t.frontendCA(l.gw.obj.Namespace, ref)
		if p != nil {
			ps = append(ps, p)
			continue
		}
		out.CACertificates = append(out.CACertificates, pem...)
	}
	if bad := summarize(ps); bad != nil || len(out.CACertificates) == 0 {
		if bad == nil {
			bad = &problem{string(gwapiv1.ListenerReasonInvalidCACertificateRef), "tls.frontend validation names no CA certificate"}
		}
		reason, msg := bad.reason, bad.msg
		l.certProblem = &problem{reason, msg}
		l.notAccepted = &problem{string(gwapiv1.ListenerReasonNoValidCACertificate), "client certificate validation: " + msg}
		return nil
	}
	switch mode := v.Mode; mode {
	case "", gwapiv1.AllowValidOnly:
	case gwapiv1.AllowInsecureFallback:
		out.AllowInsecureFallback = true
		l.gw.insecureFrontend = true
	default:
		l.notAccepted = &problem{string(gwapiv1.ListenerReasonUnsupportedValue), fmt.Sprintf("tls.frontend validation mode %s is not AllowValidOnly or AllowInsecureFallback", q(string(mode)))}
		return nil
	}
	return out
}

// frontendCA reads one caCertificateRef of a Gateway in namespace gwNS:
// a core ConfigMap, in gwNS or granted by a ReferenceGrant, or a
// certificates.k8s.io ClusterTrustBundle (cluster-scoped: its namespace
// must be unset, which the experimental CRD's CEL rule enforces, and no
// ReferenceGrant applies; GEP-5075).
func (t *translator) frontendCA(gwNS string, ref gwapiv1.ObjectReference) ([]byte, *problem) {
	ns := string(deref(ref.Namespace, gwapiv1.Namespace(gwNS)))
	src, ok := caSourceOf(ref.Group, ref.Kind, ns, string(ref.Name))
	if !ok {
		return nil, &problem{string(gwapiv1.ListenerReasonInvalidCACertificateKind), fmt.Sprintf("caCertificateRef %s: %s is not a core ConfigMap or a certificates.k8s.io ClusterTrustBundle", ns+"/"+string(ref.Name), groupKind(ref.Group, ref.Kind))}
	}
	switch {
	case src.kind == kindClusterTrustBundle && ref.Namespace != nil:
		return nil, &problem{string(gwapiv1.ListenerReasonInvalidCACertificateRef), fmt.Sprintf("caCertificateRef %s: a ClusterTrustBundle is cluster-scoped; the reference must not specify a namespace (%s)", src, q(string(*ref.Namespace)))}
	case src.kind == kindConfigMap && ns != gwNS && !t.grantAllows(gwapiv1.GroupName, "Gateway", gwNS, "", kindConfigMap, ns, string(ref.Name)):
		return nil, &problem{string(gwapiv1.ListenerReasonRefNotPermitted), fmt.Sprintf("caCertificateRef %s: no ReferenceGrant in namespace %s allows Gateways of namespace %s to use it", src, ns, gwNS)}
	}
	pem, msg := t.caBundle(src)
	if msg != "" {
		return nil, &problem{string(gwapiv1.ListenerReasonInvalidCACertificateRef), fmt.Sprintf("caCertificateRef %s: %s", src, msg)}
	}
	return pem, nil
}
