// Package proxystatus is `xds-controller proxy-status`: one line per
// connected Envoy across every controller replica, with the state of each
// resource type against the scope's newest snapshot.
//
// Its source is the data-plane reports the replicas already publish for
// each other (pkg/provider/kubernetes, peers.go: a ConfigMap
// xds-controller-dataplane-<replica> in the controller's namespace holding
// an xdsserver.Report), so it needs no port on the controller: a user who
// may read those ConfigMaps may run it. Collect reads them (and the
// Gateways, to name each scope's Gateways); Build is the pure decision;
// Table, JSON and YAML print it.
//
// A proxy's state per resource type (listeners, routes, clusters,
// endpoints, secrets), against the newest version its replica published
// for its scope (Decide):
//   - SYNCED: it ACKed the newest version;
//   - NACKED: it rejected the newest version; Envoy's error_detail is kept;
//   - STALE: it holds an older version (or none yet), since the time a
//     newer one replaced it (or since it connected);
//   - UNKNOWN: its replica publishes no version for the scope (a replica of
//     an older release, or the scope just went away);
//   - "-": it never asked for the type (Envoy asks for endpoints and
//     secrets only when clusters and listeners need them).
package proxystatus

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/infra"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
)

// State is a proxy's state for one resource type.
type State string

// The states (see the package comment).
const (
	Synced        State = "SYNCED"
	Stale         State = "STALE"
	Nacked        State = "NACKED"
	Unknown       State = "UNKNOWN"
	NotSubscribed State = "-"
)

// ResourceType is one resource type: its short name (the column and the
// `config-dump --type` value) and its xDS type URL.
type ResourceType struct{ Name, URL string }

// Types are the resource types, in column order.
var Types = []ResourceType{
	{"listeners", resource.ListenerType},
	{"routes", resource.RouteType},
	{"clusters", resource.ClusterType},
	{"endpoints", resource.EndpointType},
	{"secrets", resource.SecretType},
}

// TypeState is one resource type of one proxy.
type TypeState struct {
	State State `json:"state"`
	// Version is the version the proxy last ACKed ("" none); Newest the
	// scope's newest version.
	Version string `json:"version,omitempty"`
	Newest  string `json:"newest,omitempty"`
	// StaleSince (STALE) is when the proxy fell behind (nil when
	// unknown); StaleSeconds the whole seconds since then at Input.Now.
	StaleSince   *time.Time `json:"staleSince,omitempty"`
	StaleSeconds int64      `json:"staleSeconds,omitempty"`
	// Rejected (NACKED) is the version the proxy rejected and Message
	// Envoy's error_detail.
	Rejected string `json:"rejected,omitempty"`
	Message  string `json:"message,omitempty"`
}

// Proxy is one connected Envoy.
type Proxy struct {
	// Pod is the Envoy pod (its node.id) and Namespace its namespace.
	Pod       string `json:"pod"`
	Namespace string `json:"namespace"`
	// Scope is the proxy scope (node.cluster); Gateways the Gateways it
	// serves, "namespace/name", sorted.
	Scope    string   `json:"scope"`
	Gateways []string `json:"gateways"`
	// Replica is the controller pod the proxy is connected to.
	Replica string `json:"replica"`
	// Connected is when its xDS stream opened (nil when unknown).
	Connected *time.Time `json:"connected,omitempty"`
	// Types are the states by resource type name (Types).
	Types map[string]TypeState `json:"types"`
	// SVIDExpiry is the NotAfter of the newest SVID known for the pod: the
	// newest the identity service issued it, else the one its xDS
	// connection presented (nil when neither is known).
	SVIDExpiry *time.Time `json:"svidExpiry,omitempty"`
}

// Input is what Build decides on.
type Input struct {
	// Reports are the replicas' data-plane reports, by replica (pod)
	// name.
	Reports map[string]xdsserver.Report
	// Gateways are the cluster's Gateways (nil when they could not be
	// read: proxies then list no Gateways).
	Gateways []*gwapiv1.Gateway
	// ControllerNamespace holds the shared fleets.
	ControllerNamespace string
	// Now is the time durations are measured to.
	Now time.Time
}

