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
// conformance run (conformance/) claims the same. A feature joins only when
// its conformance tests pass in both deployment modes (make conformance
// MODE=shared|dedicated TRY_FEATURES=...). Names are those of Gateway API
// v1.7.0 (HTTPRouteRetry and HTTPRouteRetryBackendTimeout no longer exist
// there).
var SupportedFeatures = []features.FeatureName{
	// GATEWAY-HTTP core.
	features.SupportGateway,
	features.SupportHTTPRoute,
	features.SupportReferenceGrant,

	// Gateway extended.
	features.SupportGatewayPort8080,
	features.SupportGatewayHTTPSListenerDetectMisdirectedRequests,
	features.SupportGatewayFrontendClientCertificateValidation,
	features.SupportGatewayFrontendClientCertificateValidationInsecureFallback,
	features.SupportGatewayHTTPListenerIsolation,
	features.SupportGatewayInfrastructure,
	features.SupportGatewayAddressEmpty,
	// GatewayStaticAddresses: spec.addresses asked of the Gateway's
	// Service (infra.Renderer), checked in status (status.GatewayAddresses).
	features.SupportGatewayStaticAddresses,
	// GatewayBackendClientCertificate: spec.tls.backend (backendcert.go).
	features.SupportGatewayBackendClientCertificate,
	// ListenerSet (GEP-1713): listenersets.go.
	features.SupportListenerSet,
	// GatewayRouteHostnameIntersectionPrecedence (v1.7.0): routes sharing
	// a virtual host rank by their own hostname (precedence.go, l4routes.go).
	features.SupportGatewayRouteHostnameIntersectionPrecedence,

	// HTTPRoute extended.
	features.SupportHTTPRouteDestinationPortMatching,
	features.SupportHTTPRouteBackendRequestHeaderModification,
	features.SupportHTTPRouteQueryParamMatching,
	features.SupportHTTPRouteMethodMatching,
	features.SupportHTTPRouteResponseHeaderModification,
	features.SupportHTTPRoutePortRedirect,
	features.SupportHTTPRouteSchemeRedirect,
	features.SupportHTTPRoutePathRedirect,
	features.SupportHTTPRouteHostRewrite,
	features.SupportHTTPRoutePathRewrite,
	features.SupportHTTPRouteRequestMirror,
	features.SupportHTTPRouteRequestMultipleMirrors,
	features.SupportHTTPRouteRequestPercentageMirror,
	features.SupportHTTPRouteRequestTimeout,
	features.SupportHTTPRouteBackendTimeout,
	features.SupportHTTPRouteParentRefPort,
	features.SupportHTTPRouteBackendProtocolH2C,
	features.SupportHTTPRouteBackendProtocolWebSocket,
	features.SupportHTTPRouteNamedRouteRule,
	features.SupportHTTPRouteCORS,
	features.SupportHTTPRoute303RedirectStatusCode,
	features.SupportHTTPRoute307RedirectStatusCode,
	features.SupportHTTPRoute308RedirectStatusCode,
	// v1.7.0 standard: retries by status code and on connection errors
	// (httproute.go retry; Envoy retry_on connect-failure,refused-stream),
	// and URLRewrite on a backendRef (backends.go).
	features.SupportHTTPRouteRetryCodes,
	features.SupportHTTPRouteRetryConnectionError,
	features.SupportHTTPRouteBackendURLRewrite,

	// BackendTLSPolicy (GATEWAY-HTTP extended).
	features.SupportBackendTLSPolicy,
	features.SupportBackendTLSPolicySANValidation,

	// GATEWAY-GRPC core and extended.
	features.SupportGRPCRoute,
	features.SupportGRPCRouteNamedRouteRule,
	// GRPCRouteRequestHeaderModifier (v1.7.0): the shared filter code.
	features.SupportGRPCRouteRequestHeaderModifier,

	// GATEWAY-TLS, GATEWAY-TCP and GATEWAY-UDP core and extended.
	// TLSRouteModeMixed: a Terminate and a Passthrough listener on one port
	// (standard channel from v1.7.0).
	features.SupportTLSRoute,
	features.SupportTLSRouteModeTerminate,
	features.SupportTLSRouteModeMixed,
	features.SupportTCPRoute,
	features.SupportUDPRoute,

	// Experimental channel (issue 27).
	// GatewayListenerFilters: a Gateway's or ListenerSet's listener
	// filters.requests of type ExternalAuth, as Envoy ext_authz before
	// routing (extauth.go; no conformance test in v1.7.0).
	features.SupportGatewayListenerFilters,
	// Also without a conformance test in v1.7.0:
	// address routability (GEP-5093, routability.go; pkg/infra, pkg/status),
	// Cluster included; ClusterTrustBundle as a CA of BackendTLSPolicy and
	// of frontend client certificate validation (GEP-5075, casources.go).
	features.SupportGatewayAddressRoutability,
	features.SupportGatewayAddressRoutabilityCluster,
	features.SupportClusterTrustBundle,
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
