package ingress

// Annotations: a small, documented set under our own prefix
// (xds-controller.dev/), each read by one function that falls back to the
// equivalent ingress-nginx annotation (nginx.ingress.kubernetes.io/), so
// that Ingresses written for ingress-nginx keep working unchanged. They map
// onto the IR filters HTTPRoute uses (gatewayapi.Refs.Filters validates
// them with HTTPRoute's own rules). An annotation under either prefix that
// no function reads, or a value that cannot be honoured, is a problem of
// the Ingress (reason UnsupportedAnnotation, or InvalidAnnotation) and
// never reaches Envoy. docs/ingress.md has the table.

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Annotation prefixes.
const (
	// Prefix is ours.
	Prefix = "xds-controller.dev/"
	// NginxPrefix is ingress-nginx's; its keys that have an equivalent are
	// read as ours.
	NginxPrefix = "nginx.ingress.kubernetes.io/"
)

// Problem reasons of annotations.
const (
	ReasonUnsupportedAnnotation = "UnsupportedAnnotation"
	ReasonInvalidAnnotation     = "InvalidAnnotation"
)

// settings are what an Ingress's annotations ask for, for all of its paths
// and its default backend.
type settings struct {
	// regex: paths are regular expressions (use-regex, or rewrite-target).
	regex bool
	// rewrite is the rewrite-target, its $n turned into \n; "" for none.
	rewrite string
	// sslRedirect and forceSSLRedirect: on the HTTP listener, answer the
	// paths of hosts with TLS (force: of every host) with a redirect to
	// HTTPS.
	sslRedirect, forceSSLRedirect bool
	// filters (header edits, CORS, source ranges) and timeouts of every
	// route of the Ingress.
	filters  ir.HTTPFilters
	timeouts *ir.Timeouts
	// protocol is the protocol to speak to the backends ("" keeps the
	// Service port's appProtocol); tls makes it TLS, verified for tlsName
	// ("" : the Service's cluster DNS name).
	protocol ir.AppProtocol
	tls      bool
	tlsName  string
	// canary is set for a canary Ingress (canary.go).
	canary *canary
	// authFailed: an authentication annotation cannot be honoured
	// (auth.go); every path answers FailureStatus.
	authFailed bool
	// trafficSettings: rate and body limits, affinity, load balancing,
	// redirects (traffic.go).
	trafficSettings
}

// annotationReader reads the effective annotations of one Ingress: its
// class's defaultAnnotations overlaid by its own, key by key.
type annotationReader struct {
	is     *ingressState
	values map[string]string
	read   map[string]bool
	// classNoLog: the class turns the access log off
	// (classNoAccessLog).
	classNoLog bool
}

func newAnnotationReader(is *ingressState, class *Class) *annotationReader {
	values := map[string]string{}
	if class.Params != nil {
		maps.Copy(values, class.Params.Spec.DefaultAnnotations)
	}
	maps.Copy(values, is.obj.Annotations)
	return &annotationReader{is: is, values: values, read: map[string]bool{}, classNoLog: classNoAccessLog(class)}
}

// get returns the value of our key name, else of the first of the
// ingress-nginx keys, and the full key it came from.
// Every key of ours it was asked for that the Ingress has counts as read
// (readSettings reports the others); without annotations it looks up
// nothing.
func (a *annotationReader) get(name string, nginx ...string) (string, string, bool) {
	if len(a.values) == 0 {
		return "", "", false
	}
	keys := []string{Prefix + name}
	for _, n := range nginx {
		keys = append(keys, NginxPrefix+n)
	}
	for _, k := range keys {
		if _, ok := a.values[k]; ok {
			a.read[k] = true
		}
	}
	for _, k := range keys {
		if v, ok := a.values[k]; ok {
			return strings.TrimSpace(v), k, true
		}
	}
	return "", "", false
}

// invalid reports a value of the annotation key (or keys) that cannot be
// honoured; the annotation is then ignored.
func (a *annotationReader) invalid(key, format string, args ...any) {
	a.is.problemf(ReasonInvalidAnnotation, "annotation %s: %s; it is ignored", key, fmt.Sprintf(format, args...))
}

