// Package configdump is `xds-controller config-dump`: what an Envoy pod of
// a Gateway actually holds, read from its admin's /config_dump through the
// API server's port-forward (portforward.go; the admin listens on
// 127.0.0.1 inside the pod and is never exposed), filtered by resource
// type, with secrets' private keys redacted, as YAML (dump.go); and the
// drift between it and the controller's snapshot for the pod's scope
// (diff.go), that snapshot being computed locally by the controller's own
// pipeline on the objects the API server holds (local.go).
package configdump

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	"github.com/xds-controller/xds-controller/pkg/translate"
)

// TypeNames are the values of --type, in output order.
var TypeNames = []string{"listeners", "routes", "clusters", "endpoints", "secrets"}

// dumpTypes maps a type name to the @type of its section of /config_dump
// (envoy.admin.v3.*ConfigDump).
var dumpTypes = map[string]string{
	"listeners": "type.googleapis.com/envoy.admin.v3.ListenersConfigDump",
	"routes":    "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
	"clusters":  "type.googleapis.com/envoy.admin.v3.ClustersConfigDump",
	"endpoints": "type.googleapis.com/envoy.admin.v3.EndpointsConfigDump",
	"secrets":   "type.googleapis.com/envoy.admin.v3.SecretsConfigDump",
}

const bootstrapType = "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump"

// ParseTypes checks the --type values (nil or empty: every type) and
// returns them in TypeNames order, each once.
func ParseTypes(types []string) ([]string, error) {
	if len(types) == 0 {
		return nil, nil
	}
	var out []string
	for _, t := range types {
		if !slices.Contains(TypeNames, t) {
			return nil, fmt.Errorf("--type %q: must be one of %s", t, strings.Join(TypeNames, ", "))
		}
	}
	for _, t := range TypeNames {
		if slices.Contains(types, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// Query is the admin path that dumps types (nil: all): /config_dump,
// with include_eds when endpoints are wanted (Envoy leaves EDS out of the
// dump otherwise).
func Query(types []string) string {
	if len(types) == 0 || slices.Contains(types, "endpoints") {
		return "/config_dump?include_eds"
	}
	return "/config_dump"
}

// Dump is a decoded /config_dump: its sections (configs[]) as generic
// JSON objects, in Envoy's order.
type Dump struct {
	Configs []map[string]any `json:"configs"`
}

// Parse decodes the body of /config_dump.
func Parse(body []byte) (*Dump, error) {
	var d Dump
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("decoding /config_dump: %w", err)
	}
	return &d, nil
}

// Scope is the proxy scope of the dumping Envoy: the node.cluster of its
// bootstrap section ("" when there is none).
func (d *Dump) Scope() string {
	for _, c := range d.Configs {
		if c["@type"] != bootstrapType {
			continue
		}
		b, _ := c["bootstrap"].(map[string]any)
		node, _ := b["node"].(map[string]any)
		s, _ := node["cluster"].(string)
		return s
	}
	return ""
}

// Filter returns a copy of d with only the sections of types (nil: every
// section, the bootstrap's included) and every secret and route
// credential redacted (Redact).
func (d *Dump) Filter(types []string) *Dump {
	out := &Dump{Configs: []map[string]any{}}
	for _, c := range d.Configs {
		t, _ := c["@type"].(string)
		if len(types) > 0 && !slices.ContainsFunc(types, func(n string) bool { return dumpTypes[n] == t }) {
			continue
		}
		switch t {
		case dumpTypes["secrets"]:
			c = redactSection(c, secretLists, "secret")
		case dumpTypes["routes"]:
			c = redactSection(c, routeLists, "route_config")
		}
		out.Configs = append(out.Configs, c)
	}
	return out
}

// YAML renders d as YAML (keys sorted).
func (d *Dump) YAML() ([]byte, error) {
	return yaml.Marshal(d)
}

// secretLists are the lists of a SecretsConfigDump whose entries hold a
// `secret`; routeLists those of a RoutesConfigDump whose entries hold a
// `route_config`.
var (
	secretLists = []string{"static_secrets", "dynamic_active_secrets", "dynamic_warming_secrets"}
	routeLists  = []string{"static_route_configs", "dynamic_route_configs"}
)

// redactSection returns a copy of a SecretsConfigDump (field "secret" of
// the entries of secretLists) or RoutesConfigDump section (field
// "route_config" of routeLists) whose every secret or route
// configuration holding credentials went through Redact.
func redactSection(c map[string]any, lists []string, field string) map[string]any {
	out := make(map[string]any, len(c))
	for k, v := range c {
		out[k] = v
	}
	for _, list := range lists {
		entries, _ := c[list].([]any)
		if entries == nil {
			continue
		}
		red := make([]any, len(entries))
		for i, e := range entries {
			m, ok := e.(map[string]any)
			if !ok {
				continue
			}
			cp := make(map[string]any, len(m))
			for k, v := range m {
				cp[k] = v
			}
			if s, ok := m[field].(map[string]any); ok && (field == "secret" || holdsCredentials(s)) {
				cp[field] = Redact(s)
			}
			red[i] = cp
		}
		out[list] = red
	}
	return out
}

// credentialTypes are the per-route configurations whose credentials
// translate.Redact hides (SecurityPolicy apiKeyAuth and basicAuth).
var credentialTypes = []string{"envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuthPerRoute", "envoy.extensions.filters.http.basic_auth.v3.BasicAuthPerRoute"}

// holdsCredentials says whether a route configuration of a dump has a
// per-route configuration of credentialTypes (so that the others, which
// may hold extensions this binary cannot decode, are printed as Envoy
// gave them).
func holdsCredentials(rc map[string]any) bool {
	b, _ := json.Marshal(rc)
	return slices.ContainsFunc(credentialTypes, func(t string) bool { return bytes.Contains(b, []byte(t)) })
}

// Redact returns a resource of a config dump (the proto3 JSON of an xDS
// resource, with "@type") through translate.Redact (what `translate
// --output xds` prints): a secret's private key, and a route
// configuration's API keys and htpasswd users, replaced by "[redacted]".
// Envoy's admin already redacts private keys (not route credentials);
// this does not rely on it. A resource that does not decode is withheld:
// only its name is kept.
func Redact(secret map[string]any) map[string]any {
	m, err := canonical(secret)
	if err != nil {
		return map[string]any{"name": secret["name"], "withheld": "could not be decoded, so it is not printed: " + err.Error()}
	}
	m = translate.Redact(m)
	out, err := toJSONMap(m)
	if err != nil {
		return map[string]any{"name": secret["name"], "withheld": err.Error()}
	}
	return out
}

// canonical decodes a resource of a config dump (proto3 JSON with
// "@type") into its message.
func canonical(res map[string]any) (proto.Message, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var a anypb.Any
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &a); err != nil {
		return nil, err
	}
	return a.UnmarshalNew()
}

// toJSONMap renders m as the generic proto3 JSON (proto field names) of
// an Any: "@type" and its fields.
func toJSONMap(m proto.Message) (map[string]any, error) {
	a, err := anypb.New(m)
	if err != nil {
		return nil, err
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(a)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}
