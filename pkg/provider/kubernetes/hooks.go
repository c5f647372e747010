package kubernetes

import (
	"cmp"
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// The hooks where the provisioner (pkg/provisioner, built on pkg/infra)
// plugs in: the deployment mode of each Gateway (from GatewayParameters),
// the bind ports, the Service that exposes a Gateway, the parameters that
// are refused, and the provisioner itself. Without them the controller runs
// every Gateway in Shared mode, binds listener ports as they are, and
// provisions nothing.

// Resolver answers, for one snapshot, the per-Gateway questions that
// depend on our parameters CRD. pkg/provisioner implements it.
type Resolver interface {
	// ScopeFor names the proxy scope (fleet) that serves gw.
	ScopeFor(gw *gwapiv1.Gateway) string
	// BindPortFor is the port Envoy binds for a listener port of gw
	// (infra.BindPorts.BindPort).
	BindPortFor(gw *gwapiv1.Gateway, port gwapiv1.PortNumber) uint32
	// RouteStatsFor says whether Envoy keeps per-route statistics for the
	// routes on gw's listeners (GatewayParameters spec.metrics.routeStats;
	// gatewayapi.Options.RouteStats).
	RouteStatsFor(gw *gwapiv1.Gateway) bool
	// EdgeFor are the limits on the clients of gw's HTTP and HTTPS
	// listeners (GatewayParameters spec.edge; gatewayapi.Options.Edge),
	// nil for the defaults.
	EdgeFor(gw *gwapiv1.Gateway) *ir.HTTPEdge
	// ServiceFor is the Service that exposes gw; its load balancer
	// ingress (else its ClusterIP) becomes the Gateway's status.addresses.
	ServiceFor(gw *gwapiv1.Gateway) types.NamespacedName
	// ExternalIPsAllowed says whether gw's class lets its spec.addresses
	// become its Service's spec.externalIPs (GatewayParameters
	// spec.gatewayPolicy.allow ExternalIPs); status.GatewayAddresses
	// reports them AddressNotUsable otherwise.
	ExternalIPsAllowed(gw *gwapiv1.Gateway) bool
	// InvalidParameters are the GatewayClasses and Gateways whose
	// parametersRef is refused (nil: none); the translation sets their
	// Accepted=False reason InvalidParameters.
	InvalidParameters() *gatewayapi.InvalidParameters
}

// ResolveFunc builds the Resolver of one snapshot. r reads the manager's
// cache (for instance the GatewayParameters listed in Hooks.Watches).
type ResolveFunc func(ctx context.Context, r client.Reader, res *resources.Resources) (Resolver, error)

// Provisioner makes the Envoy fleets match a translation. It runs on the
// leader only, in its own goroutine, with the latest input (inputs that
// arrive while it works are coalesced).
type Provisioner interface {
	Provision(ctx context.Context, in ProvisionInput) error
}

// ProvisionInput is what one provisioning pass gets.
type ProvisionInput struct {
	// Resources is the snapshot that was translated (read-only).
	Resources *resources.Resources
	// IR is its translation (read-only): Gateways with their scopes.
	IR *ir.IR
	// Resolver is the snapshot's resolver.
	Resolver Resolver
	// Leading must be checked right before every write.
	Leading func() bool
	// Identity is the controller's CA (the fleets' trust bundle) and xDS
	// server identity.
	Identity *Identity
	// Client is the manager's client: it writes, and its reads of Secrets
	// and ConfigMaps go to the API server (they are never cached).
	Client client.Client
	// Cache reads the informer caches (the types of Hooks.Watches and
	// Hooks.InfraWatches among them).
	Cache client.Reader
	// APIReader reads from the API server, uncached.
	APIReader client.Reader
}

// Hooks connect the provisioner to the pipeline. The zero value is valid.
type Hooks struct {
	// Watches are further object types (our GatewayParameters) whose
	// changes re-run the pipeline. They are cached in full.
	Watches []client.Object
	// InfraWatches are object types whose changes re-run only the
	// provisioner, with the last translation (the Envoy pods: their IPs and
	// readiness feed the shared-mode EndpointSlices, never the
	// translation).
	InfraWatches []client.Object
	// Cache restricts the caches of Watches and InfraWatches (namespace,
	// labels), as cache.Options.ByObject does.
	Cache map[client.Object]cache.ByObject
	// Resolve builds each snapshot's Resolver; nil gives SharedResolver.
	Resolve ResolveFunc
	// Provisioner provisions the fleets; nil provisions nothing.
	Provisioner Provisioner
}

// SharedResolver is the resolver without a provisioner: every Gateway in
// Shared mode, listener ports bound as they are, no parameters read.
type SharedResolver struct{}

// ScopeFor is infra.Scope(Shared, gw): gatewayclass/<class>.
func (SharedResolver) ScopeFor(gw *gwapiv1.Gateway) string {
	return infra.Scope(v1alpha1.ModeShared, gw)
}

// BindPortFor is the listener port itself: without a provisioner no
// Envoy fleet exists whose bind ports could differ.
func (SharedResolver) BindPortFor(_ *gwapiv1.Gateway, port gwapiv1.PortNumber) uint32 {
	return uint32(port)
}

// RouteStatsFor is false: no parameters are read.
func (SharedResolver) RouteStatsFor(*gwapiv1.Gateway) bool { return false }

// EdgeFor is nil (the defaults): no parameters are read.
func (SharedResolver) EdgeFor(*gwapiv1.Gateway) *ir.HTTPEdge { return nil }

// ServiceFor is the Gateway's Service in both modes:
// <gateway>-<class> (infra.GatewayServiceName) in the Gateway's namespace.
func (SharedResolver) ServiceFor(gw *gwapiv1.Gateway) types.NamespacedName {
	return types.NamespacedName{Namespace: gw.Namespace, Name: infra.GatewayServiceName(gw)}
}

// ExternalIPsAllowed is false: no parameters are read, so no class allows
// them.
func (SharedResolver) ExternalIPsAllowed(*gwapiv1.Gateway) bool { return false }

// InvalidParameters is nil: no parameters are read.
func (SharedResolver) InvalidParameters() *gatewayapi.InvalidParameters { return nil }

// IngressConfig is the controller's placement of the Ingresses of our
// IngressClasses: cfg with its Namespace defaulting to the controller's
// namespace, its GatewayClass to ingress.DefaultGatewayClass, and
// RequireGatewayClass set (only a GatewayClass of ours has a fleet).
// Listeners are on ports 80 and 443 of the class's Service (the
// provisioner maps them to bind ports).
func IngressConfig(namespace string, cfg ingress.Config) ingress.Config {
	cfg.Namespace = cmp.Or(cfg.Namespace, namespace)
	cfg.GatewayClass = cmp.Or(cfg.GatewayClass, ingress.DefaultGatewayClass)
	cfg.RequireGatewayClass = true
	return cfg
}

// TranslateOptions are the translation options of the controller for a
// resolver (the pipeline's, and `config-dump --diff`'s local translation).
func TranslateOptions(controller gwapiv1.GatewayController, r Resolver) gatewayapi.Options {
	return gatewayapi.Options{
		ControllerName:    controller,
		Scope:             r.ScopeFor,
		BindPort:          r.BindPortFor,
		RouteStats:        r.RouteStatsFor,
		Edge:              r.EdgeFor,
		InvalidParameters: r.InvalidParameters(),
		// The Gateway's Service carries spec.addresses (infra.Renderer);
		// Envoy binds the wildcard address in its pods.
		AddressesOnService: true,
		// What else an Envoy pod listens on (its loopback admin among
		// them): no XBackend may point there.
		ProxyPorts: infra.ReservedPorts(),
	}
}
