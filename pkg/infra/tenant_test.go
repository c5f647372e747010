package infra

import (
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// tenantAttacks are Gateway-level parameters that would make the
// controller, which may create Deployments in every namespace, run what
// the namespace's owner could not run by itself, each with the field the
// check must name.
var tenantAttacks = []struct {
	name, overlay, field string
}{
	{"privileged container", `{spec: {containers: [{name: envoy, securityContext: {privileged: true}}]}}`, "spec.podTemplate.spec.containers[envoy].securityContext"},
	{"capabilities", `{spec: {containers: [{name: envoy, securityContext: {capabilities: {add: [NET_ADMIN, SYS_ADMIN]}}}]}}`, "spec.podTemplate.spec.containers[envoy].securityContext"},
	{"root user", `{spec: {securityContext: {runAsUser: 0, runAsNonRoot: false}}}`, "spec.podTemplate.spec.securityContext"},
	{"host network", `{spec: {hostNetwork: true}}`, "spec.podTemplate.spec.hostNetwork"},
	{"host PID", `{spec: {hostPID: true}}`, "spec.podTemplate.spec.hostPID"},
	{"host IPC", `{spec: {hostIPC: true}}`, "spec.podTemplate.spec.hostIPC"},
	{"host user namespace", `{spec: {hostUsers: true}}`, "spec.podTemplate.spec.hostUsers"},
	{"hostPath volume", `{spec: {volumes: [{name: root, hostPath: {path: /}}], containers: [{name: envoy, volumeMounts: [{name: root, mountPath: /host}]}]}}`, "spec.podTemplate.spec.volumes"},
	{"hostPath mount", `{spec: {volumes: [{name: root, hostPath: {path: /}}], containers: [{name: envoy, volumeMounts: [{name: root, mountPath: /host}]}]}}`, "spec.podTemplate.spec.containers[envoy].volumeMounts"},
	{"extra token volume", `{spec: {volumes: [{name: tok, projected: {sources: [{serviceAccountToken: {path: t, audience: api}}]}}]}}`, "spec.podTemplate.spec.volumes"},
	{"another Secret", `{spec: {volumes: [{name: s, secret: {secretName: other-team-tls}}]}}`, "spec.podTemplate.spec.volumes"},
	{"extra container", `{spec: {containers: [{name: miner, image: evil.example/miner}]}}`, "spec.podTemplate.spec.containers[miner]"},
	{"extra init container", `{spec: {initContainers: [{name: setup, image: busybox, securityContext: {privileged: true}}]}}`, "spec.podTemplate.spec.initContainers[setup]"},
	{"ephemeral container", `{spec: {ephemeralContainers: [{name: debug, image: busybox}]}}`, "spec.podTemplate.spec.ephemeralContainers"},
	{"Envoy's image", `{spec: {containers: [{name: envoy, image: evil.example/envoy}]}}`, "spec.podTemplate.spec.containers[envoy].image"},
	{"Envoy's command", `{spec: {containers: [{name: envoy, command: [/bin/sh]}]}}`, "spec.podTemplate.spec.containers[envoy].command"},
	{"Envoy's args", `{spec: {containers: [{name: envoy, args: [--config-yaml, "{}"]}]}}`, "spec.podTemplate.spec.containers[envoy].args"},
	{"agent's image", `{spec: {initContainers: [{name: svid-agent, image: evil.example/agent}]}}`, "spec.podTemplate.spec.initContainers[svid-agent].image"},
	{"agent's args", `{spec: {initContainers: [{name: svid-agent, args: [serve, agent, --identity-address=evil:1]}]}}`, "spec.podTemplate.spec.initContainers[svid-agent].args"},
	{"another ServiceAccount", `{spec: {serviceAccountName: controller}}`, "spec.podTemplate.spec.serviceAccountName"},
	{"token automount", `{spec: {automountServiceAccountToken: true}}`, "spec.podTemplate.spec.automountServiceAccountToken"},
	{"a node of its choosing", `{spec: {nodeName: control-plane}}`, "spec.podTemplate.spec.nodeName"},
	{"a priority that preempts others", `{spec: {priorityClassName: system-node-critical}}`, "spec.podTemplate.spec.priorityClassName"},
	{"another runtime", `{spec: {runtimeClassName: unconfined}}`, "spec.podTemplate.spec.runtimeClassName"},
	{"DNS of its own", `{spec: {dnsPolicy: None, dnsConfig: {nameservers: [192.0.2.1]}}}`, "spec.podTemplate.spec.dnsConfig"},
	{"host aliases", `{spec: {hostAliases: [{ip: 192.0.2.1, hostnames: [xds-controller.xds-system.svc]}]}}`, "spec.podTemplate.spec.hostAliases"},
	{"env from a Secret", `{spec: {containers: [{name: envoy, env: [{name: T, valueFrom: {secretKeyRef: {name: db, key: password}}}]}]}}`, "spec.podTemplate.spec.containers[envoy].env[T].valueFrom.secretKeyRef"},
	{"envFrom", `{spec: {containers: [{name: envoy, envFrom: [{secretRef: {name: db}}]}]}}`, "spec.podTemplate.spec.containers[envoy].envFrom"},
	{"the controller's variable", `{spec: {containers: [{name: envoy, env: [{name: POD_NAME, value: other-pod}]}]}}`, "spec.podTemplate.spec.containers[envoy].env[POD_NAME]"},
	{"$patch delete of Envoy", `{spec: {containers: [{name: envoy, $patch: delete}]}}`, "spec.podTemplate.spec.containers[envoy].$patch"},
	{"$patch replace of the spec", `{spec: {$patch: replace, containers: [{name: envoy, image: evil}]}}`, "spec.podTemplate.spec.$patch"},
	{"$retainKeys", `{spec: {$retainKeys: [nodeSelector], nodeSelector: {a: b}}}`, "spec.podTemplate.spec.$retainKeys"},
	{"null spec", `{spec: null}`, "spec.podTemplate.spec: null"},
	{"null containers", `{spec: {containers: null}}`, "spec.podTemplate.spec.containers: null"},
	{"unconfined AppArmor", `{metadata: {annotations: {container.apparmor.security.beta.kubernetes.io/envoy: unconfined}}}`, "spec.podTemplate.metadata.annotations[container.apparmor.security.beta.kubernetes.io/envoy]"},
	{"unconfined seccomp", `{metadata: {annotations: {seccomp.security.alpha.kubernetes.io/pod: unconfined}}}`, "spec.podTemplate.metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]"},
}

// TestCheckGatewayParametersRefusesPrivilege: every attack is refused by
// default with the field named and PodTemplate as what would allow it; a
// class that allows PodTemplate lets each through (the cluster admin
// trusts its Gateway owners).
func TestCheckGatewayParametersRefusesPrivilege(t *testing.T) {
	podTemplate := &v1alpha1.GatewayPolicy{Allow: []v1alpha1.GatewayPermission{v1alpha1.PermissionPodTemplate}}
	for _, tc := range tenantAttacks {
		spec := &v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated), PodTemplate: raw(t, tc.overlay)}
		if err := Validate(spec); err != nil {
			t.Fatalf("%s: the overlay itself is invalid: %v", tc.name, err)
		}
		for _, policy := range []*v1alpha1.GatewayPolicy{nil, {}, {Allow: []v1alpha1.GatewayPermission{v1alpha1.PermissionEnvoyImage, v1alpha1.PermissionExternalIPs}}} {
			err := CheckGatewayParameters(spec, policy)
			var refused *RefusedFieldsError
			if !errors.As(err, &refused) {
				t.Errorf("%s (policy %v): not refused: %v", tc.name, policy, err)
				continue
			}
			i := slices.IndexFunc(refused.Fields, func(f RefusedField) bool { return f.Path == tc.field })
			if i < 0 || refused.Fields[i].Needs != v1alpha1.PermissionPodTemplate {
				t.Errorf("%s: refused %+v, want %s (needs PodTemplate)", tc.name, refused.Fields, tc.field)
			}
			if !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "spec.gatewayPolicy.allow: PodTemplate") {
				t.Errorf("%s: message %q", tc.name, err)
			}
		}
		if err := CheckGatewayParameters(spec, podTemplate); err != nil {
			t.Errorf("%s: refused although the class allows PodTemplate: %v", tc.name, err)
		}
	}
}

