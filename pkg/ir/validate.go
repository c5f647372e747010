package ir

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/xds-controller/xds-controller/pkg/re2"
)

var errNotDurationString = errors.New("ir: duration must be a quoted Go duration string such as \"1.5s\"")

// ValidationError is one broken invariant, located by a path through the IR
// such as `gateway default/gw: listener default/gw/http: route httproute/...`.
type ValidationError struct {
	Path    string
	Message string
}

func (e *ValidationError) Error() string { return e.Path + ": " + e.Message }

// Validate checks the invariants the xDS translator relies on and returns
// every violation joined with errors.Join (each a *ValidationError), or nil.
//
// The invariants: gateways sorted and unique, each with a scope; listener
// names unique and ports 1-65535 within a scope; listeners that share an
// address and port in one scope are compatible (all HTTP, or all
// SNI-distinguished HTTPS/TLS, or one TCP, or one UDP); HTTPS listeners
// and TLS listeners in mode Terminate carry certificates; every HTTP route has exactly one action (backends, a
// redirect or a direct response); matches are well formed; header
// modifiers leave Host and the pseudo-headers alone, regular expressions
// are ones Envoy's RE2 parses and source ranges are CIDRs, and a request's Host
// has at most one rewrite (the route's or its backend's); a listener's
// Tracing is well formed (tracing.go); every backend and
// certificate name (serving certificates and backend client certificates
// alike) means one thing across the whole IR.
func (x *IR) Validate() error {
	return x.validate(newValidator(nil))
}

func newValidator(seen *Validator) *validator {
	return &validator{backends: map[string]*Backend{}, certs: map[string]*Certificate{}, seen: seen}
}

// validate checks x with v (Validate).
func (x *IR) validate(v *validator) error {
	type bind struct {
		scope, addr string
		port        uint32
		udp         bool
	}
	binds := map[bind][]*Listener{}
	names := map[string]bool{}
	for i, gw := range x.Gateways {
		p := "gateway " + gw.Namespace + "/" + gw.Name
		if gw.Namespace == "" || gw.Name == "" {
			v.add(p, "namespace and name are required")
		}
		if gw.Scope == "" {
			v.add(p, "scope is required")
		}
		if i > 0 {
			prev := x.Gateways[i-1]
			if prev.Namespace > gw.Namespace || (prev.Namespace == gw.Namespace && prev.Name >= gw.Name) {
				v.add(p, "gateways must be sorted by namespace and name, without duplicates")
			}
		}
		for _, l := range gw.Listeners {
			lp := p + ": listener " + l.Name
			key := gw.Scope + "\x00" + l.Name
			if names[key] {
				v.add(lp, "listener name is not unique in scope "+gw.Scope)
			}
			names[key] = true
			v.listener(lp, l)
			b := bind{scope: gw.Scope, addr: l.Address, port: l.Port, udp: l.Protocol == ProtocolUDP}
			binds[b] = append(binds[b], l)
		}
	}
	keys := make([]bind, 0, len(binds))
	for b := range binds {
		keys = append(keys, b)
	}
	slices.SortFunc(keys, func(a, b bind) int {
		return cmp.Or(cmp.Compare(a.scope, b.scope), cmp.Compare(a.addr, b.addr), cmp.Compare(a.port, b.port), cmp.Compare(fmt.Sprint(a.udp), fmt.Sprint(b.udp)))
	})
	for _, b := range keys {
		if err := compatible(binds[b]); err != "" {
			v.add(fmt.Sprintf("scope %s: %s:%d", b.scope, b.addr, b.port), err)
		}
	}
	if _, err := x.GlobalRateLimitsByScope(); err != nil { // ratelimit.go
		v.add("global rate limits", err.Error())
	}
	return errors.Join(v.errs...)
}

type validator struct {
	errs     []error
	backends map[string]*Backend
	certs    map[string]*Certificate
	// seen, when set, holds the backends and certificates of the HTTP
	// routes a Validator checked in earlier runs, which every use must
	// agree with too; skipHTTPRoutes leaves the HTTP routes of listeners
	// to the Validator (validator.go).
	seen           *Validator
	skipHTTPRoutes bool
	// uses, when set, records the backends and certificates checked.
	uses *routeUses
}

