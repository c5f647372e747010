package infra

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

func testRenderer() *Renderer {
	return &Renderer{
		Namespace: "xds-system",
		XDS: XDSServer{
			Host:     "xds-controller.xds-system.svc.cluster.local",
			Port:     18000,
			ServerID: "spiffe://cluster.local/ns/xds-system/sa/xds-controller",
		},
		Identity: IdentityService{
			Host:       "xds-controller.xds-system.svc.cluster.local",
			Port:       18443,
			AgentImage: "ghcr.io/xds-controller/xds-controller:dev",
		},
	}
}

var testBundle = []byte("CA")

func testClass() *gwapiv1.GatewayClass {
	return &gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "xds", UID: "class-uid"}}
}

func withInfra(gw *gwapiv1.Gateway) *gwapiv1.Gateway {
	gw.Spec.Infrastructure = &gwapiv1.GatewayInfrastructure{
		Labels:      map[gwapiv1.LabelKey]gwapiv1.LabelValue{"team": "payments", LabelManagedBy: "someone-else"},
		Annotations: map[gwapiv1.AnnotationKey]gwapiv1.AnnotationValue{"example.com/owner": "alice"},
	}
	return gw
}

func find[T client.Object](t *testing.T, objs []client.Object) []T {
	t.Helper()
	var out []T
	for _, o := range objs {
		if v, ok := o.(T); ok {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		var zero T
		t.Fatalf("no %T among %d objects", zero, len(objs))
	}
	return out
}

func TestDedicated(t *testing.T) {
	gw := withInfra(gateway("apps", "web", 0, 80, 443, -53))
	gw.Spec.Listeners[1].Protocol = gwapiv1.HTTPSProtocolType
	objs, err := testRenderer().Dedicated(DedicatedInput{Gateway: gw, Params: Effective(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}, nil), TrustBundle: testBundle})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetNamespace()+"/"+o.GetName())
		// Every object: our labels win over the infrastructure labels, the
		// infrastructure ones are there, the Gateway owns it.
		l := o.GetLabels()
		if l[LabelManagedBy] != ManagedByValue || l[LabelGatewayName] != "web" || l[LabelGatewayClassName] != "xds" || l["team"] != "payments" {
			t.Errorf("%s labels: %v", o.GetName(), l)
		}
		if o.GetAnnotations()["example.com/owner"] != "alice" {
			t.Errorf("%s annotations: %v", o.GetName(), o.GetAnnotations())
		}
		want := []metav1.OwnerReference{{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Name: "web", UID: "uid-apps-web", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		if d := cmp.Diff(want, o.GetOwnerReferences()); d != "" {
			t.Errorf("%s owner: %s", o.GetName(), d)
		}
	}
	if d := cmp.Diff([]string{
		"ServiceAccount/apps/web-xds", "ConfigMap/apps/web-xds",
		"Deployment/apps/web-xds", "Service/apps/web-xds",
	}, kinds); d != "" {
		t.Errorf("objects (GEP-1762 names): %s", d)
	}

	sa := find[*corev1.ServiceAccount](t, objs)[0]
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Error("ServiceAccount must not automount its token")
	}
	cm := find[*corev1.ConfigMap](t, objs)[0]
	if cm.Data["ca.crt"] != "CA" {
		t.Errorf("trust bundle in the ConfigMap: %q", cm.Data["ca.crt"])
	}
	boot := cm.Data["bootstrap.yaml"]
	for _, want := range []string{`cluster: "gateway/apps/web"`, `address: "127.0.0.1", port_value: 9901`, `port_value: 19001`,
		`"xds-controller.xds-system.svc.cluster.local", port_value: 18000`, `path: "/etc/envoy/sds-svid.yaml"`, `path: "/etc/envoy/sds-bundle.yaml"`,
		`exact: "spiffe://cluster.local/ns/xds-system/sa/xds-controller"`} {
		if !strings.Contains(boot, want) {
			t.Errorf("bootstrap lacks %q:\n%s", want, boot)
		}
	}
	for file, want := range map[string]string{
		"sds-svid.yaml":   `filename: "/var/run/xds-controller/svid/tls.key"`,
		"sds-bundle.yaml": `filename: "/var/run/xds-controller/svid/ca.crt"`,
	} {
		if !strings.Contains(cm.Data[file], want) || !strings.Contains(cm.Data[file], `watched_directory: { path: "/var/run/xds-controller/svid" }`) {
			t.Errorf("%s lacks %q or the watched folder:\n%s", file, want, cm.Data[file])
		}
	}

	dep := find[*appsv1.Deployment](t, objs)[0]
	if *dep.Spec.Replicas != 1 {
		t.Errorf("replicas %d", *dep.Spec.Replicas)
	}
	pod := dep.Spec.Template
	if d := cmp.Diff(map[string]string{LabelName: "envoy", LabelInstance: "web-xds"}, dep.Spec.Selector.MatchLabels); d != "" {
		t.Errorf("selector: %s", d)
	}
	for k, v := range dep.Spec.Selector.MatchLabels {
		if pod.Labels[k] != v {
			t.Errorf("pod label %s != %s", k, v)
		}
	}
	if pod.Labels["team"] != "payments" || pod.Annotations["example.com/owner"] != "alice" || pod.Annotations[AnnotationPodTemplateHash] == "" {
		t.Errorf("pod metadata: %v %v", pod.Labels, pod.Annotations)
	}
	assertSecurePod(t, pod)
	c := pod.Spec.Containers[0]
	if c.Image != DefaultEnvoyImage || c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("image %s %s", c.Image, c.ImagePullPolicy)
	}
	if !slices.Contains(c.Args, "$(POD_NAME)") || c.Env[0].Name != "POD_NAME" || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("node id from the pod name: %v %v", c.Args, c.Env)
	}
	if p := c.ReadinessProbe.HTTPGet; p.Path != "/ready" || p.Port.IntValue() != 19001 {
		t.Errorf("readiness: %+v", p)
	}
	if !cmp.Equal(c.Resources, DefaultResources()) {
		t.Errorf("resources: %v", c.Resources)
	}
	assertAgent(t, pod)

	svc := find[*corev1.Service](t, objs)[0]
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || svc.Annotations[AnnotationGatewayName] != "web" {
		t.Errorf("service: %v %v", svc.Spec.Type, svc.Annotations)
	}
	if d := cmp.Diff(dep.Spec.Selector.MatchLabels, svc.Spec.Selector); d != "" {
		t.Errorf("dedicated Service selects the fleet: %s", d)
	}
	if d := cmp.Diff([]corev1.ServicePort{
		{Name: "udp-53", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(10053)},
		{Name: "http-80", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(10080)},
		{Name: "https-443", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(10443)},
	}, svc.Spec.Ports); d != "" {
		t.Errorf("ports: %s", d)
	}
}

