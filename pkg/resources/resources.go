// Package resources defines the resource snapshot: the plain, read-only set
// of Kubernetes objects one translation reads. Providers (the Kubernetes
// watch, the file loader) fill it; the Gateway API translator
// (pkg/gatewayapi) reads it and never changes it.
package resources

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapiv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
	gwapixv1a1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// Resources is one consistent snapshot of every object the translator
// reads. Call Sort before handing it to the translator so that output does
// not depend on the order objects arrived in.
type Resources struct {
	GatewayClasses []*gwapiv1.GatewayClass
	Gateways       []*gwapiv1.Gateway
	// ListenerSets add listeners to the Gateways that allow them
	// (GEP-1713).
	ListenerSets    []*gwapiv1.ListenerSet
	HTTPRoutes      []*gwapiv1.HTTPRoute
	GRPCRoutes      []*gwapiv1.GRPCRoute
	TLSRoutes       []*gwapiv1.TLSRoute
	TCPRoutes       []*gwapiv1.TCPRoute
	UDPRoutes       []*gwapiv1.UDPRoute
	ReferenceGrants []*gwapiv1.ReferenceGrant
	// BackendTLSPolicies say how Envoy reaches Service ports over TLS.
	BackendTLSPolicies []*gwapiv1.BackendTLSPolicy
	Services           []*corev1.Service
	EndpointSlices     []*discoveryv1.EndpointSlice
	Secrets            []*corev1.Secret
	ConfigMaps         []*corev1.ConfigMap
	// Namespaces carry the labels that listener allowedRoutes selectors
	// read. A namespace with no object here has no labels.
	Namespaces []*corev1.Namespace
	// IngressClasses, Ingresses and IngressClassParameters are read by
	// pkg/ingress: the Ingresses of our IngressClasses are served by the
	// same Envoy fleets.
	IngressClasses         []*networkingv1.IngressClass
	Ingresses              []*networkingv1.Ingress
	IngressClassParameters []*v1alpha1.IngressClassParameters
	// XBackendTrafficPolicies (experimental channel) set session
	// persistence and a retry budget for the Services they target.
	XBackendTrafficPolicies []*gwapixv1a1.XBackendTrafficPolicy
	// XTelemetryPolicies (experimental channel) trace the requests of the
	// Gateways they target to an OTLP collector.
	XTelemetryPolicies []*gwapixv1a1.XTelemetryPolicy
	// ClusterTrustBundles (certificates.k8s.io/v1, cluster-scoped) are CA
	// sources of BackendTLSPolicies and Gateway frontend validation
	// (caCertificateRefs, GEP-5075).
	ClusterTrustBundles []*certificatesv1.ClusterTrustBundle
	// XBackends are backendRef targets of group
	// gateway.networking.x-k8s.io (experimental channel): an external
	// host name, or the Pods a label selector picks.
	XBackends []*gwapixv1a1.XBackend
	// Pods are read for the endpoints of XBackends of type
	// EndpointSelector (labels, readiness and IPs only).
	Pods []*corev1.Pod
	// SecurityPolicies authenticate and authorize the requests of the
	// Gateways, listeners and routes they target (basic auth, API keys).
	SecurityPolicies []*v1alpha1.SecurityPolicy
	// TrafficPolicies set rate limits, compression and body limits on
	// the Gateways, listeners and routes they target.
	TrafficPolicies []*v1alpha1.TrafficPolicy
	// BackendPolicies set health checks, circuit breakers, load balancing,
	// connection settings and the PROXY protocol for the Service ports
	// they target.
	BackendPolicies []*v1alpha1.BackendPolicy
	// ListenerPolicies set how the listeners of the Gateways and
	// ListenerSets they target meet their clients (TLS, PROXY protocol,
	// client address, HTTP/1, access log).
	ListenerPolicies []*v1alpha1.ListenerPolicy
}

