package provisioner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
)

// Options are the provisioner's own settings; the rest comes from the
// controller's Config (Install).
type Options struct {
	// EnvoyImage is the Envoy image when no GatewayParameters name one
	// (default infra.DefaultEnvoyImage).
	EnvoyImage string
	// XDSHost and XDSPort are where Envoy reaches the controller. Default:
	// <service-account>.<namespace>.svc (the controller's Service is named
	// after its ServiceAccount, and the xDS server certificate is issued
	// for that name) and the port of Config.XDSAddress.
	XDSHost string
	XDSPort uint32
	// IdentityPort is the identity service's port on XDSHost (default:
	// the port of Config.IdentityAddress).
	IdentityPort uint32
	// AgentImage is the image of the Envoy pods' SVID agent: the
	// controller's own (default infra.DefaultAgentImage).
	AgentImage string
	// StateOfTheWorld makes the fleets subscribe with state-of-the-world
	// ADS (bootstrap api_type GRPC). The default is delta ADS
	// (DELTA_GRPC): a change sends Envoy only the resources that changed,
	// where state of the world sends every resource of each changed type
	// (at 1000 routes, every cluster and ClusterLoadAssignment again).
	StateOfTheWorld bool
	// Log receives what the provisioner did (default: the Config's Log).
	Log *slog.Logger
}

// Install wires the provisioner into cfg: it registers our API types,
// watches GatewayParameters (they change the translation) and the Envoy
// pods of the controller's namespace (they change only the shared-mode
// EndpointSlices), resolves the parameters of every snapshot, and
// provisions the fleets on the leader. It fills cfg's defaults first.
func Install(cfg *kubernetes.Config, o Options) error {
	if err := cfg.Default(); err != nil {
		return err
	}
	if o.XDSPort == 0 {
		p, err := portOf("xDS", cfg.XDSAddress)
		if err != nil {
			return err
		}
		o.XDSPort = p
	}
	if o.IdentityPort == 0 {
		p, err := portOf("identity", cfg.IdentityAddress)
		if err != nil {
			return err
		}
		o.IdentityPort = p
	}
	o.XDSHost = cmp.Or(o.XDSHost, cfg.ServiceAccount+"."+cfg.Namespace+".svc")
	if o.Log == nil {
		o.Log = cfg.Log
	}
	prev := cfg.AddToScheme
	cfg.AddToScheme = func(s *runtime.Scheme) error {
		if prev != nil {
			if err := prev(s); err != nil {
				return err
			}
		}
		return v1alpha1.AddToScheme(s)
	}
	envoyPods := labels.SelectorFromSet(labels.Set{infra.LabelName: "envoy"})
	cfg.Hooks = kubernetes.Hooks{
		Watches:      []client.Object{&v1alpha1.GatewayParameters{}},
		InfraWatches: []client.Object{&corev1.Pod{}},
		Cache: map[client.Object]cache.ByObject{
			// The chart grants pods only in the controller's namespace.
			&corev1.Pod{}: {Namespaces: map[string]cache.Config{cfg.Namespace: {}}, Label: envoyPods},
		},
		Resolve: ResolveFunc(cfg.ControllerName, cfg.Ingress),
		Provisioner: &Provisioner{
			Namespace:    cfg.Namespace,
			EnvoyImage:   o.EnvoyImage,
			XDSHost:      o.XDSHost,
			XDSPort:      o.XDSPort,
			IdentityPort: o.IdentityPort,
			AgentImage:   cmp.Or(o.AgentImage, infra.DefaultAgentImage),
			Audience:     cfg.Audience,
			SotW:         o.StateOfTheWorld,
			Log:          o.Log,
		},
	}
	return nil
}

// portOf is the port of a listen address, which Envoy pods dial on the
// controller's Service.
func portOf(what, address string) (uint32, error) {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return 0, fmt.Errorf("%s address %q: %w", what, address, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%s address %q: no port Envoy could reach; set the port", what, address)
	}
	return uint32(p), nil
}

