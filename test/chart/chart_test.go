// Package chart tests the Helm chart in charts/xds-controller with Helm's
// Go packages (Helm 4): lint (as `helm lint`) and render (as `helm
// template`), then checks the rendered objects; the Gateway API CRDs'
// installCRDs=auto against a simulated cluster (crdsauto_test.go); and the
// README's `helm install` on API servers of its own (envtest, bare_test.go:
// a bare one, one with another implementation's CRDs). It is its own Go
// module so that Helm's dependencies stay out of the controller's module.
package chart

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

const chartDir = "../../charts/xds-controller"

type object = map[string]any

// kubeVersion is the cluster version the chart renders for (the local
// cluster's minor).
var kubeVersion = func() *common.KubeVersion {
	v, err := common.ParseKubeVersion("v1.36.0")
	if err != nil {
		panic(err)
	}
	return v
}()

// render renders the chart like `helm template xds-controller chart -n
// xds-system --include-crds --set ...` and returns the objects.
func render(t *testing.T, values map[string]any) []object {
	t.Helper()
	objs, err := renderFor(values)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return objs
}

// renderFor is render for a cluster that also serves apiVersions (such as
// monitoring.coreos.com/v1); it returns the rendering error.
func renderFor(values map[string]any, apiVersions ...string) ([]object, error) {
	install := templateAction("xds-controller", "xds-system")
	install.IncludeCRDs = true
	install.APIVersions = apiVersions
	rel, err := runTemplate(install, values)
	if err != nil {
		return nil, err
	}
	manifest := rel.Manifest
	for _, h := range rel.Hooks {
		manifest += "\n---\n" + h.Manifest
	}
	// CHART_DUMP=file writes the rendered manifest, for reading.
	if f := os.Getenv("CHART_DUMP"); f != "" {
		if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
			return nil, err
		}
	}
	var objs []object
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var o object
		if err := dec.Decode(&o); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("rendered YAML: %w", err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs, nil
}

// templateAction is Helm's install action set up as `helm template NAME
// -n NAMESPACE --kube-version v1.36.0` does: a client-side dry run, which
// never reaches a cluster.
func templateAction(name, namespace string) *action.Install {
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName, install.Namespace = name, namespace
	install.KubeVersion = kubeVersion
	return install
}

// runTemplate runs install on the chart with values and returns the
// release it renders (a Helm 4 install returns the release behind an
// interface: release.v1 for a chart of apiVersion v2).
func runTemplate(install *action.Install, values map[string]any) (*release.Release, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	r, err := install.Run(ch, values)
	if err != nil {
		return nil, err
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("install returned a %T, not a release.v1", r)
	}
	return rel, nil
}

func get(o object, path ...string) any {
	var v any = o
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func str(o object, path ...string) string {
	s, _ := get(o, path...).(string)
	return s
}

func find(objs []object, kind, name string) object {
	for _, o := range objs {
		if o["kind"] == kind && str(o, "metadata", "name") == name {
			return o
		}
	}
	return nil
}

func kinds(objs []object) map[string]int {
	out := map[string]int{}
	for _, o := range objs {
		out[o["kind"].(string)]++
	}
	return out
}

func TestLint(t *testing.T) {
	for _, vals := range []map[string]any{
		nil,
		{"mode": "Dedicated", "gatewayAPI": map[string]any{"installCRDs": true}},
		{"gatewayAPI": map[string]any{"installCRDs": true, "channel": "experimental"}},
	} {
		linter := lint.RunAll(chartDir, vals, "xds-system", lint.WithKubeVersion(kubeVersion))
		for _, m := range linter.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("lint %v: %s", vals, m)
			}
		}
	}
}

