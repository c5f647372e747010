// Package ingress translates Kubernetes Ingresses (networking.k8s.io/v1)
// of our IngressClasses into the same IR the Gateway API translator
// produces, so that one Envoy fleet serves both: there is no second xDS
// path. What is Ingress's own lives here:
//
//   - which IngressClasses are ours (spec.controller
//     xds-controller.dev/ingress-controller), their IngressClassParameters,
//     and which Ingresses are theirs (spec.ingressClassName, the deprecated
//     kubernetes.io/ingress.class annotation, else the default class):
//     class.go;
//   - the Ingress API's path and host semantics: Exact, Prefix by path
//     element, ImplementationSpecific treated as Prefix; precedence (the
//     longest path first, Exact before Prefix at equal length); hosts
//     exact or "*." wildcards matching exactly one label: paths.go;
//   - how the Ingresses of a class merge: per host, every Ingress's paths
//     in one virtual host, a path claimed by two Ingresses served by the
//     oldest (creationTimestamp, then namespace/name) and reported on the
//     others; rules without host apply to every host, after the host's own
//     paths; the oldest spec.defaultBackend answers what no path matches;
//     spec.tls certificates (Secrets in the Ingress's namespace) served by
//     SNI on the class's HTTPS listener: this file.
//
// A class is served by the Envoy fleet of the Gateway that stands for it
// (ClassGateway): the provisioner gives that Gateway a fleet and a Service
// as it does any Gateway, and the translation's Scope and BindPort place
// its listeners. What the Gateway API translator shares (Service backends
// by port number or name with their EndpointSlices, BackendTLSPolicies,
// certificate loading, scopes and bind ports) comes from
// gatewayapi.Refs and gatewayapi.Options. Translate returns a Result of
// its own (result.go): the class Gateways, which pkg/translate merges
// into the Gateway API translation's IR, and the Status of each Ingress,
// whose problems become Events in the controller and printed lines in
// standalone mode, and whose status.loadBalancer pkg/status writes.
// Translate is pure.
package ingress

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// Problem reasons of an Ingress (Problem.Reason; the Event reasons in the
// controller).
const (
	ReasonNotServed          = "NotServed"
	ReasonInvalidHost        = "InvalidHost"
	ReasonInvalidPath        = "InvalidPath"
	ReasonBackendNotFound    = "BackendNotFound"
	ReasonUnsupportedBackend = "UnsupportedBackend"
	ReasonInvalidCertificate = "InvalidCertificate"
	ReasonConflict           = "Conflict"
	// ReasonInvalidConfiguration: pre-validation found that Envoy would
	// refuse the path (pkg/translate blames it on the Ingress).
	ReasonInvalidConfiguration = "InvalidConfiguration"
)

// FailureStatus is what a path whose backend cannot be used answers: 503,
// as ingress-nginx answers for a backend it cannot reach.
const FailureStatus = 503

// Translate translates the Ingresses of our IngressClasses in res (nil:
// none) with opts, the options of the Gateway API translation of the same
// res, whose references refs resolves (gatewayapi.Cache.Refs): one IR
// Gateway per class whose Ingresses can be served (its class Gateway's
// namespace and name, scope opts.ScopeOf, listener ports opts.BindPortOf),
// in the order of the classes' names, and the Status of every Ingress of
// ours. Ingresses of other classes are not read. Problems never stop the
// translation: a bad path, backend or certificate is reported on its
// Ingress and the rest is served. The listeners are not checked against
// the Gateway API translation's: the caller does so when it merges the
// two (Result.Unbind). It is the run of an empty Cache.
func Translate(res *resources.Resources, opts gatewayapi.Options, cfg Config, refs *gatewayapi.Refs) *Result {
	return NewCache().Translate(res, opts, cfg, refs)
}

type translator struct {
	opts gatewayapi.Options
	cfg  Config
	refs *gatewayapi.Refs
	out  *Result
	// reads are the Services and Secrets the class read through refs
	// (cache.go).
	reads []read
}

