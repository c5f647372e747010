package gatewayapi

import (
	"slices"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// SupportedFeatures are the Gateway API conformance features xds-controller
// claims (sigs.k8s.io/gateway-api/pkg/features names). It is the one list:
// every GatewayClass of ours reports it in status.supportedFeatures, and the
// conformance run claims the same. A feature joins only when its
// conformance tests pass.
var SupportedFeatures = []features.FeatureName{
	features.SupportGateway,
	features.SupportHTTPRoute,
	features.SupportReferenceGrant,
}

// supportedFeatures is SupportedFeatures as GatewayClass status wants it:
// sorted by name (GatewayClassStatus.SupportedFeatures).
func supportedFeatures() []gwapiv1.SupportedFeature {
	out := make([]gwapiv1.SupportedFeature, 0, len(SupportedFeatures))
	for _, f := range SupportedFeatures {
		out = append(out, gwapiv1.SupportedFeature{Name: gwapiv1.FeatureName(f)})
	}
	slices.SortFunc(out, func(a, b gwapiv1.SupportedFeature) int {
		return strings.Compare(string(a.Name), string(b.Name))
	})
	return out
}
