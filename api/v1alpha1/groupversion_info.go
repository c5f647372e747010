// Package v1alpha1 holds the Go types of xds-controller's parameters CRDs
// (group gateway.xds-controller.dev, version v1alpha1): GatewayParameters
// and IngressClassParameters.
//
// A GatewayClass references one with spec.parametersRef (group
// gateway.xds-controller.dev, kind GatewayParameters, name and namespace),
// a Gateway with spec.infrastructure.parametersRef (same group and kind, the
// Gateway's own namespace). The effective parameters of a Gateway are the
// Gateway's fields where set, else the class's, per field
// (pkg/infra.Effective).
//
// An IngressClass of ours references IngressClassParameters with
// spec.parameters (scope Namespace); they may in turn name GatewayParameters
// of their own namespace that choose the class's Envoy fleet (pkg/ingress).
//
// +kubebuilder:object:generate=true
// +groupName=gateway.xds-controller.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of our API objects.
	GroupVersion = schema.GroupVersion{Group: "gateway.xds-controller.dev", Version: "v1alpha1"}

	// SchemeBuilder registers our types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds our types to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kind is the kind of GatewayParameters, as parametersRef names it.
const Kind = "GatewayParameters"
