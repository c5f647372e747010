package infra

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// Defaults of the fleet settings.
const (
	// DefaultEnvoyImage is the Envoy image when neither the parameters nor
	// Renderer.EnvoyImage name one: the official image of the Envoy
	// version the project tests (hack/cluster/versions.env ENVOY_VERSION;
	// the local cluster imports its own build of that version under this
	// name).
	DefaultEnvoyImage = "docker.io/envoyproxy/envoy:v1.40.0"
	// DefaultAgentImage is the SVID agent's image (the controller's) when
	// none is configured: the image the local test cluster imports.
	DefaultAgentImage = "ghcr.io/xds-controller/xds-controller:dev"
	// DefaultSharedReplicas: a shared fleet serves every Gateway of its
	// class, so it keeps one pod through a node drain or a rollout.
	DefaultSharedReplicas int32 = 2
	// DefaultDedicatedReplicas: one pod per Gateway keeps the cost of many
	// small Gateways low; raise it per Gateway or class.
	DefaultDedicatedReplicas int32 = 1
	// DefaultDrainSeconds is how long a stopping Envoy pod drains
	// (spec.envoy.drainSeconds): long enough for kube-proxy on every node
	// to drop the pod's address from the Gateway's Service (seconds at
	// most) and for keep-alive clients to see `Connection: close` or a
	// GOAWAY on their next response and reconnect elsewhere.
	DefaultDrainSeconds int32 = 15
	// DefaultServiceType gives every Gateway an external address where the
	// cluster has a load balancer (and a ClusterIP and node ports anyway).
	DefaultServiceType = corev1.ServiceTypeLoadBalancer
)

// DefaultResources are the Envoy container's resources when none are set:
// small requests (many dedicated Gateways fit a small cluster), no limits.
func DefaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("10m"),
		corev1.ResourceMemory: resource.MustParse("64Mi"),
	}}
}

// Effective returns the parameters in force for a Gateway: per field, the
// Gateway's value where set, else the class's, else the default. Either
// argument may be nil.
//
//   - mode: default Shared;
//   - replicas: default 2 in Shared mode, 1 in Dedicated mode (the default
//     follows the effective mode);
//   - envoy.image: left nil when neither sets it (the Renderer's EnvoyImage,
//     then DefaultEnvoyImage, apply at rendering);
//   - envoy.resources: the Gateway's whole ResourceRequirements, else the
//     class's, else DefaultResources;
//   - envoy.drainSeconds: default DefaultDrainSeconds;
//   - service.type: default LoadBalancer; service.annotations merge key by
//     key, the Gateway's value winning;
//   - metrics.routeStats: left nil when neither sets it (off);
//   - edge: field by field (edge.http2 and edge.overload too), left nil
//     when neither sets any (the defaults of xdstranslator.DefaultEdge and
//     bootstrap.Overload apply);
//   - podTemplate: the Gateway's overlay merged onto the class's as a
//     strategic merge patch (containers, env, volumes... by name) with
//     tolerations merged by key. Overlays should have passed Validate; if
//     the merge fails anyway, the Gateway's overlay replaces the class's.
//   - gatewayPolicy: the class's, whatever the Gateway's says (a Gateway's
//     own parameters should have passed CheckGatewayParameters).
//
// For a Shared-mode Gateway, the fleet itself is rendered from the class's
// parameters alone (Effective(class, nil)): a Gateway of a shared fleet
// chooses only its own Service's settings (and its mode).
func Effective(classParams, gatewayParams *v1alpha1.GatewayParametersSpec) v1alpha1.GatewayParametersSpec {
	c, g := classParams, gatewayParams
	if c == nil {
		c = &v1alpha1.GatewayParametersSpec{}
	}
	if g == nil {
		g = &v1alpha1.GatewayParametersSpec{}
	}
	out := v1alpha1.GatewayParametersSpec{
		Mode:     ptr.To(v1alpha1.ModeShared),
		Envoy:    &v1alpha1.EnvoySpec{},
		Service:  &v1alpha1.ServiceSpec{Type: ptr.To(DefaultServiceType)},
		Replicas: nil,
	}
	switch {
	case g.Mode != nil:
		out.Mode = ptr.To(*g.Mode)
	case c.Mode != nil:
		out.Mode = ptr.To(*c.Mode)
	}
	switch {
	case g.Replicas != nil:
		out.Replicas = ptr.To(*g.Replicas)
	case c.Replicas != nil:
		out.Replicas = ptr.To(*c.Replicas)
	case *out.Mode == v1alpha1.ModeDedicated:
		out.Replicas = ptr.To(DefaultDedicatedReplicas)
	default:
		out.Replicas = ptr.To(DefaultSharedReplicas)
	}
	if img := firstSet(envoyImage(g), envoyImage(c)); img != nil {
		out.Envoy.Image = ptr.To(*img)
	}
	switch {
	case g.Envoy != nil && g.Envoy.Resources != nil:
		out.Envoy.Resources = g.Envoy.Resources.DeepCopy()
	case c.Envoy != nil && c.Envoy.Resources != nil:
		out.Envoy.Resources = c.Envoy.Resources.DeepCopy()
	default:
		out.Envoy.Resources = ptr.To(DefaultResources())
	}
	out.Envoy.DrainSeconds = ptr.To(DefaultDrainSeconds)
	if d := firstSet(envoyDrainSeconds(g), envoyDrainSeconds(c)); d != nil {
		out.Envoy.DrainSeconds = ptr.To(*d)
	}
	switch {
	case g.Service != nil && g.Service.Type != nil:
		out.Service.Type = ptr.To(*g.Service.Type)
	case c.Service != nil && c.Service.Type != nil:
		out.Service.Type = ptr.To(*c.Service.Type)
	}
	var ann map[string]string
	for _, s := range []*v1alpha1.ServiceSpec{c.Service, g.Service} {
		if s != nil && len(s.Annotations) > 0 {
			if ann == nil {
				ann = map[string]string{}
			}
			maps.Copy(ann, s.Annotations)
		}
	}
	out.Service.Annotations = ann
	if rs := firstSet(routeStats(g), routeStats(c)); rs != nil {
		out.Metrics = &v1alpha1.MetricsSpec{RouteStats: ptr.To(*rs)}
	}
	out.Edge = mergeEdge(c.Edge, g.Edge)
	out.PodTemplate = mergeOverlays(c.PodTemplate, g.PodTemplate)
	// The class's alone: a Gateway's parameters do not widen their own
	// bounds (CheckGatewayParameters refuses them when they try).
	out.GatewayPolicy = c.GatewayPolicy.DeepCopy()
	return out
}