// classState is one class during translation.
type classState struct {
	class *Class
	// ingresses are the class's, oldest first once translateClass starts.
	ingresses []*ingressState
	// hosts are the paths by virtual host ("*" for rules without host),
	// in the order claimed.
	hosts map[string][]*entry
	// claims are the entries that serve each host and path: "<vhost>
	// <Exact|Prefix> <path>[ (regex)]".
	claims map[string]*entry
	// canaries are the canary Ingresses, read after all others
	// (canary.go).
	canaries []canaryIngress
	// passthrough are the L4 routes of the ssl-passthrough Ingresses,
	// passthroughHosts the Ingress that holds each of their hosts
	// (passthrough.go).
	passthrough      []*ir.L4Route
	passthroughHosts map[string]*ingressState
	// defaultBackend answers what no path matches; its owner is the oldest
	// Ingress with a spec.defaultBackend.
	defaultBackend *entry
	certs          []*ir.Certificate
	// prev are the IR routes of the class's last translation, kept those
	// of this one (cache.go): routes keeps an equal route of prev.
	prev, kept map[routeKey]*ir.HTTPRoute
}

type ingressState struct {
	obj *networkingv1.Ingress
	st  *Status
}

func (s *ingressState) problemf(reason, format string, a ...any) {
	s.st.Problems = append(s.st.Problems, Problem{Reason: reason, Message: fmt.Sprintf(format, a...)})
}

func (s *ingressState) String() string { return s.obj.Namespace + "/" + s.obj.Name }

// entry is one path (or the default backend) of an Ingress: the IR route
// it becomes in each virtual host it is served in.
type entry struct {
	owner *ingressState
	host  hostRule
	path  pathMatch
	// route has the action (backends or a direct response), the filters
	// and the name; hostname and match are set per virtual host.
	route *ir.HTTPRoute
	// sslRedirect: on the HTTP listener the path redirects to HTTPS (the
	// ssl-redirect annotations).
	sslRedirect bool
	// canary, when set, is the route of a canary Ingress selected by a
	// header or cookie, served right before this one (canary.go).
	canary *entry
}

// translateClass serves the Ingresses of one class, or reports why not.
func (t *translator) translateClass(cs *classState) {
	slices.SortStableFunc(cs.ingresses, func(a, b *ingressState) int { return gatewayapi.OldestFirst(a.obj, b.obj) })
	gw := cs.class.Gateway
	gwKey := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	why := cs.class.Problem
	switch {
	case why != "":
		why = fmt.Sprintf("IngressClass %s: %s", cs.class.Obj.Name, why)
	case t.cfg.RequireGatewayClass && !t.refs.OurGatewayClass(string(gw.Spec.GatewayClassName)):
		why = fmt.Sprintf("GatewayClass %s, whose Envoy fleet serves IngressClass %s, does not exist or is not xds-controller's", gw.Spec.GatewayClassName, cs.class.Obj.Name)
	case t.opts.ParametersRefused(gwKey) != "":
		why = fmt.Sprintf("the GatewayParameters of IngressClass %s are refused: %s", cs.class.Obj.Name, t.opts.ParametersRefused(gwKey))
	case t.refs.GatewayExists(gwKey):
		why = fmt.Sprintf("IngressClass %s is served as Gateway %s, but a Gateway of that name exists; rename it", cs.class.Obj.Name, gwKey)
	}
	if why != "" {
		for _, is := range cs.ingresses {
			is.problemf(ReasonNotServed, "not served: %s", why)
		}
		return
	}
	for _, is := range cs.ingresses {
		is.st.Gateway = gw
		t.readIngress(cs, is)
	}
	for _, c := range cs.canaries {
		t.readCanary(cs, c)
	}
	g := &ir.Gateway{Namespace: gw.Namespace, Name: gw.Name, Class: string(gw.Spec.GatewayClassName), Scope: t.opts.ScopeOf(gw)}
	noLog := classNoAccessLog(cs.class)
	for i, l := range gw.Spec.Listeners {
		if l.Protocol == gwapiv1.HTTPSProtocolType && len(cs.certs) == 0 {
			continue // HTTPS only where an Ingress has a usable spec.tls
		}
		addr := []string{t.cfg.HTTPAddress, t.cfg.HTTPSAddress}[i]
		def := []string{DefaultHTTPAddress, DefaultHTTPSAddress}[i]
		il, err := t.listener(gw, l, addr, def)
		if err != nil {
			for _, is := range cs.ingresses {
				is.problemf(ReasonNotServed, "not served on %s: %v", strings.ToUpper(string(l.Name)), err)
			}
			for _, prev := range g.Listeners {
				t.out.later[prev]++
			}
			continue
		}
		il.NoAccessLog = noLog
		il.Edge = t.opts.EdgeOf(gw)
		if l.Protocol == gwapiv1.HTTPSProtocolType {
			il.TLS = &ir.ListenerTLS{Mode: ir.TLSTerminate, Certificates: cs.certs}
			il.HTTPRoutes = cs.routes(nil)
		} else {
			// HTTPS on the class's HTTPS port; the scheme's default port
			// needs none in the Location.
			port := uint32(gw.Spec.Listeners[1].Port)
			if port == 443 {
				port = 0
			}
			il.HTTPRoutes = cs.routes(&ir.Redirect{Scheme: "https", Port: port, StatusCode: 308})
		}
		g.Listeners = append(g.Listeners, il)
		for _, is := range cs.ingresses {
			is.st.Listeners = append(is.st.Listeners, listenerLine(il))
		}
	}
	t.addPassthrough(cs, g, gw)
	t.out.Gateways = append(t.out.Gateways, g)
	for _, is := range cs.ingresses {
		t.out.served[g] = append(t.out.served[g], is.st)
	}
}

