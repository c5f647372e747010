// Package xdsvalidate checks xDS resources before they are published, for
// the mistakes that Envoy would answer with a NACK of the whole resource
// (and with it every Gateway it serves): protoc-gen-validate rules
// (ValidateAll), regular expressions that RE2 refuses or that exceed
// Envoy's program size limit, illegal header names and values, two filter
// chains of one listener with the same match, and references to clusters
// and route configurations that do not exist.
//
// Check is pure. Every problem found inside an Envoy route names that route
// and carries its origin (xdstranslator.Origins: the object, rule and
// match it was made for), so that the caller can trace it back to the
// route rule (or Ingress path) that caused it.
package xdsvalidate

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/memo"
	"github.com/xds-controller/xds-controller/pkg/re2"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// Problem is one finding.
type Problem struct {
	// Type is the resource type ("Listener", "RouteConfiguration",
	// "Cluster", ...) and Resource its name.
	Type, Resource string
	// Route is the Envoy route the problem is in ("" when it is not in a
	// route); InMatch says whether it is in the route's match.
	Route   string
	InMatch bool
	// Origin is what Route was made for (Resources.Origins); the zero
	// Origin when the problem is in no route, or in a route without an
	// origin.
	Origin ir.Origin
	// Message says what is wrong.
	Message string
}

func (p Problem) String() string {
	s := p.Type + " " + p.Resource
	if p.Route != "" {
		s += " route " + p.Route
	}
	return s + ": " + p.Message
}

// Check returns every problem of r, in resource order.
func Check(r *xdstranslator.Resources) []Problem {
	return NewCache().Check(r)
}

type checker struct {
	cache            *Cache
	clusters, routes map[string]bool
	// gen is the generation of clusters and routes (Cache.gen).
	gen      uint64
	findings []finding
	// vhosts are the findings of the virtual hosts of the route
	// configuration being checked, in order (validateConfig).
	vhosts []*vhostFindings
}

// where is the location a walk reports problems at.
type where struct {
	typ, resource, route string
	inMatch              bool
}

func (w where) problem(msg string) Problem {
	return Problem{Type: w.typ, Resource: w.resource, Route: w.route, InMatch: w.inMatch, Message: msg}
}

func (c *checker) add(w where, format string, a ...any) {
	p := w.problem(fmt.Sprintf(format, a...))
	c.findings = append(c.findings, finding{problem: &p})
}

func (c *checker) resource(res types.Resource) {
	w := where{typ: string(res.ProtoReflect().Descriptor().Name()), resource: cachev3.GetResourceName(res)}
	if rc, ok := res.(*routev3.RouteConfiguration); ok {
		// The walk names the route of what it finds; the protoc-gen-validate
		// rules run on the whole configuration, and only when it fails
		// again route by route, so that problems name their route.
		c.validateConfig(w, rc)
		c.walk(w, rc.ProtoReflect())
		return
	}
	validate(c, w, res)
	c.walk(w, res.ProtoReflect())
	if l, ok := res.(*listenerv3.Listener); ok {
		c.filterChains(w, l)
	}
}

// validate runs m's protoc-gen-validate rules.
func validate(c *checker, w where, m proto.Message) {
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			c.add(w, "%v", err)
		}
	}
}

// validateConfig runs the protoc-gen-validate rules of rc: when they fail,
// again route by route, then on the rest of rc (its routes left out), so
// that each problem names its route. Each virtual host's verdict is
// cached; so is the configuration without its virtual hosts (whose rules
// and the virtual hosts' are rc's).
func (c *checker) validateConfig(w where, rc *routev3.RouteConfiguration) {
	vhosts := rc.VirtualHosts
	rc.VirtualHosts = nil
	fails := rc.ValidateAll() != nil
	rc.VirtualHosts = vhosts
	list := c.cache.configs[rc.Name]
	if list == nil {
		list = &memo.List[*routev3.VirtualHost, *vhostFindings]{}
		c.cache.configs[rc.Name] = list
	}
	c.vhosts = list.Update(vhosts, nil, func(j int) *vhostFindings { return vhost(w, vhosts[j]) }, nil)
	for _, v := range c.vhosts {
		fails = fails || v.fails
	}
	if !fails {
		return
	}
	for _, v := range c.vhosts {
		for i := range v.routes {
			c.findings = append(c.findings, finding{problem: &v.routes[i]})
		}
	}
	rest := proto.Clone(rc).(*routev3.RouteConfiguration)
	for _, vh := range rest.VirtualHosts {
		vh.Routes = nil
	}
	validate(c, w, rest)
}