func TestDefaults(t *testing.T) {
	objs := render(t, nil)
	k := kinds(objs)
	for kind, n := range map[string]int{
		"CustomResourceDefinition": len(ourCRDs), "Deployment": 1, "Service": 1, "ServiceAccount": 1,
		"ClusterRole": 1, "ClusterRoleBinding": 1, "Role": 1, "RoleBinding": 1,
		"GatewayClass": 1, "GatewayParameters": 1, "IngressClass": 1,
	} {
		if k[kind] != n {
			t.Errorf("%d %s, want %d (all: %v)", k[kind], kind, n, k)
		}
	}
	for _, name := range ourCRDs {
		if crd := find(objs, "CustomResourceDefinition", name); crd == nil {
			t.Errorf("our CRD %s is not in the chart", name)
		}
	}
	if ic := find(objs, "IngressClass", "xds-controller"); ic == nil || get(ic, "spec", "controller") != "xds-controller.dev/ingress-controller" ||
		get(ic, "metadata", "annotations") != nil {
		t.Errorf("IngressClass %v, want ours and not the default", ic)
	}

	dep := find(objs, "Deployment", "xds-controller")
	if v := get(dep, "spec", "template", "spec", "enableServiceLinks"); v != false {
		t.Errorf("enableServiceLinks %v, want false (thousands of Services' variables overflow exec's limit)", v)
	}
	c := get(dep, "spec", "template", "spec", "containers").([]any)[0].(object)
	if c["image"] != "ghcr.io/xds-controller/xds-controller:dev" || c["imagePullPolicy"] != "IfNotPresent" {
		t.Errorf("image %v %v", c["image"], c["imagePullPolicy"])
	}
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--envoy-image") }) {
		t.Errorf("--envoy-image without envoy.image: %v", args)
	}
	if !slices.Equal(args[:2], []string{"serve", "controller"}) || !slices.Contains(args, "--namespace=xds-system") ||
		!slices.Contains(args, "--xds-address=:18000") || !slices.Contains(args, "--service-account=xds-controller") ||
		!slices.Contains(args, "--identity-address=:18443") || !slices.Contains(args, "--svid-lifetime=1h") ||
		!slices.Contains(args, "--token-audience=xds-controller-identity") ||
		!slices.Contains(args, "--agent-image=ghcr.io/xds-controller/xds-controller:dev") {
		t.Errorf("args %v", args)
	}
	// The labels by which proxy-status and config-dump find the
	// controller's namespace (pkg/proxystatus ControllerPodLabels).
	for k, v := range map[string]string{"app.kubernetes.io/name": "xds-controller", "app.kubernetes.io/component": "controller"} {
		if got := str(dep, "spec", "template", "metadata", "labels", k); got != v {
			t.Errorf("controller pod label %s=%q, want %q", k, got, v)
		}
	}
	if get(c, "securityContext", "readOnlyRootFilesystem") != true || get(dep, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
		t.Error("controller security context")
	}

	svc := find(objs, "Service", "xds-controller")
	ports := map[string]any{}
	for _, p := range get(svc, "spec", "ports").([]any) {
		ports[str(p.(object), "name")] = p.(object)["port"]
	}
	if fmt.Sprint(ports["grpc-xds"]) != "18000" || fmt.Sprint(ports["https-identity"]) != "18443" {
		t.Errorf("service ports %v", ports)
	}

	gc := find(objs, "GatewayClass", "xds-controller")
	if str(gc, "spec", "controllerName") != "xds-controller.dev/gateway-controller" {
		t.Errorf("GatewayClass %v", gc)
	}
	ref := get(gc, "spec", "parametersRef").(object)
	if ref["group"] != "gateway.xds-controller.dev" || ref["kind"] != "GatewayParameters" || ref["name"] != "xds-controller-defaults" || ref["namespace"] != "xds-system" {
		t.Errorf("parametersRef %v", ref)
	}
	gp := find(objs, "GatewayParameters", "xds-controller-defaults")
	if str(gp, "spec", "mode") != "Shared" || get(gp, "spec", "envoy") != nil {
		t.Errorf("default GatewayParameters %v", gp["spec"])
	}
	// No Gateway API CRDs unless asked: only ours.
	if n := k["CustomResourceDefinition"]; n != len(ourCRDs) {
		t.Errorf("%d CRDs, want %d", n, len(ourCRDs))
	}
}

// ourCRDs are the CustomResourceDefinitions of our API group that the
// chart installs (config/crd, copied by make generate-api).
var ourCRDs = []string{
	"gatewayparameters.gateway.xds-controller.dev",
	"ingressclassparameters.gateway.xds-controller.dev",
	"securitypolicies.gateway.xds-controller.dev",
	"trafficpolicies.gateway.xds-controller.dev",
	"backendpolicies.gateway.xds-controller.dev",
	"listenerpolicies.gateway.xds-controller.dev",
}