func (v *validator) add(path, msg string) {
	v.errs = append(v.errs, &ValidationError{Path: path, Message: msg})
}

func (v *validator) listener(p string, l *Listener) {
	if l.Name == "" {
		v.add(p, "name is required")
	}
	if l.Port == 0 || l.Port > 65535 {
		v.add(p, fmt.Sprintf("port %d is outside 1-65535", l.Port))
	}
	if _, err := netip.ParseAddr(l.Address); err != nil {
		v.add(p, fmt.Sprintf("address %q is not an IP address", l.Address))
	}
	switch l.Protocol {
	case ProtocolHTTP:
		if l.TLS != nil {
			v.add(p, "an HTTP listener has no TLS")
		}
	case ProtocolHTTPS:
		if l.TLS == nil || l.TLS.Mode != TLSTerminate || len(l.TLS.Certificates) == 0 {
			v.add(p, "an HTTPS listener terminates TLS with at least one certificate")
		}
	case ProtocolTLS:
		switch {
		case l.TLS == nil:
			v.add(p, "a TLS listener needs tls")
		case l.TLS.Mode == TLSPassthrough && len(l.TLS.Certificates) > 0:
			v.add(p, "a TLS listener in mode Passthrough has no certificates")
		case l.TLS.Mode == TLSTerminate && len(l.TLS.Certificates) == 0:
			v.add(p, "a TLS listener in mode Terminate needs at least one certificate")
		case l.TLS.Mode != TLSPassthrough && l.TLS.Mode != TLSTerminate:
			v.add(p, fmt.Sprintf("unknown tls.mode %q", l.TLS.Mode))
		}
	case ProtocolTCP, ProtocolUDP:
		if len(l.L4Routes) > 1 {
			v.add(p, "a TCP or UDP listener forwards to one route")
		}
	default:
		v.add(p, fmt.Sprintf("unknown protocol %q", l.Protocol))
	}
	if l.TLS != nil {
		for _, c := range l.TLS.Certificates {
			v.certificate(p, c)
		}
	}
	if l.Tracing != nil {
		v.tracing(p, l)
	}
	if l.Client != nil {
		v.client(p, l) // client.go
	}
	if len(l.HTTPRoutes) > 0 && l.Protocol != ProtocolHTTP && l.Protocol != ProtocolHTTPS {
		v.add(p, "HTTP routes attach only to HTTP and HTTPS listeners")
	}
	if len(l.ExtAuth) > 0 && l.Protocol != ProtocolHTTP && l.Protocol != ProtocolHTTPS {
		v.add(p, "external authorization applies only to HTTP and HTTPS listeners")
	}
	for _, a := range l.ExtAuth {
		v.extAuth(p, a)
	}
	if len(l.L4Routes) > 0 && (l.Protocol == ProtocolHTTP || l.Protocol == ProtocolHTTPS) {
		v.add(p, "TLS, TCP and UDP routes do not attach to HTTP or HTTPS listeners")
	}
	if !v.skipHTTPRoutes {
		routeNames := map[string]bool{}
		for _, r := range l.HTTPRoutes {
			rp := p + ": route " + r.Name
			if routeNames[r.Name+"\x00"+r.Hostname] {
				v.add(rp, "route name is not unique in its virtual host")
			}
			routeNames[r.Name+"\x00"+r.Hostname] = true
			v.httpRoute(rp, r)
		}
	}
	for _, r := range l.L4Routes {
		rp := p + ": route " + r.Name
		if len(r.Backends.Backends) == 0 {
			v.add(rp, "a route needs at least one backend")
		}
		for _, b := range r.Backends.Backends {
			v.backend(rp, b)
		}
	}
}

func (v *validator) certificate(p string, c *Certificate) {
	if c == nil || c.Name == "" || len(c.CertificateChain) == 0 || len(c.PrivateKey) == 0 {
		v.add(p, "a certificate needs a name, a chain and a key")
		return
	}
	prev, ok := v.certs[c.Name]
	if !ok && v.seen != nil {
		prev, ok = v.seen.cert(c.Name)
	}
	if ok {
		if !bytes.Equal(prev.CertificateChain, c.CertificateChain) || !bytes.Equal(prev.PrivateKey, c.PrivateKey) {
			v.add(p, "certificate "+c.Name+" has two different contents")
		}
	}
	if _, mine := v.certs[c.Name]; !mine {
		v.certs[c.Name] = c
	}
	if v.uses != nil {
		v.uses.certs = append(v.uses.certs, c)
	}
}