// vhost returns what vh, a virtual host of the route configuration w
// names, holds: its protoc-gen-validate verdict (route by route when it
// fails) and its walk.
func vhost(w where, vh *routev3.VirtualHost) *vhostFindings {
	v := &vhostFindings{fails: vh.ValidateAll() != nil}
	sub := &checker{}
	if v.fails {
		for _, rt := range vh.Routes {
			rw := w
			rw.route = rt.Name
			validate(sub, rw, rt)
		}
		for _, f := range sub.findings {
			v.routes = append(v.routes, *f.problem)
		}
		sub.findings = nil
	}
	sub.walkMessage(w, vh.ProtoReflect())
	v.walk.items = sub.findings
	return v
}

// filterChains finds two filter chains with equal matches: Envoy refuses
// the listener ("multiple filter chains with the same matching rules").
// Matches are compared by their deterministic encoding (an unset match is
// the empty one), one map lookup per chain: a port shared by thousands of
// HTTPS listeners (ListenerSets) has a chain per listener, and comparing
// every pair was quadratic.
func (c *checker) filterChains(w where, l *listenerv3.Listener) {
	seen := make(map[string]string, len(l.FilterChains))
	for _, a := range l.FilterChains {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(a.GetFilterChainMatch())
		if err != nil {
			c.add(w, "filter chain %q: encoding its filter_chain_match: %v", a.Name, err)
			continue
		}
		if first, dup := seen[string(b)]; dup {
			c.add(w, "filter chains %q and %q have the same filter_chain_match", first, a.Name)
			continue
		}
		seen[string(b)] = a.Name
	}
}

// walk visits every message under m, Any payloads included, in the order
// of their fields (and of map keys); what is found under an Envoy route
// names that route.
func (c *checker) walk(w where, m protoreflect.Message) {
	p := planOf(m.Descriptor())
	if p.route {
		w.route = m.Get(p.name).String()
	}
	if p.visit {
		c.visit(w, m)
	}
	for _, f := range p.fields {
		if !m.Has(f.fd) {
			continue
		}
		fw := w
		fw.inMatch = fw.inMatch || f.inMatch
		v := m.Get(f.fd)
		if enablesOnly(m, f.fd, v) {
			continue
		}
		switch {
		case f.vhosts && c.vhosts != nil:
			// Walked once per virtual host (validateConfig).
			c.findings = append(c.findings, finding{vhosts: c.vhosts})
		case f.fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				c.walkMessage(fw, l.Get(i).Message())
			}
		case f.fd.IsMap():
			mv := v.Map()
			keys := make([]protoreflect.MapKey, 0, mv.Len())
			mv.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			slices.SortFunc(keys, func(a, b protoreflect.MapKey) int { return strings.Compare(a.String(), b.String()) })
			for _, k := range keys {
				c.walkMessage(fw, mv.Get(k).Message())
			}
		default:
			c.walkMessage(fw, v.Message())
		}
	}
}

// enablesOnly says whether v, field fd of m, is the empty config of a
// route's FilterConfig: it enables a filter disabled by default and holds
// nothing to check (Envoy's rule; the OAuth2 filter of
// pkg/xdstranslator/oauth2.go). An empty Any anywhere else cannot be
// decoded, which walkMessage reports.
func enablesOnly(m protoreflect.Message, fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	if m.Descriptor().FullName() != "envoy.config.route.v3.FilterConfig" || fd.Name() != "config" {
		return false
	}
	a, ok := v.Message().Interface().(*anypb.Any)
	return ok && a.TypeUrl == "" && len(a.Value) == 0
}

// plan is how walk goes through messages of one type: whether visit
// checks it, whether it is an Envoy route (whose name, field name,
// locates what is found under it), and its fields that can hold what
// visit checks, in declaration order.
type plan struct {
	visit, route bool
	name         protoreflect.FieldDescriptor
	fields       []planField
}

// planField is a field to walk into: a route's match (inMatch), a route
// configuration's virtual hosts (vhosts), or another.
type planField struct {
	fd              protoreflect.FieldDescriptor
	inMatch, vhosts bool
}

