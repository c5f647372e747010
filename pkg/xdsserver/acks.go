package xdsserver

import (
	"slices"
	"strings"
	"time"
)

// TypeStatus is what one proxy did with the responses of one resource type
// (a type URL such as type.googleapis.com/envoy.config.listener.v3.Listener).
type TypeStatus struct {
	// Acked is the snapshot version the proxy last accepted (ACK), "" when
	// none is known.
	Acked string `json:"acked,omitempty"`
	// Nacked is the snapshot version the proxy last rejected (NACK), ""
	// when none; ErrorDetail is Envoy's error_detail message for it.
	Nacked      string `json:"nacked,omitempty"`
	ErrorDetail string `json:"error,omitempty"`
}

// Proxy is one connected Envoy as the xDS server saw it.
type Proxy struct {
	// Stream is the go-control-plane stream id (the newest one of the node).
	Stream int64
	// NodeID is Envoy's node.id; Scope its node.cluster.
	NodeID, Scope string
	// Types is the ACK/NACK state per type URL.
	Types map[string]TypeStatus
	// Replica is the controller replica the proxy is connected to, as
	// named in SetPeers; "" for this one.
	Replica string
	// Connected is when the stream opened; SVIDExpiry the NotAfter of the
	// client certificate (SVID) it authenticated with. Zero when unknown.
	Connected, SVIDExpiry time.Time
}

// Outcome is what one discovery request meant.
type Outcome int

// Outcomes of Tracker.Request.
const (
	// OutcomeNone: a request that neither accepts nor rejects a response
	// (the first request of a type on a fresh stream).
	OutcomeNone Outcome = iota
	// OutcomeAck: the proxy accepted (or, on a reconnect, reports holding) a
	// version.
	OutcomeAck
	// OutcomeNack: the proxy rejected a version.
	OutcomeNack
)

// sentLimit bounds the nonces remembered per stream and type; Envoy
// answers every response, so only the last few are ever in flight.
const sentLimit = 16

type sent struct{ nonce, version string }

type streamState struct {
	node, scope string
	// opened, svidExpiry: see Tracker.Opened.
	opened, svidExpiry time.Time
	sent               map[string][]sent // type URL -> responses, oldest first
	types              map[string]*TypeStatus
}

