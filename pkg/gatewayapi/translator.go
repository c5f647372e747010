package gatewayapi

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

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
	// xbackends are the XBackends by namespace/name, xbackendsByNS by
	// namespace, and pods the Pods by namespace, for EndpointSelector
	// XBackends (xbackend.go).
	xbackends     map[types.NamespacedName]*gwapixv1alpha1.XBackend
	xbackendsByNS map[string][]*gwapixv1alpha1.XBackend
	pods          map[string][]*corev1.Pod
	// trustBundles are the ClusterTrustBundles by name (casources.go).
	trustBundles map[string]*certificatesv1.ClusterTrustBundle

	// policies are the policies of every kind (policy.go), each kind's
	// oldest first, and policyByTarget those of each kind on each target,
	// oldest (the one that applies) first.
	policies       []*policyState
	policyByTarget map[policyKey][]*policyState

	status *Status
	// allGateways are every Gateway of the snapshot, ours or not, and
	// allClasses every GatewayClass: routes whose parentRefs name neither
	// get a warning.
	allGateways map[types.NamespacedName]*gwapiv1.Gateway
	allClasses  map[string]bool

	// reading is the memo of the route being read (Cache.read), which
	// records the Services it reads and the policy ancestors it makes.
	reading *routeMemo
	// gatewayReads, while not nil, records the Services and XBackends
	// that Gateway-level state reads, found or not: the backends of
	// policies (telemetry.go: the collector) and of listener filters
	// (resolveListenerFilters), resolved outside any route (Cache.reset
	// sets it around them). A change to one of them, to a Service's
	// EndpointSlices or to a Pod an XBackend of them selects translates
	// everything again (Cache.update).
	gatewayReads map[depKey]bool
	// levelReads records, while recording is set (a Cache's Translate,
	// not an Ingress's lookups through Refs), the Secrets read (found or
	// not) other than for listener certificates, and the Namespaces and
	// ReferenceGrants (of a namespace) read outside any route: a change
	// to one translates everything again. certReads records, by Secret,
	// the listeners whose certificateRefs read it (certListener is the one
	// being resolved): a change to one loads their certificates again
	// (Cache.rotate).
	levelReads   map[depKey]bool
	certReads    map[types.NamespacedName][]*listenerState
	certListener *listenerState
	recording    bool
	// rule is the context of the rule being translated (translateRules).
	rule ruleContext
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
		policyByTarget: map[policyKey][]*policyState{},
		allGateways:    map[types.NamespacedName]*gwapiv1.Gateway{},
		allClasses:     map[string]bool{},
		status: &Status{
			GatewayClasses: map[string]*gwapiv1.GatewayClassStatus{},
			Gateways:       map[types.NamespacedName]*gwapiv1.GatewayStatus{},
			ListenerSets:   map[types.NamespacedName]*gwapiv1.ListenerSetStatus{},
			Routes:         map[RouteKey]*gwapiv1.RouteStatus{},
			Policies:       map[PolicyKey]*gwapiv1.PolicyStatus{},
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
	t.indexTrustBundles()
	for _, g := range res.ReferenceGrants {
		if g != nil {
			t.grants[g.Namespace] = append(t.grants[g.Namespace], g)
		}
	}
	return t
}

// indexBackends indexes what backend references resolve to: the
// snapshot's Services by namespace/name and its EndpointSlices by the
// Service they belong to (sliceService), its XBackends and its Pods (by
// namespace), and calls warn (when not nil)
// with the warning of each slice that has one (sliceWarning), by
// namespace/name, replacing what they held. Only backends.go reads these
// indexes; newTranslator leaves them empty.
func (t *translator) indexBackends(warn func(types.NamespacedName, string)) {
	t.services = make(map[types.NamespacedName]*corev1.Service, len(t.res.Services))
	t.slices = make(map[types.NamespacedName][]*discoveryv1.EndpointSlice, len(t.res.EndpointSlices))
	eachObject(t.res.Services, func(k types.NamespacedName, s *corev1.Service) { t.services[k] = s })
	t.indexXBackends()
	t.indexPods()
	eachObject(t.res.EndpointSlices, func(k types.NamespacedName, es *discoveryv1.EndpointSlice) {
		svc, ok := sliceService(es)
		if !ok {
			return
		}
		t.slices[svc] = append(t.slices[svc], es)
		if warn != nil {
			if w := sliceWarning(es); w != "" {
				warn(k, w)
			}
		}
	})
}

// indexXBackends indexes the snapshot's XBackends by namespace/name and
// by namespace, replacing what the indexes held (XBackends are few).
func (t *translator) indexXBackends() {
	t.xbackends = make(map[types.NamespacedName]*gwapixv1alpha1.XBackend, len(t.res.XBackends))
	t.xbackendsByNS = map[string][]*gwapixv1alpha1.XBackend{}
	eachObject(t.res.XBackends, func(k types.NamespacedName, xb *gwapixv1alpha1.XBackend) {
		t.xbackends[k] = xb
		t.xbackendsByNS[k.Namespace] = append(t.xbackendsByNS[k.Namespace], xb)
	})
}

// indexPods indexes the snapshot's Pods by namespace, replacing what the
// index held. Only the namespaces of EndpointSelector XBackends are
// kept: no other Pod is ever read (call indexXBackends first).
func (t *translator) indexPods() {
	t.pods = map[string][]*corev1.Pod{}
	eachObject(t.res.Pods, func(k types.NamespacedName, p *corev1.Pod) {
		if len(t.xbackendsByNS[k.Namespace]) > 0 {
			t.pods[k.Namespace] = append(t.pods[k.Namespace], p)
		}
	})
}

// service returns the Service k, recorded as read (recordRead): a change
// to the Service or its EndpointSlices translates its reader again
// (Cache).
func (t *translator) service(k types.NamespacedName) *corev1.Service {
	t.recordRead(depKey{resources.ServiceKind.Name(), k})
	return t.services[k]
}

// secret returns the Secret k (nil when there is none) and records the
// read (secretReads, certReads) while recording.
func (t *translator) secret(k types.NamespacedName) *corev1.Secret {
	switch {
	case !t.recording:
	case t.certListener != nil:
		if !slices.Contains(t.certReads[k], t.certListener) {
			t.certReads[k] = append(t.certReads[k], t.certListener)
		}
	default:
		t.levelReads[depKey{secretKind, k}] = true
	}
	return t.secrets[k]
}

// recordRead records that k is read: by the route being read (its memo's
// services), or by Gateway-level state (gatewayReads); a read outside
// both (an Ingress's, through Cache.Refs) is not recorded.
func (t *translator) recordRead(k depKey) {
	switch {
	case t.reading != nil:
		t.reading.services = append(t.reading.services, k)
	case t.gatewayReads != nil:
		t.gatewayReads[k] = true
	case t.recording && (k.Kind == namespaceKind || k.Kind == referenceGrantKind):
		t.levelReads[k] = true
	}
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