// listener is the IR listener of the class Gateway gw's listener l, bound
// at the host of addr (the wildcard when the translation puts addresses
// on Services) and the bind port of l's port. It is refused when the port
// cannot be bound. Whether another listener of its scope binds the port
// is the merge's to check (Result.Unbind).
func (t *translator) listener(gw *gwapiv1.Gateway, l gwapiv1.Listener, addr, def string) (*ir.Listener, error) {
	host, _, err := listenAddress(addr, def)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %v", cmp.Or(addr, def), err)
	}
	if t.opts.AddressesOnService {
		host = "0.0.0.0"
	}
	port := t.opts.BindPortOf(gw, l.Port)
	if port == 0 {
		return nil, fmt.Errorf("port %d cannot be bound", l.Port)
	}
	proto := ir.ProtocolHTTP
	if l.Protocol == gwapiv1.HTTPSProtocolType {
		proto = ir.ProtocolHTTPS
	}
	return &ir.Listener{
		Name:        fmt.Sprintf("%s/%s/%s", gw.Namespace, gw.Name, l.Name),
		Protocol:    proto,
		Address:     host,
		Port:        port,
		GatewayPort: uint32(l.Port),
	}, nil
}

// readIngress reads one Ingress of the class (older ones were read
// before): its annotations, certificates, default backend and paths.
func (t *translator) readIngress(cs *classState, is *ingressState) {
	ing := is.obj
	set := t.readSettings(cs, is)
	if set.canary != nil {
		// Its paths add to those of the others, read first.
		cs.canaries = append(cs.canaries, canaryIngress{is: is, set: set})
		return
	}
	if set.passthrough != "" {
		t.passthroughRoute(cs, is, set.passthrough)
	}
	for i, tls := range ing.Spec.TLS {
		where := fmt.Sprintf("spec.tls[%d]", i)
		if tls.SecretName == "" {
			is.problemf(ReasonInvalidCertificate, "%s has no secretName; its hosts are served with the class's other certificates", where)
			continue
		}
		t.reads = append(t.reads, read{secret: true, k: types.NamespacedName{Namespace: ing.Namespace, Name: tls.SecretName}})
		c, msg := t.refs.Certificate(gatewayapi.KindIngress, ing.Namespace, where+".secretName", tls.SecretName)
		if msg != "" {
			is.problemf(ReasonInvalidCertificate, "%s; the class's HTTPS listener does not serve it", msg)
			continue
		}
		if !slices.ContainsFunc(cs.certs, func(o *ir.Certificate) bool { return o.Name == c.Name }) {
			cs.certs = append(cs.certs, c)
		}
	}
	if b := ing.Spec.DefaultBackend; b != nil {
		if cs.defaultBackend != nil {
			is.problemf(ReasonConflict, "spec.defaultBackend is not used: the class's default backend is that of Ingress %s, which is older", routeOwner(cs.defaultBackend.route))
		} else {
			e := &entry{owner: is, host: hostRule{vhost: "*"}, path: pathMatch{value: "/"}, route: t.backend(is, *b, "spec.defaultBackend")}
			nameRoute(e.route, ing, defaultBackendRule, 0)
			set.applyRoute(e.route, ing.Namespace, serviceName(*b), e.path, false)
			cs.defaultBackend = e
		}
	}
	t.appRoots(cs, is, &set)
	is.paths(set.regex, func(i, j int, rule networkingv1.IngressRule, host hostRule, p networkingv1.HTTPIngressPath, pm pathMatch, where string) {
		claim := host.vhost + " " + pm.String()
		if other := cs.claims[claim]; other != nil {
			if other.owner == is {
				is.problemf(ReasonConflict, "%s: host %s path %s is already a path of this Ingress; the first one is served", where, host.vhost, pm)
			} else {
				is.problemf(ReasonConflict, "%s: host %s path %s is served by Ingress %s, which is older; this one is not served", where, host.vhost, pm, other.owner)
			}
			return
		}
		e := &entry{owner: is, host: host, path: pm, route: t.backend(is, p.Backend, where+".backend"), sslRedirect: set.redirectsToHTTPS(ing, rule.Host)}
		cs.claims[claim] = e
		nameRoute(e.route, ing, i, j)
		set.applyRoute(e.route, ing.Namespace, serviceName(p.Backend), pm, true)
		cs.hosts[host.vhost] = append(cs.hosts[host.vhost], e)
	})
}

