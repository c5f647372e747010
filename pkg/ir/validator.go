package ir

import (
	"github.com/xds-controller/xds-controller/internal/memo"
)

// Validator validates IRs one after the other (Validator.Validate),
// checking again only the HTTP routes it has not seen: an IR route is
// immutable (a route that changes is a new object, as pkg/gatewayapi's
// Cache makes them), so a route checked in an earlier run keeps its
// verdict. What routes must agree on across the IR (a backend or
// certificate name means one thing; a route name is unique in its virtual
// host) is counted per use, so that a new route is checked against the
// routes still there. Everything else (Gateways, listeners, L4 routes) is
// few and checked every time. Not safe for concurrent use; the zero value
// is not usable (NewValidator).
type Validator struct {
	listeners map[string]*listenerRoutes
	backends  map[string]*counted[*Backend]
	certs     map[string]*counted[*Certificate]
	// run counts the runs, so that a route seen twice in one shows.
	run uint64
}

// listenerRoutes are the HTTP routes of one IR listener (by name) seen in
// the last run, and how many of them have each name and hostname.
type listenerRoutes struct {
	routes memo.Table[*HTTPRoute, *routeUses]
	names  map[[2]string]int
}

// routeUses are the backends and certificates one route uses, by name,
// and the last run that saw the route.
type routeUses struct {
	backends map[string]*Backend
	certs    map[string]*Certificate
	run      uint64
}

// counted is a definition and the number of routes that use it.
type counted[T any] struct {
	def  T
	uses int
}

// NewValidator returns a Validator that has seen nothing.
func NewValidator() *Validator {
	return &Validator{listeners: map[string]*listenerRoutes{}, backends: map[string]*counted[*Backend]{}, certs: map[string]*counted[*Certificate]{}}
}

func (v *Validator) backend(name string) (*Backend, bool) {
	c := v.backends[name]
	if c == nil {
		return nil, false
	}
	return c.def, true
}

func (v *Validator) cert(name string) (*Certificate, bool) {
	c := v.certs[name]
	if c == nil {
		return nil, false
	}
	return c.def, true
}

// Validate checks x like IR.Validate and returns what IR.Validate returns:
// when a check fails, the whole IR is checked again by IR.Validate, whose
// errors it returns. After an error v starts over.
func (v *Validator) Validate(x *IR) error {
	if !v.check(x) {
		*v = *NewValidator()
		return x.Validate()
	}
	return nil
}

// check reports whether x is valid: the HTTP routes not seen before are
// checked (with the definitions of those still there), then the rest of x
// (with the definitions of every route).
func (v *Validator) check(x *IR) bool {
	type newRoute struct {
		l *listenerRoutes
		r *HTTPRoute
		u *routeUses
	}
	var fresh []newRoute
	live := map[string]bool{}
	ok := true
	v.run++
	for _, gw := range x.Gateways {
		for _, l := range gw.Listeners {
			lr := v.listeners[l.Name]
			if lr == nil {
				lr = &listenerRoutes{names: map[[2]string]int{}}
				v.listeners[l.Name] = lr
			}
			live[l.Name] = true
			for _, r := range l.HTTPRoutes {
				u, seen := lr.routes.Get(r)
				switch {
				case !seen:
					// What it uses is counted below, once the routes
					// gone have given theirs back.
					u = &routeUses{run: v.run}
					lr.routes.Put(r, u)
					fresh = append(fresh, newRoute{lr, r, u})
				case u.run == v.run:
					ok = false // one route object twice
				default:
					u.run = v.run
				}
			}
		}
	}
	for name, lr := range v.listeners {
		lr.routes.Sweep(func(r *HTTPRoute, u *routeUses) { v.release(lr, r, u) })
		if !live[name] {
			delete(v.listeners, name)
		}
	}
	for _, n := range fresh {
		key := [2]string{n.r.Name, n.r.Hostname}
		rv := newValidator(v)
		rv.httpRoute("", n.r)
		n.l.names[key]++
		if len(rv.errs) > 0 || n.l.names[key] > 1 {
			ok = false
		}
		n.u.backends, n.u.certs = rv.backends, rv.certs
		for name, b := range rv.backends {
			acquire(v.backends, name, b)
		}
		for name, c := range rv.certs {
			acquire(v.certs, name, c)
		}
	}
	rest := newValidator(v)
	rest.skipHTTPRoutes = true
	return x.validate(rest) == nil && ok
}

func acquire[T any](m map[string]*counted[T], name string, def T) {
	if c := m[name]; c != nil {
		c.uses++
		return
	}
	m[name] = &counted[T]{def: def, uses: 1}
}

// release takes back what route r of lr, gone, counted.
func (v *Validator) release(lr *listenerRoutes, r *HTTPRoute, u *routeUses) {
	key := [2]string{r.Name, r.Hostname}
	if lr.names[key]--; lr.names[key] <= 0 {
		delete(lr.names, key)
	}
	for name := range u.backends {
		if c := v.backends[name]; c != nil {
			if c.uses--; c.uses == 0 {
				delete(v.backends, name)
			}
		}
	}
	for name := range u.certs {
		if c := v.certs[name]; c != nil {
			if c.uses--; c.uses == 0 {
				delete(v.certs, name)
			}
		}
	}
}
