package xdsserver

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"
)

// Peers. Every controller replica serves xDS and a proxy holds one ADS
// stream to one of them, so each replica sees only part of a fleet. A
// replica's Report (its proxies' ACK/NACK state and the NACKs they sent)
// is published for the other replicas, which pass all of them to SetPeers.
// Reports speak in snapshot versions, never generations: versions are
// content hashes, identical on every replica for identical input, while
// generation numbers are per process. The receiving server then
//   - lists the peers' proxies in View (a version it never published
//     counts as generation 0: not serving),
//   - marks a version a peer's proxy ACKed good, and one a peer's proxy
//     NACKed rejected: it stops serving it (withdrawing it when served),
//     so that a proxy connecting to any replica starts from a configuration
//     Envoy accepted,
//   - lists the peers' NACKs in NacksSince, with Nack.Replica set.
//
// A Report also says what `xds-controller proxy-status` shows
// (pkg/proxystatus): each proxy's connection time and SVID expiry, each
// scope's newest version, and the SVIDs the replica issued. The
// receiving replicas ignore those fields; every field added later must be
// optional (omitempty), so that replicas of the previous release, which
// run beside the new ones during a rollout, read the new reports and the
// new ones read theirs (encoding/json ignores unknown fields and leaves
// missing ones zero).

// ReportLimit bounds the NACKs one Report carries.
const ReportLimit = 32

// Report is one replica's data-plane state for the other replicas.
type Report struct {
	// Proxies are the replica's connected proxies with their ACK/NACK
	// state per type URL.
	Proxies []ReportedProxy `json:"proxies,omitempty"`
	// Nacks are the first NACK of every version the replica's proxies
	// rejected, newest last (at most ReportLimit).
	Nacks []ReportedNack `json:"nacks,omitempty"`
	// Scopes are the scopes the replica publishes, by name.
	Scopes map[string]ReportedScope `json:"scopes,omitempty"`
	// SVIDs maps "namespace/pod" to the NotAfter of the newest SVID the
	// replica's identity service issued to that Envoy pod (unexpired
	// ones only).
	SVIDs map[string]time.Time `json:"svids,omitempty"`
}

// ReportedScope is one scope in a Report.
type ReportedScope struct {
	// Version is the scope's newest published version (the input's
	// translation; after a NACK the server may serve an older one), and
	// Published when it was published.
	Version   string    `json:"version"`
	Published time.Time `json:"published,omitzero"`
	// Superseded maps the older versions that a proxy of the replica
	// still holds (ACKed) to when a newer publish replaced them.
	Superseded map[string]time.Time `json:"superseded,omitempty"`
}

// ReportedProxy is one proxy in a Report.
type ReportedProxy struct {
	// Scope is the proxy's node.cluster, NodeID its node.id.
	Scope  string `json:"scope"`
	NodeID string `json:"node"`
	// Types maps a type URL to what the proxy did with it.
	Types map[string]TypeStatus `json:"types,omitempty"`
	// Connected is when its stream opened; SVIDExpiry the NotAfter of the
	// client certificate it connected with (zero when unknown).
	Connected  time.Time `json:"connected,omitzero"`
	SVIDExpiry time.Time `json:"svidExpiry,omitzero"`
}

// ReportedNack is one rejection in a Report.
type ReportedNack struct {
	Scope   string `json:"scope"`
	NodeID  string `json:"node"`
	TypeURL string `json:"type"`
	// Version is the rejected snapshot version, Detail Envoy's
	// error_detail.
	Version string `json:"version"`
	Detail  string `json:"detail,omitempty"`
}

// maxReportedDetail bounds Envoy's message in a Report, in bytes.
const maxReportedDetail = 2048