// paths calls each for every path of the Ingress whose rule's host and
// path (a regular expression with regex) are valid, with the indexes of
// the rule and the path, the path read, and where it is
// ("spec.rules[i].http.paths[j]"); invalid ones are reported.
func (is *ingressState) paths(regex bool, each func(i, j int, rule networkingv1.IngressRule, host hostRule, p networkingv1.HTTPIngressPath, pm pathMatch, where string)) {
	for i, rule := range is.obj.Spec.Rules {
		host, err := readHost(rule.Host)
		if err != nil {
			is.problemf(ReasonInvalidHost, "spec.rules[%d]: %v; the rule is not served", i, err)
			continue
		}
		if rule.HTTP == nil {
			continue
		}
		for j, p := range rule.HTTP.Paths {
			where := fmt.Sprintf("spec.rules[%d].http.paths[%d]", i, j)
			pm, err := readPath(p, regex)
			if err != nil {
				is.problemf(ReasonInvalidPath, "%s: %v; the path is not served", where, err)
				continue
			}
			each(i, j, rule, host, p, pm, where)
		}
	}
}

// backend resolves an IngressBackend to the IR route action: the Service
// port (by number or name, gatewayapi.Refs.ServiceBackend), or, when it
// cannot be used, a direct FailureStatus answer and a problem naming where.
func (t *translator) backend(is *ingressState, b networkingv1.IngressBackend, where string) *ir.HTTPRoute {
	fail := &ir.HTTPRoute{DirectResponse: &ir.DirectResponse{StatusCode: FailureStatus}}
	switch {
	case b.Resource != nil:
		is.problemf(ReasonUnsupportedBackend, "%s: resource backends (%s %s) are not supported, only Services; it answers %d", where, cmp.Or(deref(b.Resource.APIGroup), "core"), b.Resource.Kind, FailureStatus)
		return fail
	case b.Service == nil:
		is.problemf(ReasonBackendNotFound, "%s names no Service; it answers %d", where, FailureStatus)
		return fail
	}
	port := gatewayapi.ServicePort{Number: b.Service.Port.Number, Name: b.Service.Port.Name}
	t.reads = append(t.reads, read{k: types.NamespacedName{Namespace: is.obj.Namespace, Name: b.Service.Name}})
	be, msg := t.refs.ServiceBackend(gatewayapi.KindIngress, is.obj.Namespace, is.obj.Name, b.Service.Name, port)
	switch {
	case msg != "":
		is.problemf(ReasonBackendNotFound, "%s: %s; it answers %d", where, msg, FailureStatus)
		return fail
	case be.Invalid:
		is.problemf(ReasonBackendNotFound, "%s: Service %s/%s: the BackendTLSPolicy that targets the port cannot be honoured (see its status); it answers %d", where, is.obj.Namespace, b.Service.Name, FailureStatus)
		return fail
	}
	be.Weight = 1
	return &ir.HTTPRoute{Backends: &ir.BackendGroup{Backends: []*ir.Backend{be}}}
}

