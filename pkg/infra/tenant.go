package infra

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// RefusedField is one field of a Gateway's own GatewayParameters that its
// class's policy does not allow: its path (spec.envoy.image,
// spec.podTemplate.spec.hostNetwork, spec.podTemplate.spec.containers[debug])
// and the permission that would allow it (empty when none does:
// spec.gatewayPolicy).
type RefusedField struct {
	Path  string
	Needs v1alpha1.GatewayPermission
}

// RefusedFieldsError lists the refused fields of a Gateway's parameters,
// sorted by path.
type RefusedFieldsError struct {
	Fields []RefusedField
}

// Error names every refused field and what would allow it.
func (e *RefusedFieldsError) Error() string {
	var paths []string
	needs := map[v1alpha1.GatewayPermission]bool{}
	for _, f := range e.Fields {
		paths = append(paths, f.Path)
		if f.Needs != "" {
			needs[f.Needs] = true
		}
	}
	msg := "a Gateway's own GatewayParameters may not set " + strings.Join(paths, ", ")
	if len(needs) > 0 {
		var perms []string
		for _, p := range []v1alpha1.GatewayPermission{v1alpha1.PermissionEnvoyImage, v1alpha1.PermissionPodTemplate} {
			if needs[p] {
				perms = append(perms, string(p))
			}
		}
		msg += fmt.Sprintf(" unless the GatewayClass's GatewayParameters allow it (spec.gatewayPolicy.allow: %s)", strings.Join(perms, ", "))
	}
	return msg
}

// CheckGatewayParameters checks a Gateway's own GatewayParameters (its
// spec.infrastructure.parametersRef, which the Gateway's namespace owns)
// against the policy of its class's parameters (nil: the default; see
// v1alpha1.GatewayParametersSpec.GatewayPolicy for the default allow-list).
// It returns nil, or a *RefusedFieldsError naming every field the policy
// refuses:
//
//   - spec.gatewayPolicy: never (the class's parameters alone set it);
//   - spec.envoy.image: unless the policy allows EnvoyImage;
//   - in spec.podTemplate, unless the policy allows PodTemplate: every
//     field outside the allow-list, strategic merge directives ($patch,
//     $retainKeys, $setElementOrder/..., $deleteFromPrimitiveList/...),
//     and null where the list allows only some children (it deletes the
//     rendered value), containers other than envoy and init containers
//     other than the SVID agent (svid-agent), an env variable of the
//     controller's own (POD_NAME...) or read from a Secret or ConfigMap,
//     the AppArmor and seccomp annotations.
//
// Why: the controller may create Deployments in every namespace, so what
// it renders from a namespace's GatewayParameters must stay a pod of the
// Pod Security Standards' restricted profile running our images, with no
// other identity and no access to the node, whatever that namespace's
// owner may do by itself. The overlay should have
// passed Validate; one that is not a JSON object is refused as a whole.
// The class's own parameters are not checked: the cluster admin writes
// them.
func CheckGatewayParameters(spec *v1alpha1.GatewayParametersSpec, policy *v1alpha1.GatewayPolicy) error {
	if spec == nil {
		return nil
	}
	c := &tenantCheck{}
	if spec.GatewayPolicy != nil {
		c.refuse("spec.gatewayPolicy", "")
	}
	if spec.Envoy != nil && spec.Envoy.Image != nil && !policy.Allows(v1alpha1.PermissionEnvoyImage) {
		c.refuse("spec.envoy.image", v1alpha1.PermissionEnvoyImage)
	}
	if !policy.Allows(v1alpha1.PermissionPodTemplate) {
		m, err := overlayMap(spec.PodTemplate)
		if err != nil {
			c.refuse("spec.podTemplate", v1alpha1.PermissionPodTemplate)
		} else if m != nil {
			c.podTemplate(m)
		}
	}
	if len(c.fields) == 0 {
		return nil
	}
	slices.SortFunc(c.fields, func(a, b RefusedField) int { return strings.Compare(a.Path, b.Path) })
	return &RefusedFieldsError{Fields: c.fields}
}

type tenantCheck struct {
	fields []RefusedField
}

func (c *tenantCheck) refuse(path string, needs v1alpha1.GatewayPermission) {
	c.fields = append(c.fields, RefusedField{Path: path, Needs: needs})
}

// anyValue: the field may hold anything, null included (the overlay
// replaces or merges the rendered value as the strategic merge does).
func anyValue(*tenantCheck, string, any) {}

