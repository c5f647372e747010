package configdump

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	cachetypes "github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	bootstrap "github.com/xds-controller/xds-controller/envoy-bootstrap"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// fileSecrets are the secrets Envoy's bootstrap reads from files (file
// SDS: the xDS channel's own SVID and trust bundle, envoy-bootstrap): the
// dump lists them among the dynamic secrets, but no xDS snapshot holds
// them.
var fileSecrets = []string{bootstrap.SVIDSecretName, bootstrap.BundleSecretName}

// Set is a set of xDS resources for comparison: type name -> resource name
// -> the resource as generic proto3 JSON (proto field names, "@type"
// first level), secrets redacted.
type Set map[string]map[string]any

// dynamicEntries says, per type, which lists of the dump section hold
// the resources the control plane sent, and under which key of an entry
// (and, for listeners, of its state) the resource is.
var dynamicEntries = map[string]struct {
	lists []string
	state []string // listeners: active_state, else warming_state
	key   string
}{
	"listeners": {lists: []string{"dynamic_listeners"}, state: []string{"active_state", "warming_state"}, key: "listener"},
	"routes":    {lists: []string{"dynamic_route_configs"}, key: "route_config"},
	"clusters":  {lists: []string{"dynamic_active_clusters", "dynamic_warming_clusters"}, key: "cluster"},
	"endpoints": {lists: []string{"dynamic_endpoint_configs"}, key: "endpoint_config"},
	"secrets":   {lists: []string{"dynamic_active_secrets", "dynamic_warming_secrets"}, key: "secret"},
}

// Resources returns the dynamic resources (those xDS delivered; static
// ones and the file SDS secrets come from the bootstrap) of types (nil:
// every type) that d holds,
// and the version_info of each type (the versions its entries name,
// comma-separated, "" when none). A listener that is warming counts when
// it has no active state. Resources are decoded and rendered again by
// the same proto3 JSON encoder as SnapshotSet's, so that formatting never
// shows as drift; one that does not decode is kept as Envoy printed it.
func (d *Dump) Resources(types []string) (Set, map[string]string) {
	if len(types) == 0 {
		types = TypeNames
	}
	set, versions := Set{}, map[string]string{}
	for _, typ := range types {
		set[typ] = map[string]any{}
		var vs []string
		spec := dynamicEntries[typ]
		for _, c := range d.Configs {
			if c["@type"] != dumpTypes[typ] {
				continue
			}
			for _, list := range spec.lists {
				entries, _ := c[list].([]any)
				for _, e := range entries {
					entry, _ := e.(map[string]any)
					for _, st := range spec.state {
						if s, ok := entry[st].(map[string]any); ok {
							entry = s
							break
						}
					}
					res, ok := entry[spec.key].(map[string]any)
					if !ok {
						continue
					}
					name, norm := normalize(typ, res)
					if typ == "secrets" && slices.Contains(fileSecrets, name) {
						continue
					}
					if v, _ := entry["version_info"].(string); v != "" && !slices.Contains(vs, v) {
						vs = append(vs, v)
					}
					if _, dup := set[typ][name]; !dup {
						set[typ][name] = norm
					}
				}
			}
		}
		slices.Sort(vs)
		versions[typ] = strings.Join(vs, ",")
	}
	return set, versions
}

// normalize decodes and renders one resource of a dump again (secrets
// redacted) and returns its name.
func normalize(typ string, res map[string]any) (string, any) {
	if typ == "secrets" || typ == "routes" {
		res = Redact(res)
	} else if m, err := canonical(res); err == nil {
		if j, err := toJSONMap(m); err == nil {
			res = j
		}
	}
	key := "name"
	if typ == "endpoints" {
		key = "cluster_name"
		res = withoutEndpointDefaults(res)
	}
	name, _ := res[key].(string)
	return name, res
}