// grants lists what the rules of a Role or ClusterRole allow, keyed by
// "group/resource" (core group: "/resource"), with their verbs.
func grants(t *testing.T, role object) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	rules, _ := role["rules"].([]any)
	for _, r := range rules {
		rule := r.(object)
		groups, _ := rule["apiGroups"].([]any)
		resources, _ := rule["resources"].([]any)
		verbs, _ := rule["verbs"].([]any)
		for _, g := range groups {
			for _, res := range resources {
				key := g.(string) + "/" + res.(string)
				for _, v := range verbs {
					if !slices.Contains(out[key], v.(string)) {
						out[key] = append(out[key], v.(string))
					}
				}
			}
		}
	}
	return out
}

// writeVerbs change objects; "*" is every verb.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "*"}

// rbacValues are the value sets whose RBAC the tests check: the defaults,
// Dedicated mode, the CA from cert-manager, a single replica without
// leader election, and watchNamespaces (Roles instead of the ClusterRole).
var rbacValues = []map[string]any{
	nil,
	{"mode": "Dedicated"},
	{"identity": map[string]any{"ca": map[string]any{"certManager": map[string]any{"enabled": true}}}},
	{"leaderElection": map[string]any{"enabled": false}, "replicas": 1},
	scopedValues,
	{"watchNamespaces": []any{"team-a"}, "mode": "Dedicated", "identity": map[string]any{"ca": map[string]any{"certManager": map[string]any{"enabled": true}}}},
}

