package gatewayapi

// BackendTLSPolicy (GEP-1897, gateway.networking.k8s.io/v1): how Envoy
// originates TLS to the Service ports a policy targets, and the policy's
// status.ancestors (one entry per Gateway of ours whose routes reach a
// targeted port).

import (
	"cmp"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// policyState is one BackendTLSPolicy during translation.
type policyState struct {
	obj *gwapiv1.BackendTLSPolicy
	// tls is what Envoy verifies; nil when the policy cannot be honoured
	// (then the backends it targets answer the failure status, never
	// plaintext).
	tls *ir.BackendTLS
	// notAccepted is Accepted=False: NoValidCACertificate, Conflicted or
	// Invalid.
	notAccepted *problem
	// refs is ResolvedRefs=False: InvalidCACertificateRef or InvalidKind.
	refs *problem
	// ancestors are the Gateways of ours whose routes use a targeted
	// port, each with the number of routes (routeMemo ancestors) that make
	// it one.
	ancestors map[types.NamespacedName]int
}

// policyTarget is a Service port a policy targets: sectionName is the
// Service port's name, "" for every port.
type policyTarget struct {
	svc         types.NamespacedName
	sectionName string
}

// readBackendTLSPolicies validates every BackendTLSPolicy and indexes the
// Service ports they target. Of several policies targeting the same port
// (the same Service and sectionName, or both none) the oldest wins
// (creationTimestamp, then namespace/name); the others are Accepted=False
// reason Conflicted (GEP-713 conflict resolution). A policy with a
// sectionName takes precedence over one without for its port.
func (t *translator) readBackendTLSPolicies() {
	ps := slices.Clone(t.res.BackendTLSPolicies)
	slices.SortStableFunc(ps, func(a, b *gwapiv1.BackendTLSPolicy) int {
		return cmp.Or(compareTime(a.CreationTimestamp, b.CreationTimestamp), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, p := range ps {
		if p == nil {
			continue
		}
		st := t.backendTLSPolicy(p)
		t.policies = append(t.policies, st)
		for _, ref := range p.Spec.TargetRefs {
			if ref.Group != "" || ref.Kind != "Service" {
				continue
			}
			k := policyTarget{svc: nn(p.Namespace, string(ref.Name)), sectionName: string(deref(ref.SectionName, ""))}
			if on := t.policyByTarget[k]; len(on) > 0 && !slices.Contains(on, st) && st.notAccepted == nil {
				st.notAccepted = &problem{string(gwapiv1.PolicyReasonConflicted), fmt.Sprintf("BackendTLSPolicy %s/%s, older, already targets Service %s%s", on[0].obj.Namespace, on[0].obj.Name, k.svc, sectionSuffix(k.sectionName))}
			}
			if !slices.Contains(t.policyByTarget[k], st) {
				t.policyByTarget[k] = append(t.policyByTarget[k], st)
			}
		}
	}
}

func sectionSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " port " + s
}

// backendTLSPolicy validates one policy (BackendTLSPolicyValidation):
// caCertificateRefs name core ConfigMaps in the policy's namespace whose
// "ca.crt" holds PEM certificates (another kind is ResolvedRefs=False
// InvalidKind; a missing ConfigMap or key, or no certificate in it,
// InvalidCACertificateRef), or wellKnownCACertificates is System (the
// system bundle), never both; without a usable CA the policy is
// Accepted=False NoValidCACertificate. hostname is the SNI and, without
// subjectAltNames, the name the certificate must carry; subjectAltNames
// (Hostname or URI) replace it as the names checked.
func (t *translator) backendTLSPolicy(p *gwapiv1.BackendTLSPolicy) *policyState {
	st := &policyState{obj: p, ancestors: map[types.NamespacedName]int{}}
	v := p.Spec.Validation
	invalid := func(format string, a ...any) *policyState {
		st.notAccepted = &problem{string(gwapiv1.PolicyReasonInvalid), fmt.Sprintf(format, a...)}
		return st
	}
	if msg := checkPreciseHostname(string(v.Hostname)); msg != "" {
		return invalid("validation.hostname %s %s", q(string(v.Hostname)), msg)
	}
	out := &ir.BackendTLS{SNI: string(v.Hostname)}
	for i, san := range v.SubjectAltNames {
		switch san.Type {
		case gwapiv1.HostnameSubjectAltNameType:
			if msg := checkHostname(string(san.Hostname)); msg != "" || san.URI != "" {
				return invalid("validation.subjectAltNames[%d]: a Hostname entry needs a valid hostname, and only it", i)
			}
			out.SubjectAltNames = append(out.SubjectAltNames, string(san.Hostname))
		case gwapiv1.URISubjectAltNameType:
			if !strings.Contains(string(san.URI), "://") || san.Hostname != "" {
				return invalid("validation.subjectAltNames[%d]: a URI entry needs an absolute URI, and only it", i)
			}
			out.SubjectAltNames = append(out.SubjectAltNames, string(san.URI))
		default:
			return invalid("validation.subjectAltNames[%d]: type %s is not Hostname or URI", i, q(string(san.Type)))
		}
	}
	switch {
	case v.WellKnownCACertificates != nil && len(v.CACertificateRefs) > 0:
		return invalid("validation: caCertificateRefs and wellKnownCACertificates are mutually exclusive")
	case v.WellKnownCACertificates != nil:
		if *v.WellKnownCACertificates != gwapiv1.WellKnownCACertificatesSystem {
			return invalid("validation.wellKnownCACertificates %s is not supported (System is)", q(string(*v.WellKnownCACertificates)))
		}
		out.WellKnownCACertificates = true
		st.tls = out
		return st
	}
	var refProblems []*problem
	for _, ref := range v.CACertificateRefs {
		pem, p := t.caCertificates(p.Namespace, ref)
		if p != nil {
			refProblems = append(refProblems, p)
			continue
		}
		out.CACertificates = append(out.CACertificates, pem...)
	}
	st.refs = summarize(refProblems)
	if len(out.CACertificates) == 0 {
		msg := "no caCertificateRefs and no wellKnownCACertificates"
		if st.refs != nil {
			msg = "no usable CA certificate: " + st.refs.msg
		}
		st.notAccepted = &problem{string(gwapiv1.BackendTLSPolicyReasonNoValidCACertificate), msg}
		return st
	}
	st.tls = out
	return st
}

// caCertificates reads one caCertificateRef of a policy in namespace ns:
// the PEM certificates of a ConfigMap's "ca.crt".
func (t *translator) caCertificates(ns string, ref gwapiv1.LocalObjectReference) ([]byte, *problem) {
	name := ns + "/" + string(ref.Name)
	if ref.Group != "" || ref.Kind != "ConfigMap" {
		return nil, &problem{string(gwapiv1.BackendTLSPolicyReasonInvalidKind), fmt.Sprintf("caCertificateRef %s: %s is not a core ConfigMap", name, groupKind(ref.Group, ref.Kind))}
	}
	out, msg := t.caBundle(ns, string(ref.Name))
	if msg != "" {
		return nil, &problem{string(gwapiv1.BackendTLSPolicyReasonInvalidCACertificateRef), fmt.Sprintf("caCertificateRef %s: %s", name, msg)}
	}
	return out, nil
}

// caBundle reads the PEM certificates of the "ca.crt" of ConfigMap ns/name
// (blocks that are not certificates are skipped), or says why there are
// none.
func (t *translator) caBundle(ns, name string) ([]byte, string) {
	cm := t.configMaps[nn(ns, name)]
	if cm == nil {
		return nil, "ConfigMap not found"
	}
	data, ok := cm.Data["ca.crt"]
	if !ok {
		return nil, "the ConfigMap has no ca.crt"
	}
	var out []byte
	rest := []byte(data)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			continue
		}
		out = append(out, pem.EncodeToMemory(b)...)
	}
	if len(out) == 0 {
		return nil, "ca.crt holds no PEM certificate"
	}
	return out, ""
}

// backendTLSFor returns the policy of a Service port (the oldest that
// targets it by port name, else the oldest that targets the Service), or
// nil. Every policy targeting the port, the conflicted ones too, gets the
// route's Gateways as ancestors (recorded in the route being read,
// translator reading, which adds them: Cache.read).
func (t *translator) backendTLSFor(r *routeState, svc *corev1.Service, sp *corev1.ServicePort) *policyState {
	byPort := t.policyByTarget[policyTarget{svc: nn(svc.Namespace, svc.Name), sectionName: sp.Name}]
	byService := t.policyByTarget[policyTarget{svc: nn(svc.Namespace, svc.Name)}]
	for _, st := range append(slices.Clip(byPort), byService...) {
		for _, p := range r.parents {
			if t.reading != nil {
				t.reading.ancestors = append(t.reading.ancestors, ancestor{st, p.gw.nn})
			}
		}
	}
	switch {
	case len(byPort) > 0:
		return byPort[0]
	case len(byService) > 0:
		return byService[0]
	}
	return nil
}

// policyStatus renders status.ancestors of every policy that a route of
// ours reaches: one entry per Gateway, with Accepted and ResolvedRefs.
func (t *translator) policyStatus() map[types.NamespacedName]*gwapiv1.PolicyStatus {
	all := map[types.NamespacedName]*gwapiv1.PolicyStatus{}
	for _, st := range t.policies {
		var gws []types.NamespacedName
		for g, n := range st.ancestors {
			if n > 0 {
				gws = append(gws, g)
			}
		}
		if len(gws) == 0 {
			continue
		}
		slices.SortFunc(gws, func(a, b types.NamespacedName) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
		gen := st.obj.Generation
		out := &gwapiv1.PolicyStatus{Ancestors: []gwapiv1.PolicyAncestorStatus{}}
		for _, g := range gws {
			ns := gwapiv1.Namespace(g.Namespace)
			a := gwapiv1.PolicyAncestorStatus{
				AncestorRef:    gwapiv1.ParentReference{Group: ptr(gwapiv1.Group(gwapiv1.GroupName)), Kind: ptr(gwapiv1.Kind("Gateway")), Namespace: &ns, Name: gwapiv1.ObjectName(g.Name)},
				ControllerName: t.controller,
			}
			if p := st.notAccepted; p != nil {
				setCondition(&a.Conditions, condition(gwapiv1.PolicyConditionAccepted, false, p.reason, p.msg, gen))
			} else {
				setCondition(&a.Conditions, condition(gwapiv1.PolicyConditionAccepted, true, gwapiv1.PolicyReasonAccepted, "policy is accepted", gen))
			}
			if p := st.refs; p != nil {
				setCondition(&a.Conditions, condition(gwapiv1.BackendTLSPolicyConditionResolvedRefs, false, p.reason, p.msg, gen))
			} else {
				setCondition(&a.Conditions, condition(gwapiv1.BackendTLSPolicyConditionResolvedRefs, true, gwapiv1.BackendTLSPolicyReasonResolvedRefs, "all references resolved", gen))
			}
			out.Ancestors = append(out.Ancestors, a)
		}
		all[nn(st.obj.Namespace, st.obj.Name)] = out
	}
	return all
}
