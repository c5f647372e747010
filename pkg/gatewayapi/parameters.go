package gatewayapi

import (
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// InvalidParameters lists the parametersRefs that the caller refused: a
// GatewayClass's spec.parametersRef or a Gateway's
// spec.infrastructure.parametersRef that names a missing object, a group or
// kind the implementation does not read, or parameters it cannot use. The
// translator does not read parameters itself (they are our CRD, resolved
// by the controller); it only turns these refusals into status:
//
//   - a GatewayClass listed here gets Accepted=False reason
//     InvalidParameters with the message;
//   - a Gateway listed here gets Accepted=False reason InvalidParameters
//     (and Programmed=False): it is not served, like any Gateway that is not
//     accepted.
//
// Which Gateways a refused class drags along is the caller's decision: it
// lists them under Gateways.
type InvalidParameters struct {
	// GatewayClasses maps a class name to why its parameters are refused.
	GatewayClasses map[string]string
	// Gateways maps a Gateway to why its parameters are refused.
	Gateways map[types.NamespacedName]string
}

// class reports whether the parameters of class are refused, and why.
func (p *InvalidParameters) class(name string) (string, bool) {
	if p == nil {
		return "", false
	}
	msg, ok := p.GatewayClasses[name]
	return msg, ok
}

// gateway is the refusal of the Gateway's parameters, or nil.
func (p *InvalidParameters) gateway(gw types.NamespacedName) *problem {
	if p == nil {
		return nil
	}
	msg, ok := p.Gateways[gw]
	if !ok {
		return nil
	}
	return &problem{string(gwapiv1.GatewayReasonInvalidParameters), msg}
}
