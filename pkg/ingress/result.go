package ingress

import (
	"fmt"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Result is what Translate produced for one snapshot: the IR Gateways of
// the classes that are served and the status of every Ingress of ours.
// pkg/translate merges it with the Gateway API translation of the same
// snapshot (its merge says how the listeners join their scopes).
type Result struct {
	// Gateways are one IR Gateway per class whose Ingresses can be
	// served, named as its class Gateway (ClassGateway), with scope
	// Options.ScopeOf and listener ports Options.BindPortOf, in the order
	// of the classes' names: the order in which they claim their ports.
	Gateways []*ir.Gateway
	// Status is the status of every Ingress of our classes (nil without
	// any class of ours).
	Status map[types.NamespacedName]*Status
	// served are the statuses of the Ingresses each Gateway serves;
	// later counts, per listener of a Gateway, the listener problems its
	// class's later listeners added (Unbind puts its own before them).
	served map[*ir.Gateway][]*Status
	later  map[*ir.Listener]int
}

// Status is what the translation of one Ingress of ours produced: the
// Ingress API has no conditions, so its problems are reported as Events
// (controller) or printed (standalone mode), and only status.loadBalancer
// is written (pkg/status).
type Status struct {
	// Class is the IngressClass that makes the Ingress ours.
	Class string `json:"class"`
	// Generation is the Ingress's metadata.generation when translated.
	Generation int64 `json:"generation,omitempty"`
	// Gateway stands for the class on the Envoy fleets (ClassGateway):
	// the Service that exposes it is the one whose address becomes
	// LoadBalancer. Nil when the class is not served.
	Gateway *gwapiv1.Gateway `json:"-"`
	// Listeners are where the Ingress is served ("http 0.0.0.0:80"), as
	// the Ingress's own listeners bind them, in a stable order.
	Listeners []string `json:"listeners,omitempty"`
	// LoadBalancer is the status.loadBalancer to write. The translation
	// leaves it empty: the caller fills it from the Service of Gateway.
	LoadBalancer networkingv1.IngressLoadBalancerStatus `json:"loadBalancer,omitzero"`
	// Problems are what could not be served as written, each with a
	// reason (an Event reason) and a message, in a deterministic order.
	Problems []Problem `json:"problems,omitempty"`
	// Key is the Ingress's namespace/name (its key in Result.Status). It
	// is exported, and not printed, so that the status writer's
	// equality.Semantic.DeepEqual of two statuses, which refuses
	// unexported fields, can compare them.
	Key types.NamespacedName `json:"-"`
}

// Problem is one problem of an Ingress: Reason is CamelCase (an Event
// reason: the Reason* constants, and pkg/translate's Rejected).
type Problem struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Unbind takes listener l out of g, a Gateway of r, because another
// listener binds its port in its scope (why says which), and reports it on
// every Ingress g serves: a problem of reason NotServed, in the order of
// g's listeners among the class's other listener problems, and l leaves
// their Listeners. The statuses it changes it copies first (in r.Status):
// a Cache shares them between Results.
func (r *Result) Unbind(g *ir.Gateway, l *ir.Listener, why string) {
	g.Listeners = slices.DeleteFunc(g.Listeners, func(x *ir.Listener) bool { return x == l })
	line := listenerLine(l)
	p := Problem{Reason: ReasonNotServed, Message: fmt.Sprintf("not served on %s: %s", strings.ToUpper(listenerSection(l)), why)}
	served := slices.Clone(r.served[g])
	r.served[g] = served
	for i, st := range served {
		cp := *st
		cp.Listeners = slices.DeleteFunc(slices.Clone(st.Listeners), func(s string) bool { return s == line })
		cp.Problems = slices.Insert(slices.Clone(st.Problems), len(st.Problems)-r.later[l], p)
		served[i] = &cp
		if r.Status[st.Key] == st {
			r.Status[st.Key] = &cp
		}
	}
}

// listenerSection is the name of the class Gateway's listener that l
// serves ("http", "https").
func listenerSection(l *ir.Listener) string { return l.Name[strings.LastIndex(l.Name, "/")+1:] }

// listenerLine is how Status.Listeners names l: "<section>
// <address>:<listener port>".
func listenerLine(l *ir.Listener) string {
	return fmt.Sprintf("%s %s:%d", listenerSection(l), l.Address, l.GatewayPort)
}