// errNotLeading stops a pass: this replica lost the lead.
var errNotLeading = errors.New("not leading")

// Provisioner makes the Envoy fleets match a snapshot (the
// kubernetes.Provisioner of the controller): per GatewayClass of ours with
// Shared Gateways, the shared fleet in the controller's namespace; per
// Shared Gateway, its Service and EndpointSlices (the shared fleet's pods);
// per Dedicated Gateway, its own fleet; and it deletes what is no longer
// desired (see makePlan). Every write goes through infra.Applier, which
// skips unchanged objects and checks the lead right before each write.
type Provisioner struct {
	// Namespace is the controller's (shared fleets, Envoy pods).
	Namespace string
	// EnvoyImage, XDSHost, XDSPort, IdentityPort, AgentImage: see
	// Options.
	EnvoyImage   string
	XDSHost      string
	XDSPort      uint32
	IdentityPort uint32
	AgentImage   string
	// Audience of the agents' projected tokens (the controller's
	// Config.Audience).
	Audience string
	// SotW: see Options.StateOfTheWorld.
	SotW bool
	Log  *slog.Logger

	mu            sync.Mutex
	synced        map[string]synced // by sync (what)
	planSignature string            // of the last pass (Provision's goroutine only)
}

// Provision runs one pass. in.Resolver must come from this package's
// Resolve. A failure of one fleet or Gateway does not stop the others; the
// errors are returned together (the pipeline retries). Losing the lead
// stops the pass without an error.
func (p *Provisioner) Provision(ctx context.Context, in kubernetes.ProvisionInput) error {
	r, ok := in.Resolver.(*Resolver)
	if !ok {
		return fmt.Errorf("provisioner: resolver %T is not the provisioner's", in.Resolver)
	}
	log := p.log()
	pl := makePlan(in.Resources, r)
	h3 := http3Ports(in.IR)
	// A pass that syncs or prunes other things than the last one (a
	// Gateway that changed mode, a class that lost its last Shared
	// Gateway) may have deleted what a remembered sync wrote: forget them.
	if sig := pl.signature(); sig != p.planSignature {
		p.forget()
		p.planSignature = sig
	}
	a := &infra.Applier{
		Client: in.Client,
		Reader: in.APIReader,
		BeforeWrite: func(context.Context) error {
			if !in.Leading() {
				return errNotLeading
			}
			return nil
		},
	}
	rend := &infra.Renderer{
		Namespace:  p.Namespace,
		EnvoyImage: p.EnvoyImage,
		XDS:        infra.XDSServer{Host: p.XDSHost, Port: p.XDSPort, ServerID: in.Identity.ServerID.String(), Delta: !p.SotW},
		Identity: infra.IdentityService{
			Host:       p.XDSHost,
			Port:       p.IdentityPort,
			AgentImage: p.AgentImage,
			Audience:   p.Audience,
		},
	}
	var pods corev1.PodList
	if len(pl.shared) > 0 {
		if err := in.Cache.List(ctx, &pods, client.InNamespace(p.Namespace), client.MatchingLabels{infra.LabelName: "envoy"}); err != nil {
			return fmt.Errorf("provisioner: listing the Envoy pods: %w", err)
		}
	}

	var errs []error
	step := func(what string, err error) bool {
		if err != nil {
			if errors.Is(err, errNotLeading) {
				return false
			}
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
		return true
	}
	now := time.Now()
	for _, gc := range pl.sharedFleets {
		f := infra.SharedFleet(p.Namespace, gc.Name)
		if !step("shared fleet "+f.Name, p.syncSharedFleet(ctx, a, rend, in, r, gc, f, now)) {
			return p.lostLead(log)
		}
	}
	for _, gw := range pl.shared {
		f := infra.SharedFleet(p.Namespace, string(gw.Spec.GatewayClassName))
		eps := infra.EndpointsFromPods(podsOf(pods.Items, f))
		if !step("Gateway "+gw.Namespace+"/"+gw.Name, p.syncSharedGateway(ctx, a, rend, r, gw, eps, h3[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}])) {
			return p.lostLead(log)
		}
	}
	for _, gw := range pl.dedicated {
		if !step("Gateway "+gw.Namespace+"/"+gw.Name, p.syncDedicated(ctx, a, rend, in, r, gw, now, h3[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}])) {
			return p.lostLead(log)
		}
	}
	for _, class := range pl.prunedClasses {
		n, err := a.Prune(ctx, infra.ClassPruneScope(p.Namespace, class), nil)
		if n > 0 {
			log.Info("shared fleet removed (no Shared Gateway left)", "class", class, "objects", n)
			p.forget()
		}
		if !step("pruning the shared fleet of "+class, err) {
			return p.lostLead(log)
		}
	}
	for _, gw := range pl.departed {
		n, err := a.Prune(ctx, infra.GatewayPruneScope(gw), nil)
		if n > 0 {
			log.Info("infrastructure of a Gateway that left our classes removed", "gateway", types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}, "objects", n)
			p.forget()
		}
		if !step("pruning Gateway "+gw.Namespace+"/"+gw.Name, err) {
			return p.lostLead(log)
		}
	}
	return errors.Join(errs...)
}

