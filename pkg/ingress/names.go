package ingress

import (
	"strconv"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// routePrefix starts the name of every IR route (and Envoy route) made
// from an Ingress.
const routePrefix = "ingress/"

// defaultBackendRule is the rule of the Origin of the IR route of an
// Ingress's spec.defaultBackend.
const defaultBackendRule = -1

// appRootPath is the path (Origin Match) of the IR route of a rule's
// app-root redirect (traffic.go).
const appRootPath = -1

// nameRoute names r, the IR route of path j of rule i of ing (rule
// defaultBackendRule: of its default backend),
// "ingress/<namespace>/<name>/<what>" (what: PathName), and sets its
// Origin, which says the same as data. A path served in several virtual
// hosts (a rule without host) has the same name in each.
func nameRoute(r *ir.HTTPRoute, ing *networkingv1.Ingress, rule, path int) {
	r.Origin = ir.Origin{Object: ir.ObjectKey{Kind: gatewayapi.KindIngress, Namespace: ing.Namespace, Name: ing.Name}, Rule: rule, Match: path}
	r.Name = routePrefix + ing.Namespace + "/" + ing.Name + "/" + PathName(r.Origin)
}

// PathName says what part of its Ingress an IR route of o serves:
// "rule/<i>/path/<j>" (spec.rules[i].http.paths[j]), "rule/<i>/app-root"
// (the app-root redirect of the host of spec.rules[i]) or
// "defaultBackend" (spec.defaultBackend).
func PathName(o ir.Origin) string {
	switch {
	case o.Rule == defaultBackendRule:
		return "defaultBackend"
	case o.Match == appRootPath:
		return "rule/" + strconv.Itoa(o.Rule) + "/app-root"
	}
	return "rule/" + strconv.Itoa(o.Rule) + "/path/" + strconv.Itoa(o.Match)
}

// routeOwner is "<namespace>/<name>" of the Ingress r was made for.
func routeOwner(r *ir.HTTPRoute) string {
	return r.Origin.Object.Namespace + "/" + r.Origin.Object.Name
}