func routeStats(s *v1alpha1.GatewayParametersSpec) *bool {
	if s.Metrics == nil {
		return nil
	}
	return s.Metrics.RouteStats
}

func envoyImage(s *v1alpha1.GatewayParametersSpec) *string {
	if s.Envoy == nil {
		return nil
	}
	return s.Envoy.Image
}

func envoyDrainSeconds(s *v1alpha1.GatewayParametersSpec) *int32 {
	if s.Envoy == nil {
		return nil
	}
	return s.Envoy.DrainSeconds
}

func firstSet[T any](vs ...*T) *T {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

// Validate checks the edge settings (validateEdge, for parameters read
// from a file) and what the API server cannot: that the pod template
// overlay decodes as a corev1.PodTemplateSpec (unknown fields refused) and
// applies as a strategic merge patch. The controller sets a Gateway's (or
// class's) InvalidParameters condition with the error.
func Validate(spec *v1alpha1.GatewayParametersSpec) error {
	if spec == nil {
		return nil
	}
	if err := validateEdge(spec.Edge); err != nil {
		return err
	}
	if spec.PodTemplate == nil || len(spec.PodTemplate.Raw) == 0 {
		return nil
	}
	m, err := overlayMap(spec.PodTemplate)
	if err != nil {
		return err
	}
	// Strict decoding of the overlay without its patch directives.
	clean, err := json.Marshal(stripDirectives(m))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(clean))
	dec.DisallowUnknownFields()
	var pt corev1.PodTemplateSpec
	if err := dec.Decode(&pt); err != nil {
		return fmt.Errorf("podTemplate: %w", err)
	}
	if _, err := applyOverlay(&corev1.PodTemplateSpec{}, spec.PodTemplate); err != nil {
		return err
	}
	return nil
}

// stripDirectives drops strategic merge patch directives ($patch,
// $setElementOrder/..., $deleteFromPrimitiveList/..., $retainKeys) and
// list items that are only a directive, recursively.
func stripDirectives(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range t {
			if len(k) > 0 && k[0] == '$' {
				continue
			}
			out[k] = stripDirectives(val)
		}
		return out
	case []any:
		out := make([]any, 0, len(t))
		for _, item := range t {
			if m, ok := item.(map[string]any); ok {
				if _, directive := m["$patch"]; directive {
					continue
				}
			}
			out = append(out, stripDirectives(item))
		}
		return out
	}
	return v
}

func overlayMap(raw *runtime.RawExtension) (map[string]any, error) {
	if raw == nil || len(raw.Raw) == 0 || string(raw.Raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw.Raw, &m); err != nil {
		return nil, fmt.Errorf("podTemplate: not a JSON object: %w", err)
	}
	return m, nil
}

var podTemplateMeta = func() strategicpatch.LookupPatchMeta {
	m, err := strategicpatch.NewPatchMetaFromStruct(corev1.PodTemplateSpec{})
	if err != nil {
		panic(err)
	}
	return m
}()

