package kubernetes

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// The hooks where pkg/infra plugs in: the deployment mode of each Gateway
// (from GatewayParameters), the bind ports, the Service that exposes a
// Gateway, and the provisioner. Without them the controller runs every
// Gateway in Shared mode, binds listener ports as they are, and provisions
// nothing.

// Mode is a Gateway's deployment mode.
type Mode string

// Modes (docs/controller.md).
const (
	ModeShared    Mode = "Shared"
	ModeDedicated Mode = "Dedicated"
)

// Resolver answers, for one snapshot, the per-Gateway questions that
// depend on our parameters CRD. pkg/infra implements it.
type Resolver interface {
	// ScopeFor names the proxy scope (fleet) that serves gw.
	ScopeFor(gw *gwapiv1.Gateway) string
	// BindPortFor is the port Envoy binds for a listener port of gw
	// (infra.BindPort).
	BindPortFor(gw *gwapiv1.Gateway, port gwapiv1.PortNumber) uint32
	// ServiceFor is the Service that exposes gw; its load balancer
	// ingress (else its ClusterIP) becomes the Gateway's status.addresses.
	ServiceFor(gw *gwapiv1.Gateway) types.NamespacedName
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
	// Identity issues the fleets' xDS client certificates.
	Identity *Identity
}

// Hooks connect pkg/infra to the pipeline. The zero value is valid.
type Hooks struct {
	// Watches are further object types (our GatewayParameters) whose
	// changes re-run the pipeline. They are cached in full.
	Watches []client.Object
	// Resolve builds each snapshot's Resolver; nil gives SharedResolver.
	Resolve ResolveFunc
	// Provisioner provisions the fleets; nil provisions nothing.
	Provisioner Provisioner
}

// SharedResolver is the resolver until GatewayParameters are read: every
// Gateway in Shared mode.
type SharedResolver struct{}

// ScopeFor is ScopeFor(ModeShared, gw).
func (SharedResolver) ScopeFor(gw *gwapiv1.Gateway) string { return ScopeFor(ModeShared, gw) }

// BindPortFor is the listener port itself.
// TODO(infra): infra.BindPort(mode, gw, port).
func (SharedResolver) BindPortFor(_ *gwapiv1.Gateway, port gwapiv1.PortNumber) uint32 {
	return uint32(port)
}

// ServiceFor is ServiceFor(gw).
func (SharedResolver) ServiceFor(gw *gwapiv1.Gateway) types.NamespacedName { return ServiceFor(gw) }

// ScopeFor is the proxy scope of gw in mode: "gatewayclass/<class>" for
// Shared, "gateway/<namespace>/<name>" for Dedicated.
func ScopeFor(mode Mode, gw *gwapiv1.Gateway) string {
	if mode == ModeDedicated {
		return "gateway/" + gw.Namespace + "/" + gw.Name
	}
	return "gatewayclass/" + string(gw.Spec.GatewayClassName)
}

// ServiceFor is the Service of gw in both modes: `<gateway>-<class>` in
// the Gateway's namespace.
func ServiceFor(gw *gwapiv1.Gateway) types.NamespacedName {
	return types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name + "-" + string(gw.Spec.GatewayClassName)}
}

// translateOptions are the translation options for a resolver.
func translateOptions(controller gwapiv1.GatewayController, r Resolver) gatewayapi.Options {
	return gatewayapi.Options{
		ControllerName: controller,
		Scope:          r.ScopeFor,
		BindPort:       r.BindPortFor,
	}
}
