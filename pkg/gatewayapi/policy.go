package gatewayapi

// Policy attachment (GEP-713), one mechanism for every policy kind: the
// registry of policy kinds, the index of what each policy targets, the
// precedence between policies of one kind (the more specific target wins;
// between two on the same target the older wins and the other is
// Conflicted), the lookups through which a route rule, a backend or a
// listener reads its effective policy, and the ancestors (Gateways) each
// policy is reported on (policystatus.go writes the status).
//
// Targets. A policy's spec.targetRefs name objects in its own namespace
// (LocalPolicyTargetReferenceWithSectionName), with an optional
// sectionName for a part of them:
//   - Gateway, and a listener of it (sectionName: the listener's name);
//   - ListenerSet, and a listener of it;
//   - HTTPRoute or GRPCRoute, and a rule of it (sectionName: the rule's
//     name);
//   - Service (core), and a port of it (sectionName: the port's name).
//
// A kind lists the target kinds it accepts; a targetRef of another group
// or kind is ignored (it targets nothing). A target that does not exist
// (or is not ours: a Gateway of another controller, a route attached to
// no Gateway of ours) gives the policy no ancestor, so no status entry:
// GEP-713 reports a policy per ancestor, and there is none to report on.
// A sectionName that names no listener or rule of the target is the same.
//
// Precedence. For one point of configuration the candidates are, most
// specific first: a route rule, the route, the listener, the ListenerSet
// of that listener, the Gateway (routeTargets); a Service port, the
// Service (serviceTargets). The first level where a policy of the kind
// exists decides, and there the oldest policy (creationTimestamp, then
// namespace/name) applies, whether or not it is valid: the kind's render
// decides what an invalid policy does (BackendTLSPolicy: its backends
// answer an error, never plaintext). Every younger policy on the same
// target is Accepted=False reason Conflicted, its message naming the
// older one; a policy more specific than another overrides it without a
// conflict.
//
// Ancestors. A policy is reported on every Gateway of ours that it
// reaches: the Gateway it targets (or its listener, or a ListenerSet's
// parent), counted once per translation from scratch (readPolicies); the
// Gateways of a route it targets, counted when the route is read
// (routeAncestors); the Gateways of every route whose backend is a Service
// port it targets, counted when the backend is resolved
// (backendPolicies). The route counts are kept in the route's memo
// (routeMemo ancestors) and taken back when the route is read again or
// removed, so an incremental translation reports what a full one does.
//
// Adding a policy kind, file by file:
//  1. its types: for our own kinds, a file in api/v1alpha1 (with
//     spec.targetRefs []gwapiv1.LocalPolicyTargetReferenceWithSectionName
//     and status gwapiv1.PolicyStatus; the CRD is generated from it); an
//     upstream kind's types come with its module;
//  2. a field of resources.Resources and its line of the registry (both
//     in pkg/resources/resources.go), so that the file loader, the
//     Kubernetes provider and the snapshot know it;
//  3. one file here, named after the kind, holding its validation (a
//     function filling a policyState: effect, notAccepted, refs), what it
//     renders (policyKindSpec route, backend or listener: a function that
//     applies the effective policy to an IR route, backend or listener; a
//     new field of the IR and its Envoy translation in pkg/ir and
//     pkg/xdstranslator when the effect is new to them) and its
//     registration
//     (registerPolicyKind: the resources kind, accepted targets, accessors
//     of targetRefs and status, the Secrets and ConfigMaps it reads);
//  4. the chart's RBAC (charts/xds-controller/templates/_helpers.tpl):
//     read the kind, patch its status.
//
// Nothing else: the index, precedence, conflicts, ancestors, status,
// the status writer (pkg/status), the Kubernetes provider's watches, live
// status and referenced Secrets and ConfigMaps, and the translate
// command's output iterate the registry (PolicyKinds). policy_test.go
// adds a test-only kind in one file this way.

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// targetKind is a kind of object a policy may target (policy target
// kinds above): its API group ("" for core) and kind.
type targetKind struct{ group, kind string }

