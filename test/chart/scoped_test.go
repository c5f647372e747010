package chart

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// scopedValues watch two namespaces (besides the release namespace).
var scopedValues = map[string]any{"watchNamespaces": []any{"team-b", "team-a"}}

// clusterScoped are the ClusterRole's grants with watchNamespaces: the
// cluster-scoped kinds only, nothing on a namespaced object.
var clusterScoped = map[string][]string{
	"gateway.networking.k8s.io/gatewayclasses":            {"get", "list", "watch"},
	"gateway.networking.k8s.io/gatewayclasses/status":     {"patch", "update"},
	"gateway.networking.k8s.io/gatewayclasses/finalizers": {"update"},
	"networking.k8s.io/ingressclasses":                    {"get", "list", "watch"},
	"networking.k8s.io/ingressclasses/finalizers":         {"update"},
	"/namespaces":                             {"get", "list", "watch"},
	"authentication.k8s.io/tokenreviews":      {"create"},
	"certificates.k8s.io/clustertrustbundles": {"get", "list", "watch"},
}

func sortedGrants(t *testing.T, role object) map[string][]string {
	g := grants(t, role)
	for k, v := range g {
		g[k] = slices.Sorted(slices.Values(v))
	}
	return g
}

func controllerArgs(objs []object) []string {
	c := get(find(objs, "Deployment", "xds-controller"), "spec", "template", "spec", "containers").([]any)[0].(object)
	var out []string
	for _, a := range c["args"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

// TestScopedRBAC: with watchNamespaces the ClusterRole grants only the
// cluster-scoped kinds, and each watched namespace (the release namespace
// included) gets a Role xds-controller-watch, bound to the controller's
// ServiceAccount, with exactly the rules on namespaced objects that the
// cluster-wide ClusterRole has: the same rights, in those namespaces only.
// The controller is told the same list.
func TestScopedRBAC(t *testing.T) {
	wide := sortedGrants(t, find(render(t, nil), "ClusterRole", "xds-controller"))
	objs := render(t, scopedValues)

	cr := sortedGrants(t, find(objs, "ClusterRole", "xds-controller"))
	want := map[string][]string{}
	for k, v := range clusterScoped {
		want[k] = slices.Sorted(slices.Values(v))
	}
	if !maps.EqualFunc(cr, want, slices.Equal) {
		t.Errorf("scoped ClusterRole grants\n%v\nwant\n%v", cr, want)
	}
	namespaced := maps.Clone(wide)
	for k := range clusterScoped {
		if !slices.Equal(wide[k], want[k]) {
			t.Errorf("cluster-wide ClusterRole %s: %v, scoped %v", k, wide[k], want[k])
		}
		delete(namespaced, k)
	}
	for _, key := range []string{"/secrets", "/configmaps", "/services", "apps/deployments", "gateway.networking.k8s.io/gateways"} {
		if namespaced[key] == nil {
			t.Fatalf("cluster-wide ClusterRole lacks %s: %v", key, wide)
		}
	}

	var roleNS []string
	for _, o := range objs {
		if o["kind"] != "Role" || str(o, "metadata", "name") != "xds-controller-watch" {
			continue
		}
		ns := str(o, "metadata", "namespace")
		roleNS = append(roleNS, ns)
		if g := sortedGrants(t, o); !maps.EqualFunc(g, namespaced, slices.Equal) {
			t.Errorf("Role in %s grants\n%v\nwant the ClusterRole's namespaced rules\n%v", ns, g, namespaced)
		}
	}
	if w := []string{"team-a", "team-b", "xds-system"}; !slices.Equal(roleNS, w) {
		t.Errorf("watch Roles in %v, want %v", roleNS, w)
	}
	var bound []string
	for _, o := range objs {
		if o["kind"] != "RoleBinding" || str(o, "metadata", "name") != "xds-controller-watch" {
			continue
		}
		sub := o["subjects"].([]any)
		if str(o, "roleRef", "kind") != "Role" || str(o, "roleRef", "name") != "xds-controller-watch" || len(sub) != 1 ||
			sub[0].(object)["kind"] != "ServiceAccount" || sub[0].(object)["name"] != "xds-controller" || sub[0].(object)["namespace"] != "xds-system" {
			t.Errorf("RoleBinding in %s: %v %v", str(o, "metadata", "namespace"), o["roleRef"], sub)
		}
		bound = append(bound, str(o, "metadata", "namespace"))
	}
	if !slices.Equal(bound, roleNS) {
		t.Errorf("RoleBindings in %v, Roles in %v", bound, roleNS)
	}
	// The release namespace's own Role is unchanged.
	if g := sortedGrants(t, find(objs, "Role", "xds-controller")); !maps.EqualFunc(g, sortedGrants(t, find(render(t, nil), "Role", "xds-controller")), slices.Equal) {
		t.Errorf("release namespace Role changed: %v", g)
	}

	if args := controllerArgs(objs); !slices.Contains(args, "--watch-namespaces=team-a,team-b,xds-system") {
		t.Errorf("controller args %v", args)
	}
	def := render(t, nil)
	if slices.ContainsFunc(controllerArgs(def), func(a string) bool { return strings.HasPrefix(a, "--watch-namespaces") }) {
		t.Errorf("default values pass --watch-namespaces: %v", controllerArgs(def))
	}
	if find(def, "Role", "xds-controller-watch") != nil {
		t.Error("default values render a watch Role")
	}
}

// TestScopedRBACValues: watchNamespaces must be a list of namespace names.
func TestScopedRBACValues(t *testing.T) {
	for _, bad := range []any{"team-a", []any{"Team_A"}, []any{""}} {
		if _, err := renderFor(map[string]any{"watchNamespaces": bad}); err == nil || !strings.Contains(err.Error(), "watchNamespaces") {
			t.Errorf("watchNamespaces %#v: %v", bad, err)
		}
	}
	// The release namespace listed too: one Role there.
	objs := render(t, map[string]any{"watchNamespaces": []any{"xds-system"}})
	n := 0
	for _, o := range objs {
		if o["kind"] == "Role" && str(o, "metadata", "name") == "xds-controller-watch" {
			n++
		}
	}
	if n != 1 || !slices.Contains(controllerArgs(objs), "--watch-namespaces=xds-system") {
		t.Errorf("%d watch Roles, args %v", n, controllerArgs(objs))
	}
}

var update = flag.Bool("update", false, "rewrite the RBAC fixture of the controller's integration test")

// rbacFixture is the chart's RBAC with watchNamespaces [rbac-watched],
// release namespace xds-system, which the integration test
// TestWatchNamespacesRBAC grants the controller (and nothing else).
const rbacFixture = "../integration/testdata/chart-rbac-scoped.yaml"

// TestScopedRBACFixture keeps rbacFixture equal to what the chart renders
// (without labels): `go test -run TestScopedRBACFixture -update` rewrites
// it.
func TestScopedRBACFixture(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("# The chart's RBAC with watchNamespaces: [rbac-watched], release namespace\n# xds-system (test/chart TestScopedRBACFixture -update writes it).\n")
	for _, o := range render(t, map[string]any{"watchNamespaces": []any{"rbac-watched"}}) {
		switch o["kind"] {
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		delete(o["metadata"].(object), "labels")
		y, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	if *update {
		if err := os.WriteFile(rbacFixture, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(rbacFixture)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Errorf("%s is not what the chart renders: go test -run TestScopedRBACFixture -update", rbacFixture)
	}
}

// xbackend.dnsResolvers becomes the controller's --dns-resolvers; without
// it there is no such flag (Envoy's default resolver).
func TestXBackendDNSResolvers(t *testing.T) {
	if args := controllerArgs(render(t, nil)); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--dns-resolvers") }) {
		t.Errorf("default values: args %v have --dns-resolvers", args)
	}
	args := controllerArgs(render(t, map[string]any{"xbackend": map[string]any{"dnsResolvers": []any{"10.0.0.10", "10.0.0.11:5353"}}}))
	if !slices.Contains(args, "--dns-resolvers=10.0.0.10,10.0.0.11:5353") {
		t.Errorf("args %v lack --dns-resolvers=10.0.0.10,10.0.0.11:5353", args)
	}
}
