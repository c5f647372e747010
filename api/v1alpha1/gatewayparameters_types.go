package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Mode is how Gateways are served by Envoy fleets.
// +kubebuilder:validation:Enum=Shared;Dedicated
type Mode string

const (
	// ModeShared: one Envoy fleet per GatewayClass, in the controller's
	// namespace, serves all the class's Gateways; every Gateway still has
	// its own Service. The default.
	ModeShared Mode = "Shared"
	// ModeDedicated: one Envoy fleet per Gateway, in the Gateway's
	// namespace (GEP-1762).
	ModeDedicated Mode = "Dedicated"
)

// GatewayParametersSpec is the desired fleet configuration. Every field is
// optional; unset fields are filled from the GatewayClass's parameters and
// then from the controller's defaults.
type GatewayParametersSpec struct {
	// Mode selects a fleet shared by the class's Gateways (Shared, the
	// default) or one fleet per Gateway (Dedicated). Set on a Gateway's
	// parameters, it overrides the class's mode for that Gateway.
	// +optional
	Mode *Mode `json:"mode,omitempty"`

	// Replicas is the number of Envoy pods of the fleet. Default: 2 in
	// Shared mode, 1 in Dedicated mode.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Envoy configures the Envoy container.
	// +optional
	Envoy *EnvoySpec `json:"envoy,omitempty"`

	// Service configures the Service that gives each Gateway its address.
	// +optional
	Service *ServiceSpec `json:"service,omitempty"`

	// Metrics configures the statistics Envoy keeps for the Gateway. It
	// applies per Gateway in both modes: in Shared mode too, a Gateway's
	// own value decides for the routes on its listeners.
	// +optional
	Metrics *MetricsSpec `json:"metrics,omitempty"`

	// Edge hardens the Gateway's listeners and its fleet against slow,
	// greedy and malformed clients (timeouts, header and HTTP/2 limits,
	// overload manager); hardened defaults apply when unset (EdgeSpec).
	// +optional
	Edge *EdgeSpec `json:"edge,omitempty"`

	// PodTemplate is a partial pod template (metadata and spec of a
	// corev1.PodTemplateSpec) merged onto the rendered Envoy pod template
	// like `kubectl apply` merges a manifest: a strategic merge patch, so
	// containers, initContainers, env, volumes and volumeMounts merge by
	// name, and tolerations merge by key. A Gateway's overlay is merged onto
	// its class's overlay first. It is not validated by the API server
	// (preserved as written); the controller refuses a Gateway whose
	// overlay does not decode as a pod template (InvalidParameters). A
	// Gateway's own overlay may set only the fields of GatewayPolicy's
	// default allow-list unless its class allows PodTemplate.
	// The controller always keeps the fleet's selector labels and
	// automountServiceAccountToken=false.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	PodTemplate *runtime.RawExtension `json:"podTemplate,omitempty"`

	// GatewayPolicy, on a GatewayClass's parameters (the cluster admin's),
	// says what the class's Gateways may do beyond the default. A
	// Gateway's own parameters must not set it.
	//
	// By default a Gateway's own GatewayParameters (its
	// spec.infrastructure.parametersRef, in its namespace) may set every
	// field but envoy.image and gatewayPolicy, and in podTemplate only:
	// metadata.labels; metadata.annotations except AppArmor and seccomp
	// ones; spec.nodeSelector, spec.affinity, spec.tolerations,
	// spec.topologySpreadConstraints; the resources and env (value,
	// fieldRef or resourceFieldRef; not a variable the controller sets) of
	// the envoy container; the resources of the svid-agent init container.
	// Anything else (envoy.image, other podTemplate fields, strategic merge
	// directives such as $patch, null where only some children are
	// allowed) gives the Gateway Accepted=False reason InvalidParameters
	// naming each refused field, and its fleet is left as it was.
	// +optional
	GatewayPolicy *GatewayPolicy `json:"gatewayPolicy,omitempty"`
}

// EnvoySpec configures the Envoy container.
type EnvoySpec struct {
	// Image is the Envoy image (an Envoy 1.40 build with the binary at
	// /usr/local/bin/envoy). Default: the controller's --envoy-image. A
	// Gateway's own parameters may set it only when its class allows
	// EnvoyImage (GatewayPolicy).
	// +kubebuilder:validation:MinLength=1
	// +optional
	Image *string `json:"image,omitempty"`

	// Resources of the Envoy container. Default: requests of 10m CPU and
	// 64Mi memory, no limits.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// DrainSeconds is how long a stopping Envoy pod drains its connections
	// before it exits (Envoy's --drain-time-s). When a pod is deleted (a
	// rollout, a scale-down, a node drain), its address leaves the
	// Gateway's endpoints while its preStop hook fails Envoy's health
	// checks and drains every listener: HTTP/1.1 responses carry
	// `Connection: close`, HTTP/2 connections get a GOAWAY, new connections
	// are still accepted (and drained) until the listeners close
	// DrainSeconds later; then Envoy gets SIGTERM. The pod's
	// terminationGracePeriodSeconds is DrainSeconds plus 10. Raise it when
	// a load balancer in front of the Gateway takes longer to stop sending
	// new connections to a removed address. 0 disables the drain: Envoy
	// stops at once. Default: 15.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	DrainSeconds *int32 `json:"drainSeconds,omitempty"`
}

// MetricsSpec configures the statistics Envoy keeps for a Gateway, on top
// of those it always keeps (per Gateway listener, per backend cluster; see
// docs/metrics.md).
type MetricsSpec struct {
	// RouteStats, when true, makes Envoy keep statistics per rule of every
	// HTTPRoute and GRPCRoute on the Gateway's listeners, per hostname:
	// the requests the rule forwards by response code and class, their
	// latency (a histogram), retries and timeouts (Envoy Route
	// stat_prefix; Prometheus metrics envoy_vhost_route_* with the labels
	// envoy_virtual_host="<namespace>/<gateway>/<listener>/<hostname>" and
	// envoy_route="<kind>/<namespace>/<route>/rule/<index>"). Each rule
	// costs every Envoy of the fleet about 1 KiB and the metrics scraper
	// about 30 series per pod once it has traffic, so it is off by
	// default (as Envoy recommends). Default: false.
	// +optional
	RouteStats *bool `json:"routeStats,omitempty"`
}

// ServiceSpec configures a Gateway's Service.
type ServiceSpec struct {
	// Type of the Service. Default: LoadBalancer.
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +optional
	Type *corev1.ServiceType `json:"type,omitempty"`

	// Annotations added to the Service (for instance load balancer
	// settings of a cloud provider). A Gateway's annotations are merged
	// over its class's, key by key.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// GatewayParameters configures the Envoy fleet of a GatewayClass or a
// Gateway.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=gateway-api;xds-controller,shortName=gwparams
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GatewayParameters struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec GatewayParametersSpec `json:"spec,omitempty"`
}

// GatewayParametersList is a list of GatewayParameters.
//
// +kubebuilder:object:root=true
type GatewayParametersList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GatewayParameters `json:"items"`
}

func init() {
	SchemeBuilder.Register(&GatewayParameters{}, &GatewayParametersList{})
}