// routes are the IR routes of one listener of the class, by virtual host
// (gatewayapi.CompareHosts: exact hosts first, then wildcards, longest
// first, then "*"; the order Envoy picks a virtual host in does not depend
// on it, it keeps the IR stable). In a host's virtual host: the host's own
// paths (a wildcard host's with its one-label check), then the paths of
// rules without host (they apply to every host), then the default
// backend; each group by comparePaths. On the HTTP listener (toHTTPS set)
// the paths whose annotations ask for it answer with that redirect to
// HTTPS instead (keeping their allowed source ranges).
func (cs *classState) routes(toHTTPS *ir.Redirect) []*ir.HTTPRoute {
	vhosts := slices.Collect(func(yield func(string) bool) {
		for h := range cs.hosts {
			if !yield(h) {
				return
			}
		}
	})
	if cs.defaultBackend != nil && !slices.Contains(vhosts, "*") {
		vhosts = append(vhosts, "*")
	}
	slices.SortFunc(vhosts, gatewayapi.CompareHosts)
	byPath := func(a, b *entry) int { return comparePaths(a.path, b.path) }
	own := map[string][]*entry{}
	for h, es := range cs.hosts {
		own[h] = slices.SortedStableFunc(slices.Values(es), byPath)
	}
	var out []*ir.HTTPRoute
	var add func(vhost string, e *entry, own bool)
	add = func(vhost string, e *entry, own bool) {
		if e.canary != nil {
			add(vhost, e.canary, own)
		}
		r := e.route.DeepCopy()
		r.Hostname = vhost
		r.Match = ir.HTTPMatch{Path: e.path.irPath(), Headers: r.Match.Headers}
		if own {
			r.Match.Headers = append(e.host.authorityMatch(), r.Match.Headers...)
		}
		if toHTTPS != nil && e.sslRedirect {
			r.Backends, r.DirectResponse, r.Timeouts, r.Retry, r.SessionPersistence = nil, nil, nil, nil, nil
			r.Filters = ir.HTTPFilters{Redirect: toHTTPS.DeepCopy(), AllowedSourceRanges: r.Filters.AllowedSourceRanges}
		}
		if r.SessionPersistence != nil && toHTTPS == nil {
			r.SessionPersistence.Secure = true // as an HTTPRoute's on an HTTPS listener
		}
		k := routeKey{http: toHTTPS != nil, hostname: r.Hostname, name: r.Name}
		if p := cs.prev[k]; p != nil && reflect.DeepEqual(p, r) {
			r = p
		}
		if cs.kept != nil && cs.kept[k] == nil {
			cs.kept[k] = r
		}
		out = append(out, r)
	}
	for _, h := range vhosts {
		if h != "*" {
			for _, e := range own[h] {
				add(h, e, true)
			}
		}
		for _, e := range own["*"] {
			add(h, e, false)
		}
		if cs.defaultBackend != nil {
			add(h, cs.defaultBackend, false)
		}
	}
	return out
}

// serviceName is the Service a backend names ("" for none).
func serviceName(b networkingv1.IngressBackend) string {
	if b.Service == nil {
		return ""
	}
	return b.Service.Name
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
