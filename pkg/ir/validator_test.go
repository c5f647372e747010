package ir

import (
	"fmt"
	"testing"
)

// TestValidatorAcrossRuns: a Validator agrees with IR.Validate on every IR
// of a sequence in which routes come and go, where the rules that span
// routes (a backend name means one thing, a route name is unique in its
// virtual host) are broken by a new route against one checked in an
// earlier run, and mended by removing either.
func TestValidatorAcrossRuns(t *testing.T) {
	base := valid()
	l := base.Gateways[0].Listeners[0]
	first := l.HTTPRoutes[0]
	// other uses first's backend name with other endpoints.
	other := first.DeepCopy()
	other.Name = "httproute/default/other/rule/0/match/0"
	other.Backends.Backends[0].Endpoints = []Endpoint{{Address: "10.0.0.9", Port: 8080}}
	// same agrees with first's backend but has first's name and hostname.
	same := first.DeepCopy()
	// fine uses another backend name.
	fine := other.DeepCopy()
	fine.Name = "httproute/default/fine/rule/0/match/0"
	fine.Backends.Backends[0].Name = "service/default/t/80"
	with := func(routes ...*HTTPRoute) *IR {
		x := *base
		gw := *x.Gateways[0]
		lc := *l
		lc.HTTPRoutes = routes
		gw.Listeners = []*Listener{&lc}
		x.Gateways = []*Gateway{&gw}
		return &x
	}
	v := NewValidator()
	for i, c := range []struct {
		x       *IR
		invalid bool
	}{
		{with(first), false},
		{with(first, fine), false},
		{with(fine), false},
		{with(fine, other), false}, // first's backend went with it
		{with(first, fine), false},
		{with(first, fine, other), true}, // other's backend disagrees with first's
		{with(fine, other), false},       // first gone: other's definition is the only one
		{with(fine, other, first), true}, // and first disagrees with it again
		{with(first), false},
		{with(first, same), true}, // same name and hostname twice
		{with(same), false},
		{with(same, same), true}, // one object twice
		{with(fine), false},
	} {
		// check itself must agree (Validate falls back to IR.Validate
		// when it fails, which would hide a wrong "invalid").
		want := c.x.Validate()
		if ok := v.check(c.x); ok != (want == nil) || ok == c.invalid {
			t.Fatalf("run %d: the Validator's check says valid: %v; Validate says %v (want invalid: %v)", i, ok, want, c.invalid)
		}
		if want != nil {
			*v = *NewValidator() // as Validate does
		}
		if got := NewValidator().Validate(c.x); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("run %d: Validator.Validate says %v, IR.Validate %v", i, got, want)
		}
	}
}