func assertSecurePod(t *testing.T, pod corev1.PodTemplateSpec) {
	t.Helper()
	s := pod.Spec
	if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken must be false")
	}
	if ps := s.SecurityContext; !*ps.RunAsNonRoot || *ps.RunAsUser != 65532 || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context: %+v", ps)
	}
	c := s.Containers[0]
	sc := c.SecurityContext
	if !*sc.RunAsNonRoot || *sc.RunAsUser != 65532 || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("container security context: %s", toJSON(t, sc))
	}
	var tmp bool
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/tmp" {
			for _, v := range s.Volumes {
				if v.Name == m.Name && v.EmptyDir != nil {
					tmp = true
				}
			}
		} else if !m.ReadOnly {
			t.Errorf("mount %s is writable", m.MountPath)
		}
	}
	if !tmp {
		t.Error("no emptyDir on /tmp")
	}
}

func TestSharedFleet(t *testing.T) {
	params := SharedFleetParams(&v1alpha1.GatewayParametersSpec{Envoy: &v1alpha1.EnvoySpec{Image: ptr.To("my/envoy:1")}})
	objs, err := testRenderer().SharedFleet(SharedFleetInput{Class: testClass(), Params: params, TrustBundle: testBundle})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetNamespace()+"/"+o.GetName())
		if _, ok := o.GetLabels()[LabelGatewayName]; ok {
			t.Errorf("%s: a shared fleet object has a gateway-name label", o.GetName())
		}
		if o.GetLabels()[LabelGatewayClassName] != "xds" || o.GetLabels()[LabelManagedBy] != ManagedByValue {
			t.Errorf("%s labels %v", o.GetName(), o.GetLabels())
		}
		want := []metav1.OwnerReference{{APIVersion: "gateway.networking.k8s.io/v1", Kind: "GatewayClass", Name: "xds", UID: "class-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		if d := cmp.Diff(want, o.GetOwnerReferences()); d != "" {
			t.Errorf("%s owner: %s", o.GetName(), d)
		}
	}
	if d := cmp.Diff([]string{"ServiceAccount/xds-system/envoy-xds", "ConfigMap/xds-system/envoy-xds", "Deployment/xds-system/envoy-xds"}, names); d != "" {
		t.Error(d)
	}
	dep := find[*appsv1.Deployment](t, objs)[0]
	if *dep.Spec.Replicas != 2 || dep.Spec.Template.Spec.Containers[0].Image != "my/envoy:1" {
		t.Errorf("replicas %d image %s", *dep.Spec.Replicas, dep.Spec.Template.Spec.Containers[0].Image)
	}
	assertSecurePod(t, dep.Spec.Template)
	if boot := find[*corev1.ConfigMap](t, objs)[0].Data["bootstrap.yaml"]; !strings.Contains(boot, `cluster: "gatewayclass/xds"`) {
		t.Errorf("scope: %s", boot)
	}
	// The Renderer's image is the default when the parameters name none.
	r := testRenderer()
	r.EnvoyImage = "registry.example/envoy:v1.40.1"
	objs, _ = r.SharedFleet(SharedFleetInput{Class: testClass(), Params: SharedFleetParams(nil), TrustBundle: testBundle})
	if img := find[*appsv1.Deployment](t, objs)[0].Spec.Template.Spec.Containers[0].Image; img != r.EnvoyImage {
		t.Errorf("image %s", img)
	}
}

