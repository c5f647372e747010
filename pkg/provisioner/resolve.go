package provisioner

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/provider/kubernetes"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// Resolver is one snapshot's resolution of our GatewayParameters: for
// every GatewayClass of ours and each of its Gateways, the parameters in
// force (or why they are refused), the deployment mode, and the bind
// ports. It implements kubernetes.Resolver, and the provisioner reads the
// rest of its answers. Build it with Resolve; it is immutable.
type Resolver struct {
	// classes are our GatewayClasses by name; classParams their resolved
	// parameters (nil without a parametersRef), for the valid ones.
	classes     map[string]*gwapiv1.GatewayClass
	classParams map[string]*v1alpha1.GatewayParametersSpec
	// gateways are the Gateways of our classes whose parameters (and
	// class's) are valid, in the snapshot's order, each with the listeners
	// of the ListenerSets it admits (gatewayapi.MergeListenerSets);
	// effective their parameters (infra.Effective).
	gateways  []*gwapiv1.Gateway
	effective map[types.NamespacedName]v1alpha1.GatewayParametersSpec
	// refused are the Gateways of our classes whose parameters (or
	// class's) are refused.
	refused []*gwapiv1.Gateway
	invalid *gatewayapi.InvalidParameters
	ports   *infra.BindPorts
}

var _ kubernetes.Resolver = (*Resolver)(nil)

