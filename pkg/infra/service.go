package infra

// A Gateway's own objects: its Service (ports, type, requested
// addresses) and, in Shared mode, the EndpointSlices that point it at the
// shared fleet's pods.

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// service renders gw's Service: one port per distinct listener port and
// transport protocol, targetPort = the bind port, and the UDP side of
// each port of http3 (ServicePorts); of the parameters' type
// (LoadBalancer by default), or ClusterIP when every address gw requests is
// of routability Cluster (gatewayapi.ClusterOnly).
func (r *Renderer) service(gw *gwapiv1.Gateway, params v1alpha1.GatewayParametersSpec, bind func(*gwapiv1.Gateway, gwapiv1.PortNumber) uint32, http3 []gwapiv1.PortNumber) *corev1.Service {
	infraLabels, infraAnnotations := infraMeta(gw)
	annotations := map[string]string{}
	if params.Service != nil {
		maps.Copy(annotations, params.Service.Annotations)
	}
	maps.Copy(annotations, infraAnnotations)
	annotations[AnnotationGatewayName] = gw.Name
	svcType := DefaultServiceType
	if params.Service != nil && params.Service.Type != nil {
		svcType = *params.Service.Type
	}
	if gatewayapi.ClusterOnly(gw) {
		// Every address is routability Cluster (GEP-5093): the cluster IP
		// alone, no load balancer, node port or external IP.
		svcType = corev1.ServiceTypeClusterIP
	}
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            GatewayServiceName(gw),
			Namespace:       gw.Namespace,
			Labels:          gatewayLabels(gw, infraLabels),
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{gatewayOwner(gw)},
		},
		Spec: corev1.ServiceSpec{
			Type:  svcType,
			Ports: ServicePorts(gw, bind, http3),
		},
	}
	requestAddresses(svc, gatewayapi.RequestedIPs(gw), params.GatewayPolicy.Allows(v1alpha1.PermissionExternalIPs))
	return svc
}

// requestAddresses asks for the Gateway's spec.addresses IPs
// (gatewayapi.RequestedIPs) on its Service; pkg/status reports whether the
// Service got them. Nothing is requested when ips is empty.
//
// A LoadBalancer Service asks its load balancer:
//   - one address goes to spec.loadBalancerIP, the one field that every
//     implementation knows (cloud providers, MetalLB, Cilium LB-IPAM,
//     kube-vip, the local cluster's lb-allocator), deprecated since
//     Kubernetes 1.24 but still served;
//   - several go to the annotation AnnotationLoadBalancerIPs
//     (metallb.io/loadBalancerIPs, comma-separated), since
//     spec.loadBalancerIP holds one; spec.loadBalancerIP is then left
//     empty, because MetalLB refuses a Service that sets both. A load
//     balancer that does not read this annotation assigns an address of
//     its own choosing, which pkg/status reports as AddressNotUsable.
//
// Any other type takes them as external IPs (spec.externalIPs), which
// kube-proxy serves on every node, only when externalIPs is true (the
// class's parameters allow ExternalIPs): an external IP captures the
// cluster's traffic to that address, whoever owns it (CVE-2020-8554).
// Otherwise nothing is requested and pkg/status reports the addresses as
// AddressNotUsable.
func requestAddresses(svc *corev1.Service, ips []string, externalIPs bool) {
	switch {
	case len(ips) == 0:
	case svc.Spec.Type != corev1.ServiceTypeLoadBalancer:
		if externalIPs {
			svc.Spec.ExternalIPs = slices.Clone(ips)
		}
	case len(ips) == 1:
		svc.Spec.LoadBalancerIP = ips[0]
	default:
		svc.Annotations[AnnotationLoadBalancerIPs] = strings.Join(ips, ",")
	}
}

// ServicePorts are the Service ports of gw: one per distinct (listener
// port, transport protocol), named <protocol>-<port> after the first
// listener on it (http-80, https-443, tls-8443, tcp-5432, udp-53; other
// protocols name as tcp), targetPort the bind port, ordered by port then
// protocol; and for each port of http3 (HTTP/3: Envoy's QUIC listener
// binds the same port in UDP) that the Service has in TCP, a UDP port
// http3-<port>, unless a UDP listener has it already.
func ServicePorts(gw *gwapiv1.Gateway, bind func(*gwapiv1.Gateway, gwapiv1.PortNumber) uint32, http3 []gwapiv1.PortNumber) []corev1.ServicePort {
	type key struct {
		port  int32
		proto corev1.Protocol
	}
	seen := map[key]bool{}
	var out []corev1.ServicePort
	for _, l := range gw.Spec.Listeners {
		proto := corev1.ProtocolTCP
		if l.Protocol == gwapiv1.UDPProtocolType {
			proto = corev1.ProtocolUDP
		}
		k := key{int32(l.Port), proto}
		if seen[k] {
			continue
		}
		seen[k] = true
		name := "tcp"
		switch l.Protocol {
		case gwapiv1.HTTPProtocolType, gwapiv1.HTTPSProtocolType, gwapiv1.TLSProtocolType, gwapiv1.TCPProtocolType, gwapiv1.UDPProtocolType:
			name = strings.ToLower(string(l.Protocol))
		}
		out = append(out, corev1.ServicePort{
			Name:       fmt.Sprintf("%s-%d", name, l.Port),
			Protocol:   proto,
			Port:       int32(l.Port),
			TargetPort: intstr.FromInt32(int32(bind(gw, l.Port))),
		})
	}
	for _, p := range http3 {
		k := key{int32(p), corev1.ProtocolUDP}
		if seen[k] || !seen[key{int32(p), corev1.ProtocolTCP}] {
			continue // a UDP listener's, or not a port of the Service
		}
		seen[k] = true
		out = append(out, corev1.ServicePort{
			Name:       fmt.Sprintf("http3-%d", p),
			Protocol:   corev1.ProtocolUDP,
			Port:       int32(p),
			TargetPort: intstr.FromInt32(int32(bind(gw, p))),
		})
	}
	slices.SortFunc(out, func(a, b corev1.ServicePort) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
	})
	return out
}