// object checks a JSON object whose children are allowed by fields: a
// child not in fields, a directive, a null object or a value that is not
// an object is refused.
func object(fields map[string]func(*tenantCheck, string, any)) func(*tenantCheck, string, any) {
	return func(c *tenantCheck, path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			c.refuse(path+nullOr(v, ""), v1alpha1.PermissionPodTemplate)
			return
		}
		for _, k := range sortedKeys(m) {
			check, allowed := fields[k]
			if !allowed {
				c.refuse(path+"."+k, v1alpha1.PermissionPodTemplate)
				continue
			}
			check(c, path+"."+k, m[k])
		}
	}
}

// namedList checks a list merged by name (containers, env): each item is
// an object with a name that allowedName accepts, checked by item.
func namedList(allowedName func(string) bool, item func(*tenantCheck, string, any)) func(*tenantCheck, string, any) {
	return func(c *tenantCheck, path string, v any) {
		list, ok := v.([]any)
		if !ok {
			c.refuse(path+nullOr(v, ""), v1alpha1.PermissionPodTemplate)
			return
		}
		for i, it := range list {
			m, _ := it.(map[string]any)
			name, _ := m["name"].(string)
			at := fmt.Sprintf("%s[%s]", path, name)
			if name == "" {
				at = fmt.Sprintf("%s[%d]", path, i)
			}
			if !allowedName(name) {
				c.refuse(at, v1alpha1.PermissionPodTemplate)
				continue
			}
			item(c, at, it)
		}
	}
}

// stringMap checks a map of strings whose keys allowedKey accepts (null
// values delete a key: allowed).
func stringMap(allowedKey func(string) bool) func(*tenantCheck, string, any) {
	return func(c *tenantCheck, path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				c.refuse(path, v1alpha1.PermissionPodTemplate)
			}
			return
		}
		for _, k := range sortedKeys(m) {
			if !allowedKey(k) {
				c.refuse(path+"["+k+"]", v1alpha1.PermissionPodTemplate)
			}
		}
	}
}

func nullOr(v any, s string) string {
	if v == nil {
		return ": null"
	}
	return s
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// securityAnnotationPrefixes are the pod annotations by which the kubelet
// loosens a container's confinement (AppArmor's, still read next to the
// appArmorProfile field; seccomp's, read by old kubelets).
var securityAnnotationPrefixes = []string{
	"container.apparmor.security.beta.kubernetes.io/",
	"seccomp.security.alpha.kubernetes.io/",
	"container.seccomp.security.alpha.kubernetes.io/",
}

func allowedPodAnnotation(key string) bool {
	return !slices.ContainsFunc(securityAnnotationPrefixes, func(p string) bool { return strings.HasPrefix(key, p) })
}

// ourEnv reports whether the Envoy container sets name itself.
func ourEnv(name string) bool {
	return slices.ContainsFunc(envoyEnv(), func(e corev1.EnvVar) bool { return e.Name == name })
}

// tenantEnvVar: a value, or a fieldRef or resourceFieldRef (the pod's own
// fields), never a Secret's or ConfigMap's key.
var tenantEnvVar = object(map[string]func(*tenantCheck, string, any){
	"name":  anyValue,
	"value": anyValue,
	"valueFrom": object(map[string]func(*tenantCheck, string, any){
		"fieldRef":         anyValue,
		"resourceFieldRef": anyValue,
	}),
})

// tenantPodTemplate is the default allow-list of a Gateway's own overlay
// (v1alpha1.GatewayParametersSpec.GatewayPolicy documents it).
var tenantPodTemplate = object(map[string]func(*tenantCheck, string, any){
	"metadata": object(map[string]func(*tenantCheck, string, any){
		"labels":      stringMap(func(string) bool { return true }),
		"annotations": stringMap(allowedPodAnnotation),
	}),
	"spec": object(map[string]func(*tenantCheck, string, any){
		"nodeSelector":              anyValue,
		"affinity":                  anyValue,
		"tolerations":               anyValue,
		"topologySpreadConstraints": anyValue,
		"containers": namedList(func(n string) bool { return n == containerName }, object(map[string]func(*tenantCheck, string, any){
			"name":      anyValue,
			"resources": anyValue,
			"env":       namedList(func(n string) bool { return n != "" && !ourEnv(n) }, tenantEnvVar),
		})),
		"initContainers": namedList(func(n string) bool { return n == agentContainer }, object(map[string]func(*tenantCheck, string, any){
			"name":      anyValue,
			"resources": anyValue,
		})),
	}),
})

func (c *tenantCheck) podTemplate(m map[string]any) {
	tenantPodTemplate(c, "spec.podTemplate", m)
}