// The target kinds of GEP-713 attachment this package resolves.
var (
	targetGateway     = targetKind{gwapiv1.GroupName, "Gateway"}
	targetListenerSet = targetKind{gwapiv1.GroupName, KindListenerSet}
	targetHTTPRoute   = targetKind{gwapiv1.GroupName, KindHTTPRoute}
	targetGRPCRoute   = targetKind{gwapiv1.GroupName, KindGRPCRoute}
	targetService     = targetKind{"", "Service"}
)

// policyTarget is one attachment point: an object in namespace ns and,
// when section is set, one part of it (a listener, a rule, a port).
type policyTarget struct {
	targetKind
	ns, name, section string
}

// describe names the target in messages: "Service default/web port
// https", "Gateway default/gw listener http", "HTTPRoute default/r rule
// a".
func (p policyTarget) describe() string {
	s := p.kind + " " + p.ns + "/" + p.name
	if p.section == "" {
		return s
	}
	switch p.targetKind {
	case targetService:
		return s + " port " + p.section
	case targetGateway, targetListenerSet:
		return s + " listener " + p.section
	}
	return s + " rule " + p.section
}

// policyKey indexes the policies of one kind on one target.
type policyKey struct {
	kind *policyKind
	policyTarget
}

// policySource is where a kind's objects come from: a resources.TypedKind
// (the snapshot's registry) satisfies it.
type policySource[T resources.Object] interface {
	Name() string
	New() resources.Object
	List(r *resources.Resources) []T
}

// policyKindSpec is what a policy kind registers (registerPolicyKind).
type policyKindSpec[T resources.Object] struct {
	// targets are the target kinds the kind accepts.
	targets []targetKind
	// targetRefs returns a policy's spec.targetRefs.
	targetRefs func(T) []gwapiv1.LocalPolicyTargetReferenceWithSectionName
	// status returns the policy's status, which holds its ancestors.
	status func(T) *gwapiv1.PolicyStatus
	// validate checks one policy and fills st: effect (what it renders,
	// nil when it cannot be honoured), notAccepted (Accepted=False) and
	// refs (ResolvedRefs=False).
	validate func(t *translator, p T, st *policyState)
	// resolvedRefs says that every ancestor entry carries ResolvedRefs.
	resolvedRefs bool
	// references are the Secrets and ConfigMaps a policy reads (so that a
	// provider that fetches referenced objects fetches them).
	references func(T) (secrets, configMaps []types.NamespacedName)

	// What it renders; nil for what it does not touch.
	//
	// backend applies the effective policy of a Service port to b, a
	// backend of a route of one of backendRoutes (route kinds), and
	// returns it, or the Backend that replaces it (an Invalid one stops the
	// other kinds' rendering).
	backendRoutes []string
	backend       func(st *policyState, routeKind string, b *ir.Backend) *ir.Backend
	// route applies the effective policy of a route rule on a listener to
	// one IR route of it, a shallow copy of the rule's template: it may set
	// its fields, never modify what they point to.
	route func(st *policyState, r *ir.HTTPRoute)
	// listener applies the effective policy of a listener (listenerTargets)
	// to its IR listener l, new at every translation.
	listener func(st *policyState, ls *listenerState, l *ir.Listener)
}

// policyKind is a registered policy kind, its spec made untyped.
type policyKind struct {
	name      string
	newObject func() resources.Object
	objects   func(*resources.Resources) []resources.Object
	// same says whether two snapshots hold the same objects of the kind
	// (same pointers, same order), without copying their lists.
	same         func(a, b *resources.Resources) bool
	targets      []targetKind
	targetRefs   func(resources.Object) []gwapiv1.LocalPolicyTargetReferenceWithSectionName
	status       func(resources.Object) *gwapiv1.PolicyStatus // nil for an object of another kind
	validate     func(*translator, resources.Object, *policyState)
	resolvedRefs bool
	references   func(resources.Object) (secrets, configMaps []types.NamespacedName)

	backendRoutes []string
	backend       func(*policyState, string, *ir.Backend) *ir.Backend
	route         func(*policyState, *ir.HTTPRoute)
	listener      func(*policyState, *listenerState, *ir.Listener)
}

