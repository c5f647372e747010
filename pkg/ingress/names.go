package ingress

import (
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
)

// routePrefix starts the name of every IR route (and Envoy route) made
// from an Ingress.
const routePrefix = "ingress/"

// routeName names the IR route of one path of ing ("rule/<i>/path/<j>")
// or of its default backend ("defaultBackend"):
// "ingress/<namespace>/<name>/<what>". A path served in several virtual
// hosts (a rule without host) has the same name in each.
func routeName(ing *networkingv1.Ingress, what string) string {
	return routePrefix + ing.Namespace + "/" + ing.Name + "/" + what
}

// ParseRouteName reads a name made by routeName: the Ingress and what of
// it the route serves ("rule/0/path/1", "defaultBackend"). ok is false for
// any other name.
func ParseRouteName(name string) (ing types.NamespacedName, what string, ok bool) {
	rest, found := strings.CutPrefix(name, routePrefix)
	if !found {
		return types.NamespacedName{}, "", false
	}
	p := strings.SplitN(rest, "/", 3)
	if len(p) != 3 || p[0] == "" || p[1] == "" || p[2] == "" {
		return types.NamespacedName{}, "", false
	}
	return types.NamespacedName{Namespace: p[0], Name: p[1]}, p[2], true
}

// routeOwner is "<namespace>/<name>" of the Ingress a route name was made
// for.
func routeOwner(name string) string {
	k, _, _ := ParseRouteName(name)
	return k.String()
}