func TestSharedGateway(t *testing.T) {
	gw := withInfra(gateway("apps", "web", 0, 80, 8080))
	bp := AssignBindPorts([]*gwapiv1.Gateway{gw}, shared, nil)
	params := Effective(nil, &v1alpha1.GatewayParametersSpec{Service: &v1alpha1.ServiceSpec{Type: ptr.To(corev1.ServiceTypeClusterIP), Annotations: map[string]string{"lb": "x"}}})
	objs, err := testRenderer().SharedGateway(SharedGatewayInput{
		Gateway:  gw,
		Params:   params,
		BindPort: bp.BindPort,
		Endpoints: EndpointsFromPods([]corev1.Pod{
			pod("envoy-xds-b", "10.0.0.2", true, false),
			pod("envoy-xds-a", "10.0.0.1", true, false),
			pod("envoy-xds-c", "10.0.0.3", false, false),
			pod("envoy-xds-d", "10.0.0.4", true, true),
			pod("envoy-xds-e", "", false, false),
			{ObjectMeta: metav1.ObjectMeta{Name: "v6"}, Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}}},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	svc := find[*corev1.Service](t, objs)[0]
	if svc.Name != "web-xds" || svc.Namespace != "apps" || svc.Spec.Selector != nil || svc.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("service %s/%s selector %v type %s", svc.Namespace, svc.Name, svc.Spec.Selector, svc.Spec.Type)
	}
	if svc.Labels["team"] != "payments" || svc.Labels[LabelGatewayName] != "web" || svc.Annotations["lb"] != "x" || svc.Annotations["example.com/owner"] != "alice" {
		t.Errorf("service metadata %v %v", svc.Labels, svc.Annotations)
	}
	b80, b8080 := int32(bp.BindPort(gw, 80)), int32(bp.BindPort(gw, 8080))
	if d := cmp.Diff([]corev1.ServicePort{
		{Name: "http-80", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(b80)},
		{Name: "http-8080", Protocol: corev1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromInt32(b8080)},
	}, svc.Spec.Ports); d != "" {
		t.Error(d)
	}
	slices := find[*discoveryv1.EndpointSlice](t, objs)
	if len(slices) != 2 || slices[0].Name != "web-xds-ipv4" || slices[1].Name != "web-xds-ipv6" {
		t.Fatalf("slices: %d", len(slices))
	}
	es := slices[0]
	if es.Labels[discoveryv1.LabelServiceName] != "web-xds" || es.Labels[discoveryv1.LabelManagedBy] != EndpointSliceManagedBy || es.Labels[LabelGatewayName] != "web" {
		t.Errorf("slice labels %v", es.Labels)
	}
	if es.OwnerReferences[0].Kind != "Gateway" {
		t.Errorf("slice owner %v", es.OwnerReferences)
	}
	var got []string
	for _, e := range es.Endpoints {
		got = append(got, e.Addresses[0]+" ready="+boolStr(*e.Conditions.Ready)+" terminating="+boolStr(*e.Conditions.Terminating))
	}
	if d := cmp.Diff([]string{
		"10.0.0.1 ready=true terminating=false", "10.0.0.2 ready=true terminating=false", "10.0.0.3 ready=false terminating=false",
		"10.0.0.4 ready=false terminating=true", "10.0.0.5 ready=false terminating=false",
	}, got); d != "" {
		t.Errorf("endpoints: %s", d)
	}
	if d := cmp.Diff([]discoveryv1.EndpointPort{
		{Name: ptr.To("http-80"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(b80)},
		{Name: ptr.To("http-8080"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(b8080)},
	}, es.Ports); d != "" {
		t.Errorf("slice ports: %s", d)
	}
	if slices[1].AddressType != discoveryv1.AddressTypeIPv6 || slices[1].Endpoints[0].Addresses[0] != "fd00::5" {
		t.Errorf("ipv6 slice: %s", toJSON(t, slices[1]))
	}
	// No pods: still an (empty) IPv4 slice, so that stale endpoints go.
	objs, _ = testRenderer().SharedGateway(SharedGatewayInput{Gateway: gw, Params: params, BindPort: bp.BindPort})
	if es := find[*discoveryv1.EndpointSlice](t, objs); len(es) != 1 || len(es[0].Endpoints) != 0 {
		t.Errorf("empty: %s", toJSON(t, es))
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func pod(name, ip string, ready, terminating bool) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "xds-system"}, Spec: corev1.PodSpec{NodeName: "node1"}}
	p.Status.PodIP = ip
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if terminating {
		p.DeletionTimestamp = &metav1.Time{Time: epoch}
	}
	return p
}

func podTemplateOf(t *testing.T, objs []client.Object) corev1.PodTemplateSpec {
	t.Helper()
	return find[*appsv1.Deployment](t, objs)[0].Spec.Template
}

// Route and listener edits never change the pod template (so never re-roll
// Envoy); the fleet's own settings do.
func TestServiceRequestsTheGatewayAddresses(t *testing.T) {
	gw := gateway("apps", "web", 0, 80)
	bp := AssignBindPorts([]*gwapiv1.Gateway{gw}, shared, nil)
	one := []gwapiv1.GatewaySpecAddress{{Value: "10.244.1.50"}}
	two := []gwapiv1.GatewaySpecAddress{{Value: "10.244.1.50"}, {Value: ""}, {Value: "10.244.1.51"}}
	for _, tc := range []struct {
		typ            corev1.ServiceType
		addresses      []gwapiv1.GatewaySpecAddress
		loadBalancerIP string
		annotation     string
		externalIPs    []string
	}{
		// One address: spec.loadBalancerIP, which every load balancer knows.
		{corev1.ServiceTypeLoadBalancer, one, "10.244.1.50", "", nil},
		// Several: the MetalLB annotation, never together with
		// spec.loadBalancerIP (MetalLB refuses both).
		{corev1.ServiceTypeLoadBalancer, two, "", "10.244.1.50,10.244.1.51", nil},
		{corev1.ServiceTypeClusterIP, one, "", "", []string{"10.244.1.50"}},
		{corev1.ServiceTypeNodePort, two, "", "", []string{"10.244.1.50", "10.244.1.51"}},
		// Nothing requested: nothing asked.
		{corev1.ServiceTypeLoadBalancer, nil, "", "", nil},
		{corev1.ServiceTypeClusterIP, []gwapiv1.GatewaySpecAddress{{Value: ""}}, "", "", nil},
		// Refused addresses (Accepted=False) are not asked for either.
		{corev1.ServiceTypeLoadBalancer, append(slices.Clone(two), gwapiv1.GatewaySpecAddress{Type: ptr.To(gwapiv1.HostnameAddressType), Value: "gw.example.com"}), "", "", nil},
	} {
		gw.Spec.Addresses = tc.addresses
		// External IPs only when the class allows them (CVE-2020-8554);
		// a Gateway's own policy counts for nothing.
		allowing := &v1alpha1.GatewayParametersSpec{GatewayPolicy: &v1alpha1.GatewayPolicy{Allow: []v1alpha1.GatewayPermission{v1alpha1.PermissionExternalIPs}}}
		for _, class := range []*v1alpha1.GatewayParametersSpec{allowing, nil} {
			own := &v1alpha1.GatewayParametersSpec{Service: &v1alpha1.ServiceSpec{Type: ptr.To(tc.typ)}}
			if class == nil {
				own.GatewayPolicy = allowing.GatewayPolicy
			}
			params := Effective(class, own)
			want := tc.externalIPs
			if class == nil {
				want = nil
			}
			objs, err := testRenderer().SharedGateway(SharedGatewayInput{Gateway: gw, Params: params, BindPort: bp.BindPort})
			if err != nil {
				t.Fatal(err)
			}
			svc := find[*corev1.Service](t, objs)[0]
			ann, has := svc.Annotations[AnnotationLoadBalancerIPs]
			if svc.Spec.LoadBalancerIP != tc.loadBalancerIP || ann != tc.annotation || has != (tc.annotation != "") || !slices.Equal(svc.Spec.ExternalIPs, want) {
				t.Errorf("%s %v (class allows external IPs: %v): loadBalancerIP %q annotation %q externalIPs %v", tc.typ, tc.addresses, class != nil, svc.Spec.LoadBalancerIP, ann, svc.Spec.ExternalIPs)
			}
		}
	}
}

func TestPodTemplateHashStability(t *testing.T) {
	r := testRenderer()
	dedicated := func(gw *gwapiv1.Gateway, p v1alpha1.GatewayParametersSpec, bundle []byte) corev1.PodTemplateSpec {
		objs, err := r.Dedicated(DedicatedInput{Gateway: gw, Params: p, TrustBundle: bundle})
		if err != nil {
			t.Fatal(err)
		}
		return podTemplateOf(t, objs)
	}
	base := Effective(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}, nil)
	ref := dedicated(gateway("apps", "web", 0, 80), base, testBundle)
	hash := ref.Annotations[AnnotationPodTemplateHash]

	// Same template for listener changes, replicas and Service settings.
	same := map[string]corev1.PodTemplateSpec{}
	same["listeners"] = dedicated(gateway("apps", "web", 5, 80, 443, 8080, -53), base, testBundle)
	p := Effective(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}, &v1alpha1.GatewayParametersSpec{
		Replicas: ptr.To[int32](5),
		Service:  &v1alpha1.ServiceSpec{Type: ptr.To(corev1.ServiceTypeNodePort), Annotations: map[string]string{"a": "b"}},
	})
	same["replicas and service"] = dedicated(gateway("apps", "web", 0, 80), p, testBundle)
	for name, pt := range same {
		if d := cmp.Diff(ref, pt); d != "" {
			t.Errorf("%s changed the pod template: %s", name, d)
		}
	}

	// Different hash for the fleet's own settings.
	diff := map[string]corev1.PodTemplateSpec{}
	img := base
	img.Envoy = &v1alpha1.EnvoySpec{Image: ptr.To("other:1"), Resources: base.Envoy.Resources}
	diff["image"] = dedicated(gateway("apps", "web", 0, 80), img, testBundle)
	ov := base
	ov.PodTemplate = raw(t, `{spec: {nodeSelector: {a: b}}}`)
	diff["overlay"] = dedicated(gateway("apps", "web", 0, 80), ov, testBundle)
	diff["infrastructure labels"] = dedicated(withInfra(gateway("apps", "web", 0, 80)), base, testBundle)
	diff["CA"] = dedicated(gateway("apps", "web", 0, 80), base, []byte("CA2"))
	r2 := *r
	r2.XDS.Port = 18001
	objs, _ := r2.Dedicated(DedicatedInput{Gateway: gateway("apps", "web", 0, 80), Params: base, TrustBundle: testBundle})
	diff["bootstrap"] = podTemplateOf(t, objs)
	for name, pt := range diff {
		if pt.Annotations[AnnotationPodTemplateHash] == hash {
			t.Errorf("%s did not change the pod template hash", name)
		}
	}

	// Shared fleet: rendered from the class alone, so nothing about a
	// Gateway (listeners, infrastructure labels) can reach it.
	s1, _ := r.SharedFleet(SharedFleetInput{Class: testClass(), Params: SharedFleetParams(nil), TrustBundle: testBundle})
	s2, _ := r.SharedFleet(SharedFleetInput{Class: testClass(), Params: SharedFleetParams(nil), TrustBundle: testBundle})
	if d := cmp.Diff(podTemplateOf(t, s1), podTemplateOf(t, s2)); d != "" {
		t.Errorf("shared fleet not deterministic: %s", d)
	}
}