// Resolve resolves the parametersRefs of the GatewayClasses of controller
// in res and of their Gateways against params (every GatewayParameters of
// the cluster), then assigns the bind ports of the Gateways whose
// parameters are valid, keeping the ports in force on the live Services of
// res (infra.PreviousBindPorts). It is pure.
//
// classGateways are the Gateways that stand for IngressClasses
// (ingress.ClassGateways): they are resolved, served and provisioned like
// the Gateways of res (their parametersRef is the GatewayParameters of
// their class's IngressClassParameters), except that one whose name a
// Gateway of res holds is left out (pkg/ingress reports it).
//
// A reference is refused (gatewayapi.InvalidParameters) when its group is
// not gateway.xds-controller.dev or its kind not GatewayParameters, when a
// class's reference has no namespace, when the object does not exist, or
// when infra.Validate refuses its spec; a Gateway's reference also when
// its spec sets what its class's policy does not allow
// (infra.CheckGatewayParameters: the Gateway's namespace owns it, the
// class's parameters are the cluster admin's). A Gateway of a class whose
// parameters are refused is refused too: its effective parameters cannot
// be known.
func Resolve(res *resources.Resources, params []*v1alpha1.GatewayParameters, controller gwapiv1.GatewayController, classGateways ...*gwapiv1.Gateway) *Resolver {
	byKey := make(map[types.NamespacedName]*v1alpha1.GatewayParameters, len(params))
	for _, p := range params {
		byKey[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	r := &Resolver{
		classes:     map[string]*gwapiv1.GatewayClass{},
		classParams: map[string]*v1alpha1.GatewayParametersSpec{},
		effective:   map[types.NamespacedName]v1alpha1.GatewayParametersSpec{},
		invalid: &gatewayapi.InvalidParameters{
			GatewayClasses: map[string]string{},
			Gateways:       map[types.NamespacedName]string{},
		},
	}
	for _, gc := range res.GatewayClasses {
		if gc == nil || gc.Spec.ControllerName != controller {
			continue
		}
		if _, dup := r.classes[gc.Name]; dup {
			continue
		}
		r.classes[gc.Name] = gc
		spec, err := classParameters(gc.Spec.ParametersRef, byKey)
		if err != nil {
			r.invalid.GatewayClasses[gc.Name] = err.Error()
			continue
		}
		r.classParams[gc.Name] = spec
	}
	seen := map[types.NamespacedName]bool{}
	all := slices.Clone(res.Gateways)
	for _, gw := range classGateways {
		if !slices.ContainsFunc(res.Gateways, func(o *gwapiv1.Gateway) bool { return o != nil && o.Namespace == gw.Namespace && o.Name == gw.Name }) {
			all = append(all, gw)
		}
	}
	for _, gw := range all {
		if gw == nil {
			continue
		}
		class := string(gw.Spec.GatewayClassName)
		key := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
		if _, ours := r.classes[class]; !ours || seen[key] {
			continue
		}
		seen[key] = true
		if msg, bad := r.invalid.GatewayClasses[class]; bad {
			r.invalid.Gateways[key] = fmt.Sprintf("the parameters of GatewayClass %s are invalid: %s", class, msg)
			r.refused = append(r.refused, gw)
			continue
		}
		var ref *gwapiv1.LocalParametersReference
		if gw.Spec.Infrastructure != nil {
			ref = gw.Spec.Infrastructure.ParametersRef
		}
		spec, err := gatewayParameters(gw.Namespace, ref, byKey)
		if err == nil {
			err = checkGatewayParameters(gw.Namespace, ref, spec, r.classParams[class])
		}
		if err != nil {
			r.invalid.Gateways[key] = err.Error()
			r.refused = append(r.refused, gw)
			continue
		}
		r.effective[key] = infra.Effective(r.classParams[class], spec)
		r.gateways = append(r.gateways, gw)
	}
	// The listeners of the ListenerSets a Gateway admits are served by its
	// fleet on its Service: they get bind ports and Service ports too.
	r.gateways = gatewayapi.MergeListenerSets(r.gateways, res)
	r.ports = infra.AssignBindPorts(r.gateways, r.Mode, infra.PreviousBindPorts(ourServices(res.Services)))
	return r
}

// classParameters resolves a GatewayClass's parametersRef: nil without one.
func classParameters(ref *gwapiv1.ParametersReference, byKey map[types.NamespacedName]*v1alpha1.GatewayParameters) (*v1alpha1.GatewayParametersSpec, error) {
	if ref == nil {
		return nil, nil
	}
	if err := checkKind(string(ref.Group), string(ref.Kind)); err != nil {
		return nil, err
	}
	if ref.Namespace == nil || *ref.Namespace == "" {
		return nil, fmt.Errorf("parametersRef to %s %s has no namespace (GatewayParameters are namespaced)", v1alpha1.Kind, ref.Name)
	}
	return lookup(types.NamespacedName{Namespace: string(*ref.Namespace), Name: ref.Name}, byKey)
}

// gatewayParameters resolves a Gateway's infrastructure.parametersRef (in
// the Gateway's namespace): nil without one.
func gatewayParameters(namespace string, ref *gwapiv1.LocalParametersReference, byKey map[types.NamespacedName]*v1alpha1.GatewayParameters) (*v1alpha1.GatewayParametersSpec, error) {
	if ref == nil {
		return nil, nil
	}
	if err := checkKind(string(ref.Group), string(ref.Kind)); err != nil {
		return nil, err
	}
	return lookup(types.NamespacedName{Namespace: namespace, Name: ref.Name}, byKey)
}

// checkGatewayParameters holds a Gateway's own parameters (spec, nil
// without a reference) to its class's policy (infra.CheckGatewayParameters).
func checkGatewayParameters(namespace string, ref *gwapiv1.LocalParametersReference, spec, class *v1alpha1.GatewayParametersSpec) error {
	var policy *v1alpha1.GatewayPolicy
	if class != nil {
		policy = class.GatewayPolicy
	}
	if err := infra.CheckGatewayParameters(spec, policy); err != nil {
		return fmt.Errorf("%s %s/%s: %w", v1alpha1.Kind, namespace, ref.Name, err)
	}
	return nil
}

func checkKind(group, kind string) error {
	if group != v1alpha1.GroupVersion.Group || kind != v1alpha1.Kind {
		return fmt.Errorf("parametersRef must name group %s kind %s, not group %q kind %q",
			v1alpha1.GroupVersion.Group, v1alpha1.Kind, group, kind)
	}
	return nil
}

func lookup(key types.NamespacedName, byKey map[types.NamespacedName]*v1alpha1.GatewayParameters) (*v1alpha1.GatewayParametersSpec, error) {
	p := byKey[key]
	if p == nil {
		return nil, fmt.Errorf("%s %s not found", v1alpha1.Kind, key)
	}
	if err := infra.Validate(&p.Spec); err != nil {
		return nil, fmt.Errorf("%s %s: %w", v1alpha1.Kind, key, err)
	}
	return &p.Spec, nil
}

// ourServices are the Services the provisioner wrote (their targetPorts
// are the bind ports in force).
func ourServices(svcs []*corev1.Service) []corev1.Service {
	var out []corev1.Service
	for _, s := range svcs {
		if s != nil && s.Labels[infra.LabelManagedBy] == infra.ManagedByValue {
			out = append(out, *s)
		}
	}
	return out
}

// Mode is gw's effective deployment mode (Shared for a Gateway without
// valid parameters).
func (r *Resolver) Mode(gw *gwapiv1.Gateway) v1alpha1.Mode {
	if p, ok := r.effective[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}]; ok && p.Mode != nil {
		return *p.Mode
	}
	return v1alpha1.ModeShared
}

// ScopeFor is infra.Scope of gw's mode.
func (r *Resolver) ScopeFor(gw *gwapiv1.Gateway) string { return infra.Scope(r.Mode(gw), gw) }

// BindPortFor is the bind port AssignBindPorts gave gw's listener port.
func (r *Resolver) BindPortFor(gw *gwapiv1.Gateway, port gwapiv1.PortNumber) uint32 {
	return r.ports.BindPort(gw, port)
}

// RouteStatsFor is gw's effective spec.metrics.routeStats (false when
// unset, and for a Gateway without valid parameters).
func (r *Resolver) RouteStatsFor(gw *gwapiv1.Gateway) bool {
	p, ok := r.Effective(gw)
	return ok && p.Metrics != nil && p.Metrics.RouteStats != nil && *p.Metrics.RouteStats
}

// EdgeFor is gw's effective spec.edge in the IR (infra.HTTPEdge): nil when
// it sets nothing, and for a Gateway without valid parameters.
func (r *Resolver) EdgeFor(gw *gwapiv1.Gateway) *ir.HTTPEdge {
	p, ok := r.Effective(gw)
	if !ok {
		return nil
	}
	return infra.HTTPEdge(p.Edge)
}

// ServiceFor is gw's Service <gateway>-<class> in its namespace (both
// modes).
func (r *Resolver) ServiceFor(gw *gwapiv1.Gateway) types.NamespacedName {
	return types.NamespacedName{Namespace: gw.Namespace, Name: infra.GatewayServiceName(gw)}
}

// ExternalIPsAllowed says whether gw's class's parameters allow
// ExternalIPs (spec.gatewayPolicy.allow); false for a Gateway that is not
// ours or whose parameters are refused.
func (r *Resolver) ExternalIPsAllowed(gw *gwapiv1.Gateway) bool {
	p, ok := r.Effective(gw)
	return ok && p.GatewayPolicy.Allows(v1alpha1.PermissionExternalIPs)
}

// InvalidParameters are the refused parametersRefs (nil when none).
func (r *Resolver) InvalidParameters() *gatewayapi.InvalidParameters {
	if len(r.invalid.GatewayClasses) == 0 && len(r.invalid.Gateways) == 0 {
		return nil
	}
	return r.invalid
}

// Effective are gw's parameters in force; ok is false for a Gateway that
// is not ours or whose parameters are refused.
func (r *Resolver) Effective(gw *gwapiv1.Gateway) (v1alpha1.GatewayParametersSpec, bool) {
	p, ok := r.effective[types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}]
	return p, ok
}

// ResolveFunc is the kubernetes.ResolveFunc: it lists the GatewayParameters
// from the reader it is given (the controller's cache; the API server for
// `config-dump --diff`) and resolves, with the Gateways that stand for the
// IngressClasses of res placed by ing (kubernetes.IngressConfig).
func ResolveFunc(controller gwapiv1.GatewayController, ing ingress.Config) kubernetes.ResolveFunc {
	return func(ctx context.Context, c client.Reader, res *resources.Resources) (kubernetes.Resolver, error) {
		var list v1alpha1.GatewayParametersList
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing %s: %w", v1alpha1.Kind, err)
		}
		params := make([]*v1alpha1.GatewayParameters, len(list.Items))
		for i := range list.Items {
			params[i] = &list.Items[i]
		}
		return Resolve(res, params, controller, ingress.ClassGateways(res, ing)...), nil
	}
}