func (v *validator) httpRoute(p string, r *HTTPRoute) {
	if r.Name == "" || r.Hostname == "" {
		v.add(p, "name and hostname are required")
	}
	actions := 0
	if r.Backends != nil {
		actions++
		if len(r.Backends.Backends) == 0 {
			v.add(p, "a backend group needs at least one backend")
		}
		for _, b := range r.Backends.Backends {
			v.backend(p, b)
		}
	}
	if r.Filters.Redirect != nil {
		actions++
		switch r.Filters.Redirect.StatusCode {
		case 301, 302, 303, 307, 308:
		default:
			v.add(p, fmt.Sprintf("redirect status %d is not 301, 302, 303, 307 or 308", r.Filters.Redirect.StatusCode))
		}
		if m := r.Filters.Redirect.Path; m != nil && m.Type == RegexReplace {
			v.add(p, "a redirect cannot replace the path by a regular expression")
		}
	}
	if u := r.Filters.URLRewrite; u != nil && u.Path != nil && u.Path.Type == RegexReplace {
		if msg := re2Syntax(u.Path.Pattern); msg != "" {
			v.add(p, fmt.Sprintf("rewrite pattern %q %s", u.Path.Pattern, msg))
		}
	}
	for _, c := range r.Filters.AllowedSourceRanges {
		if pfx, err := netip.ParsePrefix(c); err != nil || pfx.Masked() != pfx {
			v.add(p, fmt.Sprintf("allowed source range %q is not a canonical CIDR", c))
		}
	}
	if r.DirectResponse != nil {
		actions++
		if c := r.DirectResponse.StatusCode; c < 200 || c > 599 {
			v.add(p, fmt.Sprintf("direct response status %d is outside 200-599", c))
		}
	}
	if actions != 1 {
		v.add(p, fmt.Sprintf("a route has exactly one of backends, redirect and direct response; this one has %d", actions))
	}
	if m := r.Match.Path; m != nil {
		if m.Type != MatchRegex && !strings.HasPrefix(m.Value, "/") {
			v.add(p, fmt.Sprintf("path %q must start with /", m.Value))
		}
		v.match(p, "path", *m)
	}
	for _, m := range r.Match.Headers {
		v.match(p, "header", m)
	}
	for _, m := range r.Match.QueryParams {
		v.match(p, "query parameter", m)
	}
	v.headers(p, "request", r.Filters.RequestHeaders)
	v.headers(p, "response", r.Filters.ResponseHeaders)
	if r.Filters.URLRewrite != nil && r.Filters.URLRewrite.Hostname != "" && r.Backends != nil {
		for _, b := range r.Backends.Backends {
			if b.HostRewrite != "" {
				v.add(p, "backend "+b.Name+": a Host rewrite on a backend of a route that rewrites Host already")
			}
		}
	}
	if r.SessionPersistence != nil {
		if r.Backends == nil {
			v.add(p, "session persistence needs backends")
		}
		v.session(p, r.SessionPersistence)
	}
	if t := r.Traffic; t != nil {
		v.traffic(p, t)
	}
	if a := r.Filters.ExtAuth; a != nil {
		v.extAuth(p, a)
	}
	if a := r.Filters.BasicAuth; a != nil {
		v.basicAuth(p, a)
	}
	if a := r.Filters.APIKeyAuth; a != nil {
		v.apiKeyAuth(p, a)
	}
	if j := r.Filters.JWT; j != nil {
		v.jwt(p, j)
	}
	if a := r.Filters.Authorization; a != nil {
		v.authorization(p, a, r.Filters.JWT)
	}
	if o := r.Filters.OIDC; o != nil {
		v.oidc(p, o)
	}
	if a := r.Filters.SecurityExtAuth; a != nil {
		v.extAuth(p, a)
	}
	for _, m := range r.Filters.Mirrors {
		if m.Backend == nil || m.Percent < 0 || m.Percent > 100 {
			v.add(p, "a mirror needs a backend and a percent within 0-100")
			continue
		}
		v.backend(p, m.Backend)
	}
}