func TestOverlayOnRenderedPod(t *testing.T) {
	params := SharedFleetParams(&v1alpha1.GatewayParametersSpec{PodTemplate: raw(t, `
metadata:
  labels: {app.kubernetes.io/instance: hijack, extra: "yes"}
spec:
  automountServiceAccountToken: true
  priorityClassName: edge
  tolerations: [{key: edge, operator: Exists}]
  containers:
  - name: envoy
    env: [{name: ENVOY_EXTRA, value: "1"}]
    resources: {limits: {memory: 512Mi}}
  - name: agent
    image: agent:1
`)})
	if err := Validate(&params); err != nil {
		t.Fatal(err)
	}
	objs, err := testRenderer().SharedFleet(SharedFleetInput{Class: testClass(), Params: params, TrustBundle: testBundle})
	if err != nil {
		t.Fatal(err)
	}
	dep := find[*appsv1.Deployment](t, objs)[0]
	pt := dep.Spec.Template
	if pt.Labels[LabelInstance] != "envoy-xds" || pt.Labels["extra"] != "yes" {
		t.Errorf("labels: %v", pt.Labels)
	}
	if *pt.Spec.AutomountServiceAccountToken || pt.Spec.PriorityClassName != "edge" || len(pt.Spec.Tolerations) != 1 {
		t.Errorf("spec: %s", toJSON(t, pt.Spec))
	}
	if len(pt.Spec.Containers) != 2 || pt.Spec.Containers[1].Name != "agent" {
		t.Fatalf("containers: %s", toJSON(t, pt.Spec.Containers))
	}
	envoy := pt.Spec.Containers[0]
	if len(envoy.Env) != 3 || envoy.Env[0].Name != "POD_NAME" || envoy.Image != DefaultEnvoyImage || !*envoy.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("envoy container: %s", toJSON(t, envoy))
	}
	if envoy.Resources.Limits.Memory().String() != "512Mi" || envoy.Resources.Requests.Cpu().String() != "10m" {
		t.Errorf("resources merged: %s", toJSON(t, envoy.Resources))
	}
	// An overlay that does not merge is an error, not a silent drop.
	bad := SharedFleetParams(&v1alpha1.GatewayParametersSpec{PodTemplate: raw(t, `{spec: {containers: {name: x}}}`)})
	if _, err := testRenderer().SharedFleet(SharedFleetInput{Class: testClass(), Params: bad, TrustBundle: testBundle}); err == nil {
		t.Error("bad overlay rendered")
	}
}