// boolean reads a "true"/"false" annotation.
func (a *annotationReader) boolean(name string, nginx ...string) bool {
	v, key, ok := a.get(name, nginx...)
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		a.invalid(key, "%q is not true or false", v)
	}
	return b
}

// readSettings reads every annotation we support, then reports those of
// our prefix and of ingress-nginx's that none read.
func (t *translator) readSettings(cs *classState, is *ingressState) settings {
	a := newAnnotationReader(is, cs.class)
	var s settings
	s.regex = a.boolean("use-regex", "use-regex")
	s.rewrite = a.rewriteTarget()
	if s.rewrite != "" {
		s.regex = true // as ingress-nginx: rewrite-target makes the paths regular expressions
	}
	s.sslRedirect = a.boolean("ssl-redirect", "ssl-redirect")
	s.forceSSLRedirect = a.boolean("force-ssl-redirect", "force-ssl-redirect")
	t.headerFilters(a, &s)
	t.corsFilter(a, &s)
	a.sourceRanges(&s)
	t.timeouts(a, &s)
	a.backendProtocol(&s)
	s.canary = a.readCanary()
	t.authAnnotations(a, &s)
	t.readTraffic(a, &s)
	for _, k := range slices.Sorted(maps.Keys(a.values)) {
		if (strings.HasPrefix(k, Prefix) || strings.HasPrefix(k, NginxPrefix)) && !a.read[k] {
			is.problemf(ReasonUnsupportedAnnotation, "annotation %s is not supported (docs/ingress.md lists what is, and the HTTPRoute way for the rest); it is ignored", k)
		}
	}
	return s
}

// nginxVariable is a $n reference of a rewrite target.
var nginxVariable = regexp.MustCompile(`\$([0-9]|\{[0-9]\}|[A-Za-z_][A-Za-z0-9_]*)`)