// plans caches planOf per message type.
var plans sync.Map // protoreflect.MessageDescriptor -> *plan

// planOf is the plan of message type md.
func planOf(md protoreflect.MessageDescriptor) *plan {
	if p, ok := plans.Load(md); ok {
		return p.(*plan)
	}
	p := &plan{visit: checked[md.FullName()] && md.FullName() != "google.protobuf.Any", route: md.FullName() == "envoy.config.route.v3.Route"}
	if p.route {
		p.name = md.Fields().ByName("name")
	}
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fm := fieldMessage(fd); fm == nil || !mayHold(fm) {
			continue // nothing of what visit checks can be under it
		}
		p.fields = append(p.fields, planField{fd: fd, inMatch: p.route && fd.Name() == "match",
			vhosts: fd.FullName() == "envoy.config.route.v3.RouteConfiguration.virtual_hosts"})
	}
	plans.Store(md, p)
	return p
}

// checked are the message types visit checks, and Any (whose payload can
// be anything).
var checked = map[protoreflect.FullName]bool{
	"envoy.type.matcher.v3.RegexMatcher":                                                   true,
	"envoy.config.core.v3.HeaderValue":                                                     true,
	"envoy.config.route.v3.HeaderMatcher":                                                  true,
	"envoy.config.route.v3.Route":                                                          true,
	"envoy.config.route.v3.VirtualHost":                                                    true,
	"envoy.config.route.v3.RouteConfiguration":                                             true,
	"envoy.config.route.v3.RouteAction":                                                    true,
	"envoy.config.route.v3.RouteAction.RequestMirrorPolicy":                                true,
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy":                               true,
	"envoy.config.route.v3.WeightedCluster.ClusterWeight":                                  true,
	"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.WeightedCluster.ClusterWeight": true,
	"envoy.extensions.filters.network.http_connection_manager.v3.Rds":                      true,
	"google.protobuf.Any":                                                                  true,
}

// holds caches mayHold per message type (by descriptor: cheaper to hash
// than its name).
var holds sync.Map // protoreflect.MessageDescriptor -> bool

// mayHold reports whether a message of type md can have, at any depth, a
// message of a type visit checks (or an Any): the walk skips the others,
// such as durations, addresses and localities, which are most of a
// cluster. It follows the type graph once per type.
func mayHold(md protoreflect.MessageDescriptor) bool {
	if v, ok := holds.Load(md); ok {
		return v.(bool)
	}
	seen := map[protoreflect.FullName]bool{}
	var reach func(protoreflect.MessageDescriptor) bool
	reach = func(d protoreflect.MessageDescriptor) bool {
		if checked[d.FullName()] {
			return true
		}
		if seen[d.FullName()] {
			return false
		}
		seen[d.FullName()] = true
		fields := d.Fields()
		for i := range fields.Len() {
			if fm := fieldMessage(fields.Get(i)); fm != nil && reach(fm) {
				return true
			}
		}
		return false
	}
	v := reach(md)
	holds.Store(md, v)
	return v
}

// fieldMessage is the message type of fd's values (a map's values), nil
// for scalars.
func fieldMessage(fd protoreflect.FieldDescriptor) protoreflect.MessageDescriptor {
	if fd.IsMap() {
		return fd.MapValue().Message()
	}
	return fd.Message()
}

func (c *checker) walkMessage(w where, m protoreflect.Message) {
	if a, ok := m.Interface().(*anypb.Any); ok {
		inner, err := a.UnmarshalNew()
		if err != nil {
			c.add(w, "typed config %s cannot be decoded: %v", a.TypeUrl, err)
			return
		}
		m = inner.ProtoReflect()
	}
	c.walk(w, m)
}