func (v *validator) match(p, what string, m StringMatch) {
	switch m.Type {
	case MatchExact:
	case MatchRegex:
		// An expression Envoy's RE2 does not parse would make it refuse
		// the whole route table.
		if msg := re2Syntax(m.Value); msg != "" {
			v.add(p, fmt.Sprintf("%s match %q %s", what, m.Value, msg))
		}
	case MatchPathPrefix:
		if what != "path" {
			v.add(p, what+" match cannot be PathPrefix")
		}
	default:
		v.add(p, fmt.Sprintf("%s match type %q is unknown", what, m.Type))
	}
	if what != "path" && m.Name == "" {
		v.add(p, what+" match needs a name")
	}
}

func (v *validator) backend(p string, b *Backend) {
	if b == nil || b.Name == "" {
		v.add(p, "a backend needs a name")
		return
	}
	if b.RequestHeaders != nil || b.ResponseHeaders != nil {
		bp := p + ": backend " + b.Name
		v.headers(bp, "request", b.RequestHeaders)
		v.headers(bp, "response", b.ResponseHeaders)
	}
	if b.TLS != nil && b.TLS.ClientCertificate != nil {
		v.certificate(p+": backend "+b.Name+": client certificate", b.TLS.ClientCertificate)
	}
	if rb := b.RetryBudget; rb != nil && rb.Percent > 100 {
		v.add(p, fmt.Sprintf("backend %s: retry budget percent %d is over 100", b.Name, rb.Percent))
	}
	if b.SessionPersistence != nil {
		v.session(p+": backend "+b.Name, b.SessionPersistence)
	}
	if bp := b.Policy; bp != nil {
		for _, msg := range bp.problems() { // backend.go
			v.add(p, "backend "+b.Name+": "+msg)
		}
	}
	if !b.Invalid {
		for _, e := range b.Endpoints {
			if e.Address == "" || e.Port == 0 || e.Port > 65535 {
				v.add(p, fmt.Sprintf("backend %s: endpoint %q:%d is not an address and port", b.Name, e.Address, e.Port))
			}
		}
	}
	// A backend name is one Envoy cluster: every use must agree on what it
	// is. Weight and backendRef-level filters (headers, Host rewrite)
	// belong to the use, not the cluster.
	cluster := definition(b)
	prev, ok := v.backends[b.Name]
	if !ok && v.seen != nil {
		prev, ok = v.seen.backend(b.Name)
	}
	if ok && !reflect.DeepEqual(prev, cluster) {
		v.add(p, "backend "+b.Name+" is used with two different definitions")
	}
	if _, mine := v.backends[b.Name]; !mine {
		v.backends[b.Name] = cluster
	}
	if v.uses != nil {
		v.uses.backends = append(v.uses.backends, cluster)
	}
}

// definition is what a backend name means, the same wherever it is used:
// the backend without what belongs to one use (weight, backendRef-level
// filters).
func definition(b *Backend) *Backend {
	cluster := *b
	cluster.Weight, cluster.RequestHeaders, cluster.ResponseHeaders, cluster.HostRewrite = 0, nil, nil, ""
	return &cluster
}

// re2Syntax says why Envoy's RE2 would not parse expression e (or that it
// is empty), "" when it does. Its program size is pre-validation's to
// check (xdsvalidate), which blames the route instead of failing the IR.
func re2Syntax(e string) string {
	if e == "" {
		return "is empty"
	}
	if _, err := re2.ProgramSize(e); err != nil {
		return "is not a valid RE2 regular expression: " + err.Error()
	}
	return ""
}

// session checks a route's session persistence: a name that is an RFC
// 7230 token (a cookie name or a header name, in Set-Cookie or a header
// line as it is), a cookie path that starts with "/" without control
// characters or ";" (RFC 6265 path-value), a Max-Age of whole seconds
// (Envoy's cookie ttl counts seconds; 0 would make a session cookie), and
// neither for a header.
func (v *validator) session(p string, s *SessionPersistence) {
	if !isToken(s.Name) {
		v.add(p, fmt.Sprintf("session persistence name %q is not an RFC 7230 token", s.Name))
	}
	switch s.Type {
	case SessionCookie:
		if !strings.HasPrefix(s.CookiePath, "/") || strings.ContainsFunc(s.CookiePath, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ';' }) {
			v.add(p, fmt.Sprintf("session cookie path %q does not start with / or has a control character or ;", s.CookiePath))
		}
		if d := s.CookieMaxAge; d != nil && (d.Duration < time.Second || d.Duration%time.Second != 0) {
			v.add(p, fmt.Sprintf("session cookie Max-Age %s is not a whole number of seconds of at least 1s", d.Duration))
		}
	case SessionHeader:
		if s.CookiePath != "" || s.CookieMaxAge != nil || s.Secure {
			v.add(p, "a session header has no cookie path, Max-Age or Secure")
		}
	default:
		v.add(p, fmt.Sprintf("session persistence type %q is unknown", s.Type))
	}
}

