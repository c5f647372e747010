// Package translate runs the whole pure pipeline of xds-controller on one
// resource snapshot: Gateway API -> IR and status (pkg/gatewayapi), the
// Ingresses of our IngressClasses -> IR and status of their own
// (pkg/ingress), the two merged into one Result (merge.go), IR
// validation (pkg/ir), IR -> xDS (pkg/xdstranslator), pre-validation
// (pkg/xdsvalidate). The offline `translate` command calls Run; standalone
// mode and the controller keep a Cache, whose runs translate what changed
// since the last one. It renders both stages as YAML for golden tests and
// for people.
package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	goyaml "go.yaml.in/yaml/v2"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ingress"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
	"github.com/xds-controller/xds-controller/pkg/xdsvalidate"
)

// Output is what one run of the pipeline produced.
type Output struct {
	// Result is the IR and the status of every object.
	Result *Result
	// XDS is the xDS configuration per proxy scope.
	XDS map[string]*xdstranslator.Resources
	// Refused are the scopes whose xDS failed pre-validation
	// (pkg/xdsvalidate) in a way that no object can be blamed for; they
	// must not be published (their last good configuration keeps
	// serving). Their problems are listed.
	Refused map[string][]xdsvalidate.Problem
}

// Option tunes a Run beyond the Gateway API translation's options.
type Option func(*runConfig)

type runConfig struct {
	ingress ingress.Config
	holds   Holds
}

// WithIngress places the Ingresses of our IngressClasses (default: the
// zero ingress.Config, ports 80 and 443 of GatewayClass xds-controller's
// fleet).
func WithIngress(cfg ingress.Config) Option {
	return func(c *runConfig) { c.ingress = cfg }
}

// Run translates res (sorted) with opts from scratch: the Gateway API
// objects, then the Ingresses of our IngressClasses (ingress.Translate,
// with the same opts and the Gateway API translation's references), then
// merges the two (merge). It is the reference that
// Cache.Run, which translates only what changed, must equal. It fails
// when the IR breaks an invariant (a translator bug, reported with every
// violation) or the xDS translation fails; status is still returned in
// Output.Result then.
//
// A panic in a translator (a bug, never the input's fault) is returned as an
// error, so that one bad object cannot crash a long-running caller.
func Run(res *resources.Resources, opts gatewayapi.Options, more ...Option) (*Output, error) {
	return NewCache().Run(res, opts, more...)
}

// Cache carries what one run of the pipeline computed to the next run, so
// that a run costs what changed since the last one, not what exists:
// routes whose object and inputs are unchanged keep their IR and status,
// unchanged IR keeps its Envoy resources, and unchanged Envoy resources
// keep their validation verdict. Objects are recognised by identity: the
// caller hands over an object once and never modifies it afterwards (a
// changed object is a new pointer), as pkg/resources requires anyway.
//
// The output of a run shares unchanged parts with the previous run's
// output: neither may be modified. A Cache is not safe for concurrent use;
// the zero value is not usable (NewCache).
type Cache struct {
	gw  *gatewayapi.Cache
	ing *ingress.Cache
	irv *ir.Validator
	xds *xdstranslator.Cache
	// checks are the pre-validation caches, by scope.
	checks map[string]*xdsvalidate.Cache
}

// NewCache returns an empty cache: its first run translates everything.
func NewCache() *Cache {
	return &Cache{gw: gatewayapi.NewCache(), ing: ingress.NewCache(), irv: ir.NewValidator(), xds: xdstranslator.NewCache(), checks: map[string]*xdsvalidate.Cache{}}
}

// check pre-validates the xDS of every scope of x (xdsvalidate), and
// returns the problems by scope (nil when there are none).
func (c *Cache) check(x map[string]*xdstranslator.Resources) map[string][]xdsvalidate.Problem {
	for scope := range c.checks {
		if x[scope] == nil {
			delete(c.checks, scope)
		}
	}
	var problems map[string][]xdsvalidate.Problem
	for _, scope := range ScopeNames(x) {
		ch := c.checks[scope]
		if ch == nil {
			ch = xdsvalidate.NewCache()
			c.checks[scope] = ch
		}
		if ps := ch.Check(x[scope]); len(ps) > 0 {
			if problems == nil {
				problems = map[string][]xdsvalidate.Problem{}
			}
			problems[scope] = ps
		}
	}
	return problems
}