// visit checks one message by its type.
func (c *checker) visit(w where, m protoreflect.Message) {
	str := func(field protoreflect.Name) string {
		fd := m.Descriptor().Fields().ByName(field)
		if fd == nil {
			return ""
		}
		return m.Get(fd).String()
	}
	switch m.Descriptor().FullName() {
	case "envoy.type.matcher.v3.RegexMatcher":
		if msg := RegexProblem(str("regex")); msg != "" {
			c.add(w, "regex %q %s", str("regex"), msg)
		}
	case "envoy.config.core.v3.HeaderValue":
		if msg := HeaderNameProblem(str("key")); msg != "" {
			c.add(w, "header name %q %s", str("key"), msg)
		}
		if msg := HeaderValueProblem(str("value")); msg != "" {
			c.add(w, "value of header %q %s", str("key"), msg)
		}
	case "envoy.config.route.v3.HeaderMatcher":
		if msg := HeaderNameProblem(str("name")); msg != "" {
			c.add(w, "header match name %q %s", str("name"), msg)
		}
	case "envoy.config.route.v3.Route", "envoy.config.route.v3.VirtualHost", "envoy.config.route.v3.RouteConfiguration":
		c.headerEdits(w, m)
	case "envoy.config.route.v3.RouteAction", "envoy.config.route.v3.RouteAction.RequestMirrorPolicy",
		"envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy":
		c.clusterRef(w, str("cluster"))
	case "envoy.config.route.v3.WeightedCluster.ClusterWeight":
		c.headerEdits(w, m)
		c.clusterRef(w, str("name"))
	case "envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.WeightedCluster.ClusterWeight":
		c.clusterRef(w, str("name"))
	case "envoy.extensions.filters.network.http_connection_manager.v3.Rds":
		c.findings = append(c.findings, finding{ref: &reference{w, "route configuration", str("route_config_name")}})
	}
}

// headerEdits checks the header edits of m (a route configuration,
// virtual host, route or weighted cluster): Envoy refuses to set, add or
// remove a pseudo-header or Host, in requests and responses alike
// (":-prefixed or host headers may not be modified").
func (c *checker) headerEdits(w where, m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for _, d := range editFields {
		// Has first: Get of an empty list allocates a view of it.
		if fd := fields.ByName(d.add); fd != nil && m.Has(fd) {
			l := m.Get(fd).List()
			for i := range l.Len() {
				k := l.Get(i).Message().Interface().(*corev3.HeaderValueOption).GetHeader().GetKey()
				if !editable(k) {
					c.add(w, "%s header %q cannot be modified (pseudo-headers and host are Envoy's)", d.dir, k)
				}
			}
		}
		if fd := fields.ByName(d.remove); fd != nil && m.Has(fd) {
			l := m.Get(fd).List()
			for i := range l.Len() {
				if k := l.Get(i).String(); !editable(k) {
					c.add(w, "%s header %q cannot be removed (pseudo-headers and host are Envoy's)", d.dir, k)
				}
			}
		}
	}
}

// editFields are the header edit fields headerEdits reads, by direction.
var editFields = [...]struct {
	dir         string
	add, remove protoreflect.Name
}{
	{"request", "request_headers_to_add", "request_headers_to_remove"},
	{"response", "response_headers_to_add", "response_headers_to_remove"},
}

func editable(name string) bool {
	n := strings.ToLower(name)
	return !strings.HasPrefix(n, ":") && n != "host"
}

// clusterRef records a cluster reference to check (checker.problems).
// xdstranslator.InvalidBackendCluster is absent on purpose (its share of
// requests gets 500).
func (c *checker) clusterRef(w where, name string) {
	if name != "" && name != xdstranslator.InvalidBackendCluster {
		c.findings = append(c.findings, finding{ref: &reference{w, "cluster", name}})
	}
}

// RegexProblem says why Envoy would refuse RE2 expression v (re2.Problem:
// empty, not RE2 as Envoy's engine reads it, or a program larger than
// re2.MaxProgramSize). "" when it is fine.
func RegexProblem(v string) string {
	return re2.Problem(v)
}

// HeaderNameProblem says why n is not a header name Envoy accepts: an RFC
// 9110 token, or a pseudo-header (":" and a token). "" when it is fine.
func HeaderNameProblem(n string) string {
	t := strings.TrimPrefix(n, ":")
	if t == "" {
		return "is empty"
	}
	for i := 0; i < len(t); i++ {
		if !isTokenChar(t[i]) {
			return fmt.Sprintf("has %q, which a header name (RFC 9110 token) cannot hold", t[i])
		}
	}
	return ""
}

// HeaderValueProblem says why v is not a header value Envoy accepts: NUL,
// CR and LF are refused (RFC 9110 field-value; Envoy's HeaderValue rule).
func HeaderValueProblem(v string) string {
	if strings.ContainsAny(v, "\x00\r\n") {
		return "contains NUL, CR or LF"
	}
	return ""
}

func isTokenChar(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}