// endpointSlices point svc at the fleet's pods: one slice per address
// family present (IPv4 always, even empty, so that stale endpoints go),
// named <service>-ipv4 and <service>-ipv6.
func endpointSlices(gw *gwapiv1.Gateway, svc *corev1.Service, eps []Endpoint) []client.Object {
	var ports []discoveryv1.EndpointPort
	for _, sp := range svc.Spec.Ports {
		ports = append(ports, discoveryv1.EndpointPort{
			Name:     ptr.To(sp.Name),
			Protocol: ptr.To(sp.Protocol),
			Port:     ptr.To(int32(sp.TargetPort.IntValue())),
		})
	}
	byFamily := map[discoveryv1.AddressType][]discoveryv1.Endpoint{discoveryv1.AddressTypeIPv4: nil}
	sorted := slices.Clone(eps)
	slices.SortFunc(sorted, func(a, b Endpoint) int { return cmp.Compare(a.IP, b.IP) })
	for _, ep := range sorted {
		ip := net.ParseIP(ep.IP)
		if ip == nil {
			continue
		}
		family := discoveryv1.AddressTypeIPv6
		if ip.To4() != nil {
			family = discoveryv1.AddressTypeIPv4
		}
		e := discoveryv1.Endpoint{
			Addresses: []string{ep.IP},
			Conditions: discoveryv1.EndpointConditions{
				Ready:       ptr.To(ep.Ready),
				Serving:     ptr.To(ep.Serving),
				Terminating: ptr.To(ep.Terminating),
			},
		}
		if ep.NodeName != "" {
			e.NodeName = ptr.To(ep.NodeName)
		}
		if ep.PodName != "" {
			e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: ep.PodNamespace, Name: ep.PodName}
		}
		byFamily[family] = append(byFamily[family], e)
	}
	infraLabels, infraAnnotations := infraMeta(gw)
	var out []client.Object
	for _, family := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
		list, ok := byFamily[family]
		if !ok {
			continue
		}
		labels := gatewayLabels(gw, infraLabels)
		labels[discoveryv1.LabelServiceName] = svc.Name
		labels[discoveryv1.LabelManagedBy] = EndpointSliceManagedBy
		out = append(out, &discoveryv1.EndpointSlice{
			TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
			ObjectMeta: metav1.ObjectMeta{
				Name:            svc.Name + "-" + strings.ToLower(string(family)),
				Namespace:       svc.Namespace,
				Labels:          labels,
				Annotations:     copyOrNil(infraAnnotations),
				OwnerReferences: []metav1.OwnerReference{gatewayOwner(gw)},
			},
			AddressType: family,
			Endpoints:   list,
			Ports:       ports,
		})
	}
	return out
}

// EndpointsFromPods lists the addresses of a fleet's pods (select them
// with FleetSelector). Pods without an IP are left out.
func EndpointsFromPods(pods []corev1.Pod) []Endpoint {
	var out []Endpoint
	for i := range pods {
		p := &pods[i]
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		terminating := p.DeletionTimestamp != nil
		ips := p.Status.PodIPs
		if len(ips) == 0 && p.Status.PodIP != "" {
			ips = []corev1.PodIP{{IP: p.Status.PodIP}}
		}
		for _, ip := range ips {
			out = append(out, Endpoint{
				IP:           ip.IP,
				Ready:        ready && !terminating,
				Serving:      ready,
				Terminating:  terminating,
				NodeName:     p.Spec.NodeName,
				PodName:      p.Name,
				PodNamespace: p.Namespace,
			})
		}
	}
	return out
}

// HTTP3Ports are the listener ports of g, an IR Gateway, that serve
// HTTP/3 (a ListenerPolicy's http3 that the translation kept:
// ir.ClientSettings HTTP3), ascending, each once: the Gateway's Service
// needs them in UDP too.
func HTTP3Ports(g *ir.Gateway) []gwapiv1.PortNumber {
	var out []gwapiv1.PortNumber
	if g == nil {
		return nil
	}
	for _, l := range g.Listeners {
		if l.Client != nil && l.Client.HTTP3 != nil && !slices.Contains(out, gwapiv1.PortNumber(l.GatewayPort)) {
			out = append(out, gwapiv1.PortNumber(l.GatewayPort))
		}
	}
	slices.Sort(out)
	return out
}
