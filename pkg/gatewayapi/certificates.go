package gatewayapi

import (
	"crypto/tls"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// listenerTLS resolves an HTTPS or TLS listener's tls (Gateway listener
// tls.mode and tls.certificateRefs). For HTTPS, mode must be Terminate (the
// default). A TLS listener in mode Passthrough relays TLS by SNI and needs
// no certificates; in mode Terminate (TLSRouteModeTerminate) it needs them.
// Every certificateRef must name a core Secret of type kubernetes.io/tls
// whose tls.crt and tls.key form a valid key pair; a Secret in another
// namespace needs a ReferenceGrant from Gateways (ListenerSets, for a
// ListenerSet's listener) of the listener's namespace. Any bad ref sets ResolvedRefs=False (reason
// InvalidCertificateRef, or RefNotPermitted for a missing grant) and keeps
// the listener from being programmed.
func (t *translator) listenerTLS(l *listenerState) {
	cfg := l.spec.TLS
	mode := gwapiv1.TLSModeTerminate
	if cfg != nil {
		mode = deref(cfg.Mode, gwapiv1.TLSModeTerminate)
	}
	switch {
	case l.protocol == ir.ProtocolTLS && mode == gwapiv1.TLSModePassthrough:
		l.tls = &ir.ListenerTLS{Mode: ir.TLSPassthrough}
		return
	case mode != gwapiv1.TLSModeTerminate:
		l.notAccepted = &problem{string(gwapiv1.ListenerReasonUnsupportedValue),
			fmt.Sprintf("tls.mode %q is not valid for protocol %s", mode, l.protocol)}
		return
	case cfg == nil || len(cfg.CertificateRefs) == 0:
		l.certProblem = &problem{string(gwapiv1.ListenerReasonInvalidCertificateRef), fmt.Sprintf("a %s listener that terminates TLS needs tls.certificateRefs", l.protocol)}
		return
	}
	certs, p := t.listenerCertificates(l)
	if p != nil {
		l.certProblem = p
		return
	}
	l.tls = &ir.ListenerTLS{Mode: ir.TLSTerminate, Certificates: certs, ClientValidation: t.frontendValidation(l)}
}

// listenerCertificates loads the certificates of the certificateRefs of l,
// a listener that terminates TLS (certificate), in the order of the refs,
// or the problem of every ref that cannot be used (the first one's
// reason, every message). The Secrets it reads are recorded as l's
// (translator certReads), so that a Secret's rotation loads them again
// without a full translation (Cache.rotate).
func (t *translator) listenerCertificates(l *listenerState) ([]*ir.Certificate, *problem) {
	t.certListener = l
	defer func() { t.certListener = nil }()
	var certs []*ir.Certificate
	var first *problem
	var msgs []string
	for _, ref := range l.spec.TLS.CertificateRefs {
		c, p := t.certificate(l.ownerKind(), l.namespace(), "certificateRef", string(gwapiv1.ListenerReasonInvalidCertificateRef), ref)
		if p != nil {
			if first == nil {
				first = p
			}
			msgs = append(msgs, p.msg)
			continue
		}
		certs = append(certs, c)
	}
	if first != nil {
		return nil, &problem{first.reason, joinMessages(msgs)}
	}
	return certs, nil
}

// certificate resolves a reference to a certificate made by an object of
// kind fromKind (Gateway, ListenerSet or XBackend) in namespace gwNS: a
// listener certificateRef, a Gateway's spec.tls.backend
// clientCertificateRef or an XBackend's spec.tls.clientCertificateRef
// (field names which in messages). It must name a core Secret of type
// kubernetes.io/tls whose tls.crt and tls.key form a valid key pair (else a
// problem with reason invalid); a Secret in another namespace needs a
// ReferenceGrant from fromKind in gwNS (else reason RefNotPermitted, which
// listeners and Gateways spell alike; ListenerSet: "ReferenceGrants applied
// to a Gateway are not inherited by child ListenerSets").
func (t *translator) certificate(fromKind, gwNS, field, invalid string, ref gwapiv1.SecretObjectReference) (*ir.Certificate, *problem) {
	group := deref(ref.Group, "")
	kind := deref(ref.Kind, "Secret")
	ns := string(deref(ref.Namespace, gwapiv1.Namespace(gwNS)))
	name := ns + "/" + string(ref.Name)
	bad := func(format string, a ...any) (*ir.Certificate, *problem) {
		return nil, &problem{invalid, field + " " + name + ": " + fmt.Sprintf(format, a...)}
	}
	if group != "" || kind != "Secret" {
		return bad("%s is not a core Secret", groupKind(group, kind))
	}
	fromGroup := gwapiv1.GroupName
	if fromKind == "XBackend" {
		fromGroup = XBackendGroup
	}
	if ns != gwNS && !t.grantAllows(fromGroup, fromKind, gwNS, "", "Secret", ns, string(ref.Name)) {
		return nil, &problem{string(gwapiv1.ListenerReasonRefNotPermitted),
			fmt.Sprintf("%s %s: no ReferenceGrant in namespace %s allows %ss of namespace %s to use it", field, name, ns, fromKind, gwNS)}
	}
	s := t.secret(nn(ns, string(ref.Name)))
	if s == nil {
		return bad("Secret not found")
	}
	if s.Type != corev1.SecretTypeTLS {
		return bad("Secret type is %q, not %q", s.Type, corev1.SecretTypeTLS)
	}
	chain, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	if _, err := tls.X509KeyPair(chain, key); err != nil {
		return bad("tls.crt and tls.key are not a valid PEM key pair: %v", err)
	}
	return &ir.Certificate{Name: name, CertificateChain: chain, PrivateKey: key}, nil
}

func groupKind[G, K ~string](group G, kind K) string {
	if group == "" {
		return "core/" + string(kind)
	}
	return string(group) + "/" + string(kind)
}