// http3Ports are the listener ports with HTTP/3 of each Gateway of x
// (infra.HTTP3Ports), for their Services' UDP ports.
func http3Ports(x *ir.IR) map[types.NamespacedName][]gwapiv1.PortNumber {
	out := map[types.NamespacedName][]gwapiv1.PortNumber{}
	if x == nil {
		return out
	}
	for _, g := range x.Gateways {
		if ports := infra.HTTP3Ports(g); len(ports) > 0 {
			out[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}] = ports
		}
	}
	return out
}

func (p *Provisioner) lostLead(log *slog.Logger) error {
	log.Info("provisioning stopped: this replica no longer leads")
	return nil
}

func (p *Provisioner) syncSharedFleet(ctx context.Context, a *infra.Applier, rend *infra.Renderer, in kubernetes.ProvisionInput, r *Resolver, gc *gwapiv1.GatewayClass, f infra.Fleet, now time.Time) error {
	objs, err := rend.SharedFleet(infra.SharedFleetInput{Class: gc, Params: infra.SharedFleetParams(r.classParams[gc.Name]), TrustBundle: in.Identity.Authority.BundlePEM()})
	if err != nil {
		return err
	}
	_, err = p.sync(ctx, a, "shared fleet "+f.Namespace+"/"+f.Name, infra.ClassPruneScope(p.Namespace, gc.Name), objs)
	return err
}

func (p *Provisioner) syncSharedGateway(ctx context.Context, a *infra.Applier, rend *infra.Renderer, r *Resolver, gw *gwapiv1.Gateway, eps []infra.Endpoint, h3 []gwapiv1.PortNumber) error {
	params, _ := r.Effective(gw)
	objs, err := rend.SharedGateway(infra.SharedGatewayInput{Gateway: gw, Params: params, BindPort: r.BindPortFor, Endpoints: eps, HTTP3Ports: h3})
	if err != nil {
		return err
	}
	// The scope holds the Gateway's dedicated fleet too: a Gateway that
	// moved from Dedicated to Shared loses it here.
	what := "Gateway " + gw.Namespace + "/" + gw.Name + " (Shared)"
	if skipped, err := p.sync(ctx, a, what, infra.GatewayPruneScope(gw), objs); err != nil || skipped {
		return err
	}
	// And the Endpoints and EndpointSlices Kubernetes wrote while its
	// Service selected the dedicated fleet: Kubernetes leaves them behind
	// when the selector goes.
	n, err := a.PruneKubernetesEndpoints(ctx, gw.Namespace, infra.GatewayServiceName(gw))
	if n > 0 {
		p.log().Info("infrastructure pruned", "what", what, "deleted", n, "kind", "Kubernetes' Endpoints/EndpointSlices")
		p.forget()
	}
	return err
}

