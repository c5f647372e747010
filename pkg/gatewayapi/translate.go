// Package gatewayapi translates a resource snapshot of Gateway API objects
// into the IR and the status every object should have. Translate is a pure
// function: no I/O, no clock, and the same snapshot always gives the same
// result.
package gatewayapi

import (
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// ControllerName is the GatewayClass spec.controllerName that marks a class
// as ours.
const ControllerName gwapiv1.GatewayController = "xds-controller.dev/gateway-controller"

// Options tune a translation to its deployment. The zero value is valid.
type Options struct {
	// ControllerName overrides ControllerName when set.
	ControllerName gwapiv1.GatewayController
	// Scope names the proxy scope (Envoy fleet) that serves gw. Default:
	// "gatewayclass/<class>" (the shared fleet of the class).
	Scope func(gw *gwapiv1.Gateway) string
	// BindPort maps a Gateway listener port to the port Envoy binds.
	// Default: the listener's own port.
	BindPort func(gw *gwapiv1.Gateway, port gwapiv1.PortNumber) uint32
	// RouteStats says whether Envoy keeps per-route statistics for the
	// HTTPRoute and GRPCRoute rules on gw's listeners (ir.HTTPRoute
	// StatName; GatewayParameters spec.metrics.routeStats). Default: no.
	RouteStats func(gw *gwapiv1.Gateway) bool
	// Edge are the limits on the clients of gw's HTTP and HTTPS listeners
	// (ir.Listener Edge; GatewayParameters spec.edge), nil for the
	// defaults. Default: nil for every Gateway.
	Edge func(gw *gwapiv1.Gateway) *ir.HTTPEdge
	// InvalidParameters are the GatewayClasses and Gateways whose
	// parametersRef the caller refused (parameters.go). Default: none.
	InvalidParameters *InvalidParameters
	// AddressesOnService, when true, means that a Gateway's spec.addresses
	// are requested from the Kubernetes Service that exposes it (the
	// provisioner writes them there; pkg/status reports whether they were
	// assigned), so every listener binds the wildcard address inside the
	// Envoy pod, and any number of IPAddress entries is accepted. When false
	// (standalone mode) the one requested IP address is the address Envoy
	// binds, and a second one is refused (UnsupportedAddress). The types
	// are validated the same way in both cases (gatewayAddress).
	AddressesOnService bool
	// DNSResolvers are the DNS servers ("ip:port", IPv4 or IPv6) Envoy
	// resolves the host names of XBackends of type ExternalHostname with
	// (ir.Backend DNSResolvers). Default: none, Envoy's default resolver.
	DNSResolvers []string
	// ProxyPorts are the ports the proxy itself listens on besides its
	// Gateway listeners (Envoy's admin, readiness and metrics listeners,
	// the SVID agent's probe), on the pod's (or host's) loopback. An
	// ExternalHostname XBackend on one of them is refused: its name may
	// resolve to 127.0.0.1, and Envoy would send a tenant's requests to
	// its own admin interface. Default: none.
	ProxyPorts []uint32
	// OIDCProviders are the OpenID provider configurations that the
	// SecurityPolicies' oidc issuers discovered (pkg/oidcdiscovery), by
	// OIDCDiscoveryKey: the I/O of discovery happens before the
	// translation, which reads its result. A policy whose issuer has no
	// entry (or a failed or Pending one) and no explicit endpoints is
	// ResolvedRefs=False. Default: none.
	OIDCProviders map[string]OIDCProvider
	// SecretKey is the controller's key from which the keys Envoy needs
	// and no user gives are derived (HKDF-SHA256): the HMAC key of an
	// oidc policy's session cookies. It must be the same for every
	// controller replica and across restarts (the controller's CA key:
	// pki.Authority DerivationKey), or logins made through one Envoy are
	// refused by another. Default: none, and oidc policies are
	// Accepted=False.
	SecretKey []byte
	// RateLimitService is the global rate-limit service's gRPC address,
	// "host:port" (RateLimitServiceBackend), which the TrafficPolicies'
	// global limits go through: the controller's
	// --ratelimit-service-address, standalone mode's
	// --ratelimit-grpc-address when it has a service. Default: none, and
	// a policy with global limits is Accepted=False reason
	// RateLimitServiceMissing.
	RateLimitService string
}

// Result is the output of one translation.
type Result struct {
	IR     *ir.IR
	Status *Status
}

// Status is the status the translation computed for every object it owns
// (GatewayClasses of ours, their Gateways, and the routes attached to
// them). Conditions carry the object's generation as observedGeneration and
// a zero lastTransitionTime: the status writer keeps the previous time when
// a condition did not change.
type Status struct {
	GatewayClasses map[string]*gwapiv1.GatewayClassStatus
	Gateways       map[types.NamespacedName]*gwapiv1.GatewayStatus
	// ListenerSets are the status of every ListenerSet whose parentRef
	// names a Gateway of ours.
	ListenerSets map[types.NamespacedName]*gwapiv1.ListenerSetStatus
	// Routes are the status of every route of ours, of every kind: only
	// the parents entries of our controller. (HTTPRouteStatus,
	// GRPCRouteStatus and the other kinds' status are each a RouteStatus.)
	Routes map[RouteKey]*gwapiv1.RouteStatus
	// Policies are the status of the policies of every kind (PolicyKinds)
	// that reach a Gateway of ours: only the ancestors entries of our
	// controller.
	Policies map[PolicyKey]*gwapiv1.PolicyStatus
	// Warnings are findings that no object's status can carry, in a
	// deterministic order: parentRefs of routes that name a Gateway
	// that does not exist, or whose GatewayClass does not (no controller
	// owns such a parent, so the spec gives it no status), and EndpointSlice
	// addresses that were dropped. Standalone mode prints them; a controller
	// in a cluster may log them.
	Warnings []string
}

// RouteKey names one route object: its kind (a route kind's name,
// KindHTTPRoute...: RouteKinds; KindIngress for an Ingress) and
// namespace/name. It is the IR's ObjectKey, which IR routes carry as their
// Origin.
type RouteKey = ir.ObjectKey

// Translate computes the IR and the status for res from scratch (a run of
// an empty Cache; Cache.Translate translates only what changed since its
// last run). res must be sorted (resources.Resources.Sort) and is not
// modified; of several objects of one kind with the same namespace/name,
// the first counts. A nil res translates as an empty snapshot.
//
// The steps, each in its own file:
//   - gatewayclass.go: which GatewayClasses are ours (spec.controllerName);
//   - gateway.go, listeners.go, conflicts.go, certificates.go: the Gateways
//     of those classes, their addresses and listeners (protocol, conflicts,
//     TLS certificates, allowedRoutes); backendcert.go: the client
//     certificate a Gateway presents to TLS backends (spec.tls.backend);
//     routability.go: spec.addresses[].routability; casources.go: the
//     ConfigMaps and ClusterTrustBundles caCertificateRefs name;
//   - listenersets.go: the ListenerSets those Gateways admit, whose
//     listeners join the Gateway's, and their status;
//   - routekinds.go: the table of route kinds (each kind's reader, status
//     hook, listener protocols, order);
//   - routes.go: routes of every kind attached to those Gateways
//     (parentRefs, listeners, hostnames, kinds sharing a hostname) and
//     their status; defaultgateways.go: the default Gateways a route's
//     useDefaultGateways adds to its parentRefs;
//   - httproute.go, grpcroute.go, l4routes.go: what each kind's rules
//     are; rules.go,
//     filters.go, backends.go: the rule machinery they share (filters,
//     backendRefs, ReferenceGrants); session.go: HTTPRoute and GRPCRoute
//     rules' sessionPersistence; extauth.go: the ExternalAuth filter of
//     rules and of listeners (filters.requests); xbackend.go,
//     xbackendstatus.go: XBackend
//     backendRefs (external host names, selected Pods) and their
//     status.ancestors;
//   - validation.go: the schema rules (CRD patterns, lengths, CEL) and
//     Envoy's constraints every user-supplied value must meet, since in
//     standalone mode no API server checked them;
//   - precedence.go: the order of the routes of each listener;
//   - policy.go, policystatus.go: policy attachment (GEP-713) for every
//     policy kind, and their status; backendtls.go: BackendTLSPolicy;
//     backendtraffic.go: XBackendTrafficPolicy; telemetry.go:
//     XTelemetryPolicy;
//   - incremental.go: what a Cache keeps from one run to the next;
//     assemble.go: the IR and status of a run; refs.go: the Cache's
//     indexes as pkg/ingress resolves references through them (Cache.Refs);
//   - translator.go: the translator, which holds one run's snapshot,
//     indexes and the state of every Gateway and listener.
func Translate(res *resources.Resources, opts Options) *Result {
	return NewCache().Translate(res, opts)
}
