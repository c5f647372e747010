package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IngressClassParametersKind is the kind of IngressClassParameters, as an
// IngressClass's spec.parameters names it.
const IngressClassParametersKind = "IngressClassParameters"

// AccessLogMode says whether Envoy writes an access log line per request.
// +kubebuilder:validation:Enum=On;Off
type AccessLogMode string

// Access log modes.
const (
	// AccessLogOn writes one line per request to Envoy's stdout (the
	// default, as for Gateways).
	AccessLogOn AccessLogMode = "On"
	// AccessLogOff writes none.
	AccessLogOff AccessLogMode = "Off"
)

// IngressClassParametersSpec configures the Ingresses of an IngressClass
// whose spec.controller is xds-controller.dev/ingress-controller. Every
// field is optional.
type IngressClassParametersSpec struct {
	// DefaultAnnotations are annotations every Ingress of the class is
	// read with, key by key, unless the Ingress sets the key itself (its
	// own value wins). Only the annotations xds-controller reads have an
	// effect (docs/ingress.md).
	// +optional
	DefaultAnnotations map[string]string `json:"defaultAnnotations,omitempty"`

	// AccessLog turns the access log of the class's listeners On (the
	// default) or Off.
	// +optional
	AccessLog *AccessLogMode `json:"accessLog,omitempty"`

	// GatewayParametersRef names GatewayParameters in the namespace of
	// this object that choose the Envoy fleet serving the class (mode,
	// replicas, Service type and annotations, pod template), overlaid on
	// the parameters of the controller's Ingress GatewayClass like a
	// Gateway's infrastructure.parametersRef. In Shared mode the class's
	// Ingresses are served by that GatewayClass's shared fleet, in
	// Dedicated mode by a fleet of their own; either way on ports 80 and
	// 443 of a Service of their own in this object's namespace. Unset: the
	// shared fleet of the Ingress GatewayClass, with a Service in the
	// controller's namespace.
	// +optional
	GatewayParametersRef *LocalObjectReference `json:"gatewayParametersRef,omitempty"`
}

// LocalObjectReference names an object in the referrer's namespace.
type LocalObjectReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// IngressClassParameters configures an IngressClass of xds-controller,
// which references it with spec.parameters (apiGroup
// gateway.xds-controller.dev, kind IngressClassParameters, scope
// Namespace, its namespace and name).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=xds-controller,shortName=ingparams
// +kubebuilder:printcolumn:name="AccessLog",type=string,JSONPath=`.spec.accessLog`
// +kubebuilder:printcolumn:name="GatewayParameters",type=string,JSONPath=`.spec.gatewayParametersRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type IngressClassParameters struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec IngressClassParametersSpec `json:"spec,omitempty"`
}

// IngressClassParametersList is a list of IngressClassParameters.
//
// +kubebuilder:object:root=true
type IngressClassParametersList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []IngressClassParameters `json:"items"`
}

func init() {
	SchemeBuilder.Register(&IngressClassParameters{}, &IngressClassParametersList{})
}
