package kubernetes

// Services and EndpointSlices are cached slimmed: every one of the
// cluster's is watched (a route may name any Service, and an EndpointSlice
// change must reach Envoy at once, so they stay informers of full objects
// rather than metadata with on-demand reads), but each is kept with only
// the fields that the translation (pkg/gatewayapi backends.go, policy.go,
// incremental.go), the Gateway addresses (pkg/status addresses.go,
// routability.go, ingress.go) and the provisioner (pkg/provisioner
// resolve.go, plan.go and pkg/infra bindport.go: a Service's labels,
// annotations, owner references and ports) read. A cluster's thousands of Services and
// EndpointSlices that no route names then cost their identity and
// addresses, not their selectors, topology and bookkeeping.

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stripService keeps of a Service its metadata (as stripObject leaves it),
// spec.type, ports, clusterIP(s) and externalIPs, and its status (the
// load balancer's addresses); selector, session affinity, IP families and
// traffic policies go. Other objects get stripObject.
func stripService(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return stripObject(obj)
	}
	if _, err := stripObject(svc); err != nil {
		return nil, err
	}
	return &corev1.Service{
		TypeMeta: svc.TypeMeta, ObjectMeta: svc.ObjectMeta,
		Spec: corev1.ServiceSpec{
			Type: svc.Spec.Type, Ports: svc.Spec.Ports, ClusterIP: svc.Spec.ClusterIP, ClusterIPs: svc.Spec.ClusterIPs, ExternalIPs: svc.Spec.ExternalIPs,
		},
		Status: svc.Status,
	}, nil
}

// stripEndpointSlice keeps of an EndpointSlice its identity and labels
// (kubernetes.io/service-name ties it to its Service), addressType, ports,
// and of each endpoint its addresses and Ready condition (the endpoints
// the translation sends: backends.go endpoints); annotations (the
// endpoint controller's last-change-trigger-time), owner references, the
// other conditions, target Pods, nodes, zones and hints go. Other objects
// get stripObject.
func stripEndpointSlice(obj any) (any, error) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return stripObject(obj)
	}
	out := &discoveryv1.EndpointSlice{
		TypeMeta: es.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: es.Name, Namespace: es.Namespace, UID: es.UID, ResourceVersion: es.ResourceVersion, Generation: es.Generation,
			CreationTimestamp: es.CreationTimestamp, DeletionTimestamp: es.DeletionTimestamp, Labels: es.Labels,
		},
		AddressType: es.AddressType, Ports: es.Ports,
	}
	if len(es.Endpoints) > 0 {
		out.Endpoints = make([]discoveryv1.Endpoint, len(es.Endpoints))
		for i, ep := range es.Endpoints {
			out.Endpoints[i] = discoveryv1.Endpoint{Addresses: ep.Addresses, Conditions: discoveryv1.EndpointConditions{Ready: ep.Conditions.Ready}}
		}
	}
	return out, nil
}