// rewriteTarget reads rewrite-target: the path that replaces a request's
// whole path (its query kept), in which $1 to $9 (or ${1}) are the groups
// of the path's regular expression. Other nginx variables cannot be
// honoured.
func (a *annotationReader) rewriteTarget() string {
	v, key, ok := a.get("rewrite-target", "rewrite-target")
	if !ok || v == "" {
		return ""
	}
	if !strings.HasPrefix(v, "/") {
		a.invalid(key, "%q must be a path starting with /", v)
		return ""
	}
	bad := ""
	out := nginxVariable.ReplaceAllStringFunc(v, func(m string) string {
		n := strings.Trim(m[1:], "{}")
		if len(n) == 1 && n[0] >= '0' && n[0] <= '9' {
			return `\` + n
		}
		bad = m
		return m
	})
	if bad != "" || strings.ContainsAny(out, "?#") || strings.IndexFunc(out, func(r rune) bool { return r < 0x21 || r == 0x7f }) >= 0 {
		a.invalid(key, "%q: only $1 to $9 may be substituted, and the path may hold no '?', '#', spaces or control characters", v)
		return ""
	}
	return out
}

// headerFilters reads our request-headers-set, -add, -remove and
// response-headers-set, -add, -remove annotations ("Name: value" lines;
// names separated by commas for -remove) into Request- and
// ResponseHeaderModifier filters, validated as HTTPRoute's.
func (t *translator) headerFilters(a *annotationReader, s *settings) {
	for _, dir := range []string{"request", "response"} {
		var f gwapiv1.HTTPHeaderFilter
		any := false
		for _, op := range []string{"set", "add"} {
			v, key, ok := a.get(dir + "-headers-" + op)
			if !ok {
				continue
			}
			any = true
			for _, line := range strings.Split(v, "\n") {
				if strings.TrimSpace(line) == "" {
					continue
				}
				name, value, found := strings.Cut(line, ":")
				if !found {
					a.invalid(key, "line %q is not \"Name: value\"", line)
					continue
				}
				h := gwapiv1.HTTPHeader{Name: gwapiv1.HTTPHeaderName(strings.TrimSpace(name)), Value: strings.TrimSpace(value)}
				if op == "set" {
					f.Set = append(f.Set, h)
				} else {
					f.Add = append(f.Add, h)
				}
			}
		}
		if v, _, ok := a.get(dir + "-headers-remove"); ok {
			any = true
			for _, n := range strings.Split(v, ",") {
				if n = strings.TrimSpace(n); n != "" {
					f.Remove = append(f.Remove, n)
				}
			}
		}
		if !any {
			continue
		}
		typ := gwapiv1.HTTPRouteFilterRequestHeaderModifier
		hf := gwapiv1.HTTPRouteFilter{Type: typ, RequestHeaderModifier: &f}
		if dir == "response" {
			typ = gwapiv1.HTTPRouteFilterResponseHeaderModifier
			hf = gwapiv1.HTTPRouteFilter{Type: typ, ResponseHeaderModifier: &f}
		}
		out, _, msgs := t.refs.Filters(gatewayapi.KindIngress, a.is.obj.Namespace, a.is.obj.Name, ir.HTTPMatch{}, []gwapiv1.HTTPRouteFilter{hf}, nil)
		if len(msgs) > 0 {
			a.invalid(Prefix+dir+"-headers-*", "%s", strings.Join(msgs, "; "))
			continue
		}
		if dir == "request" {
			s.filters.RequestHeaders = out.RequestHeaders
			if out.URLRewrite != nil { // a set of Host is a host rewrite
				s.filters.URLRewrite = out.URLRewrite
			}
		} else {
			s.filters.ResponseHeaders = out.ResponseHeaders
		}
	}
}

// corsFilter reads enable-cors and its cors-* settings (ingress-nginx's
// keys and defaults: every origin, the methods GET, PUT, POST, DELETE,
// PATCH, OPTIONS, ingress-nginx's list of headers, credentials allowed,
// max age 1728000 s) into a CORS filter, validated as HTTPRoute's.
func (t *translator) corsFilter(a *annotationReader, s *settings) {
	if !a.boolean("enable-cors", "enable-cors") {
		for _, k := range []string{"cors-allow-origin", "cors-allow-methods", "cors-allow-headers", "cors-expose-headers", "cors-allow-credentials", "cors-max-age"} {
			a.get(k, k) // read: they need enable-cors, which is off
		}
		return
	}
	list := func(name, def string) []string {
		v, _, ok := a.get(name, name)
		if !ok {
			v = def
		}
		var out []string
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
		return out
	}
	c := &gwapiv1.HTTPCORSFilter{AllowCredentials: ptrTo(true), MaxAge: 1728000}
	for _, o := range list("cors-allow-origin", "*") {
		c.AllowOrigins = append(c.AllowOrigins, gwapiv1.CORSOrigin(o))
	}
	for _, m := range list("cors-allow-methods", "GET, PUT, POST, DELETE, PATCH, OPTIONS") {
		c.AllowMethods = append(c.AllowMethods, gwapiv1.HTTPMethodWithWildcard(strings.ToUpper(m)))
	}
	for _, h := range list("cors-allow-headers", "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization") {
		c.AllowHeaders = append(c.AllowHeaders, gwapiv1.HTTPHeaderName(h))
	}
	for _, h := range list("cors-expose-headers", "") {
		c.ExposeHeaders = append(c.ExposeHeaders, gwapiv1.HTTPHeaderName(h))
	}
	if v, key, ok := a.get("cors-allow-credentials", "cors-allow-credentials"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			a.invalid(key, "%q is not true or false", v)
		}
		c.AllowCredentials = &b
	}
	if v, key, ok := a.get("cors-max-age", "cors-max-age"); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			a.invalid(key, "%q is not a number of seconds", v)
		} else {
			c.MaxAge = int32(n)
		}
	}
	out, _, msgs := t.refs.Filters(gatewayapi.KindIngress, a.is.obj.Namespace, a.is.obj.Name, ir.HTTPMatch{}, []gwapiv1.HTTPRouteFilter{{Type: gwapiv1.HTTPRouteFilterCORS, CORS: c}}, nil)
	if len(msgs) > 0 {
		a.invalid("enable-cors", "%s", strings.Join(msgs, "; "))
		return
	}
	s.filters.CORS = out.CORS
}

// sourceRanges reads allowed-source-ranges (ingress-nginx:
// allowlist-source-range, whitelist-source-range): the client address
// ranges (CIDRs or addresses, comma-separated) the Ingress answers; others
// get 403.
func (a *annotationReader) sourceRanges(s *settings) {
	v, key, ok := a.get("allowed-source-ranges", "allowlist-source-range", "whitelist-source-range")
	if !ok {
		return
	}
	var out []string
	for _, r := range strings.Split(v, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		s, msg := gatewayapi.ClientCIDR(r)
		if msg != "" {
			a.invalid(key, "%s", msg)
			return
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		a.invalid(key, "no range")
		return
	}
	s.filters.AllowedSourceRanges = out
}

// timeouts reads request-timeout and backend-timeout (Gateway API
// durations, "30s"), else ingress-nginx's proxy-read-timeout and
// proxy-send-timeout (seconds): the longer of these two bounds each try to
// the backend (Envoy bounds the whole response, nginx each read and write;
// the closest we can honour). They are validated as HTTPRoute rule
// timeouts.
func (t *translator) timeouts(a *annotationReader, s *settings) {
	var to gwapiv1.HTTPRouteTimeouts
	var keys []string
	if v, key, ok := a.get("request-timeout"); ok {
		to.Request = ptrTo(gwapiv1.Duration(v))
		keys = append(keys, key)
	}
	if v, key, ok := a.get("backend-timeout"); ok {
		to.BackendRequest = ptrTo(gwapiv1.Duration(v))
		keys = append(keys, key)
	} else {
		secs := 0
		for _, k := range []string{"proxy-read-timeout", "proxy-send-timeout"} {
			v, key, ok := a.get(k, k)
			if !ok {
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				a.invalid(key, "%q is not a number of seconds", v)
				continue
			}
			secs = max(secs, n)
			keys = append(keys, key)
		}
		if secs > 0 {
			to.BackendRequest = ptrTo(gwapiv1.Duration(strconv.Itoa(secs) + "s"))
		}
	}
	if to.Request == nil && to.BackendRequest == nil {
		return
	}
	_, out, msgs := t.refs.Filters(gatewayapi.KindIngress, a.is.obj.Namespace, a.is.obj.Name, ir.HTTPMatch{}, nil, &to)
	if len(msgs) > 0 {
		a.invalid(strings.Join(keys, ", "), "%s", strings.Join(msgs, "; "))
		return
	}
	s.timeouts = out
}

// backendProtocol reads backend-protocol: HTTP (HTTP/1.1), H2C (HTTP/2
// without TLS), GRPC (h2c), HTTPS (HTTP/1.1 over TLS), GRPCS (HTTP/2 over
// TLS); ingress-nginx's AUTO_HTTP is HTTP. TLS is always verified: against
// the system's CAs for the name of backend-tls-sni (ingress-nginx:
// proxy-ssl-name), else the Service's cluster DNS name; a BackendTLSPolicy
// targeting the Service port takes precedence. ingress-nginx's
// proxy-ssl-verify "off" cannot be honoured.
func (a *annotationReader) backendProtocol(s *settings) {
	v, key, ok := a.get("backend-protocol", "backend-protocol")
	if ok {
		switch strings.ToUpper(v) {
		case "HTTP", "AUTO_HTTP":
			s.protocol = ir.AppProtocolHTTP1
		case "H2C", "GRPC":
			s.protocol = ir.AppProtocolH2C
		case "HTTPS":
			s.protocol, s.tls = ir.AppProtocolHTTP1, true
		case "GRPCS":
			s.protocol, s.tls = ir.AppProtocolHTTP2, true
		default:
			a.invalid(key, "%q is not HTTP, H2C, GRPC, HTTPS or GRPCS", v)
		}
	}
	if v, key, ok := a.get("backend-tls-sni", "proxy-ssl-name"); ok {
		if why := gatewayapi.ValidHostname(v); why != "" || strings.HasPrefix(v, "*") {
			a.invalid(key, "%q is not a host name", v)
		} else {
			s.tlsName = v
		}
	}
	if v, ok := a.values[NginxPrefix+"proxy-ssl-verify"]; ok {
		a.read[NginxPrefix+"proxy-ssl-verify"] = true
		if strings.EqualFold(strings.TrimSpace(v), "off") {
			a.invalid(NginxPrefix+"proxy-ssl-verify", "backend TLS is always verified (use a BackendTLSPolicy with the backend's CA)")
		}
	}
}

// applyBackend makes b speak the protocol the annotations ask for. A
// changed protocol is a cluster of its own: "/h2c" (as a GRPCRoute's),
// "/http1", or "/tls/<name>" is appended to the backend's name. A
// BackendTLSPolicy on the port (b.TLS) stays as it is.
func (s *settings) applyBackend(b *ir.Backend, ns, svc string) {
	if s.protocol != "" && s.protocol != b.Protocol {
		b.Protocol = s.protocol
		if s.protocol == ir.AppProtocolHTTP1 {
			b.Name += "/http1"
		} else {
			b.Name += "/" + strings.ToLower(string(s.protocol))
		}
	}
	if s.tls && b.TLS == nil {
		name := cmp.Or(s.tlsName, svc+"."+ns+".svc")
		b.TLS = &ir.BackendTLS{SNI: name, WellKnownCACertificates: true}
		b.Name += "/tls/" + name
	}
	s.applyLoadBalancer(b)
}

// applyRoute gives a route the backend protocol, filters and timeouts of
// the annotations, and, for a path (rewrite), the rewrite-target; a route
// that answers an error keeps answering it, and every route answers
// FailureStatus when an authentication annotation cannot be honoured.
func (s *settings) applyRoute(r *ir.HTTPRoute, ns, svc string, path pathMatch, rewrite bool) {
	if r.Backends == nil {
		return
	}
	if s.authFailed {
		r.Backends, r.DirectResponse = nil, &ir.DirectResponse{StatusCode: FailureStatus}
		return
	}
	for _, b := range r.Backends.Backends {
		s.applyBackend(b, ns, svc)
	}
	r.Filters = *s.filters.DeepCopy()
	r.Timeouts = s.timeouts.DeepCopy()
	if s.applyTraffic(r); r.Backends == nil {
		return // a redirect
	}
	if rewrite && s.rewrite != "" {
		if r.Filters.URLRewrite == nil {
			r.Filters.URLRewrite = &ir.URLRewrite{}
		}
		r.Filters.URLRewrite.Path = &ir.PathModifier{Type: ir.RegexReplace, Pattern: path.rewritePattern(s.rewriteRefs()), Value: s.rewrite}
	}
}

// rewriteRefs is the highest group the rewrite-target refers to (\n).
func (s *settings) rewriteRefs() int {
	n := 0
	for i := 0; i+1 < len(s.rewrite); i++ {
		if s.rewrite[i] == '\\' && s.rewrite[i+1] >= '0' && s.rewrite[i+1] <= '9' {
			n = max(n, int(s.rewrite[i+1]-'0'))
		}
	}
	return n
}

// redirectsToHTTPS says whether the paths of host answer HTTP with a
// redirect to HTTPS: force-ssl-redirect, or ssl-redirect for a host of the
// Ingress's spec.tls (a tls entry without hosts covers every host).
func (s *settings) redirectsToHTTPS(ing *networkingv1.Ingress, host string) bool {
	if s.forceSSLRedirect {
		return true
	}
	if !s.sslRedirect {
		return false
	}
	for _, t := range ing.Spec.TLS {
		if len(t.Hosts) == 0 || slices.Contains(t.Hosts, host) {
			return true
		}
	}
	return false
}

func ptrTo[T any](v T) *T { return &v }