// TestCheckGatewayParametersImageAndPolicy: a Gateway's own envoy.image is
// refused unless the class allows EnvoyImage; a Gateway's own
// gatewayPolicy always (it cannot widen its own bounds); every refused
// field is named in one error.
func TestCheckGatewayParametersImageAndPolicy(t *testing.T) {
	spec := &v1alpha1.GatewayParametersSpec{
		Envoy:         &v1alpha1.EnvoySpec{Image: ptr.To("evil.example/envoy:latest")},
		GatewayPolicy: &v1alpha1.GatewayPolicy{Allow: []v1alpha1.GatewayPermission{v1alpha1.PermissionPodTemplate}},
		PodTemplate:   raw(t, `{spec: {hostNetwork: true}}`),
	}
	err := CheckGatewayParameters(spec, nil)
	var refused *RefusedFieldsError
	if !errors.As(err, &refused) {
		t.Fatalf("not refused: %v", err)
	}
	want := []RefusedField{
		{"spec.envoy.image", v1alpha1.PermissionEnvoyImage},
		{"spec.gatewayPolicy", ""},
		{"spec.podTemplate.spec.hostNetwork", v1alpha1.PermissionPodTemplate},
	}
	if !slices.Equal(refused.Fields, want) {
		t.Errorf("refused %+v, want %+v", refused.Fields, want)
	}
	const msg = "a Gateway's own GatewayParameters may not set spec.envoy.image, spec.gatewayPolicy, spec.podTemplate.spec.hostNetwork unless the GatewayClass's GatewayParameters allow it (spec.gatewayPolicy.allow: EnvoyImage, PodTemplate)"
	if err.Error() != msg {
		t.Errorf("message\n%s\nwant\n%s", err, msg)
	}
	all := &v1alpha1.GatewayPolicy{Allow: []v1alpha1.GatewayPermission{v1alpha1.PermissionEnvoyImage, v1alpha1.PermissionPodTemplate}}
	err = CheckGatewayParameters(spec, all)
	if !errors.As(err, &refused) || !slices.Equal(refused.Fields, want[1:2]) {
		t.Errorf("with EnvoyImage and PodTemplate allowed: %v", err)
	}
	spec.GatewayPolicy = nil
	if err := CheckGatewayParameters(spec, all); err != nil {
		t.Errorf("with EnvoyImage and PodTemplate allowed, no policy of its own: %v", err)
	}
	if err := CheckGatewayParameters(nil, nil); err != nil {
		t.Errorf("no parameters: %v", err)
	}
}

