package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/status"
)

// TestStaticAddresses: a Gateway's spec.addresses are asked of its
// LoadBalancer Service (several in the metallb.io/loadBalancerIPs
// annotation, one in spec.loadBalancerIP), and its Programmed condition
// follows what the load balancer did: AddressNotAssigned while pending,
// AddressNotUsable when it refused an address (the Service condition
// xds-controller.dev/AddressesRefused), Programmed once it assigned every
// requested address; status.addresses lists what the Service has. envtest
// runs no load balancer: the test writes the Service status as the local
// cluster's lb-allocator would.
func TestStaticAddresses(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	const ns, class, gwName = "prov-addresses", "addresses", "web"
	const unusable, usable = "10.244.2.1", "10.244.1.250"
	cleanInfra(t, class, ns)
	r := startReplica(t, replicaOptions{identity: "addresses", provision: true})
	applyYAML(t, `
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: addresses-params, namespace: `+controllerNamespace+`}
spec: {mode: Shared, replicas: 1, service: {type: LoadBalancer}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: addresses}
spec:
  controllerName: xds-controller.dev/gateway-controller
  parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: addresses-params, namespace: `+controllerNamespace+`}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: prov-addresses}
spec:
  gatewayClassName: addresses
  addresses: [{value: `+unusable+`}, {type: IPAddress, value: `+usable+`}]
  listeners: [{name: http, protocol: HTTP, port: 8080}]
`)
	svcName := gwName + "-" + class
	var svc corev1.Service
	waitFor(t, ns, svcName, &svc, func() error {
		if got := svc.Annotations[infra.AnnotationLoadBalancerIPs]; got != unusable+","+usable || svc.Spec.LoadBalancerIP != "" {
			return fmt.Errorf("annotation %q loadBalancerIP %q", got, svc.Spec.LoadBalancerIP)
		}
		return nil
	})
	fakeProxy(t, r, "fleet-pod-1", "gatewayclass/"+class)
	wantProgrammed := func(st metav1.ConditionStatus, reason string, addresses ...string) {
		t.Helper()
		eventually(t, 10*time.Second, fmt.Sprintf("Programmed=%s %s, addresses %v", st, reason, addresses), func() error {
			var gw gwapiv1.Gateway
			get(t, ns, gwName, &gw)
			c := meta.FindStatusCondition(gw.Status.Conditions, "Programmed")
			if c == nil || c.Status != st || c.Reason != reason || c.ObservedGeneration != gw.Generation {
				return fmt.Errorf("Programmed %+v", c)
			}
			if a := meta.FindStatusCondition(gw.Status.Conditions, "Accepted"); a == nil || a.Status != metav1.ConditionTrue {
				return fmt.Errorf("Accepted %+v", a)
			}
			var got []string
			for _, a := range gw.Status.Addresses {
				if *a.Type != gwapiv1.IPAddressType {
					return fmt.Errorf("address %s of type %s", a.Value, *a.Type)
				}
				got = append(got, a.Value)
			}
			if fmt.Sprint(got) != fmt.Sprint(addresses) {
				return fmt.Errorf("addresses %v", got)
			}
			return nil
		})
	}
	// No load balancer has answered yet.
	wantProgrammed(metav1.ConditionFalse, "AddressNotAssigned")

	// The load balancer gives the usable address and refuses the other.
	setLoadBalancer := func(refusal string, ips ...string) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var s corev1.Service
			get(t, ns, svcName, &s)
			s.Status.LoadBalancer.Ingress = nil
			for _, ip := range ips {
				s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
			}
			if refusal != "" {
				meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: status.ServiceConditionAddressesRefused,
					Status: metav1.ConditionTrue, Reason: "AddressesRefused", Message: refusal})
			} else {
				meta.RemoveStatusCondition(&s.Status.Conditions, status.ServiceConditionAddressesRefused)
			}
			return k8sClient.Status().Update(ctx, &s)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setLoadBalancer(unusable+" is outside the pool", usable)
	wantProgrammed(metav1.ConditionFalse, "AddressNotUsable", usable)
	var gw gwapiv1.Gateway
	get(t, ns, gwName, &gw)
	if c := meta.FindStatusCondition(gw.Status.Conditions, "Programmed"); c.Message !=
		"the load balancer of Service "+ns+"/"+svcName+" cannot assign address "+unusable+" ("+unusable+" is outside the pool); request other addresses in spec.addresses" {
		t.Errorf("Programmed message %q", c.Message)
	}

	// Only the usable address left: one address is spec.loadBalancerIP,
	// the annotation goes away, and the Gateway is Programmed.
	gw.Spec.Addresses = []gwapiv1.GatewaySpecAddress{{Value: usable}}
	if err := update(ctx, &gw); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, svcName, &svc, func() error {
		if got, ok := svc.Annotations[infra.AnnotationLoadBalancerIPs]; ok || svc.Spec.LoadBalancerIP != usable {
			return fmt.Errorf("annotation %q loadBalancerIP %q", got, svc.Spec.LoadBalancerIP)
		}
		return nil
	})
	setLoadBalancer("", usable)
	wantProgrammed(metav1.ConditionTrue, "Programmed", usable)
}
