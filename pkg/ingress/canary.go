package ingress

// Canary Ingresses (ingress-nginx's canary annotations, read under our
// prefix first): an Ingress with canary "true" serves no path of its own;
// each of its paths adds to the same host and path of another Ingress of
// the class (the main one), sending there the requests that carry a header
// (canary-by-header, and canary-by-header-value, else the value "always"),
// or a cookie (canary-by-cookie set to "always"), and a share of the rest
// (canary-weight out of canary-weight-total, 100 by default) to the canary
// Ingress's backend. As in ingress-nginx a header wins over a cookie, both
// over the weight, and the main Ingress's other settings apply to the
// canary's requests too.

import (
	"regexp"
	"strconv"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/re2"
)

// canary is what a canary Ingress asks for.
type canary struct {
	// weight of total requests (by weight) go to the canary; 0: none.
	weight, total int
	// header selects the canary when it has headerValue ("always" when
	// unset); cookie when the cookie's value is "always".
	header, headerValue, cookie string
}

// canaryIngress is a canary Ingress and its settings, read after the
// others.
type canaryIngress struct {
	is  *ingressState
	set settings
}

// readCanary reads the canary annotations: nil when the Ingress is not a
// canary (then the others are reported: they have no effect without it).
func (a *annotationReader) readCanary() *canary {
	keys := []string{"canary-weight", "canary-weight-total", "canary-by-header", "canary-by-header-value", "canary-by-cookie"}
	if !a.boolean("canary", "canary") {
		for _, k := range keys {
			if _, key, ok := a.get(k, k); ok {
				a.invalid(key, "it needs the canary annotation set to \"true\"")
			}
		}
		return nil
	}
	c := &canary{total: 100}
	number := func(name string, lo int) int {
		v, key, ok := a.get(name, name)
		if !ok {
			return -1
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo {
			a.invalid(key, "%q is not a whole number of at least %d", v, lo)
			return -1
		}
		return n
	}
	if n := number("canary-weight-total", 1); n > 0 {
		c.total = n
	}
	if n := number("canary-weight", 0); n > 0 {
		c.weight = min(n, c.total)
	}
	if v, key, ok := a.get("canary-by-header", "canary-by-header"); ok {
		if why := gatewayapi.ValidHeaderName(v); why != "" {
			a.invalid(key, "header name %q %s", v, why)
		} else {
			c.header = v
		}
	}
	if v, _, ok := a.get("canary-by-header-value", "canary-by-header-value"); ok {
		c.headerValue = v
	}
	if v, key, ok := a.get("canary-by-cookie", "canary-by-cookie"); ok {
		if why := gatewayapi.ValidHeaderName(v); why != "" {
			a.invalid(key, "cookie name %q %s", v, why)
		} else if why := re2.Problem(cookieMatch(v)); why != "" {
			a.invalid(key, "cookie name %q is too long: the Cookie header match Envoy gets %s", v, why)
		} else {
			c.cookie = v
		}
	}
	return c
}

// match is the header match that selects the canary's route: the header,
// else the cookie; nil for a canary by weight only.
func (c *canary) match() *ir.StringMatch {
	switch {
	case c.header != "":
		v := c.headerValue
		if v == "" {
			v = "always"
		}
		return &ir.StringMatch{Name: c.header, Type: ir.MatchExact, Value: v}
	case c.cookie != "":
		return &ir.StringMatch{Name: "cookie", Type: ir.MatchRegex, Value: cookieMatch(c.cookie)}
	}
	return nil
}

// cookieMatch is the regular expression of a Cookie header that sets
// cookie to "always".
func cookieMatch(cookie string) string {
	return `(?:.*;\s*)?` + regexp.QuoteMeta(cookie) + `=always(?:;.*)?`
}

// readCanary adds the paths of a canary Ingress to those of the main
// Ingresses already read. A path no other Ingress of the class serves, a
// path that has a canary already (the older canary keeps it), and a path
// whose main route or canary backend answers an error are reported and
// left as they are.
func (t *translator) readCanary(cs *classState, ci canaryIngress) {
	is, c := ci.is, ci.set.canary
	is.paths(ci.set.regex, func(i, j int, _ networkingv1.IngressRule, host hostRule, p networkingv1.HTTPIngressPath, pm pathMatch, where string) {
		main := cs.claims[host.vhost+" "+pm.String()]
		if alt, err := readPath(p, !ci.set.regex); main == nil && err == nil {
			// The main Ingress's paths may be regular expressions
			// (its rewrite-target) while the canary's are not, or
			// the other way round: the path is the same.
			main = cs.claims[host.vhost+" "+alt.String()]
		}
		switch {
		case main == nil:
			is.problemf(ReasonConflict, "%s: no other Ingress of the class serves host %s path %s, and a canary only adds to one; not served", where, host.vhost, pm)
			return
		case main.canary != nil || main.route.Backends != nil && len(main.route.Backends.Backends) > 1:
			is.problemf(ReasonConflict, "%s: host %s path %s has a canary already (an older Ingress's); this one is not served", where, host.vhost, pm)
			return
		case main.route.Backends == nil:
			is.problemf(ReasonConflict, "%s: host %s path %s of Ingress %s answers an error; the canary is not added", where, host.vhost, pm, main.owner)
			return
		}
		r := t.backend(is, p.Backend, where+".backend")
		if r.Backends == nil {
			return // reported; the main path keeps all of its traffic
		}
		for _, b := range r.Backends.Backends {
			ci.set.applyBackend(b, is.obj.Namespace, serviceName(p.Backend))
		}
		if m := c.match(); m != nil {
			cr := main.route.DeepCopy()
			nameRoute(cr, is.obj, i, j)
			cr.Backends = r.Backends.DeepCopy()
			cr.Match.Headers = []ir.StringMatch{*m}
			main.canary = &entry{owner: is, host: host, path: main.path, route: cr, sslRedirect: main.sslRedirect}
		}
		if c.weight > 0 {
			mb := main.route.Backends.Backends
			mb[0].Weight = uint32(c.total - c.weight)
			cb := r.Backends.Backends[0]
			cb.Weight = uint32(c.weight)
			main.route.Backends.Backends = append(mb, cb)
		}
	})
}