// Report returns this replica's data-plane state for its peers: its own
// proxies (never those learnt from peers), the NACKs they sent of
// versions known to it, its scopes and the unexpired SVIDs it issued. The
// result is a copy and deterministic (sorted), so that equal states
// marshal to equal bytes.
func (s *Server) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	var r Report
	for _, p := range s.acks.Proxies() {
		rp := ReportedProxy{Scope: p.Scope, NodeID: p.NodeID, Types: map[string]TypeStatus{},
			Connected: p.Connected.UTC().Truncate(time.Second), SVIDExpiry: p.SVIDExpiry.UTC()}
		for typ, ts := range p.Types {
			ts.ErrorDetail = truncate(ts.ErrorDetail, maxReportedDetail)
			rp.Types[typ] = ts
		}
		r.Proxies = append(r.Proxies, rp)
	}
	if len(s.scopes) > 0 {
		r.Scopes = make(map[string]ReportedScope, len(s.scopes))
	}
	for name, st := range s.scopes {
		r.Scopes[name] = ReportedScope{Version: st.desired, Published: st.publishedAt.UTC().Truncate(time.Second)}
	}
	for _, p := range r.Proxies {
		st := s.scopes[p.Scope]
		if st == nil {
			continue
		}
		for _, ts := range p.Types {
			at, ok := st.superseded[ts.Acked]
			if ts.Acked == "" || ts.Acked == st.desired || !ok {
				continue
			}
			sc := r.Scopes[p.Scope]
			if sc.Superseded == nil {
				sc.Superseded = map[string]time.Time{}
				r.Scopes[p.Scope] = sc
			}
			sc.Superseded[ts.Acked] = at.UTC().Truncate(time.Second)
		}
	}
	now := s.now()
	for pod, exp := range s.svids {
		if exp.After(now) {
			if r.SVIDs == nil {
				r.SVIDs = map[string]time.Time{}
			}
			r.SVIDs[pod] = exp.UTC()
		}
	}
	var local []Nack
	for _, st := range s.scopes {
		for _, n := range st.rejected {
			if n.Replica == "" {
				local = append(local, n)
			}
		}
	}
	slices.SortFunc(local, func(a, b Nack) int { return cmp.Compare(a.Seq, b.Seq) })
	if len(local) > ReportLimit {
		local = local[len(local)-ReportLimit:]
	}
	for _, n := range local {
		r.Nacks = append(r.Nacks, ReportedNack{Scope: n.Scope, NodeID: n.NodeID, TypeURL: n.TypeURL,
			Version: n.Version, Detail: truncate(n.Detail, maxReportedDetail)})
	}
	return r
}