// Tracker is the ACK/NACK bookkeeping of xDS streams, state-of-the-world
// and delta alike (xDS protocol, "ACK/NACK and resource type instance
// version"): every response the server sends is remembered by its nonce
// and snapshot version; a request whose response_nonce names one accepts
// it, or rejects it when error_detail is set. In state-of-the-world,
// version_info of a request is the version the proxy last accepted, which
// also covers the first request after a reconnect; in delta, requests
// carry no version, so the nonce is the only link.
//
// Tracker is pure bookkeeping (no I/O, no clock) and not safe for
// concurrent use; Server guards it with its mutex.
type Tracker struct {
	streams map[int64]*streamState
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker { return &Tracker{streams: map[int64]*streamState{}} }

func (t *Tracker) stream(id int64) *streamState {
	s := t.streams[id]
	if s == nil {
		s = &streamState{sent: map[string][]sent{}, types: map[string]*TypeStatus{}}
		t.streams[id] = s
	}
	return s
}

// Sent records a response of typeURL with nonce and snapshot version on
// stream.
func (t *Tracker) Sent(stream int64, typeURL, nonce, version string) {
	s := t.stream(stream)
	l := append(s.sent[typeURL], sent{nonce, version})
	if len(l) > sentLimit {
		l = l[len(l)-sentLimit:]
	}
	s.sent[typeURL] = l
}

// Request records one discovery request on stream. nodeID and scope are
// its node's id and cluster, "" when the request carries no node (only the
// first one must). versionInfo is the state-of-the-world version_info ("" in
// delta), nonce the response_nonce, and nack says whether error_detail is
// set, with detail its message. It returns what the request meant and the
// version it accepted or rejected ("" when that version is unknown, e.g. a
// NACK of a response sent before the server restarted).
func (t *Tracker) Request(stream int64, nodeID, scope, typeURL, versionInfo, nonce string, nack bool, detail string) (Outcome, string) {
	s := t.stream(stream)
	if nodeID != "" || scope != "" {
		s.node, s.scope = nodeID, scope
	}
	var responded string
	found := false
	if nonce != "" {
		for _, r := range s.sent[typeURL] {
			if r.nonce == nonce {
				responded, found = r.version, true
			}
		}
	}
	ts := s.types[typeURL]
	if ts == nil {
		ts = &TypeStatus{}
		s.types[typeURL] = ts
	}
	switch {
	case nack:
		ts.Nacked, ts.ErrorDetail = responded, detail
		return OutcomeNack, responded
	case versionInfo != "":
		ts.Acked = versionInfo
		return OutcomeAck, versionInfo
	case found:
		ts.Acked = responded
		return OutcomeAck, responded
	}
	return OutcomeNone, ""
}

// Opened records when stream opened (at) and the NotAfter of the client
// certificate it authenticated with (svidExpiry; zero when unknown).
func (t *Tracker) Opened(stream int64, at, svidExpiry time.Time) {
	s := t.stream(stream)
	s.opened, s.svidExpiry = at, svidExpiry
}

// OpenedBefore says whether stream opened (Opened) before at.
func (t *Tracker) OpenedBefore(stream int64, at time.Time) bool {
	s, ok := t.streams[stream]
	return ok && !s.opened.IsZero() && s.opened.Before(at)
}

// Holds records that the proxy on stream already holds version of typeURL
// (a delta reconnect whose initial_resource_versions equal the served
// snapshot's, to which the server sends nothing).
func (t *Tracker) Holds(stream int64, typeURL, version string) {
	s := t.stream(stream)
	ts := s.types[typeURL]
	if ts == nil {
		ts = &TypeStatus{}
		s.types[typeURL] = ts
	}
	ts.Acked = version
}

// CarryForward records that every stream of scope holds version for each
// type it ACKed some version of that same(typeURL, acked) says equals
// version's resources of that type (names and versions): delta xDS sends
// nothing for a type whose resources did not change, so no ACK would
// ever say so. A state-of-the-world proxy is sent them again and ACKs
// what it already held.
func (t *Tracker) CarryForward(scope, version string, same func(typeURL, acked string) bool) {
	for _, s := range t.streams {
		if s.scope != scope {
			continue
		}
		for typeURL, ts := range s.types {
			if ts.Acked != "" && ts.Acked != version && same(typeURL, ts.Acked) {
				ts.Acked = version
			}
		}
	}
}

// AckedBy reports whether a stream of scope ACKed (or holds) version for
// typeURL.
func (t *Tracker) AckedBy(scope, typeURL, version string) bool {
	for _, s := range t.streams {
		if ts := s.types[typeURL]; s.scope == scope && ts != nil && ts.Acked == version {
			return true
		}
	}
	return false
}

// Node returns the node id and scope of stream ("" when unknown).
func (t *Tracker) Node(stream int64) (nodeID, scope string) {
	if s := t.streams[stream]; s != nil {
		return s.node, s.scope
	}
	return "", ""
}

// Closed forgets stream.
func (t *Tracker) Closed(stream int64) { delete(t.streams, stream) }

// Proxies returns the proxies with a known node, one per node id (its
// newest stream), sorted by scope then node id. The result is a copy.
func (t *Tracker) Proxies() []Proxy {
	byNode := map[string]Proxy{}
	for id, s := range t.streams {
		if s.node == "" && s.scope == "" {
			continue
		}
		key := s.scope + "\x00" + s.node
		if prev, ok := byNode[key]; ok && prev.Stream > id {
			continue
		}
		p := Proxy{Stream: id, NodeID: s.node, Scope: s.scope, Types: make(map[string]TypeStatus, len(s.types)),
			Connected: s.opened, SVIDExpiry: s.svidExpiry}
		for k, v := range s.types {
			p.Types[k] = *v
		}
		byNode[key] = p
	}
	out := make([]Proxy, 0, len(byNode))
	for _, p := range byNode {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Proxy) int {
		return strings.Compare(a.Scope+"\x00"+a.NodeID, b.Scope+"\x00"+b.NodeID)
	})
	return out
}
