package ingress

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// ControllerName is the IngressClass spec.controller that marks a class as
// ours.
const ControllerName = "xds-controller.dev/ingress-controller"

// Annotations of the Ingress API that decide class membership.
const (
	// AnnotationDefaultClass ("true") makes an IngressClass the cluster's
	// default: Ingresses without a class are its (networking.k8s.io/v1
	// IngressClass).
	AnnotationDefaultClass = networkingv1.AnnotationIsDefaultIngressClass
	// AnnotationIngressClass is the deprecated class annotation of an
	// Ingress, read when spec.ingressClassName is unset (ingress-nginx
	// reads it too, so migrating Ingresses keep their class).
	AnnotationIngressClass = "kubernetes.io/ingress.class"
)

// Defaults of Config.
const (
	// DefaultNamespace holds the class Gateways of classes without
	// GatewayParameters when Config.Namespace is unset: the namespace the
	// chart's README installs the controller into.
	DefaultNamespace = "xds-system"
	// DefaultGatewayClass is the GatewayClass the chart installs.
	DefaultGatewayClass = "xds-controller"
	// DefaultHTTPAddress and DefaultHTTPSAddress are where Envoy serves the
	// Ingresses in the controller: ports 80 and 443 of the class's
	// Service (Envoy binds ports the provisioner maps them to).
	DefaultHTTPAddress  = "0.0.0.0:80"
	DefaultHTTPSAddress = "0.0.0.0:443"
	// ClassGatewayPrefix starts the name of the Gateway that stands for an
	// IngressClass: "ingress-<class>".
	ClassGatewayPrefix = "ingress-"
)

// Config places the Ingresses of our IngressClasses on the Envoy fleets.
// The zero value is valid (the defaults above).
type Config struct {
	// ControllerName overrides ControllerName when set.
	ControllerName string
	// Namespace is where the class Gateway (and so its Service) of a class
	// without GatewayParameters lives: the controller's namespace.
	Namespace string
	// GatewayClass is the GatewayClass whose fleet serves the classes (its
	// parameters, overlaid by a class's GatewayParameters, choose the
	// fleet).
	GatewayClass string
	// RequireGatewayClass, in the controller, refuses to serve the classes
	// when GatewayClass is not one of ours: no fleet would serve them.
	RequireGatewayClass bool
	// HTTPAddress and HTTPSAddress (host:port) are where the classes'
	// listeners bind: the host is the address Envoy binds (the wildcard
	// when the translation's AddressesOnService is set), the port the
	// listener port, which the translation's BindPort may map. HTTPS is
	// served only when an Ingress of the class has a usable spec.tls.
	HTTPAddress, HTTPSAddress string
}

func (c Config) controller() string { return cmp.Or(c.ControllerName, ControllerName) }

// listenAddress splits a host:port of Config; a bad one is an error (the
// caller checks flags with CheckAddress first).
func listenAddress(hostPort, def string) (string, gwapiv1.PortNumber, error) {
	host, port, err := net.SplitHostPort(cmp.Or(hostPort, def))
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return "", 0, fmt.Errorf("port %q is not 1-65535", port)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	if ip := net.ParseIP(host); ip == nil {
		return "", 0, fmt.Errorf("host %q is not an IP address", host)
	}
	return net.ParseIP(host).String(), gwapiv1.PortNumber(p), nil
}

// CheckAddress checks a listen address of Config (a flag's value):
// host:port with an IP address (empty for all) and a port 1-65535.
func CheckAddress(hostPort string) error {
	_, _, err := listenAddress(hostPort, "")
	return err
}

// Class is one IngressClass of ours and what serves it.
type Class struct {
	Obj *networkingv1.IngressClass
	// Params are the class's IngressClassParameters (nil without).
	Params *v1alpha1.IngressClassParameters
	// Gateway stands for the class on the Envoy fleets (ClassGateway).
	Gateway *gwapiv1.Gateway
	// Problem is why the class cannot be served ("" when it can): its
	// parameters cannot be resolved.
	Problem string
}