// RBAC: no wildcards; what the controller needs, and nothing that escalates.
func TestRBAC(t *testing.T) {
	objs := render(t, nil)
	allowed := map[string][]string{}
	for _, kind := range []string{"ClusterRole", "Role"} {
		role := find(objs, kind, "xds-controller")
		if role == nil {
			t.Fatalf("no %s", kind)
		}
		for _, r := range role["rules"].([]any) {
			rule := r.(object)
			for _, field := range []string{"verbs", "resources", "apiGroups"} {
				for _, v := range rule[field].([]any) {
					if v == "*" {
						t.Errorf("%s has a wildcard in %s: %v", kind, field, rule)
					}
				}
			}
		}
		for key, verbs := range grants(t, role) {
			allowed[kind+" "+key] = verbs
			for _, v := range verbs {
				if v == "escalate" || v == "bind" || v == "impersonate" {
					t.Errorf("%s %s: %v", kind, key, v)
				}
			}
		}
	}
	want := map[string][]string{
		"ClusterRole gateway.networking.k8s.io/gatewayclasses":          {"get", "list", "watch"},
		"ClusterRole gateway.networking.k8s.io/gateways":                {"get", "list", "watch"},
		"ClusterRole gateway.networking.k8s.io/httproutes":              {"get", "list", "watch"},
		"ClusterRole gateway.networking.k8s.io/referencegrants":         {"get", "list", "watch"},
		"ClusterRole gateway.networking.k8s.io/gateways/status":         {"patch", "update"},
		"ClusterRole gateway.networking.k8s.io/httproutes/status":       {"patch", "update"},
		"ClusterRole gateway.networking.k8s.io/gatewayclasses/status":   {"patch", "update"},
		"ClusterRole gateway.xds-controller.dev/gatewayparameters":      {"get", "list", "watch"},
		"ClusterRole gateway.xds-controller.dev/ingressclassparameters": {"get", "list", "watch"},
		"ClusterRole networking.k8s.io/ingresses":                       {"get", "list", "watch"},
		"ClusterRole networking.k8s.io/ingressclasses":                  {"get", "list", "watch"},
		"ClusterRole networking.k8s.io/ingresses/status":                {"patch", "update"},
		"ClusterRole networking.k8s.io/ingressclasses/finalizers":       {"update"},
		"ClusterRole /namespaces":                                       {"get", "list", "watch"},
		"ClusterRole /events":                                           {"create", "patch"},
		"ClusterRole authentication.k8s.io/tokenreviews":                {"create"},
		"ClusterRole certificates.k8s.io/clustertrustbundles":           {"get", "list", "watch"},
		"Role /pods": {"get", "list", "watch"},
		"ClusterRole gateway.networking.x-k8s.io/xtelemetrypolicies":        {"get", "list", "watch"},
		"ClusterRole gateway.networking.x-k8s.io/xtelemetrypolicies/status": {"patch", "update"},
		"ClusterRole gateway.networking.x-k8s.io/xbackends":                 {"get", "list", "watch"},
		"ClusterRole gateway.networking.x-k8s.io/xbackends/status":          {"patch"},
		"ClusterRole gateway.xds-controller.dev/securitypolicies":           {"get", "list", "watch"},
		"ClusterRole gateway.xds-controller.dev/securitypolicies/status":    {"patch"},
		"ClusterRole gateway.xds-controller.dev/trafficpolicies":            {"get", "list", "watch"},
		"ClusterRole gateway.xds-controller.dev/trafficpolicies/status":     {"patch"},
		"ClusterRole gateway.xds-controller.dev/backendpolicies":            {"get", "list", "watch"},
		"ClusterRole gateway.xds-controller.dev/backendpolicies/status":     {"patch"},
		"ClusterRole gateway.xds-controller.dev/listenerpolicies":           {"get", "list", "watch"},
		"ClusterRole gateway.xds-controller.dev/listenerpolicies/status":    {"patch"},
	}
	for key, verbs := range want {
		for _, v := range verbs {
			if !slices.Contains(allowed[key], v) {
				t.Errorf("%s lacks %s (has %v)", key, v, allowed[key])
			}
		}
	}
	// Exactly the verbs the code uses, for the kinds the controller writes
	// besides status (the chart README's RBAC table): server-side apply is
	// a patch that creates a new object, pruning deletes; nothing updates
	// or deletes collections.
	exact := map[string][]string{
		// Stale Endpoints of a Service that lost its selector: read by
		// name, deleted.
		"ClusterRole /endpoints": {"get", "delete"},
		// Listener certificates: read only.
		"ClusterRole /secrets": {"get", "list", "watch"},
		// Dedicated fleets' bootstrap ConfigMaps in the Gateways' namespaces.
		"ClusterRole /configmaps":                     {"get", "list", "watch", "create", "patch", "delete"},
		"ClusterRole /services":                       {"get", "list", "watch", "create", "patch", "delete"},
		"ClusterRole discovery.k8s.io/endpointslices": {"get", "list", "watch", "create", "patch", "delete"},
		"ClusterRole /serviceaccounts":                {"get", "list", "create", "patch", "delete"},
		"ClusterRole apps/deployments":                {"get", "list", "create", "patch", "delete"},
		"Role coordination.k8s.io/leases":             {"get", "create", "update"},
		"Role /secrets":                               {"create"},
		"Role /configmaps":                            {"create", "patch", "delete"},
	}
	for key, verbs := range exact {
		got := slices.Sorted(slices.Values(allowed[key]))
		if w := slices.Sorted(slices.Values(verbs)); !slices.Equal(got, w) {
			t.Errorf("%s: %v, want exactly %v", key, got, w)
		}
	}
	// Nothing writes Gateway API specs, and pod access is read-only.
	for key, verbs := range allowed {
		if strings.HasPrefix(key, "ClusterRole gateway.networking.k8s.io/") && !strings.Contains(key, "/status") && !strings.Contains(key, "/finalizers") {
			for _, v := range verbs {
				if !slices.Contains([]string{"get", "list", "watch"}, v) {
					t.Errorf("%s: %s", key, v)
				}
			}
		}
	}
	// Pods everywhere: list and watch only, for the endpoints of
	// EndpointSelector XBackends (no get, no write); get stays in the
	// controller's namespace.
	if got := slices.Sorted(slices.Values(allowed["ClusterRole /pods"])); !slices.Equal(got, []string{"list", "watch"}) {
		t.Errorf("ClusterRole /pods: %v, want exactly [list watch]", got)
	}
}

