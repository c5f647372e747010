package xdsserver

import (
	"context"
	"hash/fnv"
	"slices"
	"time"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// Generations. Versions are content hashes, so they say nothing about
// order; every scope therefore numbers its published snapshots 1, 2, 3, ...
// (its generations; the numbering restarts with the process). A proxy that
// ACKed version v serves the generation v was last published as: the same
// content may come back under a newer number, and it is the same
// configuration.
//
// Last good. A version that some proxy ACKed and none NACKed is good. When a
// proxy NACKs the snapshot being served, the server withdraws it and serves
// the newest good one again, so that proxies that (re)connect start from a
// configuration Envoy accepted; the rejected version is remembered and not
// served again, and the scope stays on the good one until the input
// changes. Without a known good version (say, the first snapshot after a
// restart is rejected) the rejected one stays in the cache: Envoy keeps
// what it had either way, and there is nothing better to offer.

// goodLimit bounds the good versions (and their snapshots) kept per scope.
const goodLimit = 4

// trackedTypes are the types whose resource names Since reports: those
// that make a Gateway's listeners.
var trackedTypes = []string{resource.ListenerType, resource.RouteType}

type scopeState struct {
	gen     uint64            // the latest published generation
	desired string            // its version
	served  string            // the version in the cache ("" none)
	genOf   map[string]uint64 // version -> generation it was last published as
	// since: type -> name -> first generation of the unbroken run of
	// published generations, up to gen, that contain the resource.
	since map[string]map[string]uint64
	snaps map[string]*cachev3.Snapshot // served, good and recent versions
	good  []string                     // ACKed, never NACKed; oldest first
	// recent are the versions last served after a publish, oldest first
	// (at most goodLimit): their snapshots are kept, so that an ACK learnt
	// late (a peer's report read after the next publish) still makes
	// them good.
	recent   []string
	rejected map[string]Nack // version -> its first NACK
	// publishedAt is when desired was published; superseded maps a
	// version that was desired before to when a publish replaced it (at
	// most supersededLimit, the newest kept): how long a proxy that still
	// holds it has been behind.
	publishedAt time.Time
	superseded  map[string]time.Time
	// typeDigests are, per published version (the last typeDigestLimit,
	// oldest first in digestOrder), a digest of each type's resources
	// (digestTypes).
	typeDigests map[string]map[string]uint64
	digestOrder []string
}

// supersededLimit bounds scopeState.superseded.
const supersededLimit = 64

func newScopeState() *scopeState {
	return &scopeState{genOf: map[string]uint64{}, since: map[string]map[string]uint64{},
		snaps: map[string]*cachev3.Snapshot{}, rejected: map[string]Nack{}, superseded: map[string]time.Time{}}
}

// published records snap (version) as the next generation, published at
// now.
func (st *scopeState) published(version string, snap *cachev3.Snapshot, now time.Time) {
	if st.desired != "" && st.desired != version {
		st.superseded[st.desired] = now
	}
	delete(st.superseded, version)
	for len(st.superseded) > supersededLimit {
		oldest := ""
		for v, t := range st.superseded {
			if oldest == "" || t.Before(st.superseded[oldest]) {
				oldest = v
			}
		}
		delete(st.superseded, oldest)
	}
	st.publishedAt = now
	st.gen++
	st.desired = version
	st.genOf[version] = st.gen
	for _, typ := range trackedTypes {
		prev := st.since[typ]
		next := map[string]uint64{}
		for name := range snap.GetResources(typ) {
			if g, ok := prev[name]; ok {
				next[name] = g
			} else {
				next[name] = st.gen
			}
		}
		st.since[typ] = next
	}
}

// sameResources says whether versions a and b (both among the last
// typeDigestLimit published) hold the same resources of typeURL: the same
// names with the same versions (digests).
func (st *scopeState) sameResources(typeURL, a, b string) bool {
	da, oka := st.typeDigests[a]
	db, okb := st.typeDigests[b]
	return oka && okb && da[typeURL] == db[typeURL]
}

// typeDigestLimit bounds scopeState.typeDigests: a proxy that still holds
// an older version of a type is not carried forward (proxy-status calls
// it STALE until it ACKs a newer one).
const typeDigestLimit = 64

// digestTypes records, for version, sums: a digest per resource type of
// its resources' names and versions (typeSum, by type URL), forgetting the
// oldest version beyond typeDigestLimit.
func (st *scopeState) digestTypes(version string, sums map[string]uint64) {
	if st.typeDigests == nil {
		st.typeDigests = map[string]map[string]uint64{}
	}
	if _, ok := st.typeDigests[version]; !ok {
		st.digestOrder = append(st.digestOrder, version)
	}
	st.typeDigests[version] = sums
	for len(st.digestOrder) > typeDigestLimit {
		delete(st.typeDigests, st.digestOrder[0])
		st.digestOrder = st.digestOrder[1:]
	}
}

// typeSum is the digest of the resources of one type of a snapshot, from
// its VersionMap of that type (name -> version): FNV-1a of each name and
// version, combined regardless of order, and the count.
func typeSum(versions map[string]string) uint64 {
	var sum uint64
	for name, v := range versions {
		h := fnv.New64a()
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write([]byte(v))
		sum ^= h.Sum64() // names are unique within a type
	}
	return sum ^ uint64(len(versions))
}

// remember records version, just served after a publish, as recent.
func (st *scopeState) remember(version string) {
	st.recent = append(slices.DeleteFunc(st.recent, func(v string) bool { return v == version }), version)
	if len(st.recent) > goodLimit {
		st.recent = st.recent[len(st.recent)-goodLimit:]
	}
}

// keep reports whether the snapshot of version may still be served: the
// served one, a good one, or a recent one no proxy rejected.
func (st *scopeState) keep(version string) bool {
	if version == st.served || slices.Contains(st.good, version) {
		return true
	}
	_, bad := st.rejected[version]
	return !bad && slices.Contains(st.recent, version)
}

// prune drops snapshots that can no longer be served.
func (st *scopeState) prune() {
	for v := range st.snaps {
		if !st.keep(v) {
			delete(st.snaps, v)
		}
	}
	// genOf only needs versions a proxy may still report; keep it from
	// growing without bound on a long-lived scope.
	if len(st.genOf) > 1024 {
		for v, g := range st.genOf {
			if g+512 < st.gen && !st.keep(v) {
				delete(st.genOf, v)
			}
		}
	}
}

// Nack is one rejection of a configuration by a proxy.
type Nack struct {
	// Seq numbers the NACKs the server saw, from 1.
	Seq uint64
	// Scope, NodeID: the proxy; TypeURL: the resource type it rejected.
	Scope, NodeID, TypeURL string
	// Version is the rejected snapshot version ("" when unknown) and
	// Generation its generation in Scope (0 when unknown).
	Version    string
	Generation uint64
	// Detail is Envoy's error_detail message.
	Detail string
	// Replica is the controller replica whose proxy sent the NACK, as
	// named in SetPeers; "" for this one.
	Replica string
}

// ScopeView is the data-plane state of one scope, for status.
type ScopeView struct {
	// Generation is the latest published generation (what the input
	// asks for); Served the one the cache serves (older after a NACK).
	Generation, Served uint64
	// Since maps a type URL (Listener, RouteConfiguration) to its
	// resource names and the generation since which every published
	// snapshot has contained them.
	Since map[string]map[string]uint64
	// Rejected is set when a proxy NACKed the latest published snapshot.
	Rejected *Nack
	// Proxies are the connected proxies of the scope.
	Proxies []ProxyView
}

// ProxyView is one connected proxy: the generation it ACKed per type URL
// (0: nothing known, or a version this replica never published).
type ProxyView struct {
	NodeID string
	Acked  map[string]uint64
	// Replica is the controller replica it is connected to ("" this one).
	Replica string
}

// View returns the data-plane state of every scope that has a published
// snapshot or a connected proxy, this replica's and its peers' (SetPeers,
// MergeProxies). The result is a copy.
func (s *Server) View() map[string]ScopeView {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]ScopeView{}
	for scope, st := range s.scopes {
		v := ScopeView{Generation: st.gen, Served: st.genOf[st.served], Since: map[string]map[string]uint64{}}
		for typ, m := range st.since {
			c := make(map[string]uint64, len(m))
			for k, g := range m {
				c[k] = g
			}
			v.Since[typ] = c
		}
		if n, ok := st.rejected[st.desired]; ok {
			v.Rejected = &n
		}
		out[scope] = v
	}
	for _, p := range MergeProxies(s.acks.Proxies(), s.peers) {
		v := out[p.Scope]
		st := s.scopes[p.Scope]
		pv := ProxyView{NodeID: p.NodeID, Acked: map[string]uint64{}, Replica: p.Replica}
		for typ, ts := range p.Types {
			if st != nil && ts.Acked != "" {
				pv.Acked[typ] = st.genOf[ts.Acked]
			}
		}
		v.Proxies = append(v.Proxies, pv)
		out[p.Scope] = v
	}
	return out
}