func TestNames(t *testing.T) {
	long := strings.Repeat("a", 60)
	gw := gateway("apps", long, 0, 80)
	name := GatewayServiceName(gw)
	if len(name) > 63 || !validDNS1035(name) || name != GatewayServiceName(gw) {
		t.Errorf("long name %q", name)
	}
	if other := GatewayServiceName(gateway("apps", long+"b", 0)); other == name {
		t.Error("shortened names collide")
	}
	for in, ok := range map[string]bool{"web-xds": true, "my.gw-xds": false, "1gw-xds": false} {
		out := SafeName(in)
		if (out == in) != ok || !validDNS1035(out) {
			t.Errorf("SafeName(%q) = %q", in, out)
		}
	}
	if LabelValue("my.gw") != "my.gw" || len(LabelValue(strings.Repeat("b", 100))) > 63 {
		t.Error("LabelValue")
	}
	f := DedicatedFleet(gateway("apps", "web", 0))
	if f.Scope != "gateway/apps/web" || f.ServiceAccount != "web-xds" {
		t.Errorf("%+v", f)
	}
	s := SharedFleet("xds-system", "xds")
	if s.Scope != "gatewayclass/xds" || s.Name != "envoy-xds" || s.Namespace != "xds-system" {
		t.Errorf("%+v", s)
	}
	if Scope(v1alpha1.ModeShared, gw) != "gatewayclass/xds" || Scope(v1alpha1.ModeDedicated, gw) != "gateway/apps/"+long {
		t.Error("Scope")
	}
}