// policyKinds are the registered kinds, in the order of registration.
var policyKinds []*policyKind

// registerPolicyKind adds a policy kind whose objects are src's to the
// registry. Call it from a package-level variable of the kind's file.
func registerPolicyKind[T resources.Object](src policySource[T], spec policyKindSpec[T]) *policyKind {
	k := &policyKind{
		name:      src.Name(),
		newObject: src.New,
		objects: func(r *resources.Resources) []resources.Object {
			var out []resources.Object
			for _, o := range src.List(r) {
				if !isNil(o) {
					out = append(out, o)
				}
			}
			return out
		},
		same: func(a, b *resources.Resources) bool {
			return slices.EqualFunc(src.List(a), src.List(b), func(x, y T) bool { return any(x) == any(y) })
		},
		targets: spec.targets,
		targetRefs: func(o resources.Object) []gwapiv1.LocalPolicyTargetReferenceWithSectionName {
			return spec.targetRefs(o.(T))
		},
		status: func(o resources.Object) *gwapiv1.PolicyStatus {
			if p, ok := o.(T); ok && !isNil(p) {
				return spec.status(p)
			}
			return nil
		},
		validate:      func(t *translator, o resources.Object, st *policyState) { spec.validate(t, o.(T), st) },
		resolvedRefs:  spec.resolvedRefs,
		backendRoutes: spec.backendRoutes,
		backend:       spec.backend,
		route:         spec.route,
		listener:      spec.listener,
		references: func(o resources.Object) ([]types.NamespacedName, []types.NamespacedName) {
			if spec.references == nil {
				return nil, nil
			}
			return spec.references(o.(T))
		},
	}
	policyKinds = append(policyKinds, k)
	return k
}

// policyState is one policy, of any kind, during translation.
type policyState struct {
	kind *policyKind
	obj  resources.Object
	// effect is what the kind's validation made of the policy, which its
	// render applies (BackendTLSPolicy: *ir.BackendTLS); nil when the
	// policy cannot be honoured.
	effect any
	// notAccepted is Accepted=False: the kind's reasons, or Conflicted.
	notAccepted *problem
	// refs is ResolvedRefs=False (kinds with resolvedRefs).
	refs *problem
	// acceptedMsg, when set, is the message of Accepted=True: what of the
	// policy Envoy does not do as written.
	acceptedMsg string
	// ancestors are the Gateways of ours the policy reaches, each with
	// the number of times it does: from its targets at readPolicies, and
	// from the routes read (routeMemo ancestors).
	ancestors map[types.NamespacedName]int
}

// ancestor is one Gateway a route makes an ancestor of a policy
// (routeMemo ancestors).
type ancestor struct {
	policy *policyState
	gw     types.NamespacedName
}

// checkTargetRefs checks a policy's spec.targetRefs as the schema of
// GEP-713's LocalPolicyTargetReferenceWithSectionName lists does (1 to 16
// entries, each distinct), for policies that skipped the API server
// (standalone files): it returns why they are not valid, or "".
func checkTargetRefs(refs []gwapiv1.LocalPolicyTargetReferenceWithSectionName) string {
	if n := len(refs); n < 1 || n > maxItems16 {
		return fmt.Sprintf("targetRefs: %d entries; 1 to %d are required", n, maxItems16)
	}
	for i, r := range refs {
		if slices.Contains(refs[:i], r) {
			return fmt.Sprintf("targetRefs[%d]: targets %s %s twice; targetRefs must be distinct", i, r.Kind, r.Name)
		}
	}
	return ""
}