// tenantOverlay sets every field of the default allow-list.
const tenantOverlay = `
metadata:
  labels: {team: blue}
  annotations: {example.com/owner: blue}
spec:
  nodeSelector: {pool: edge}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]
  tolerations: [{key: edge, operator: Exists}]
  topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]
  containers:
  - name: envoy
    resources: {requests: {cpu: 200m}}
    env:
    - {name: TEAM, value: blue}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
  initContainers:
  - name: svid-agent
    resources: {limits: {memory: 128Mi}}
`

// TestTenantOverlayKeepsThePodConfined: what the default allow-list lets
// a Gateway's parameters set is applied, and the rendered pod is as
// confined as without an overlay: the same containers, images, commands,
// volumes, ServiceAccount and security contexts, no host namespaces.
func TestTenantOverlayKeepsThePodConfined(t *testing.T) {
	own := &v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated), PodTemplate: raw(t, tenantOverlay)}
	if err := Validate(own); err != nil {
		t.Fatal(err)
	}
	if err := CheckGatewayParameters(own, nil); err != nil {
		t.Fatalf("the default allow-list refused: %v", err)
	}
	render := func(own *v1alpha1.GatewayParametersSpec) corev1.PodTemplateSpec {
		objs, err := testRenderer().Dedicated(DedicatedInput{Gateway: gateway("apps", "web", 0, 80), Params: Effective(nil, own), TrustBundle: testBundle})
		if err != nil {
			t.Fatal(err)
		}
		return podTemplateOf(t, objs)
	}
	base, got := render(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}), render(own)

	envoy := got.Spec.Containers[0]
	if got.Labels["team"] != "blue" || got.Annotations["example.com/owner"] != "blue" || got.Spec.NodeSelector["pool"] != "edge" ||
		len(got.Spec.Tolerations) != 1 || len(got.Spec.TopologySpreadConstraints) != 1 || got.Spec.Affinity.NodeAffinity == nil ||
		!envoy.Resources.Requests.Cpu().Equal(resource.MustParse("200m")) ||
		!got.Spec.InitContainers[0].Resources.Limits.Memory().Equal(resource.MustParse("128Mi")) {
		t.Errorf("the overlay was not applied: %s", toJSON(t, got))
	}
	var env []string
	for _, e := range envoy.Env {
		env = append(env, e.Name)
	}
	if !slices.Equal(env, []string{"POD_NAME", "POD_NAMESPACE", "TEAM", "NODE", "MEM"}) {
		t.Errorf("env %v", env)
	}

	// What confines the pod is the same as without the overlay.
	confinement := func(p corev1.PodTemplateSpec) string {
		s := p.Spec
		var cs []any
		for _, c := range append(slices.Clone(s.InitContainers), s.Containers...) {
			cs = append(cs, []any{c.Name, c.Image, c.Command, c.Args, c.SecurityContext, c.VolumeMounts, c.EnvFrom, c.Lifecycle, c.RestartPolicy})
		}
		return toJSON(t, []any{cs, s.Volumes, s.SecurityContext, s.ServiceAccountName, s.AutomountServiceAccountToken,
			s.HostNetwork, s.HostPID, s.HostIPC, s.HostUsers, s.NodeName, s.PriorityClassName, s.RuntimeClassName,
			s.DNSPolicy, s.DNSConfig, s.HostAliases, s.EnableServiceLinks, s.ImagePullSecrets})
	}
	if a, b := confinement(base), confinement(got); a != b {
		t.Errorf("the overlay changed the pod's confinement:\n%s\nwant\n%s", b, a)
	}
	if base.Spec.SecurityContext == nil || !ptr.Deref(base.Spec.SecurityContext.RunAsNonRoot, false) || ptr.Deref(envoy.SecurityContext.Privileged, true) {
		t.Errorf("the base pod is not confined: %s", toJSON(t, base.Spec.SecurityContext))
	}
}

