package gatewayapi

import (
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// translateGatewayClasses finds the GatewayClasses whose spec.controllerName
// is ours and accepts them: status Accepted=True reason Accepted. Classes of
// other controllers get no status entry at all (their controller owns it).
//
// A class whose parametersRef the caller refused (Options.InvalidParameters)
// gets Accepted=False reason InvalidParameters instead.
//
// Not done yet: the optional SupportedVersion condition is not set, since it
// needs the installed CRDs' bundle version, which the snapshot lacks.
func (t *translator) translateGatewayClasses() {
	for _, gc := range t.res.GatewayClasses {
		if gc == nil || gc.Spec.ControllerName != t.controller {
			continue
		}
		t.classes[gc.Name] = gc
		st := &gwapiv1.GatewayClassStatus{SupportedFeatures: supportedFeatures()}
		if msg, bad := t.opts.InvalidParameters.class(gc.Name); bad {
			setCondition(&st.Conditions, condition(gwapiv1.GatewayClassConditionStatusAccepted, false,
				gwapiv1.GatewayClassReasonInvalidParameters, msg, gc.Generation))
		} else {
			setCondition(&st.Conditions, condition(gwapiv1.GatewayClassConditionStatusAccepted, true,
				gwapiv1.GatewayClassReasonAccepted, "GatewayClass is accepted by "+string(t.controller), gc.Generation))
		}
		t.status.GatewayClasses[gc.Name] = st
	}
}