// Verdict says what the proxies of scope, this replica's and its peers',
// made of version's resources of typeURL: accepted when the version is
// good (a proxy ACKed it, none NACKed it) and a proxy ACKed it for
// typeURL, or holds it (a publish that left typeURL's resources alone);
// rejected (nack, the version's first NACK, of any type) when a proxy
// NACKed it; neither while undecided (a proxy may ACK one type of a
// version and NACK another later), or for a version the scope never had.
// pkg/quarantine reads it, for RouteConfiguration, after every
// notification (Subscribe).
func (s *Server) Verdict(scope, version, typeURL string) (accepted bool, nack *Nack) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.scopes[scope]
	if st == nil || version == "" {
		return false, nil
	}
	if n, bad := st.rejected[version]; bad {
		return false, &n
	}
	if !slices.Contains(st.good, version) {
		return false, nil
	}
	if s.acks.AckedBy(scope, typeURL, version) {
		return true, nil
	}
	for _, rep := range s.peers {
		for _, p := range rep.Proxies {
			if p.Scope == scope && p.Types[typeURL].Acked == version {
				return true, nil
			}
		}
	}
	return false, nil
}

// Subscribe returns a channel that receives a value (coalesced: at most
// one pending) after every change of View or a new NACK: a publish, an
// ACK, a NACK, a proxy that connects or goes away.
func (s *Server) Subscribe() <-chan struct{} {
	c := make(chan struct{}, 1)
	s.subMu.Lock()
	s.subs = append(s.subs, c)
	s.subMu.Unlock()
	return c
}

