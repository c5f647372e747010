package gatewayapi

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// translator holds one translation: the snapshot, indices over it, and the
// state of every Gateway and listener of ours while routes attach to them.
type translator struct {
	res        *resources.Resources
	opts       Options
	controller gwapiv1.GatewayController

	// classes are our GatewayClasses, by name.
	classes map[string]*gwapiv1.GatewayClass
	// gateways are the Gateways of our classes, sorted by namespace/name.
	gateways     []*gatewayState
	gatewayIndex map[types.NamespacedName]*gatewayState
	// listenerSets are the ListenerSets whose parentRef names a Gateway of
	// ours, by namespace/name (listenersets.go).
	listenerSets     []*listenerSetState
	listenerSetIndex map[types.NamespacedName]*listenerSetState

	services   map[types.NamespacedName]*corev1.Service
	slices     map[types.NamespacedName][]*discoveryv1.EndpointSlice // by Service
	secrets    map[types.NamespacedName]*corev1.Secret
	namespaces map[string]*corev1.Namespace
	grants     map[string][]*gwapiv1.ReferenceGrant // by namespace
	configMaps map[types.NamespacedName]*corev1.ConfigMap

	// policies are the BackendTLSPolicies, oldest first, and
	// policyByTarget those that target each Service port, oldest (the one
	// that applies) first.
	policies       []*policyState
	policyByTarget map[policyTarget][]*policyState

	status *Status
	// allGateways are every Gateway of the snapshot, ours or not, and
	// allClasses every GatewayClass: routes whose parentRefs name neither
	// get a warning.
	allGateways map[types.NamespacedName]*gwapiv1.Gateway
	allClasses  map[string]bool
}

func newTranslator(res *resources.Resources, opts Options) *translator {
	t := &translator{
		res:            res,
		opts:           opts,
		controller:     cmp.Or(opts.ControllerName, ControllerName),
		classes:        map[string]*gwapiv1.GatewayClass{},
		gatewayIndex:   map[types.NamespacedName]*gatewayState{},
		services:       map[types.NamespacedName]*corev1.Service{},
		slices:         map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
		secrets:        map[types.NamespacedName]*corev1.Secret{},
		namespaces:     map[string]*corev1.Namespace{},
		grants:         map[string][]*gwapiv1.ReferenceGrant{},
		configMaps:     map[types.NamespacedName]*corev1.ConfigMap{},
		policyByTarget: map[policyTarget][]*policyState{},
		allGateways:    map[types.NamespacedName]*gwapiv1.Gateway{},
		allClasses:     map[string]bool{},
		status: &Status{
			GatewayClasses:     map[string]*gwapiv1.GatewayClassStatus{},
			Gateways:           map[types.NamespacedName]*gwapiv1.GatewayStatus{},
			ListenerSets:       map[types.NamespacedName]*gwapiv1.ListenerSetStatus{},
			Routes:             map[RouteKey]*gwapiv1.RouteStatus{},
			BackendTLSPolicies: map[types.NamespacedName]*gwapiv1.PolicyStatus{},
		},
	}
	for _, g := range res.Gateways {
		if g != nil {
			if _, ok := t.allGateways[nn(g.Namespace, g.Name)]; !ok {
				t.allGateways[nn(g.Namespace, g.Name)] = g
			}
		}
	}
	for _, c := range res.GatewayClasses {
		if c != nil {
			t.allClasses[c.Name] = true
		}
	}
	for _, s := range res.Services {
		if s != nil {
			t.services[nn(s.Namespace, s.Name)] = s
		}
	}
	for _, es := range res.EndpointSlices {
		if es == nil {
			continue
		}
		if svc := es.Labels[discoveryv1.LabelServiceName]; svc != "" {
			k := nn(es.Namespace, svc)
			t.slices[k] = append(t.slices[k], es)
		}
	}
	for _, s := range res.Secrets {
		if s != nil {
			t.secrets[nn(s.Namespace, s.Name)] = s
		}
	}
	for _, n := range res.Namespaces {
		if n != nil {
			t.namespaces[n.Name] = n
		}
	}
	for _, c := range res.ConfigMaps {
		if c != nil {
			t.configMaps[nn(c.Namespace, c.Name)] = c
		}
	}
	for _, g := range res.ReferenceGrants {
		if g != nil {
			t.grants[g.Namespace] = append(t.grants[g.Namespace], g)
		}
	}
	return t
}

// result assembles the IR (Gateways sorted by namespace/name, each
// listener's routes in precedence order) and the status. A Gateway that is
// not accepted because none of its listeners is stays in the IR without
// listeners: its scope exists (a Dedicated fleet, whose ServiceAccount gets
// an SVID, runs and serves nothing) until a listener becomes valid. Only a
// Gateway refused as a whole (its parametersRef or spec.addresses) is left
// out: it is not served.
func (t *translator) result() *Result {
	out := &ir.IR{}
	for _, gs := range t.gateways {
		t.status.Gateways[gs.nn] = gs.buildStatus()
		if gs.refused != nil || !gs.accepted() && (gs.obj.Namespace == "" || gs.obj.Name == "") {
			continue // refused, or a malformed object with nothing to serve
		}
		g := &ir.Gateway{
			Namespace: gs.obj.Namespace,
			Name:      gs.obj.Name,
			Class:     string(gs.obj.Spec.GatewayClassName),
			Scope:     gs.scope,
		}
		for _, ls := range gs.allListeners() {
			if !ls.programmed() {
				continue
			}
			l := ls.irListener()
			routes := withFallthrough(ls.routes)
			sortRoutes(routes)
			for _, r := range routes {
				l.HTTPRoutes = append(l.HTTPRoutes, r.route)
			}
			l.L4Routes = ls.l4RoutesOf()
			g.Listeners = append(g.Listeners, l)
		}
		out.Gateways = append(out.Gateways, g)
	}
	for _, s := range t.listenerSets {
		t.status.ListenerSets[s.nn] = s.buildStatus()
	}
	return &Result{IR: out, Status: t.status}
}

// warnf adds a Status.Warnings entry.
func (t *translator) warnf(format string, a ...any) {
	t.status.Warnings = append(t.status.Warnings, fmt.Sprintf(format, a...))
}

// problem is a condition reason and its message.
type problem struct {
	reason string
	msg    string
}

func nn(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// joinMessages joins distinct messages with "; " in their order.
func joinMessages(msgs []string) string {
	var out []string
	for _, m := range msgs {
		if m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return strings.Join(out, "; ")
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