// The kinds of the snapshot (the registry, Kinds), in the order of
// Resources' fields: a new kind is a field above and a line here.
var (
	GatewayClassKind     = register(gwapiv1.GroupName, "GatewayClass", func(r *Resources) *[]*gwapiv1.GatewayClass { return &r.GatewayClasses })
	GatewayKind          = register(gwapiv1.GroupName, "Gateway", func(r *Resources) *[]*gwapiv1.Gateway { return &r.Gateways })
	ListenerSetKind      = register(gwapiv1.GroupName, "ListenerSet", func(r *Resources) *[]*gwapiv1.ListenerSet { return &r.ListenerSets })
	HTTPRouteKind        = register(gwapiv1.GroupName, "HTTPRoute", func(r *Resources) *[]*gwapiv1.HTTPRoute { return &r.HTTPRoutes })
	GRPCRouteKind        = register(gwapiv1.GroupName, "GRPCRoute", func(r *Resources) *[]*gwapiv1.GRPCRoute { return &r.GRPCRoutes })
	TLSRouteKind         = register(gwapiv1.GroupName, "TLSRoute", func(r *Resources) *[]*gwapiv1.TLSRoute { return &r.TLSRoutes })
	TCPRouteKind         = register(gwapiv1.GroupName, "TCPRoute", func(r *Resources) *[]*gwapiv1.TCPRoute { return &r.TCPRoutes })
	UDPRouteKind         = register(gwapiv1.GroupName, "UDPRoute", func(r *Resources) *[]*gwapiv1.UDPRoute { return &r.UDPRoutes })
	ReferenceGrantKind   = register(gwapiv1.GroupName, "ReferenceGrant", func(r *Resources) *[]*gwapiv1.ReferenceGrant { return &r.ReferenceGrants })
	BackendTLSPolicyKind = register(gwapiv1.GroupName, "BackendTLSPolicy", func(r *Resources) *[]*gwapiv1.BackendTLSPolicy {
		return &r.BackendTLSPolicies
	})
	ServiceKind                = register("", "Service", func(r *Resources) *[]*corev1.Service { return &r.Services })
	EndpointSliceKind          = register(discoveryv1.GroupName, "EndpointSlice", func(r *Resources) *[]*discoveryv1.EndpointSlice { return &r.EndpointSlices })
	SecretKind                 = register("", "Secret", func(r *Resources) *[]*corev1.Secret { return &r.Secrets })
	ConfigMapKind              = register("", "ConfigMap", func(r *Resources) *[]*corev1.ConfigMap { return &r.ConfigMaps })
	NamespaceKind              = register("", "Namespace", func(r *Resources) *[]*corev1.Namespace { return &r.Namespaces })
	IngressClassKind           = register(networkingv1.GroupName, "IngressClass", func(r *Resources) *[]*networkingv1.IngressClass { return &r.IngressClasses })
	IngressKind                = register(networkingv1.GroupName, "Ingress", func(r *Resources) *[]*networkingv1.Ingress { return &r.Ingresses })
	IngressClassParametersKind = register(v1alpha1.GroupVersion.Group, "IngressClassParameters", func(r *Resources) *[]*v1alpha1.IngressClassParameters {
		return &r.IngressClassParameters
	})
	XBackendTrafficPolicyKind = register(gwapixv1a1.GroupName, "XBackendTrafficPolicy", func(r *Resources) *[]*gwapixv1a1.XBackendTrafficPolicy {
		return &r.XBackendTrafficPolicies
	})
	XTelemetryPolicyKind = register(gwapixv1a1.GroupName, "XTelemetryPolicy", func(r *Resources) *[]*gwapixv1a1.XTelemetryPolicy {
		return &r.XTelemetryPolicies
	})
	ClusterTrustBundleKind = register(certificatesv1.GroupName, "ClusterTrustBundle", func(r *Resources) *[]*certificatesv1.ClusterTrustBundle {
		return &r.ClusterTrustBundles
	})
	XBackendKind       = register(gwapixv1a1.GroupName, "XBackend", func(r *Resources) *[]*gwapixv1a1.XBackend { return &r.XBackends })
	PodKind            = register("", "Pod", func(r *Resources) *[]*corev1.Pod { return &r.Pods })
	SecurityPolicyKind = register(v1alpha1.GroupVersion.Group, v1alpha1.SecurityPolicyKind, func(r *Resources) *[]*v1alpha1.SecurityPolicy {
		return &r.SecurityPolicies
	})
	TrafficPolicyKind = register(v1alpha1.GroupVersion.Group, v1alpha1.TrafficPolicyKind, func(r *Resources) *[]*v1alpha1.TrafficPolicy {
		return &r.TrafficPolicies
	})
	BackendPolicyKind = register(v1alpha1.GroupVersion.Group, v1alpha1.BackendPolicyKind, func(r *Resources) *[]*v1alpha1.BackendPolicy {
		return &r.BackendPolicies
	})
	ListenerPolicyKind = register(v1alpha1.GroupVersion.Group, v1alpha1.ListenerPolicyKind, func(r *Resources) *[]*v1alpha1.ListenerPolicy {
		return &r.ListenerPolicies
	})
)

// Sort orders every list by namespace, then name.
func (r *Resources) Sort() {
	for _, k := range registry {
		k.sort(r)
	}
}

// V1 returns obj as the v1 type when it is a v1beta1 GatewayClass,
// Gateway, HTTPRoute or ReferenceGrant (the versions share one schema; the
// result is a new object that shares obj's fields), else obj itself. A
// caller that hands the same object to several snapshots converts it once,
// so that the snapshots hold one pointer for it (translate.Cache
// recognises unchanged objects by identity).
func V1(obj runtime.Object) runtime.Object {
	switch o := obj.(type) {
	case *gwapiv1beta1.ReferenceGrant:
		g := gwapiv1.ReferenceGrant(*o)
		return &g
	case *gwapiv1beta1.GatewayClass:
		g := gwapiv1.GatewayClass(*o)
		return &g
	case *gwapiv1beta1.Gateway:
		g := gwapiv1.Gateway(*o)
		return &g
	case *gwapiv1beta1.HTTPRoute:
		h := gwapiv1.HTTPRoute(*o)
		return &h
	}
	return obj
}

// Add appends obj to the list of its kind. It reports false, and adds
// nothing, when the snapshot has no list for obj's type. v1beta1
// GatewayClass, Gateway, HTTPRoute and ReferenceGrant objects are stored as
// the v1 type (V1).
func (r *Resources) Add(obj runtime.Object) bool {
	obj = V1(obj)
	for _, k := range registry {
		if k.add(r, obj) {
			return true
		}
	}
	return false
}
