package ir

import (
	"github.com/xds-controller/xds-controller/pkg/memo"
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
// is not usable (NewValidator). A cache, not IR: no deep copy.
//
// +kubebuilder:object:generate=false
type Validator struct {
	listeners map[string]*listenerRoutes
	backends  map[string]*counted[*Backend]
	certs     map[string]*counted[*Certificate]
}

// listenerRoutes are the HTTP routes of one IR listener (by name) seen in
// the last run, and how many of them have each name and hostname.
type listenerRoutes struct {
	routes memo.List[*HTTPRoute, *routeUses]
	names  map[[2]string]int
}

// routeUses are a route's name and hostname, and the definitions of the
// backends and certificates it uses.
type routeUses struct {
	key      [2]string
	backends []*Backend
	certs    []*Certificate
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
	if len(v.listeners) == 0 {
		// Every route is new: fresh is made at its size.
		n := 0
		for _, gw := range x.Gateways {
			for _, l := range gw.Listeners {
				n += len(l.HTTPRoutes)
			}
		}
		fresh = make([]newRoute, 0, n)
	}
	live := map[string]bool{}
	for _, gw := range x.Gateways {
		for _, l := range gw.Listeners {
			lr := v.listeners[l.Name]
			if lr == nil {
				lr = &listenerRoutes{names: make(map[[2]string]int, len(l.HTTPRoutes))}
				v.listeners[l.Name] = lr
			}
			live[l.Name] = true
			// What a new route uses is counted below, once the routes
			// gone have given theirs back.
			lr.routes.Update(l.HTTPRoutes, nil, func(j int) *routeUses {
				u := &routeUses{}
				fresh = append(fresh, newRoute{lr, l.HTTPRoutes[j], u})
				return u
			}, func(u *routeUses) { v.release(lr, u) })
		}
	}
	for name, lr := range v.listeners {
		if !live[name] {
			for _, u := range lr.routes.Values() {
				v.release(lr, u)
			}
			delete(v.listeners, name)
		}
	}
	ok := true
	// One validator checks the new routes against each other and against
	// those seen before; what each uses is counted once all are checked.
	rv := newValidator(v)
	rv.backends = make(map[string]*Backend, len(fresh))
	for _, n := range fresh {
		rv.uses = n.u
		rv.httpRoute("", n.r)
		n.u.key = [2]string{n.r.Name, n.r.Hostname}
		if n.l.names[n.u.key]++; n.l.names[n.u.key] > 1 {
			ok = false
		}
	}
	if len(rv.errs) > 0 {
		ok = false
	}
	if len(v.backends) == 0 {
		// Every backend is new: the map is made at its size.
		n := 0
		for _, f := range fresh {
			n += len(f.u.backends)
		}
		v.backends = make(map[string]*counted[*Backend], n)
	}
	for _, n := range fresh {
		for _, b := range n.u.backends {
			acquire(v.backends, b.Name, b)
		}
		for _, c := range n.u.certs {
			acquire(v.certs, c.Name, c)
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

// release takes back what a route of lr, gone, counted (nothing, when it
// was not counted yet).
func (v *Validator) release(lr *listenerRoutes, u *routeUses) {
	if u.key == [2]string{} {
		return
	}
	if lr.names[u.key]--; lr.names[u.key] <= 0 {
		delete(lr.names, u.key)
	}
	for _, b := range u.backends {
		if c := v.backends[b.Name]; c != nil {
			if c.uses--; c.uses == 0 {
				delete(v.backends, b.Name)
			}
		}
	}
	for _, cert := range u.certs {
		if c := v.certs[cert.Name]; c != nil {
			if c.uses--; c.uses == 0 {
				delete(v.certs, cert.Name)
			}
		}
	}
}
