package translate

import (
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// editListenerPolicy is one random edit of a ListenerPolicy (world.edit):
// another listener of its target or the whole target, PROXY protocol on,
// optional or off (listeners sharing a port then disagree), TLS versions
// or cipher suites (one of them unknown), an access log (one operator
// unknown), HTTP/3 on or off (on HTTP listeners Invalid, on a shared
// HTTPS port Conflicted when the others disagree), or the spec of
// another one. o is v as world.edit holds it.
func (w *world) editListenerPolicy(o object, v *v1alpha1.ListenerPolicy) string {
	switch w.rng.IntN(6) {
	case 0: // another listener of the target, or the whole of it
		if len(v.Spec.TargetRefs) > 0 {
			v.Spec.TargetRefs[0].SectionName = []*gwapiv1.SectionName{nil, ptrTo(gwapiv1.SectionName(w.oneOf(w.sections)))}[w.rng.IntN(2)]
			return "targetRef sectionName"
		}
	case 1: // PROXY protocol on, optional, or off: shared ports disagree
		v.Spec.ProxyProtocol = []*v1alpha1.ProxyProtocolSettings{nil, {}, {Optional: true}}[w.rng.IntN(3)]
		return "proxyProtocol"
	case 2:
		v.Spec.TLS = []*v1alpha1.ListenerTLSSettings{nil, {MinVersion: ptrTo(v1alpha1.TLSVersion13)},
			{MaxVersion: ptrTo(v1alpha1.TLSVersion12), CipherSuites: []string{w.oneOf([]string{"AES128-SHA", "RC4-MD5"})}}}[w.rng.IntN(3)]
		return "tls"
	case 3:
		v.Spec.AccessLog = []*v1alpha1.AccessLogSettings{nil, {Disabled: true}, {Text: ptrTo("%RESPONSE_CODE%")},
			{JSON: map[string]string{"path": w.oneOf([]string{"%REQ(:PATH)%", "%BAD%"})}}}[w.rng.IntN(4)]
		return "accessLog"
	case 4: // HTTP/3 on or off: the port's QUIC listener and alt-svc
		v.Spec.HTTP3 = []*v1alpha1.HTTP3Settings{nil, {}}[w.rng.IntN(2)]
		return "http3"
	}
	return w.swap(o, "Spec")
}
