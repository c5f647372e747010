package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/xds-controller/xds-controller/pkg/ingress"
)

// TestIngress: the controller serves the Ingresses of its IngressClass on
// the shared fleet of the Ingress GatewayClass: the class gets a Service
// of its own (ports 80 and 443, owned by the IngressClass) in the
// controller's namespace, the Ingress's status.loadBalancer is that
// Service's address, its paths reach the class's proxy scope, and a path
// whose Service does not exist is a Warning Event on its Ingress, which
// goes once the Service exists.
func TestIngress(t *testing.T) {
	requireAPIServer(t)
	ctx := context.Background()
	const ns, gc, ic = "ingress-it", "ingress-gc", "ingress-it"
	cleanInfra(t, gc, ns)
	r := startReplica(t, replicaOptions{identity: "ingress", provision: true, ingressGatewayClass: gc})
	applyYAML(t, `
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: ingress-gc-params, namespace: `+controllerNamespace+`}
spec: {service: {type: ClusterIP}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: `+gc+`}
spec:
  controllerName: xds-controller.dev/gateway-controller
  parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: ingress-gc-params, namespace: `+controllerNamespace+`}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: `+ic+`}
spec: {controller: `+ingress.ControllerName+`}
---
apiVersion: v1
kind: Namespace
metadata: {name: `+ns+`}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: `+ns+`}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: `+ns+`}
spec:
  ingressClassName: `+ic+`
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}
      - {path: /late, pathType: Prefix, backend: {service: {name: late, port: {number: 80}}}}
`)
	var svc corev1.Service
	waitFor(t, controllerNamespace, "ingress-"+ic+"-"+gc, &svc, nil)
	var class networkingv1.IngressClass
	get(t, "", ic, &class)
	if err := ownedBy(&svc, "IngressClass", ic, class.UID); err != nil {
		t.Error(err)
	}
	if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[1].Port != 443 || svc.Spec.ClusterIP == "" {
		t.Fatalf("the class's Service: %+v", svc.Spec)
	}
	var ing networkingv1.Ingress
	waitFor(t, ns, "shop", &ing, func() error {
		lb := ing.Status.LoadBalancer.Ingress
		if len(lb) != 1 || lb[0].IP != svc.Spec.ClusterIP {
			return fmt.Errorf("status.loadBalancer %+v, want the Service's %s", lb, svc.Spec.ClusterIP)
		}
		return nil
	})
	// No Gateway uses the class: its fleet's scope is published for the
	// Ingresses alone (their routes are the golden cases' and the
	// standalone end to end's business).
	scope := "gatewayclass/" + gc
	eventually(t, 20*time.Second, "scope "+scope+" published", func() error {
		if r.XDS().Scopes()[scope] == "" {
			return fmt.Errorf("scope %s not published (scopes %v)", scope, r.XDS().Scopes())
		}
		return nil
	})
	warning := func(reason string) func() error {
		return func() error {
			var evs eventsv1.EventList
			if err := k8sClient.List(ctx, &evs, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, e := range evs.Items {
				if e.Regarding.Kind == "Ingress" && e.Regarding.Name == "shop" && e.Reason == reason {
					t.Logf("Event: %s %s: %s", e.Type, e.Reason, e.Note)
					return nil
				}
			}
			return fmt.Errorf("no %s Event on Ingress shop among %d", reason, len(evs.Items))
		}
	}
	eventually(t, 20*time.Second, "a BackendNotFound Event on the Ingress", warning(ingress.ReasonBackendNotFound))
	applyYAML(t, `
apiVersion: v1
kind: Service
metadata: {name: late, namespace: `+ns+`}
spec: {ports: [{port: 80}]}
`)
	eventually(t, 20*time.Second, "a Served Event once the Service exists", warning("Served"))
}