// TestInfrastructureAnnotationsKeepThePodConfined: a Gateway's
// spec.infrastructure.annotations reach its Dedicated pods, except those
// that loosen their confinement (AppArmor, seccomp), unless the class
// allows PodTemplate; its other objects get them all.
func TestInfrastructureAnnotationsKeepThePodConfined(t *testing.T) {
	gw := gateway("apps", "web", 0, 80)
	const apparmor = "container.apparmor.security.beta.kubernetes.io/envoy"
	gw.Spec.Infrastructure = &gwapiv1.GatewayInfrastructure{Annotations: map[gwapiv1.AnnotationKey]gwapiv1.AnnotationValue{
		apparmor: "unconfined",
		"seccomp.security.alpha.kubernetes.io/pod": "unconfined",
		"example.com/team":                         "blue",
	}}
	dedicated := &v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}
	for _, allow := range []bool{false, true} {
		class := dedicated.DeepCopy()
		if allow {
			class.GatewayPolicy = &v1alpha1.GatewayPolicy{Allow: []v1alpha1.GatewayPermission{v1alpha1.PermissionPodTemplate}}
		}
		objs, err := testRenderer().Dedicated(DedicatedInput{Gateway: gw, Params: Effective(class, nil), TrustBundle: testBundle})
		if err != nil {
			t.Fatal(err)
		}
		pod := podTemplateOf(t, objs).Annotations
		_, hasAppArmor := pod[apparmor]
		_, hasSeccomp := pod["seccomp.security.alpha.kubernetes.io/pod"]
		if pod["example.com/team"] != "blue" || hasAppArmor != allow || hasSeccomp != allow {
			t.Errorf("class allows PodTemplate: %v: pod annotations %v", allow, pod)
		}
		if dep := find[*appsv1.Deployment](t, objs)[0]; dep.Annotations[apparmor] != "unconfined" {
			t.Errorf("the Deployment's own annotations %v", dep.Annotations)
		}
	}
}
