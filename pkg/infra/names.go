package infra

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// Labels and annotations on the objects this package renders.
const (
	// LabelManagedBy marks every object the provisioner owns; pruning only
	// ever deletes objects with this label.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is LabelManagedBy's value.
	ManagedByValue = "xds-controller"
	// LabelGatewayName is on every per-Gateway object (GEP-1762).
	LabelGatewayName = "gateway.networking.k8s.io/gateway-name"
	// LabelGatewayClassName is on every object.
	LabelGatewayClassName = "gateway.networking.k8s.io/gateway-class-name"
	// LabelName and LabelInstance select a fleet's pods: "envoy" and the
	// fleet name.
	LabelName     = "app.kubernetes.io/name"
	LabelInstance = "app.kubernetes.io/instance"
	// LabelComponent is "proxy" on fleet objects.
	LabelComponent = "app.kubernetes.io/component"

	// AnnotationPodTemplateHash is on the Envoy pod template: a hash of the
	// fleet's own settings (image, resources, replicas excluded, pod
	// template overlay, bootstrap, Gateway infrastructure labels and
	// annotations in Dedicated mode). It changes only when those do, which
	// re-rolls the pods; route and listener edits never change it, nor does
	// the CA bundle (the agents follow a CA rotation without a roll).
	AnnotationPodTemplateHash = "xds-controller.dev/pod-template-hash"
	// AnnotationGatewayName holds the full name of the Gateway on its
	// Service (the label value is shortened beyond 63 characters).
	AnnotationGatewayName = "xds-controller.dev/gateway-name"
	// AnnotationLoadBalancerIPs asks a LoadBalancer Service's load
	// balancer for several addresses, comma-separated: MetalLB's key
	// (metallb.io/loadBalancerIPs, MetalLB 0.13 and later), which the local
	// cluster's lb-allocator honours too. See requestAddresses.
	AnnotationLoadBalancerIPs = "metallb.io/loadBalancerIPs"
	// AnnotationAppliedHash is on every rendered object: a hash of the
	// desired object. The Applier skips an object whose live copy carries
	// the same value.
	AnnotationAppliedHash = "xds-controller.dev/applied-hash"

	// FieldManager is the server-side apply field manager.
	FieldManager = "xds-controller"

	// EndpointSliceManagedBy is the endpointslice.kubernetes.io/managed-by
	// value of the EndpointSlices of shared-mode Gateway Services.
	EndpointSliceManagedBy = "provisioner.xds-controller.dev"
)

// Paths and ports inside the Envoy pod.
const (
	envoyBinary    = "/usr/local/bin/envoy"
	bootstrapDir   = "/etc/envoy"
	bootstrapFile  = "bootstrap.yaml"
	svidDir        = "/var/run/xds-controller/svid"
	tokenDir       = "/var/run/secrets/xds-controller"
	tokenFile      = "token"
	agentBinary    = "/xds-controller"
	agentContainer = "svid-agent"
	ReadinessPort  = 19001
	AdminPort      = 9901
	// AgentProbePort is the SVID agent's /ready (its startup probe).
	AgentProbePort = 19002
	// MetricsPort serves Envoy's statistics in Prometheus format (GET
	// /stats/prometheus, nothing else of the admin), container port
	// "metrics", announced by the pod annotations prometheus.io/scrape,
	// /port and /path.
	MetricsPort = 19003
	// DefaultTokenExpirationSeconds is the lifetime of the agent's
	// projected ServiceAccount token (the kubelet renews it at 80%).
	DefaultTokenExpirationSeconds = 600
	envoyUID                      = 65532
	containerName                 = "envoy"
	bootstrapVolume               = "bootstrap"
	svidVolume                    = "svid"
	tokenVolume                   = "identity-token"
	tmpVolume                     = "tmp"
	// drainVolume holds the copy of the agent's executable that the Envoy
	// container's preStop hook runs (xds-controller envoy-drain).
	drainVolume = "drain"
	drainDir    = "/var/run/xds-controller/drain"
	drainBinary = drainDir + "/xds-controller"
	// ShutdownMarginSeconds is added to the drain time to make the
	// Envoy pod's terminationGracePeriodSeconds: time for the preStop
	// exec to start, Envoy to exit on SIGTERM and the SVID agent after it.
	ShutdownMarginSeconds = 10
	maxDNSLabelLength     = 63
)

// Fleet names one Envoy fleet: where it lives, what it is called and which
// proxy scope it serves.
type Fleet struct {
	Mode v1alpha1.Mode
	// Name of the Deployment, ServiceAccount and bootstrap ConfigMap:
	// envoy-<class> (Shared) or <gateway>-<class> (Dedicated), shortened
	// with a hash suffix when longer than 63 characters.
	Name      string
	Namespace string
	// Scope is the proxy scope (the bootstrap's node cluster):
	// gatewayclass/<class> or gateway/<namespace>/<name>.
	Scope string
	// ServiceAccount is the fleet's ServiceAccount name (= Name): the SVID
	// of the fleet is spiffe://<trust-domain>/ns/<Namespace>/sa/<ServiceAccount>
	// (FleetID).
	ServiceAccount string
	ClassName      string
	// Gateway is the Gateway's name in Dedicated mode, "" in Shared mode.
	Gateway string
}