// mergeOverlays merges the Gateway's overlay onto the class's: applying
// the result equals applying the class's overlay and then the Gateway's,
// except that tolerations merge by key.
func mergeOverlays(class, gw *runtime.RawExtension) *runtime.RawExtension {
	cm, cerr := overlayMap(class)
	gm, gerr := overlayMap(gw)
	switch {
	case gerr != nil || (cerr == nil && cm == nil):
		if gw == nil {
			return nil
		}
		return gw.DeepCopy()
	case cerr != nil || gm == nil:
		if class == nil {
			return nil
		}
		return class.DeepCopy()
	}
	merged, err := strategicpatch.MergeStrategicMergeMapPatchUsingLookupPatchMeta(podTemplateMeta, deepCopyJSON(cm), deepCopyJSON(gm))
	if err != nil {
		return gw.DeepCopy()
	}
	if tol, ok := mergedTolerations(tolerationsOf(cm), gm); ok {
		setTolerations(merged, tol)
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return gw.DeepCopy()
	}
	return &runtime.RawExtension{Raw: b}
}

// applyOverlay returns base with the overlay applied as a strategic merge
// patch, tolerations merged by key.
func applyOverlay(base *corev1.PodTemplateSpec, overlay *runtime.RawExtension) (*corev1.PodTemplateSpec, error) {
	om, err := overlayMap(overlay)
	if err != nil || om == nil {
		return base, err
	}
	b, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	var bm map[string]any
	if err := json.Unmarshal(b, &bm); err != nil {
		return nil, err
	}
	baseTol := tolerationsOf(bm)
	out, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(bm, deepCopyJSON(om), podTemplateMeta)
	if err != nil {
		return nil, fmt.Errorf("podTemplate: %w", err)
	}
	if tol, ok := mergedTolerations(baseTol, om); ok {
		setTolerations(out, tol)
	}
	b, err = json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var pt corev1.PodTemplateSpec
	if err := json.Unmarshal(b, &pt); err != nil {
		return nil, fmt.Errorf("podTemplate: the merged pod template does not decode: %w", err)
	}
	keepBaseEnvFirst(base, &pt)
	return &pt, nil
}

// keepBaseEnvFirst puts the rendered env variables of each container
// before the ones an overlay added (a strategic merge puts new items
// first), so that an overlay's variables can refer to $(POD_NAME).
func keepBaseEnvFirst(base, out *corev1.PodTemplateSpec) {
	for ci := range out.Spec.Containers {
		c := &out.Spec.Containers[ci]
		idx := map[string]int{}
		for _, bc := range base.Spec.Containers {
			if bc.Name == c.Name {
				for i, e := range bc.Env {
					idx[e.Name] = i
				}
			}
		}
		if len(idx) == 0 {
			continue
		}
		rank := func(e corev1.EnvVar) int {
			if i, ok := idx[e.Name]; ok {
				return i
			}
			return len(idx)
		}
		slices.SortStableFunc(c.Env, func(a, b corev1.EnvVar) int { return cmp.Compare(rank(a), rank(b)) })
	}
}

func tolerationsOf(m map[string]any) []any {
	spec, _ := m["spec"].(map[string]any)
	tol, _ := spec["tolerations"].([]any)
	return tol
}

// mergedTolerations merges the overlay's spec.tolerations onto base by
// key: an overlay toleration replaces the base's tolerations with the same
// key, the others are appended in the overlay's order. ok is false when the
// overlay does not mention tolerations (nothing to do); an explicit null
// clears them.
func mergedTolerations(base []any, overlay map[string]any) (merged []any, ok bool) {
	spec, _ := overlay["spec"].(map[string]any)
	raw, present := spec["tolerations"]
	if !present {
		return nil, false
	}
	if raw == nil {
		return nil, true
	}
	over, _ := raw.([]any)
	key := func(v any) string {
		m, _ := v.(map[string]any)
		k, _ := m["key"].(string)
		return k
	}
	replaced := map[string]bool{}
	for _, t := range over {
		replaced[key(t)] = true
	}
	for _, t := range base {
		if !replaced[key(t)] {
			merged = append(merged, t)
		}
	}
	merged = append(merged, over...)
	return merged, true
}

func setTolerations(m map[string]any, tol []any) {
	spec, _ := m["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		m["spec"] = spec
	}
	if tol == nil {
		spec["tolerations"] = nil
		return
	}
	spec["tolerations"] = tol
}

func deepCopyJSON(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// SharedFleetParams are the parameters of a class's shared fleet: the
// class's, with Shared-mode defaults (even when the class's own mode is
// Dedicated and only some Gateways ask for Shared).
func SharedFleetParams(classParams *v1alpha1.GatewayParametersSpec) v1alpha1.GatewayParametersSpec {
	return Effective(classParams, &v1alpha1.GatewayParametersSpec{Mode: ptr.To(v1alpha1.ModeShared)})
}
