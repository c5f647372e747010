package integration

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// TestTenantParameters: a Gateway owner's own GatewayParameters that turn
// privileged (hostNetwork, a privileged container, another image) make
// the Gateway Accepted=False reason InvalidParameters naming each field,
// and its Dedicated fleet stays the previous good one; once the class's
// parameters (the cluster admin's) allow PodTemplate and EnvoyImage, the
// same parameters are accepted and rendered. A Shared Gateway's
// spec.addresses on a ClusterIP Service are not made external IPs
// (CVE-2020-8554): Programmed=False reason AddressNotUsable, until the
// class allows ExternalIPs.
func TestTenantParameters(t *testing.T) {
	requireAPIServer(t)
	const ns, class = "prov-tenant", "tenant"
	const address = "192.0.2.80"
	cleanInfra(t, class, ns)
	r := startReplica(t, replicaOptions{identity: "tenant", provision: true})
	applyYAML(t, `
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: tenant-params, namespace: `+controllerNamespace+`}
spec: {replicas: 1}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: own, namespace: prov-tenant}
spec:
  mode: Dedicated
  podTemplate: {spec: {nodeSelector: {pool: edge}}}
---
apiVersion: gateway.xds-controller.dev/v1alpha1
kind: GatewayParameters
metadata: {name: cluster-ip, namespace: prov-tenant}
spec: {mode: Shared, service: {type: ClusterIP}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: tenant}
spec:
  controllerName: xds-controller.dev/gateway-controller
  parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: tenant-params, namespace: `+controllerNamespace+`}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: d, namespace: prov-tenant}
spec:
  gatewayClassName: tenant
  infrastructure:
    parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: own}
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: addr, namespace: prov-tenant}
spec:
  gatewayClassName: tenant
  addresses: [{value: `+address+`}]
  infrastructure:
    parametersRef: {group: gateway.xds-controller.dev, kind: GatewayParameters, name: cluster-ip}
  listeners: [{name: http, protocol: HTTP, port: 8080}]
`)
	// The allowed overlay is rendered.
	var dep appsv1.Deployment
	waitFor(t, ns, "d-"+class, &dep, func() error {
		if dep.Spec.Template.Spec.NodeSelector["pool"] != "edge" {
			return fmt.Errorf("nodeSelector %v", dep.Spec.Template.Spec.NodeSelector)
		}
		return nil
	})
	good := dep.Spec.Template

	// The Gateway owner turns its parameters privileged: refused, with
	// every field named; the fleet keeps its last good template.
	const hostile = `{"spec":{"hostNetwork":true,"containers":[{"name":"envoy","securityContext":{"privileged":true,"allowPrivilegeEscalation":true,"runAsUser":0,"runAsNonRoot":false}}]}}`
	updateParams(t, ns, "own", func(s *v1alpha1.GatewayParametersSpec) {
		s.PodTemplate = &runtime.RawExtension{Raw: []byte(hostile)}
		s.Envoy = &v1alpha1.EnvoySpec{Image: ptr.To("evil.example/envoy:latest")}
	})
	const why = "GatewayParameters prov-tenant/own: a Gateway's own GatewayParameters may not set spec.envoy.image, spec.podTemplate.spec.containers[envoy].securityContext, spec.podTemplate.spec.hostNetwork unless the GatewayClass's GatewayParameters allow it (spec.gatewayPolicy.allow: EnvoyImage, PodTemplate)"
	eventually(t, 20*time.Second, "Gateway d refused", func() error {
		c := gatewayAccepted(t, ns, "d")
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != string(gwapiv1.GatewayReasonInvalidParameters) || c.Message != why {
			return fmt.Errorf("Accepted %+v", c)
		}
		return nil
	})
	// Once the provisioner has run since (it wrote the other Gateway's
	// new Service annotation), the refused Gateway's fleet is still the
	// previous one, neither changed nor deleted.
	updateParams(t, ns, "cluster-ip", func(s *v1alpha1.GatewayParametersSpec) {
		s.Service.Annotations = map[string]string{"example.com/pass": "after-refusal"}
	})
	var svc corev1.Service
	waitFor(t, ns, "addr-"+class, &svc, func() error {
		if svc.Annotations["example.com/pass"] != "after-refusal" {
			return fmt.Errorf("annotations %v", svc.Annotations)
		}
		return nil
	})
	get(t, ns, "d-"+class, &dep)
	if dep.Spec.Template.Spec.HostNetwork || !equality.Semantic.DeepEqual(dep.Spec.Template, good) {
		t.Fatalf("the refused parameters changed the fleet: %s", toYAML(dep.Spec.Template.Spec))
	}

	// The spec.addresses of a ClusterIP Service: no external IPs, and the
	// Gateway says why once a proxy serves it.
	fakeProxy(t, r, "tenant-pod-1", "gatewayclass/"+class)
	wantAddr := func(st metav1.ConditionStatus, reason, message string, addresses ...string) {
		t.Helper()
		eventually(t, 20*time.Second, fmt.Sprintf("Gateway addr Programmed=%s %s", st, reason), func() error {
			var gw gwapiv1.Gateway
			get(t, ns, "addr", &gw)
			c := meta.FindStatusCondition(gw.Status.Conditions, "Programmed")
			if c == nil || c.Status != st || c.Reason != reason || !strings.Contains(c.Message, message) {
				return fmt.Errorf("Programmed %+v", c)
			}
			var got []string
			for _, a := range gw.Status.Addresses {
				got = append(got, a.Value)
			}
			if addresses != nil && !slices.Equal(got, addresses) {
				return fmt.Errorf("addresses %v, want %v", got, addresses)
			}
			return nil
		})
	}
	get(t, ns, "addr-"+class, &svc)
	if len(svc.Spec.ExternalIPs) != 0 {
		t.Errorf("external IPs %v without the class's leave", svc.Spec.ExternalIPs)
	}
	// status.addresses lists the addresses that satisfy an entry of
	// spec.addresses (GEP-5093), so not the cluster IP: none.
	wantAddr(metav1.ConditionFalse, string(gwapiv1.GatewayReasonAddressNotUsable),
		"address "+address+" not usable: Service prov-tenant/addr-tenant is of type ClusterIP", []string{}...)

	// The cluster admin allows all three: the same parameters are
	// accepted and rendered, the address becomes an external IP.
	updateParams(t, controllerNamespace, "tenant-params", func(s *v1alpha1.GatewayParametersSpec) {
		s.GatewayPolicy = &v1alpha1.GatewayPolicy{Allow: []v1alpha1.GatewayPermission{
			v1alpha1.PermissionPodTemplate, v1alpha1.PermissionEnvoyImage, v1alpha1.PermissionExternalIPs}}
	})
	waitFor(t, ns, "d-"+class, &dep, func() error {
		if !dep.Spec.Template.Spec.HostNetwork || dep.Spec.Template.Spec.Containers[0].Image != "evil.example/envoy:latest" {
			return fmt.Errorf("hostNetwork %v image %s", dep.Spec.Template.Spec.HostNetwork, dep.Spec.Template.Spec.Containers[0].Image)
		}
		return nil
	})
	if c := gatewayAccepted(t, ns, "d"); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Gateway d Accepted %+v", c)
	}
	waitFor(t, ns, "addr-"+class, &svc, func() error {
		if !slices.Equal(svc.Spec.ExternalIPs, []string{address}) {
			return fmt.Errorf("external IPs %v", svc.Spec.ExternalIPs)
		}
		return nil
	})
	wantAddr(metav1.ConditionTrue, "Programmed", "", address)
}