// Build returns one Proxy per connected Envoy, sorted by namespace, then
// pod. A proxy reported by two replicas (it moved, and one report is not
// rewritten yet) is listed once, from the report where it connected last
// (then the replica whose name sorts first). It is pure.
func Build(in Input) []Proxy {
	type found struct {
		replica string
		p       xdsserver.ReportedProxy
	}
	byNode := map[string]found{}
	replicas := slices.Sorted(maps.Keys(in.Reports))
	for _, name := range replicas {
		for _, p := range in.Reports[name].Proxies {
			key := p.Scope + "\x00" + p.NodeID
			if prev, ok := byNode[key]; ok && !p.Connected.After(prev.p.Connected) {
				continue
			}
			byNode[key] = found{name, p}
		}
	}
	gateways := scopeGateways(in)
	out := make([]Proxy, 0, len(byNode))
	for _, f := range byNode {
		p := f.p
		ns := podNamespace(p.Scope, in.ControllerNamespace)
		sc, scOK := scopeOf(in.Reports, f.replica, replicas, p.Scope)
		px := Proxy{Pod: p.NodeID, Namespace: ns, Scope: p.Scope, Gateways: gateways[p.Scope], Replica: f.replica,
			Connected: timePtr(p.Connected), Types: map[string]TypeState{}}
		if px.Gateways == nil {
			px.Gateways = []string{}
		}
		for _, t := range Types {
			ts, subscribed := p.Types[t.URL]
			px.Types[t.Name] = Decide(ts, subscribed, sc, scOK, p.Connected, in.Now)
		}
		exp := p.SVIDExpiry
		for _, name := range replicas {
			if e := in.Reports[name].SVIDs[ns+"/"+p.NodeID]; e.After(exp) {
				exp = e
			}
		}
		px.SVIDExpiry = timePtr(exp)
		out = append(out, px)
	}
	slices.SortFunc(out, func(a, b Proxy) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Pod, b.Pod), strings.Compare(a.Scope, b.Scope))
	})
	return out
}

// Decide is the state of one resource type of a proxy: ts is what the
// proxy did with the type (subscribed: it asked for it at all), sc the
// scope as the proxy's replica reports it (ok false when it does not),
// connected when the proxy's stream opened (zero when unknown), now the
// time durations are measured to. See the package comment for the states.
func Decide(ts xdsserver.TypeStatus, subscribed bool, sc xdsserver.ReportedScope, ok bool, connected, now time.Time) TypeState {
	if !subscribed {
		return TypeState{State: NotSubscribed}
	}
	out := TypeState{Version: ts.Acked, Newest: sc.Version}
	switch {
	case !ok || sc.Version == "":
		out.State = Unknown
	case ts.Nacked != "" && ts.Nacked == sc.Version:
		out.State, out.Rejected, out.Message = Nacked, ts.Nacked, ts.ErrorDetail
	case ts.Acked == sc.Version:
		out.State = Synced
	default:
		out.State = Stale
		var since time.Time
		if at, known := sc.Superseded[ts.Acked]; known && ts.Acked != "" {
			since = at
		} else if ts.Acked == "" {
			// Nothing accepted yet: behind since it connected (or since
			// the newest version, when that came later).
			since = connected
			if sc.Published.After(since) {
				since = sc.Published
			}
		}
		if !since.IsZero() {
			out.StaleSince = timePtr(since)
			out.StaleSeconds = int64(max(now.Sub(since), 0) / time.Second)
		}
	}
	return out
}

// scopeOf is the scope as the proxy's replica reports it, else as the
// first other replica (by name) that reports it does.
func scopeOf(reports map[string]xdsserver.Report, replica string, replicas []string, scope string) (xdsserver.ReportedScope, bool) {
	if sc, ok := reports[replica].Scopes[scope]; ok {
		return sc, true
	}
	for _, name := range replicas {
		if sc, ok := reports[name].Scopes[scope]; ok {
			return sc, true
		}
	}
	return xdsserver.ReportedScope{}, false
}

// scopeGateways maps each scope that a report names (a published scope
// or a proxy's) to its Gateways, "namespace/name", sorted. A Gateway is
// in its dedicated scope gateway/<ns>/<name> when one is reported, else
// in its class's shared scope gatewayclass/<class> (infra.Scope): the
// scope names say the deployment mode, so no GatewayParameters need to be
// read.
func scopeGateways(in Input) map[string][]string {
	known := map[string]bool{}
	for _, r := range in.Reports {
		for s := range r.Scopes {
			known[s] = true
		}
		for _, p := range r.Proxies {
			known[p.Scope] = true
		}
	}
	out := map[string][]string{}
	for _, gw := range in.Gateways {
		scope := infra.Scope(v1alpha1.ModeDedicated, gw)
		if !known[scope] {
			scope = infra.Scope(v1alpha1.ModeShared, gw)
		}
		if known[scope] {
			out[scope] = append(out[scope], gw.Namespace+"/"+gw.Name)
		}
	}
	for _, l := range out {
		slices.Sort(l)
	}
	return out
}

// podNamespace is the namespace of the pods of scope: a dedicated scope
// gateway/<ns>/<name> runs in <ns>, a shared one in the controller's
// namespace (infra.DedicatedFleet, infra.SharedFleet).
func podNamespace(scope, controllerNamespace string) string {
	if rest, ok := strings.CutPrefix(scope, "gateway/"); ok {
		if ns, _, ok := strings.Cut(rest, "/"); ok {
			return ns
		}
	}
	return controllerNamespace
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