// SharedFleet is the fleet of class in the controller's namespace.
func SharedFleet(controllerNamespace, class string) Fleet {
	name := SafeName("envoy-" + class)
	return Fleet{
		Mode:           v1alpha1.ModeShared,
		Name:           name,
		Namespace:      controllerNamespace,
		Scope:          "gatewayclass/" + class,
		ServiceAccount: name,
		ClassName:      class,
	}
}

// DedicatedFleet is the fleet of gw in its own namespace (GEP-1762 names).
func DedicatedFleet(gw *gwapiv1.Gateway) Fleet {
	name := GatewayServiceName(gw)
	return Fleet{
		Mode:           v1alpha1.ModeDedicated,
		Name:           name,
		Namespace:      gw.Namespace,
		Scope:          fmt.Sprintf("gateway/%s/%s", gw.Namespace, gw.Name),
		ServiceAccount: name,
		ClassName:      string(gw.Spec.GatewayClassName),
		Gateway:        gw.Name,
	}
}

// FleetFor is the fleet that serves gw in mode.
func FleetFor(mode v1alpha1.Mode, controllerNamespace string, gw *gwapiv1.Gateway) Fleet {
	if mode == v1alpha1.ModeDedicated {
		return DedicatedFleet(gw)
	}
	return SharedFleet(controllerNamespace, string(gw.Spec.GatewayClassName))
}

// Scope is the proxy scope that serves gw in mode: the
// gatewayapi.Options.Scope of a translation.
func Scope(mode v1alpha1.Mode, gw *gwapiv1.Gateway) string {
	if mode == v1alpha1.ModeDedicated {
		return fmt.Sprintf("gateway/%s/%s", gw.Namespace, gw.Name)
	}
	return "gatewayclass/" + string(gw.Spec.GatewayClassName)
}

// GatewayServiceName is the name of gw's Service in both modes (and of its
// dedicated fleet's objects): <gateway>-<class>, shortened by SafeName.
func GatewayServiceName(gw *gwapiv1.Gateway) string {
	return SafeName(gw.Name + "-" + string(gw.Spec.GatewayClassName))
}

// SafeName returns s when it is a valid DNS-1035 label (what a Service
// name must be: at most 63 characters, lower-case letters, digits and
// dashes, starting with a letter). Otherwise it replaces the other
// characters (dots of a Gateway name) by dashes, prefixes "x" when s does not
// start with a letter, cuts it to 54 characters and appends a dash and 8 hex
// digits of the SHA-256 of s: stable, unique in practice, and valid as a
// Service name and a label value.
func SafeName(s string) string {
	if validDNS1035(s) {
		return s
	}
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	prefix := string(b)
	if prefix == "" || prefix[0] < 'a' || prefix[0] > 'z' {
		prefix = "x" + prefix
	}
	if len(prefix) > maxDNSLabelLength-9 {
		prefix = prefix[:maxDNSLabelLength-9]
	}
	prefix = strings.TrimRight(prefix, "-")
	sum := sha256.Sum256([]byte(s))
	return prefix + "-" + hex.EncodeToString(sum[:4])
}

func validDNS1035(s string) bool {
	if len(s) == 0 || len(s) > maxDNSLabelLength || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// LabelValue is the value of the gateway-name and gateway-class-name
// labels for an object name: the name itself (object names are valid label
// values up to 63 characters), else SafeName's short form.
func LabelValue(name string) string {
	if len(name) <= maxDNSLabelLength {
		return name
	}
	return SafeName(name)
}

func typesUID(s string) types.UID { return types.UID(s) }

// FleetForScope is the fleet that serves gw when gw's proxy scope is
// scope (Scope of its mode): its dedicated fleet for gateway/<ns>/<name>,
// else its class's shared fleet.
func FleetForScope(controllerNamespace string, gw *gwapiv1.Gateway, scope string) Fleet {
	if scope == Scope(v1alpha1.ModeDedicated, gw) {
		return DedicatedFleet(gw)
	}
	return SharedFleet(controllerNamespace, string(gw.Spec.GatewayClassName))
}

// FleetID is the SPIFFE ID of f's pods in td, the URI SAN of their SVIDs:
// spiffe://<td>/ns/<f.Namespace>/sa/<f.ServiceAccount>.
func FleetID(td spiffeid.TrustDomain, f Fleet) (spiffeid.ID, error) {
	return spiffeid.FromSegments(td, "ns", f.Namespace, "sa", f.ServiceAccount)
}

// FleetScopes maps the SPIFFE ID of every fleet in fleets to the proxy
// scopes it serves, each once, sorted: what a proxy with that SVID may
// subscribe to (xdsserver.ScopeTable), and which ServiceAccounts may get
// an SVID at all. A shared fleet envoy-<class> in the controller's
// namespace serves gatewayclass/<class>; a dedicated fleet <gateway>-<class>
// in namespace N serves gateway/N/<gateway>. Fleets whose names make no
// valid SPIFFE ID are left out. It is pure.
func FleetScopes(td spiffeid.TrustDomain, fleets []Fleet) map[spiffeid.ID][]string {
	out := map[spiffeid.ID][]string{}
	for _, f := range fleets {
		id, err := FleetID(td, f)
		if err != nil {
			continue
		}
		if !slices.Contains(out[id], f.Scope) {
			out[id] = append(out[id], f.Scope)
			slices.Sort(out[id])
		}
	}
	return out
}