// extAuth checks an external authorization check: a known protocol, a
// valid backend (HTTP/2 for GRPC: Envoy's gRPC client needs it), a path
// prefix (HTTP only) starting with "/", header names that are RFC 7230
// tokens, and no response headers for GRPC.
func (v *validator) extAuth(p string, a *ExtAuth) {
	if a == nil {
		v.add(p, "an external authorization check is nil")
		return
	}
	switch a.Protocol {
	case ExtAuthGRPC:
		if a.PathPrefix != "" || len(a.AllowedResponseHeaders) > 0 {
			v.add(p, "a GRPC external authorization check has no path prefix or response headers")
		}
		if a.Backend != nil && a.Backend.Protocol != AppProtocolHTTP2 && a.Backend.Protocol != AppProtocolH2C {
			v.add(p, "a GRPC external authorization service needs an HTTP/2 backend")
		}
	case ExtAuthHTTP:
		if a.PathPrefix != "" && !strings.HasPrefix(a.PathPrefix, "/") {
			v.add(p, fmt.Sprintf("external authorization path prefix %q must start with /", a.PathPrefix))
		}
		v.extAuthHTTPOptions(p, a)
	default:
		v.add(p, fmt.Sprintf("external authorization protocol %q is unknown", a.Protocol))
	}
	if a.SignIn != nil {
		v.extAuthSignIn(p, a)
	}
	for _, h := range append(slices.Clone(a.AllowedRequestHeaders), a.AllowedResponseHeaders...) {
		if !isToken(h) {
			v.add(p, fmt.Sprintf("external authorization header name %q is not an RFC 7230 token", h))
		}
	}
	if a.Backend == nil || a.Backend.Invalid {
		v.add(p, "an external authorization check needs a valid backend")
		return
	}
	v.backend(p, a.Backend)
}

// isToken says whether s is an RFC 7230 token: 1 or more of the
// characters tchar.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= 0x20 || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

// headers checks that a header modifier leaves Host and the
// pseudo-headers alone: Envoy refuses a route configuration that edits
// them (HeaderModifier).
func (v *validator) headers(p, what string, h *HeaderModifier) {
	if h == nil {
		return
	}
	names := make([]string, 0, len(h.Set)+len(h.Add)+len(h.Remove))
	for _, kv := range h.Set {
		names = append(names, kv.Name)
	}
	for _, kv := range h.Add {
		names = append(names, kv.Name)
	}
	names = append(names, h.Remove...)
	for _, n := range names {
		if strings.HasPrefix(n, ":") || strings.EqualFold(n, "host") {
			v.add(p, fmt.Sprintf("%s header modifier edits %q, which Envoy does not let a filter edit", what, n))
		}
	}
}

// compatible says why listeners bound to one address and port cannot share
// it, or returns "".
func compatible(ls []*Listener) string {
	if len(ls) < 2 {
		return ""
	}
	first := ls[0].Protocol
	sni := map[string]bool{}
	for _, l := range ls {
		switch {
		case first == ProtocolHTTP && l.Protocol == ProtocolHTTP:
		case (first == ProtocolHTTPS || first == ProtocolTLS) && (l.Protocol == ProtocolHTTPS || l.Protocol == ProtocolTLS):
			if sni[l.Hostname] {
				return fmt.Sprintf("two TLS listeners match the same server name %q", l.Hostname)
			}
			sni[l.Hostname] = true
		default:
			return fmt.Sprintf("listeners %s (%s) and %s (%s) cannot share a port", ls[0].Name, first, l.Name, l.Protocol)
		}
	}
	return ""
}
