package v1alpha1

// GatewayPermission names something that the Gateways of a class may do
// only when the class's GatewayParameters allow it
// (spec.gatewayPolicy.allow).
// +kubebuilder:validation:Enum=EnvoyImage;PodTemplate;ExternalIPs
type GatewayPermission string

const (
	// PermissionEnvoyImage lets a Gateway's own GatewayParameters set
	// spec.envoy.image: its Dedicated fleet then runs that image with the
	// fleet's SVID (it may serve anything to the Gateway's clients and
	// talk to the controller as the fleet).
	PermissionEnvoyImage GatewayPermission = "EnvoyImage"
	// PermissionPodTemplate lets a Gateway's own GatewayParameters set any
	// field of spec.podTemplate, not only those of the default allow-list
	// (see GatewayPolicy): privileged or root containers, host
	// namespaces, hostPath and token volumes, containers of its own...
	// Whoever may write GatewayParameters in a namespace then controls
	// what runs on the nodes, with the controller's right to create
	// Deployments: allow it only for classes whose Gateway owners are
	// trusted like cluster admins.
	PermissionPodTemplate GatewayPermission = "PodTemplate"
	// PermissionExternalIPs lets a Gateway's spec.addresses become the
	// spec.externalIPs of its Service when the Service is not of type
	// LoadBalancer. An external IP makes kube-proxy on every node capture
	// the traffic to that address, whoever else owns it (CVE-2020-8554),
	// so it is refused by default: such a Gateway is Programmed=False
	// reason AddressNotUsable.
	PermissionExternalIPs GatewayPermission = "ExternalIPs"
)

// GatewayPolicy bounds what the Gateways of a GatewayClass may ask of the
// controller beyond what a namespace's owner may do by default (the
// default allow-list is GatewayParametersSpec.GatewayPolicy's). It is read
// from the GatewayClass's parameters only.
type GatewayPolicy struct {
	// Allow lists what the class's Gateways may do beyond the default.
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Allow []GatewayPermission `json:"allow,omitempty"`
}

// Allows reports whether p allows perm; a nil policy allows nothing.
func (p *GatewayPolicy) Allows(perm GatewayPermission) bool {
	if p == nil {
		return false
	}
	for _, a := range p.Allow {
		if a == perm {
			return true
		}
	}
	return false
}