func (s *Server) notify() {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	for _, c := range s.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// nackLimit bounds the NACKs NacksSince can return.
const nackLimit = 256

// NacksSince returns the NACKs with Seq > seq, oldest first (at most the
// last 256).
func (s *Server) NacksSince(seq uint64) []Nack {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Nack
	for _, n := range s.nacks {
		if n.Seq > seq {
			out = append(out, n)
		}
	}
	return out
}

// onRequest handles one request of either protocol. It returns after the
// bookkeeping; withdrawing a rejected snapshot happens on its own goroutine
// (the cache answers watches of the very stream whose callback this is).
func (s *Server) onRequest(stream int64, nodeID, scope, typeURL, versionInfo, nonce string, nack bool, detail string) {
	s.mu.Lock()
	outcome, version := s.acks.Request(stream, nodeID, scope, typeURL, versionInfo, nonce, nack, detail)
	nodeID, scope = s.acks.Node(stream)
	st := s.scopes[scope]
	var withdraw bool
	switch outcome {
	case OutcomeAck:
		s.metrics.acks.WithLabelValues(scope, typeName(typeURL)).Inc()
		if st != nil {
			st.accepted(version)
			// A response of an older version ACKed after a publish
			// that left this type alone: the proxy holds the newest.
			if version != st.served && st.sameResources(typeURL, version, st.served) {
				s.acks.Holds(stream, typeURL, st.served)
			}
			// A proxy that connected after the publish is starting up, not
			// following a change.
			if version == st.desired && s.acks.OpenedBefore(stream, st.publishedAt) {
				s.metrics.ackSeconds.WithLabelValues(typeName(typeURL)).Observe(s.now().Sub(st.publishedAt).Seconds())
			}
		}
	case OutcomeNack:
		s.metrics.nacks.WithLabelValues(scope, typeName(typeURL)).Inc()
		s.nackSeq++
		n := Nack{Seq: s.nackSeq, Scope: scope, NodeID: nodeID, TypeURL: typeURL, Version: version, Detail: detail}
		if st != nil {
			n.Generation = st.genOf[version]
			if _, seen := st.rejected[version]; version != "" && !seen {
				st.rejected[version] = n
				st.good = slices.DeleteFunc(st.good, func(v string) bool { return v == version })
				withdraw = st.served == version
			}
		}
		s.nacks = append(s.nacks, n)
		if len(s.nacks) > nackLimit {
			s.nacks = s.nacks[len(s.nacks)-nackLimit:]
		}
		s.log.Warn("Envoy rejected configuration (NACK)", "node", nodeID, "scope", scope, "type", typeURL,
			"version", version, "generation", n.Generation, "error", detail)
	}
	s.mu.Unlock()
	if withdraw {
		go s.withdraw(scope, version)
	}
	if outcome != OutcomeNone {
		s.notify()
	}
}

// accepted marks version good when no proxy rejected it.
func (st *scopeState) accepted(version string) {
	if version == "" || st.genOf[version] == 0 || slices.Contains(st.good, version) {
		return
	}
	if _, bad := st.rejected[version]; bad || st.snaps[version] == nil {
		return
	}
	st.good = append(st.good, version)
	slices.SortFunc(st.good, func(a, b string) int { return int(st.genOf[a]) - int(st.genOf[b]) })
	if len(st.good) > goodLimit {
		st.good = st.good[len(st.good)-goodLimit:]
	}
	st.prune()
}

// newestUnrejected is the newest recent version (one served after a
// publish whose snapshot is kept) that no proxy rejected, or "".
func (st *scopeState) newestUnrejected() string {
	for i := len(st.recent) - 1; i >= 0; i-- {
		v := st.recent[i]
		if _, bad := st.rejected[v]; !bad && st.snaps[v] != nil {
			return v
		}
	}
	return ""
}

// withdraw replaces the rejected version of scope, if it is still the
// served one, with the newest good version, else the newest recent version
// no proxy rejected; with neither, the rejected version stays served.
func (s *Server) withdraw(scope, rejected string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.scopes[scope]
	if st == nil || st.served != rejected {
		return
	}
	var good string
	if len(st.good) > 0 {
		good = st.good[len(st.good)-1]
	} else if good = st.newestUnrejected(); good == "" {
		s.log.Warn("Envoy rejected the served configuration and no other is known; it stays in the cache", "scope", scope, "version", rejected)
		return
	} else {
		// No proxy of this replica or its peers has ACKed any version yet
		// (e.g. a replica that started after the others): the newest
		// version no proxy rejected is a better bet than a rejected one.
		s.log.Warn("no accepted configuration is known; falling back to the newest one no proxy rejected",
			"scope", scope, "rejected", rejected, "fallback", good)
	}
	if err := s.cache.set(context.Background(), scope, good, st.snaps[good], nil); err != nil {
		s.log.Error("serving the last accepted configuration again failed", "scope", scope, "version", good, "error", err)
		return
	}
	st.served = good
	st.prune()
	s.log.Warn("withdrew the rejected configuration; serving the last accepted one again",
		"scope", scope, "rejected", rejected, "serving", good, "generation", st.genOf[good])
	go s.notify()
}

// onDeltaInitial handles the first delta request of a type on a stream:
// when the proxy's initial_resource_versions equal those of the served
// snapshot, the server sends nothing, and the proxy is known to hold it.
func (s *Server) onDeltaInitial(stream int64, scope, typeURL string, initial map[string]string, wildcard bool) {
	s.mu.Lock()
	st := s.scopes[scope]
	if st == nil || st.served == "" || len(initial) == 0 {
		s.mu.Unlock()
		return
	}
	served := st.served
	versions := st.snaps[served].GetVersionMap(typeURL)
	match := !wildcard || len(versions) == len(initial)
	for name, v := range initial {
		if held, ok := versions[name]; !ok || held != v || !match {
			match = false
			break
		}
	}
	if match {
		s.acks.Holds(stream, typeURL, served)
		st.accepted(served)
	}
	s.mu.Unlock()
	if match {
		s.notify()
	}
}

func (s *Server) onResponse(stream int64, typeURL, nonce, version string) {
	s.mu.Lock()
	s.acks.Sent(stream, typeURL, nonce, version)
	s.mu.Unlock()
}

func (s *Server) onClosed(stream int64) {
	s.mu.Lock()
	s.acks.Closed(stream)
	s.mu.Unlock()
	s.notify()
}

// typeName is the short name of a type URL: "Listener",
// "RouteConfiguration", "Cluster", ...
func typeName(typeURL string) string {
	for i := len(typeURL) - 1; i >= 0; i-- {
		if typeURL[i] == '.' || typeURL[i] == '/' {
			return typeURL[i+1:]
		}
	}
	return typeURL
}

func (s *Server) nodeOf(stream int64) (nodeID, scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks.Node(stream)
}