// RecordSVID records that this replica's identity service issued the
// Envoy pod namespace/pod an SVID valid until notAfter; Report lists the
// newest one per pod until it expires.
func (s *Server) RecordSVID(namespace, pod string, notAfter time.Time) {
	key := namespace + "/" + pod
	s.mu.Lock()
	now := s.now()
	for k, exp := range s.svids {
		if !exp.After(now) {
			delete(s.svids, k)
		}
	}
	changed := notAfter.After(s.svids[key])
	if changed {
		s.svids[key] = notAfter
	}
	s.mu.Unlock()
	if changed {
		s.notify()
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// SetPeers replaces the reports of the other replicas (keyed by replica
// name; this replica's own must not be among them) and applies them: see
// "Peers" above. Subscribers are notified when anything changed.
func (s *Server) SetPeers(peers map[string]Report) {
	s.mu.Lock()
	changed := !equalPeers(s.peers, peers)
	s.peers = maps.Clone(peers)
	withdraw := map[string]string{} // scope -> its rejected served version
	for scope, st := range s.scopes {
		if s.applyPeers(scope, st) {
			withdraw[scope] = st.served
			changed = true
		}
	}
	s.mu.Unlock()
	for scope, version := range withdraw {
		go s.withdraw(scope, version)
	}
	if changed {
		s.notify()
	}
}

func equalPeers(a, b map[string]Report) bool {
	return maps.EqualFunc(a, b, func(x, y Report) bool {
		return slices.EqualFunc(x.Proxies, y.Proxies, func(p, q ReportedProxy) bool {
			return p.Scope == q.Scope && p.NodeID == q.NodeID && maps.Equal(p.Types, q.Types)
		}) && slices.Equal(x.Nacks, y.Nacks)
	})
}

// peerNackKey identifies a NACK learnt from a peer, so that NacksSince
// lists it once.
type peerNackKey struct{ replica, scope, node, typ, version string }

// peerNackLimit bounds the remembered peer NACK keys.
const peerNackLimit = 4096

// applyPeers applies the peers' reports to scope (s.mu held): versions
// their proxies ACKed become good, versions they NACKed rejected, and a
// rejected version that the scope knows is listed in NacksSince once. It
// reports whether the served version is now rejected (to be withdrawn).
func (s *Server) applyPeers(scope string, st *scopeState) (withdraw bool) {
	for _, name := range slices.Sorted(maps.Keys(s.peers)) {
		rep := s.peers[name]
		for _, n := range peerNacks(rep, scope) {
			if n.Version == "" || st.genOf[n.Version] == 0 {
				continue // unknown here (yet): Publish applies it again
			}
			nack := Nack{Scope: scope, NodeID: n.NodeID, TypeURL: n.TypeURL, Version: n.Version,
				Generation: st.genOf[n.Version], Detail: n.Detail, Replica: name}
			// Listed in NacksSince once; the rejection applies to the scope
			// state in any case (it may be new: Remove, then Publish).
			key := peerNackKey{name, scope, n.NodeID, n.TypeURL, n.Version}
			if !s.peerNacks[key] {
				if len(s.peerNacks) >= peerNackLimit {
					clear(s.peerNacks)
				}
				s.peerNacks[key] = true
				s.nackSeq++
				nack.Seq = s.nackSeq
				s.nacks = append(s.nacks, nack)
				if len(s.nacks) > nackLimit {
					s.nacks = s.nacks[len(s.nacks)-nackLimit:]
				}
			}
			if _, seen := st.rejected[n.Version]; !seen {
				st.rejected[n.Version] = nack
				st.good = slices.DeleteFunc(st.good, func(v string) bool { return v == n.Version })
				withdraw = withdraw || st.served == n.Version
				s.log.Warn("Envoy rejected configuration (NACK) on another replica", "replica", name, "node", n.NodeID,
					"scope", scope, "type", n.TypeURL, "version", n.Version, "generation", nack.Generation, "error", n.Detail)
			}
		}
		for _, p := range rep.Proxies {
			if p.Scope != scope {
				continue
			}
			for _, ts := range p.Types {
				st.accepted(ts.Acked)
			}
		}
	}
	return withdraw
}

// peerNacks are the NACKs of scope in rep: its list, and the last NACK of
// every proxy and type (a proxy may NACK a version another proxy of the
// replica rejected first).
func peerNacks(rep Report, scope string) []ReportedNack {
	var out []ReportedNack
	for _, n := range rep.Nacks {
		if n.Scope == scope {
			out = append(out, n)
		}
	}
	for _, p := range rep.Proxies {
		if p.Scope != scope {
			continue
		}
		for _, typ := range slices.Sorted(maps.Keys(p.Types)) {
			if ts := p.Types[typ]; ts.Nacked != "" {
				out = append(out, ReportedNack{Scope: scope, NodeID: p.NodeID, TypeURL: typ, Version: ts.Nacked, Detail: ts.ErrorDetail})
			}
		}
	}
	return out
}

// MergeProxies returns the proxies of this replica (local, as
// Tracker.Proxies gives them) and of its peers (reports keyed by replica
// name), one per scope and node id, sorted by scope then node id. A proxy
// holds one ADS stream at a time, so a node reported twice has moved
// between replicas and one report is stale: the local entry wins (its
// stream is live here), then the peer whose name sorts first. Peer
// proxies get Stream 0.
func MergeProxies(local []Proxy, peers map[string]Report) []Proxy {
	key := func(scope, node string) string { return scope + "\x00" + node }
	seen := map[string]bool{}
	out := make([]Proxy, 0, len(local))
	for _, p := range local {
		seen[key(p.Scope, p.NodeID)] = true
		out = append(out, p)
	}
	for _, name := range slices.Sorted(maps.Keys(peers)) {
		for _, p := range peers[name].Proxies {
			k := key(p.Scope, p.NodeID)
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, Proxy{NodeID: p.NodeID, Scope: p.Scope, Types: maps.Clone(p.Types), Replica: name,
				Connected: p.Connected, SVIDExpiry: p.SVIDExpiry})
		}
	}
	slices.SortFunc(out, func(a, b Proxy) int {
		return strings.Compare(key(a.Scope, a.NodeID), key(b.Scope, b.NodeID))
	})
	return out
}