// TestNoClusterWideSecretWrites: reading more certificates must not mean
// writing more. Whatever the values, no ClusterRole of the chart grants a
// write verb (or "*") on Secrets, through any rule that names secrets or
// "*" in the core group or "*" group, and no Role outside the release
// namespace exists to do it either. The cluster-wide ConfigMap writes (the
// Dedicated fleets' bootstrap ConfigMaps) are create, patch and delete only.
func TestNoClusterWideSecretWrites(t *testing.T) {
	for _, vals := range rbacValues {
		objs := render(t, vals)
		n := 0
		for _, o := range objs {
			switch o["kind"] {
			case "Role", "RoleBinding":
				// Outside the release namespace only the watch Roles of
				// watchNamespaces, which grant reads of Secrets
				// (TestScopedRBAC: the ClusterRole's own rules).
				watched, _ := vals["watchNamespaces"].([]any)
				ns := str(o, "metadata", "namespace")
				if ns != "xds-system" && !(str(o, "metadata", "name") == "xds-controller-watch" && slices.Contains(watched, any(ns))) {
					t.Errorf("%v: %s %s in namespace %q, not the release namespace", vals, o["kind"], str(o, "metadata", "name"), ns)
				}
				if o["kind"] == "Role" && str(o, "metadata", "name") == "xds-controller-watch" {
					if g := grants(t, o); !slices.Equal(slices.Sorted(slices.Values(g["/secrets"])), []string{"get", "list", "watch"}) {
						t.Errorf("%v: watch Role in %s grants %v on secrets", vals, ns, g["/secrets"])
					}
				}
				continue
			case "ClusterRole":
				n++
			default:
				continue
			}
			if get(o, "aggregationRule") != nil {
				t.Errorf("%v: ClusterRole %s aggregates other roles", vals, str(o, "metadata", "name"))
			}
			rules, _ := o["rules"].([]any)
			for _, r := range rules {
				rule := r.(object)
				groups, _ := rule["apiGroups"].([]any)
				resources, _ := rule["resources"].([]any)
				verbs, _ := rule["verbs"].([]any)
				core := slices.Contains(groups, any("")) || slices.Contains(groups, any("*"))
				for _, res := range []string{"secrets", "configmaps"} {
					if !core || !(slices.Contains(resources, any(res)) || slices.Contains(resources, any("*"))) {
						continue
					}
					for _, v := range verbs {
						switch {
						case res == "secrets" && slices.Contains(writeVerbs, v.(string)):
							t.Errorf("%v: ClusterRole %s grants %s on secrets: %v", vals, str(o, "metadata", "name"), v, rule)
						case res == "configmaps" && slices.Contains([]string{"update", "deletecollection", "*"}, v.(string)):
							t.Errorf("%v: ClusterRole %s grants %s on configmaps: %v", vals, str(o, "metadata", "name"), v, rule)
						}
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%v: no ClusterRole rendered", vals)
		}
	}
}

// TestReleaseNamespaceRole: the Role in the release namespace, bound to the
// controller's ServiceAccount, grants the writes the controller makes there
// that the ClusterRole does not: the CA Secret (create, unless cert-manager
// writes it), the leader election Lease, the replicas' data-plane report
// ConfigMaps and the shared fleets' bootstrap ConfigMaps; and the reads of
// the Envoy pods. It grants nothing on Secrets but that create.
func TestReleaseNamespaceRole(t *testing.T) {
	for _, vals := range rbacValues {
		objs := render(t, vals)
		role := find(objs, "Role", "xds-controller")
		if role == nil || str(role, "metadata", "namespace") != "xds-system" {
			t.Fatalf("%v: no Role xds-controller in xds-system: %v", vals, role)
		}
		rb := find(objs, "RoleBinding", "xds-controller")
		if rb == nil || str(rb, "metadata", "namespace") != "xds-system" ||
			str(rb, "roleRef", "kind") != "Role" || str(rb, "roleRef", "name") != "xds-controller" {
			t.Fatalf("%v: RoleBinding %v", vals, rb)
		}
		bound := false
		for _, sub := range rb["subjects"].([]any) {
			sub := sub.(object)
			bound = bound || sub["kind"] == "ServiceAccount" && sub["name"] == "xds-controller" && sub["namespace"] == "xds-system"
		}
		if !bound {
			t.Errorf("%v: the RoleBinding does not bind the controller's ServiceAccount: %v", vals, rb["subjects"])
		}
		certManager := get(find(objs, "Certificate", "xds-controller-ca"), "spec", "secretName") == "xds-controller-ca"
		g := grants(t, role)
		want := map[string][]string{
			"coordination.k8s.io/leases": {"get", "create", "update"},
			"/pods":                      {"get", "list", "watch"},
			"/configmaps":                {"create", "patch", "delete"},
		}
		if !certManager {
			want["/secrets"] = []string{"create"}
		}
		for key, verbs := range want {
			for _, v := range verbs {
				if !slices.Contains(g[key], v) {
					t.Errorf("%v: Role lacks %s on %s (has %v)", vals, v, key, g[key])
				}
			}
		}
		for key, verbs := range g {
			if key == "/secrets" || key == "*/secrets" || strings.HasSuffix(key, "/*") {
				if w := want["/secrets"]; !slices.Equal(verbs, w) {
					t.Errorf("%v: Role grants %v on %s, want %v", vals, verbs, key, w)
				}
			}
		}
	}
}

// TestIdentityValues: the SVID lifetime and the token audience reach the
// controller, and the Envoy pods' agents run the controller's own image.
func TestIdentityValues(t *testing.T) {
	objs := render(t, map[string]any{
		"identity": map[string]any{"svidLifetime": "2m", "tokenAudience": "my-audience"},
		"image":    map[string]any{"repository": "registry.example/xds", "tag": "v1"},
	})
	c := get(find(objs, "Deployment", "xds-controller"), "spec", "template", "spec", "containers").([]any)[0].(object)
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	for _, want := range []string{"--svid-lifetime=2m", "--token-audience=my-audience", "--agent-image=registry.example/xds:v1"} {
		if !slices.Contains(args, want) {
			t.Errorf("args lack %s: %v", want, args)
		}
	}
}

// TestCertManagerCA: by default the controller creates its CA (no
// cert-manager objects, no --create-ca=false); with
// identity.ca.certManager.enabled a self-signed Issuer and a CA Certificate
// write the Secret the controller reads, and the controller waits for it.
func TestCertManagerCA(t *testing.T) {
	args := func(objs []object) []string {
		c := get(find(objs, "Deployment", "xds-controller"), "spec", "template", "spec", "containers").([]any)[0].(object)
		var out []string
		for _, a := range c["args"].([]any) {
			out = append(out, a.(string))
		}
		return out
	}
	objs := render(t, nil)
	if n := kinds(objs)["Certificate"] + kinds(objs)["Issuer"]; n != 0 {
		t.Errorf("default values render %d cert-manager objects", n)
	}
	if slices.Contains(args(objs), "--create-ca=false") {
		t.Error("default values stop the controller from creating its CA")
	}

	objs = render(t, map[string]any{
		"trustDomain": "example.org",
		"identity":    map[string]any{"ca": map[string]any{"certManager": map[string]any{"enabled": true}}},
	})
	if !slices.Contains(args(objs), "--create-ca=false") {
		t.Errorf("with cert-manager the controller still creates its CA: %v", args(objs))
	}
	issuer := find(objs, "Issuer", "xds-controller-selfsigned")
	if get(issuer, "spec", "selfSigned") == nil {
		t.Errorf("issuer is not self-signed: %v", issuer["spec"])
	}
	cert := find(objs, "Certificate", "xds-controller-ca")
	if get(cert, "spec", "isCA") != true || str(cert, "spec", "secretName") != "xds-controller-ca" ||
		str(cert, "spec", "issuerRef", "name") != "xds-controller-selfsigned" || str(cert, "spec", "issuerRef", "kind") != "Issuer" {
		t.Errorf("CA Certificate spec: %v", cert["spec"])
	}
	if uris := get(cert, "spec", "uris").([]any); len(uris) != 1 || uris[0] != "spiffe://example.org" {
		t.Errorf("CA Certificate URIs: %v", uris)
	}
}

// TestBindingsOnlyForTheController: every (Cluster)RoleBinding binds the
// controller's ServiceAccount; the Envoy fleets' ServiceAccounts are bound
// to no role.
func TestBindingsOnlyForTheController(t *testing.T) {
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		for _, o := range render(t, nil) {
			if o["kind"] != kind {
				continue
			}
			for _, sub := range o["subjects"].([]any) {
				if sub := sub.(object); sub["kind"] != "ServiceAccount" || sub["name"] != "xds-controller" {
					t.Errorf("%s %s binds %v", kind, str(o, "metadata", "name"), sub)
				}
			}
		}
	}
}

func TestModeAndEnvoyValues(t *testing.T) {
	objs := render(t, map[string]any{
		"mode": "Dedicated",
		"envoy": map[string]any{
			"image": "docker.io/envoyproxy/envoy:v1.40.0", "replicas": 3, "serviceType": "NodePort", "drainSeconds": 0,
			"podTemplate": map[string]any{"spec": map[string]any{"nodeSelector": map[string]any{"pool": "edge"}}},
		},
	})
	gp := find(objs, "GatewayParameters", "xds-controller-defaults")
	if gp == nil {
		t.Fatal("no GatewayParameters")
	}
	spec := gp["spec"].(object)
	if spec["mode"] != "Dedicated" || fmt.Sprint(spec["replicas"]) != "3" || str(spec, "envoy", "image") != "docker.io/envoyproxy/envoy:v1.40.0" ||
		str(spec, "service", "type") != "NodePort" || str(spec, "podTemplate", "spec", "nodeSelector", "pool") != "edge" ||
		fmt.Sprint(get(spec, "envoy", "drainSeconds")) != "0" {
		t.Errorf("spec %v", spec)
	}
	// The image is the controller's default too (--envoy-image).
	dep := find(objs, "Deployment", "xds-controller")
	if v := get(dep, "spec", "template", "spec", "enableServiceLinks"); v != false {
		t.Errorf("enableServiceLinks %v, want false (thousands of Services' variables overflow exec's limit)", v)
	}
	c := get(dep, "spec", "template", "spec", "containers").([]any)[0].(object)
	if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--envoy-image=docker.io/envoyproxy/envoy:v1.40.0") {
		t.Errorf("args %s, want --envoy-image", args)
	}

	if get(spec, "metrics") != nil {
		t.Errorf("metrics %v without monitoring.routeStats", get(spec, "metrics"))
	}
	if get(spec, "gatewayPolicy") != nil {
		t.Errorf("gatewayPolicy %v without gatewayClass.allow", get(spec, "gatewayPolicy"))
	}
	// gatewayClass.allow: what the class's Gateways may do beyond the
	// default, in the default GatewayParameters (written for it alone).
	objs = render(t, map[string]any{"mode": "", "gatewayClass": map[string]any{"allow": []any{"ExternalIPs", "EnvoyImage"}}})
	if gp := find(objs, "GatewayParameters", "xds-controller-defaults"); fmt.Sprint(get(gp, "spec", "gatewayPolicy", "allow")) != "[ExternalIPs EnvoyImage]" {
		t.Errorf("gatewayClass.allow: GatewayParameters %v", gp)
	}
	// monitoring.routeStats: the class's Gateways keep per-route statistics.
	objs = render(t, map[string]any{"mode": "", "monitoring": map[string]any{"routeStats": true}})
	if gp := find(objs, "GatewayParameters", "xds-controller-defaults"); fmt.Sprint(get(gp, "spec", "metrics", "routeStats")) != "true" || get(gp, "spec", "mode") != nil {
		t.Errorf("monitoring.routeStats: GatewayParameters %v", gp)
	}

	// edge: the class's spec.edge, as written.
	objs = render(t, map[string]any{"mode": "", "edge": map[string]any{
		"requestHeadersTimeout": "5s", "http2": map[string]any{"maxConcurrentStreams": 50}, "overload": map[string]any{"maxHeapSize": "1Gi"},
	}})
	if gp := find(objs, "GatewayParameters", "xds-controller-defaults"); str(gp, "spec", "edge", "requestHeadersTimeout") != "5s" ||
		fmt.Sprint(get(gp, "spec", "edge", "http2", "maxConcurrentStreams")) != "50" || str(gp, "spec", "edge", "overload", "maxHeapSize") != "1Gi" {
		t.Errorf("edge: GatewayParameters %v", gp)
	}

	// No mode and no envoy settings: no GatewayParameters, no parametersRef.
	objs = render(t, map[string]any{"mode": ""})
	if find(objs, "GatewayParameters", "xds-controller-defaults") != nil {
		t.Error("GatewayParameters without mode")
	}
	if get(find(objs, "GatewayClass", "xds-controller"), "spec", "parametersRef") != nil {
		t.Error("parametersRef without GatewayParameters")
	}
	// A bad mode is refused.
	if _, err := runTemplate(templateAction("x", "x"), map[string]any{"mode": "shared"}); err == nil || !strings.Contains(err.Error(), "Shared or Dedicated") {
		t.Errorf("bad mode: %v", err)
	}
	// No GatewayClass when not asked.
	objs = render(t, map[string]any{"gatewayClass": map[string]any{"create": false}})
	if kinds(objs)["GatewayClass"] != 0 {
		t.Error("GatewayClass created")
	}
}

func helmOwned(o object) bool {
	return str(o, "metadata", "labels", "app.kubernetes.io/managed-by") == "Helm" &&
		str(o, "metadata", "annotations", "meta.helm.sh/release-name") == "xds-controller" &&
		str(o, "metadata", "annotations", "meta.helm.sh/release-namespace") == "xds-system"
}

// On upgrade the GatewayClass is an ordinary release object, never a hook:
// a post-upgrade hook is deleted and created again at every upgrade, and
// the garbage collector then deletes the shared Envoy fleet it owns (the
// e2e test found every `helm upgrade` replacing the shared fleet's pods).
func TestGatewayClassNotAHookOnUpgrade(t *testing.T) {
	for _, installCRDs := range []any{true, false, "auto"} {
		objs, _ := renderOn(t, nil, map[string]any{"gatewayAPI": map[string]any{"installCRDs": installCRDs}}, true)
		gc := find(objs, "GatewayClass", "xds-controller")
		if gc == nil {
			t.Fatalf("installCRDs=%v: no GatewayClass on upgrade", installCRDs)
		}
		if hook := str(gc, "metadata", "annotations", "helm.sh/hook"); hook != "" || !helmOwned(gc) {
			t.Errorf("installCRDs=%v: GatewayClass on upgrade: %v", installCRDs, gc["metadata"])
		}
	}
}

// TestExtraEnv: extraEnv lands in the controller container after the
// chart's own variables.
func TestExtraEnv(t *testing.T) {
	objs := render(t, map[string]any{"extraEnv": []any{map[string]any{"name": "XDS_CONTROLLER_TESTHOOK_REJECT_PREFIX", "value": "/nack-me"}}})
	c := get(find(objs, "Deployment", "xds-controller"), "spec", "template", "spec", "containers").([]any)[0].(object)
	var names []string
	for _, e := range c["env"].([]any) {
		names = append(names, e.(object)["name"].(string))
	}
	if want := []string{"POD_NAME", "POD_NAMESPACE", "XDS_CONTROLLER_TESTHOOK_REJECT_PREFIX"}; !slices.Equal(names, want) {
		t.Errorf("env %v, want %v", names, want)
	}
}

// TestIngressClassValues: the IngressClass can be the cluster's default,
// reference IngressClassParameters of the release namespace, or be left
// out; the controller serves it with the chart's GatewayClass.
func TestIngressClassValues(t *testing.T) {
	objs := render(t, map[string]any{"ingressClass": map[string]any{"name": "edge", "default": true, "parametersName": "edge-params"}})
	ic := find(objs, "IngressClass", "edge")
	if ic == nil || str(ic, "metadata", "annotations", "ingressclass.kubernetes.io/is-default-class") != "true" {
		t.Fatalf("IngressClass %v, want the default class", ic)
	}
	p := get(ic, "spec", "parameters").(object)
	if p["apiGroup"] != "gateway.xds-controller.dev" || p["kind"] != "IngressClassParameters" || p["scope"] != "Namespace" ||
		p["namespace"] != "xds-system" || p["name"] != "edge-params" {
		t.Errorf("parameters %v", p)
	}
	c := get(find(objs, "Deployment", "xds-controller"), "spec", "template", "spec", "containers").([]any)[0].(object)
	if !slices.Contains(c["args"].([]any), any("--ingress-gateway-class=xds-controller")) {
		t.Errorf("args %v lack --ingress-gateway-class", c["args"])
	}
	if ic := find(render(t, map[string]any{"ingressClass": map[string]any{"create": false}}), "IngressClass", "xds-controller"); ic != nil {
		t.Errorf("ingressClass.create=false rendered %v", ic)
	}
}