func (p *Provisioner) syncDedicated(ctx context.Context, a *infra.Applier, rend *infra.Renderer, in kubernetes.ProvisionInput, r *Resolver, gw *gwapiv1.Gateway, now time.Time, h3 []gwapiv1.PortNumber) error {
	params, _ := r.Effective(gw)
	objs, err := rend.Dedicated(infra.DedicatedInput{Gateway: gw, Params: params, BindPort: r.BindPortFor, TrustBundle: in.Identity.Authority.BundlePEM(), HTTP3Ports: h3})
	if err != nil {
		return err
	}
	// Prunes the shared-mode EndpointSlices of a Gateway that moved from
	// Shared to Dedicated.
	_, err = p.sync(ctx, a, "Gateway "+gw.Namespace+"/"+gw.Name+" (Dedicated)", infra.GatewayPruneScope(gw), objs)
	return err
}

// syncFresh is how long a sync whose objects did not change since it last
// succeeded is not done again: every pipeline run offers the provisioner
// its input, most runs change only routes, and a sync costs a GET per
// object and a LIST per pruned kind. A pass after it repairs objects
// someone else changed or deleted.
const syncFresh = 30 * time.Second

// synced remembers, per sync, the fingerprint of what it applied and
// pruned and when it last succeeded.
type synced struct {
	fingerprint string
	at          time.Time
}

// fingerprint names scope and every object of objs with its applied hash
// (infra.AppliedHash).
func fingerprint(scope infra.PruneScope, objs []client.Object) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %v\n", scope.Namespace, scope.Selector)
	for _, o := range objs {
		h, err := infra.AppliedHash(o)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s %s/%s %s\n", o.GetObjectKind().GroupVersionKind(), o.GetNamespace(), o.GetName(), h)
	}
	return b.String(), nil
}

// fresh says whether the sync what of fp succeeded within syncFresh.
func (p *Provisioner) fresh(what, fp string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.synced[what]
	return ok && s.fingerprint == fp && time.Since(s.at) < syncFresh
}

// forget drops every remembered sync: the next pass does them all.
func (p *Provisioner) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.synced = nil
}

// done records that the sync what of fp succeeded now.
func (p *Provisioner) done(what, fp string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.synced == nil {
		p.synced = map[string]synced{}
	}
	p.synced[what] = synced{fp, time.Now()}
}

// sync applies objs, prunes the rest of scope (infra.Applier.Sync), and
// logs what changed. It does nothing and reports skipped when the same
// objects and scope succeeded within syncFresh.
func (p *Provisioner) sync(ctx context.Context, a *infra.Applier, what string, scope infra.PruneScope, objs []client.Object) (skipped bool, err error) {
	fp, err := fingerprint(scope, objs)
	if err != nil {
		return false, err
	}
	if p.fresh(what, fp) {
		return true, nil
	}
	res, err := a.Apply(ctx, objs)
	if res.Applied > 0 {
		p.log().Info("infrastructure applied", "what", what, "applied", res.Applied, "unchanged", res.Unchanged)
	}
	if err != nil {
		return false, err
	}
	n, err := a.Prune(ctx, scope, objs)
	if n > 0 {
		p.log().Info("infrastructure pruned", "what", what, "deleted", n)
		p.forget() // what it deleted may be what another sync remembers
	}
	if err == nil {
		p.done(what, fp)
	}
	return false, err
}

func (p *Provisioner) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.Default()
}

// podsOf are the pods of f among pods.
func podsOf(pods []corev1.Pod, f infra.Fleet) []corev1.Pod {
	sel := labels.SelectorFromSet(infra.FleetSelector(f))
	var out []corev1.Pod
	for i := range pods {
		if sel.Matches(labels.Set(pods[i].Labels)) {
			out = append(out, pods[i])
		}
	}
	return out
}