// withoutEndpointDefaults returns a copy of a ClusterLoadAssignment (generic
// JSON) without the values Envoy fills in when it dumps EDS (it rebuilds
// the assignment from its host set rather than keeping the one it
// received): an endpoint's empty health_check_config, health_status
// HEALTHY and load_balancing_weight 1; a locality's empty locality and
// load_balancing_weight 0; policy.overprovisioning_factor 140 (Envoy's
// default). Both sides of a comparison go through it, so a value the
// controller sets explicitly to one of those defaults is not drift.
func withoutEndpointDefaults(cla map[string]any) map[string]any {
	out := maps.Clone(cla)
	if p, ok := out["policy"].(map[string]any); ok {
		p = maps.Clone(p)
		if f, ok := p["overprovisioning_factor"].(float64); ok && f == 140 {
			delete(p, "overprovisioning_factor")
		}
		if len(p) == 0 {
			delete(out, "policy")
		} else {
			out["policy"] = p
		}
	}
	groups, _ := out["endpoints"].([]any)
	ng := make([]any, 0, len(groups))
	for _, g := range groups {
		gm, ok := g.(map[string]any)
		if !ok {
			ng = append(ng, g)
			continue
		}
		gm = maps.Clone(gm)
		dropIf(gm, "locality", func(v any) bool { m, ok := v.(map[string]any); return ok && len(m) == 0 })
		dropIf(gm, "load_balancing_weight", func(v any) bool { return v == float64(0) })
		eps, _ := gm["lb_endpoints"].([]any)
		ne := make([]any, 0, len(eps))
		for _, e := range eps {
			em, ok := e.(map[string]any)
			if !ok {
				ne = append(ne, e)
				continue
			}
			em = maps.Clone(em)
			dropIf(em, "health_status", func(v any) bool { return v == "HEALTHY" })
			dropIf(em, "load_balancing_weight", func(v any) bool { return v == float64(1) })
			if ep, ok := em["endpoint"].(map[string]any); ok {
				ep = maps.Clone(ep)
				dropIf(ep, "health_check_config", func(v any) bool { m, ok := v.(map[string]any); return ok && len(m) == 0 })
				em["endpoint"] = ep
			}
			ne = append(ne, em)
		}
		if eps != nil {
			gm["lb_endpoints"] = ne
		}
		ng = append(ng, gm)
	}
	if groups != nil {
		out["endpoints"] = ng
	}
	return out
}

func dropIf(m map[string]any, key string, isDefault func(any) bool) {
	if v, ok := m[key]; ok && isDefault(v) {
		delete(m, key)
	}
}

// SnapshotSet returns the resources of types (nil: every type) of one
// scope's xDS snapshot r, secrets redacted (translate.Redact).
func SnapshotSet(r *xdstranslator.Resources, types []string) (Set, error) {
	if len(types) == 0 {
		types = TypeNames
	}
	lists := map[string][]cachetypes.Resource{}
	if r != nil {
		lists = map[string][]cachetypes.Resource{"listeners": r.Listeners, "routes": r.Routes, "clusters": r.Clusters, "endpoints": r.Endpoints, "secrets": r.Secrets}
	}
	set := Set{}
	for _, typ := range types {
		set[typ] = map[string]any{}
		for _, res := range lists[typ] {
			m, err := toJSONMap(res)
			if err != nil {
				return nil, err
			}
			if typ == "secrets" || typ == "routes" {
				m = Redact(m)
			}
			key := "name"
			if typ == "endpoints" {
				key = "cluster_name"
				m = withoutEndpointDefaults(m)
			}
			name, _ := m[key].(string)
			set[typ][name] = m
		}
	}
	return set, nil
}

// Drift is the comparison of the controller's snapshot with what an Envoy
// holds.
type Drift struct {
	// Differ lists "type/name" of every resource that is missing on one
	// side or differs, sorted.
	Differ []string
	// Unified is a unified diff of the two sets as YAML (type -> name ->
	// resource), "" when they are equal.
	Unified string
}

// Compare compares want (the controller's snapshot; label names it in the
// diff's header) with got (the Envoy's; gotLabel), resource by resource.
func Compare(want, got Set, wantLabel, gotLabel string) (Drift, error) {
	var d Drift
	for _, typ := range TypeNames {
		names := map[string]bool{}
		for n := range want[typ] {
			names[n] = true
		}
		for n := range got[typ] {
			names[n] = true
		}
		for _, n := range slices.Sorted(maps.Keys(names)) {
			w, wok := want[typ][n]
			g, gok := got[typ][n]
			if wok != gok || !reflect.DeepEqual(w, g) {
				d.Differ = append(d.Differ, typ+"/"+n)
			}
		}
	}
	if len(d.Differ) == 0 {
		return d, nil
	}
	a, err := yaml.Marshal(want)
	if err != nil {
		return d, err
	}
	b, err := yaml.Marshal(got)
	if err != nil {
		return d, err
	}
	d.Unified, err = difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(a)), B: difflib.SplitLines(string(b)),
		FromFile: wantLabel, ToFile: gotLabel, Context: 3,
	})
	if err != nil {
		return d, fmt.Errorf("diff: %w", err)
	}
	return d, nil
}