// Run translates res (sorted) with opts and more, like the package's Run,
// reusing what the previous run of c computed for the objects that did not
// change (the Ingresses of a class are translated again when the class,
// one of them or what they read changed: ingress.Cache, resolving their
// references in the Gateway API translation's indexes: Refs). The output is
// identical to Run's on the same input (the property test checks it).
// After a failure c starts over: the next run translates everything again.
func (c *Cache) Run(res *resources.Resources, opts gatewayapi.Options, more ...Option) (out *Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("translator panic (a bug; please report it with the input): %v", p)
		}
		if err != nil {
			*c = *NewCache()
		}
	}()
	var rc runConfig
	for _, o := range more {
		o(&rc)
	}
	gw := c.gw.Translate(res, opts)
	out = &Output{Result: merge(gw, c.ing.Translate(res, opts, rc.ingress, c.gw.Refs()))}
	// Objects whose Envoy routes Envoy refused (pkg/quarantine) leave
	// their scope before xDS is rendered.
	hold(res, out.Result, rc.holds)
	if err := c.irv.Validate(out.Result.IR); err != nil {
		return out, fmt.Errorf("invalid IR: %w", err)
	}
	x, err := c.xds.Translate(out.Result.IR)
	if err != nil {
		return out, fmt.Errorf("xDS translation: %w", err)
	}
	// Pre-validation: a problem inside an HTTPRoute's Envoy route is
	// blamed on that route rule, which answers 500 from then on (or, for a
	// match Envoy would refuse, loses that match), and the route gets
	// PartiallyInvalid=True; then the xDS is rendered again.
	// What is left (problems outside HTTPRoute routes) refuses the scope.
	problems := c.check(x)
	if blame(out.Result, problems) {
		if x, err = c.xds.Translate(out.Result.IR); err != nil {
			return out, fmt.Errorf("xDS translation: %w", err)
		}
		problems = c.check(x)
	}
	out.Refused = problems
	out.XDS = x
	return out, nil
}

// MarshalIR renders the IR and the status as YAML: the top-level keys are
// `ir`, `status` and, when there are any, `warnings`; status maps are keyed by "namespace/name" (a
// GatewayClass by its name). An Ingress's status shows its class, where it
// is served and its problems. Certificates' private keys read Redacted
// unless showSecrets is set, as in MarshalXDS.
func MarshalIR(r *Result, showSecrets bool) ([]byte, error) {
	st := map[string]any{}
	if r.Status != nil {
		gcs := map[string]any{}
		for k, v := range r.Status.GatewayClasses {
			gcs[k] = v
		}
		gws := map[string]any{}
		for k, v := range r.Status.Gateways {
			gws[k.String()] = v
		}
		st["gatewayClasses"], st["gateways"] = gcs, gws
		if len(r.Status.ListenerSets) > 0 {
			lss := map[string]any{}
			for k, v := range r.Status.ListenerSets {
				lss[k.String()] = v
			}
			st["listenerSets"] = lss
		}
		if len(r.Ingresses) > 0 {
			ings := map[string]any{}
			for k, v := range r.Ingresses {
				ings[k.String()] = v
			}
			st["ingresses"] = ings
		}
		// One map per policy kind: "backendTLSPolicies" (and "xBackends").
		for k, v := range r.Status.Policies {
			kind := strings.ToLower(k.Kind[:1]) + k.Kind[1:]
			if base, ok := strings.CutSuffix(kind, "y"); ok {
				kind = base + "ies"
			} else {
				kind += "s"
			}
			m, _ := st[kind].(map[string]any)
			if m == nil {
				m = map[string]any{}
				st[kind] = m
			}
			m[k.Namespace+"/"+k.Name] = v
		}
		// One map per route kind: "httpRoutes", "grpcRoutes".
		for k, v := range r.Status.Routes {
			kind := strings.ToLower(strings.TrimSuffix(k.Kind, "Route")) + "Routes"
			m, _ := st[kind].(map[string]any)
			if m == nil {
				m = map[string]any{}
				st[kind] = m
			}
			m[k.Namespace+"/"+k.Name] = v
		}
	}
	var irv any = r.IR
	if !showSecrets {
		v, err := redactIR(r.IR)
		if err != nil {
			return nil, err
		}
		irv = v
	}
	out := map[string]any{"ir": irv, "status": st}
	if r.Status != nil && len(r.Status.Warnings) > 0 {
		out["warnings"] = r.Status.Warnings
	}
	return marshalYAML(out)
}

// toMap returns m in the proto3 JSON mapping as generic values
// (decodeJSON).
func toMap(m proto.Message) (any, error) {
	j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	return decodeJSON(j)
}

// marshalYAML renders v as sigs.k8s.io/yaml.Marshal does (its JSON
// encoding, keys sorted, as YAML) without its JSON-to-YAML round trip,
// most of the translate command's time at thousands of routes: the JSON
// is read back by encoding/json (decodeJSON) and printed by
// go.yaml.in/yaml/v2, the library that round trip ends in.
func marshalYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	g, err := decodeJSON(j)
	if err != nil {
		return nil, err
	}
	return goyaml.Marshal(g)
}

// decodeJSON reads j as generic values: maps, lists, strings, bools, nil,
// and numbers as int64 (integral) or float64, the values
// go.yaml.in/yaml/v2 would read from the same JSON, so that printing them
// gives the same YAML as sigs.k8s.io/yaml.JSONToYAML.
func decodeJSON(j []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return plainNumbers(v), nil
}

// plainNumbers replaces, in place, every json.Number of v by an int64, or
// a float64 when it is not integral.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = plainNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainNumbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

// ScopeNames returns the scopes of x, sorted.
func ScopeNames(x map[string]*xdstranslator.Resources) []string {
	names := make([]string, 0, len(x))
	for k := range x {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