// assertAgent: the SVID agent is a native sidecar that alone mounts the
// projected token (audience-bound, 10 minutes), writes the in-memory SVID
// folder that Envoy only reads, and gates Envoy's start with its startup
// probe.
func assertAgent(t *testing.T, pod corev1.PodTemplateSpec) {
	t.Helper()
	if len(pod.Spec.InitContainers) != 1 {
		t.Fatalf("init containers: %d", len(pod.Spec.InitContainers))
	}
	a := pod.Spec.InitContainers[0]
	if a.RestartPolicy == nil || *a.RestartPolicy != corev1.ContainerRestartPolicyAlways || a.StartupProbe == nil || a.StartupProbe.HTTPGet.Port.IntValue() != AgentProbePort {
		t.Errorf("agent is not a native sidecar with a startup probe: %s", toJSON(t, a))
	}
	if a.Image != "ghcr.io/xds-controller/xds-controller:dev" || !slices.Contains(a.Args, "--identity-address=xds-controller.xds-system.svc.cluster.local:18443") ||
		!slices.Contains(a.Args, "--server-id=spiffe://cluster.local/ns/xds-system/sa/xds-controller") {
		t.Errorf("agent: %s %v", a.Image, a.Args)
	}
	if sc := a.SecurityContext; !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation {
		t.Errorf("agent security context: %s", toJSON(t, sc))
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	tok := vols[tokenVolume].Projected
	if tok == nil || len(tok.Sources) != 1 || tok.Sources[0].ServiceAccountToken == nil ||
		tok.Sources[0].ServiceAccountToken.Audience != "xds-controller-identity" || *tok.Sources[0].ServiceAccountToken.ExpirationSeconds != 600 {
		t.Errorf("token volume: %s", toJSON(t, vols[tokenVolume]))
	}
	if v := vols[svidVolume].EmptyDir; v == nil || v.Medium != corev1.StorageMediumMemory {
		t.Errorf("SVID volume: %s", toJSON(t, vols[svidVolume]))
	}
	mounts := func(c corev1.Container) map[string]corev1.VolumeMount {
		m := map[string]corev1.VolumeMount{}
		for _, vm := range c.VolumeMounts {
			m[vm.Name] = vm
		}
		return m
	}
	am, em := mounts(a), mounts(pod.Spec.Containers[0])
	if _, ok := am[tokenVolume]; !ok {
		t.Error("the agent does not mount the token")
	}
	if _, ok := em[tokenVolume]; ok {
		t.Error("Envoy mounts the token")
	}
	if am[svidVolume].ReadOnly || !em[svidVolume].ReadOnly || em[svidVolume].MountPath != am[svidVolume].MountPath {
		t.Errorf("SVID folder: agent %+v, Envoy %+v", am[svidVolume], em[svidVolume])
	}
}