// readPolicies validates every policy of every registered kind, indexes
// what they target (t.policyByTarget: per kind and target, oldest first)
// and marks the younger of two policies on one target Conflicted. The
// Gateways, when read already (translateGateways), give the ancestors of
// the policies that target them. A translator reads them once.
func (t *translator) readPolicies() {
	for _, k := range policyKinds {
		ps := k.objects(t.res)
		slices.SortStableFunc(ps, func(a, b resources.Object) int {
			return cmp.Or(compareTime(a.GetCreationTimestamp(), b.GetCreationTimestamp()),
				cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
		})
		for _, p := range ps {
			st := &policyState{kind: k, obj: p, ancestors: map[types.NamespacedName]int{}}
			k.validate(t, p, st)
			t.policies = append(t.policies, st)
			for _, ref := range k.targetRefs(p) {
				tk := targetKind{string(ref.Group), string(ref.Kind)}
				if !slices.Contains(k.targets, tk) {
					continue
				}
				key := policyKey{k, policyTarget{tk, p.GetNamespace(), string(ref.Name), string(deref(ref.SectionName, ""))}}
				on := t.policyByTarget[key]
				if slices.Contains(on, st) {
					continue
				}
				if len(on) > 0 && st.notAccepted == nil {
					st.notAccepted = &problem{string(gwapiv1.PolicyReasonConflicted), fmt.Sprintf("%s %s/%s, older, already targets %s",
						k.name, on[0].obj.GetNamespace(), on[0].obj.GetName(), key.describe())}
				}
				t.policyByTarget[key] = append(on, st)
				if gw, ok := t.targetGateway(key.policyTarget); ok {
					st.ancestors[gw]++
				}
			}
		}
	}
}

// targetGateway is the Gateway of ours a Gateway-level target (a
// Gateway, a ListenerSet, or a listener of either) names, when it exists.
func (t *translator) targetGateway(p policyTarget) (types.NamespacedName, bool) {
	var gw *gatewayState
	var listeners []*listenerState
	switch p.targetKind {
	case targetGateway:
		if gw = t.gatewayIndex[nn(p.ns, p.name)]; gw != nil {
			listeners = gw.listeners
		}
	case targetListenerSet:
		if s := t.listenerSetIndex[nn(p.ns, p.name)]; s != nil {
			gw, listeners = s.gw, s.listeners
		}
	}
	if gw == nil || p.section != "" && !slices.ContainsFunc(listeners, func(l *listenerState) bool { return l.name == p.section && !l.duplicate }) {
		return types.NamespacedName{}, false
	}
	return gw.nn, true
}

// effectivePolicy returns the policy of kind k that applies at the
// targets (most specific first: routeTargets, serviceTargets), or nil:
// the oldest policy on the first target that has one.
func (t *translator) effectivePolicy(k *policyKind, targets []policyTarget) *policyState {
	for _, p := range targets {
		if on := t.policyByTarget[policyKey{k, p}]; len(on) > 0 {
			return on[0]
		}
	}
	return nil
}

// routeTargets are the attachment points of rule (its name, "" for none)
// of route r on listener l, most specific first: the rule, the route, the
// listener, its ListenerSet, the Gateway.
func routeTargets(r *routeState, rule string, l *listenerState) []policyTarget {
	rk := targetKind{gwapiv1.GroupName, r.key.Kind}
	out := make([]policyTarget, 0, 5)
	if rule != "" {
		out = append(out, policyTarget{rk, r.key.Namespace, r.key.Name, rule})
	}
	out = append(out, policyTarget{rk, r.key.Namespace, r.key.Name, ""})
	return listenerTargets(out, l)
}

// listenerTargets appends to out the attachment points of listener l,
// most specific first: the listener, its ListenerSet, the Gateway.
func listenerTargets(out []policyTarget, l *listenerState) []policyTarget {
	if s := l.set; s != nil {
		out = append(out, policyTarget{targetListenerSet, s.nn.Namespace, s.nn.Name, l.name}, policyTarget{targetListenerSet, s.nn.Namespace, s.nn.Name, ""})
	} else {
		out = append(out, policyTarget{targetGateway, l.gw.nn.Namespace, l.gw.nn.Name, l.name})
	}
	return append(out, policyTarget{targetGateway, l.gw.nn.Namespace, l.gw.nn.Name, ""})
}

// serviceTargets are the attachment points of port sp of svc, most
// specific first: the port (by name), the Service.
func serviceTargets(svc *corev1.Service, sp *corev1.ServicePort) [2]policyTarget {
	return [2]policyTarget{
		{targetService, svc.Namespace, svc.Name, sp.Name},
		{targetService, svc.Namespace, svc.Name, ""},
	}
}

// addAncestors makes the Gateways of r's parents ancestors of the
// policies on, in the memo of the route being read (t.reading).
func (t *translator) addAncestors(r *routeState, on []*policyState) {
	if t.reading == nil {
		return
	}
	for _, st := range on {
		for _, p := range r.parents {
			t.reading.ancestors = append(t.reading.ancestors, ancestor{st, p.gw.nn})
		}
	}
}

// routeAncestors makes the Gateways of r's parents ancestors of every
// policy that targets r, or a rule of r by its name. Cache.read calls it
// for the route it reads.
func (t *translator) routeAncestors(r *routeState) {
	if r == nil || r.rules == nil || len(t.policyByTarget) == 0 {
		return
	}
	rk := targetKind{gwapiv1.GroupName, r.key.Kind}
	for _, k := range policyKinds {
		if !slices.Contains(k.targets, rk) {
			continue
		}
		t.addAncestors(r, t.policyByTarget[policyKey{k, policyTarget{rk, r.key.Namespace, r.key.Name, ""}}])
		for _, ru := range r.rules.rules {
			if ru.name != "" {
				t.addAncestors(r, t.policyByTarget[policyKey{k, policyTarget{rk, r.key.Namespace, r.key.Name, ru.name}}])
			}
		}
	}
}

// backendPolicies applies to b, the backend of port sp of svc for route
// r, the effective policy of every kind that renders backends of r's
// kind, and returns it (or what replaces it). Every policy on the port or
// the Service, a losing one too, gets r's Gateways as ancestors.
func (t *translator) backendPolicies(r *routeState, svc *corev1.Service, sp *corev1.ServicePort, b *ir.Backend) *ir.Backend {
	if len(t.policyByTarget) == 0 {
		return b
	}
	targets := serviceTargets(svc, sp)
	for _, k := range policyKinds {
		if k.backend == nil || !slices.Contains(k.backendRoutes, r.key.Kind) {
			continue
		}
		for _, p := range targets {
			t.addAncestors(r, t.policyByTarget[policyKey{k, p}])
		}
		if st := t.effectivePolicy(k, targets[:]); st != nil {
			if b = k.backend(st, r.key.Kind, b); b.Invalid {
				return b
			}
		}
	}
	return b
}

// routePolicies applies to the IR routes of entries, which route r added
// to listener l, the effective policy of every kind that renders routes,
// rule by rule, and returns entries.
func (t *translator) routePolicies(r *routeState, l *listenerState, entries []*routeEntry) []*routeEntry {
	if len(t.policyByTarget) == 0 || len(entries) == 0 {
		return entries
	}
	type applied struct {
		k  *policyKind
		st *policyState
	}
	var byRule map[int][]applied
	for _, ru := range r.rules.rules {
		var targets []policyTarget
		for _, k := range policyKinds {
			if k.route == nil {
				continue
			}
			if targets == nil {
				targets = routeTargets(r, ru.name, l)
			}
			if st := t.effectivePolicy(k, targets); st != nil {
				if byRule == nil {
					byRule = map[int][]applied{}
				}
				byRule[ru.index] = append(byRule[ru.index], applied{k, st})
			}
		}
	}
	for _, e := range entries {
		for _, a := range byRule[e.rule] {
			a.k.route(a.st, e.route)
		}
		l.gw.applyPolicyClientCert(e.route) // securityextauth.go
	}
	return entries
}

// listenerPolicies applies to il, the IR listener of ls, the effective
// policy of every kind that renders listeners.
func (t *translator) listenerPolicies(ls *listenerState, il *ir.Listener) {
	if len(t.policyByTarget) == 0 {
		return
	}
	var targets []policyTarget
	for _, k := range policyKinds {
		if k.listener == nil {
			continue
		}
		if targets == nil {
			targets = listenerTargets(make([]policyTarget, 0, 3), ls)
		}
		if st := t.effectivePolicy(k, targets); st != nil {
			k.listener(st, ls, il)
		}
	}
}

// isNil says whether v is its type's zero value (a nil pointer).
func isNil[T any](v T) bool {
	var zero T
	return any(v) == any(zero)
}