// Default says whether the class is marked the cluster's default.
func (c *Class) Default() bool { return c.Obj.Annotations[AnnotationDefaultClass] == "true" }

// Classes are the IngressClasses of res whose spec.controller is ours, by
// name, each with its parameters and class Gateway. It is pure.
//
// A class's spec.parameters must name IngressClassParameters
// (apiGroup gateway.xds-controller.dev) with scope Namespace and a
// namespace; a reference to anything else, or to an object that does not
// exist, is the class's Problem and its Ingresses are not served (as a
// GatewayClass with invalid parameters is not accepted).
func Classes(res *resources.Resources, cfg Config) map[string]*Class {
	params := map[types.NamespacedName]*v1alpha1.IngressClassParameters{}
	for _, p := range res.IngressClassParameters {
		if p != nil {
			params[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
		}
	}
	out := map[string]*Class{}
	for _, ic := range res.IngressClasses {
		if ic == nil || ic.Spec.Controller != cfg.controller() || out[ic.Name] != nil {
			continue
		}
		c := &Class{Obj: ic}
		c.Params, c.Problem = classParameters(ic.Spec.Parameters, params)
		c.Gateway = ClassGateway(ic, c.Params, cfg)
		out[ic.Name] = c
	}
	return out
}

// classParameters resolves an IngressClass's spec.parameters.
func classParameters(ref *networkingv1.IngressClassParametersReference, params map[types.NamespacedName]*v1alpha1.IngressClassParameters) (*v1alpha1.IngressClassParameters, string) {
	if ref == nil {
		return nil, ""
	}
	group := ""
	if ref.APIGroup != nil {
		group = *ref.APIGroup
	}
	if group != v1alpha1.GroupVersion.Group || ref.Kind != v1alpha1.IngressClassParametersKind {
		return nil, fmt.Sprintf("spec.parameters must name apiGroup %s kind %s, not apiGroup %q kind %q",
			v1alpha1.GroupVersion.Group, v1alpha1.IngressClassParametersKind, group, ref.Kind)
	}
	if ref.Scope == nil || *ref.Scope != networkingv1.IngressClassParametersReferenceScopeNamespace || ref.Namespace == nil || *ref.Namespace == "" {
		return nil, fmt.Sprintf("spec.parameters: %s %s is namespaced; set scope Namespace and its namespace", v1alpha1.IngressClassParametersKind, ref.Name)
	}
	k := types.NamespacedName{Namespace: *ref.Namespace, Name: ref.Name}
	p := params[k]
	if p == nil {
		return nil, fmt.Sprintf("spec.parameters: %s %s not found", v1alpha1.IngressClassParametersKind, k)
	}
	return p, ""
}

// ClassGateway is the Gateway that stands for the IngressClass ic on the
// Envoy fleets: no API object, but what the provisioner and the
// translation's Scope and BindPort read for a Gateway, so the class gets a
// fleet and a Service exactly as a Gateway does. It is named
// "ingress-<class>" (ClassGatewayPrefix); it lives in the namespace of the
// class's IngressClassParameters when they name GatewayParameters (its
// spec.infrastructure.parametersRef, which is local), else in the
// controller's namespace (Config.Namespace); its GatewayClass is
// Config.GatewayClass; its listeners "http" and "https" are on the ports
// of Config.HTTPAddress and HTTPSAddress (80 and 443 by default); its UID
// and creationTimestamp are the class's, and the annotation
// gatewayapi.AnnotationStandsForIngressClass names the class, which owns
// the objects rendered for it.
func ClassGateway(ic *networkingv1.IngressClass, params *v1alpha1.IngressClassParameters, cfg Config) *gwapiv1.Gateway {
	_, httpPort, err := listenAddress(cfg.HTTPAddress, DefaultHTTPAddress)
	if err != nil {
		httpPort = 80
	}
	_, httpsPort, err := listenAddress(cfg.HTTPSAddress, DefaultHTTPSAddress)
	if err != nil {
		httpsPort = 443
	}
	gw := &gwapiv1.Gateway{
		TypeMeta: metav1.TypeMeta{APIVersion: gwapiv1.GroupVersion.String(), Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         cmp.Or(cfg.Namespace, DefaultNamespace),
			Name:              ClassGatewayPrefix + ic.Name,
			UID:               ic.UID,
			CreationTimestamp: ic.CreationTimestamp,
			Generation:        ic.Generation,
			Annotations:       map[string]string{gatewayapi.AnnotationStandsForIngressClass: ic.Name},
		},
		Spec: gwapiv1.GatewaySpec{
			GatewayClassName: gwapiv1.ObjectName(cmp.Or(cfg.GatewayClass, DefaultGatewayClass)),
			Listeners: []gwapiv1.Listener{
				{Name: "http", Port: httpPort, Protocol: gwapiv1.HTTPProtocolType},
				{Name: "https", Port: httpsPort, Protocol: gwapiv1.HTTPSProtocolType},
			},
		},
	}
	if params != nil && params.Spec.GatewayParametersRef != nil {
		gw.Namespace = params.Namespace
		gw.Spec.Infrastructure = &gwapiv1.GatewayInfrastructure{ParametersRef: &gwapiv1.LocalParametersReference{
			Group: gwapiv1.Group(v1alpha1.GroupVersion.Group),
			Kind:  gwapiv1.Kind(v1alpha1.Kind),
			Name:  params.Spec.GatewayParametersRef.Name,
		}}
	}
	return gw
}

// ClassGateways are the class Gateways of res's IngressClasses of ours
// whose parameters resolve, sorted by namespace/name: what the provisioner
// serves beside the Gateways.
func ClassGateways(res *resources.Resources, cfg Config) []*gwapiv1.Gateway {
	var out []*gwapiv1.Gateway
	for _, c := range Classes(res, cfg) {
		if c.Problem == "" {
			out = append(out, c.Gateway)
		}
	}
	slices.SortFunc(out, func(a, b *gwapiv1.Gateway) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// ClassOf is the class of ours that ing belongs to, or nil: the class
// spec.ingressClassName names; without it the one the deprecated
// kubernetes.io/ingress.class annotation names; without either the
// default class of ours (AnnotationDefaultClass; of several, the oldest,
// then the first by name).
func ClassOf(ing *networkingv1.Ingress, classes map[string]*Class) *Class {
	if ing.Spec.IngressClassName != nil {
		return classes[*ing.Spec.IngressClassName]
	}
	if name, ok := ing.Annotations[AnnotationIngressClass]; ok {
		return classes[name]
	}
	var def *Class
	for _, c := range classes {
		if c.Default() && (def == nil || gatewayapi.OldestFirst(c.Obj, def.Obj) < 0) {
			def = c
		}
	}
	return def
}

// ReferencedSecrets are the Secrets that the Ingresses of our
// IngressClasses (the default ControllerName) name in spec.tls, in their
// own namespaces, and in their auth-secret annotation (auth.go), in the
// order of res: what the controller must read for them.
func ReferencedSecrets(res *resources.Resources) []types.NamespacedName {
	classes := Classes(res, Config{})
	var out []types.NamespacedName
	for _, ing := range res.Ingresses {
		if ing == nil || ClassOf(ing, classes) == nil {
			continue
		}
		for _, t := range ing.Spec.TLS {
			if t.SecretName != "" {
				out = append(out, types.NamespacedName{Namespace: ing.Namespace, Name: t.SecretName})
			}
		}
		if ref, ok := authSecret(ing, ClassOf(ing, classes)); ok {
			out = append(out, ref)
		}
	}
	return out
}
