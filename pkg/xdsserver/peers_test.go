package xdsserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

func TestMergeProxies(t *testing.T) {
	lds := func(v string) map[string]TypeStatus { return map[string]TypeStatus{resource.ListenerType: {Acked: v}} }
	local := []Proxy{{Stream: 3, Scope: "a", NodeID: "e2", Types: lds("v2")}}
	peers := map[string]Report{
		"replica-b": {Proxies: []ReportedProxy{{Scope: "a", NodeID: "e1", Types: lds("v1")}, {Scope: "a", NodeID: "e2", Types: lds("stale")}}},
		"replica-c": {Proxies: []ReportedProxy{{Scope: "a", NodeID: "e1", Types: lds("other")}, {Scope: "b", NodeID: "e1", Types: lds("v9")}}},
	}
	want := []Proxy{
		{Scope: "a", NodeID: "e1", Types: lds("v1"), Replica: "replica-b"},
		{Stream: 3, Scope: "a", NodeID: "e2", Types: lds("v2")},
		{Scope: "b", NodeID: "e1", Types: lds("v9"), Replica: "replica-c"},
	}
	if d := cmp.Diff(want, MergeProxies(local, peers)); d != "" {
		t.Errorf("MergeProxies (-want +got):\n%s", d)
	}
	if got := MergeProxies(nil, nil); len(got) != 0 {
		t.Errorf("MergeProxies(nil, nil) = %v", got)
	}
}

// TestPeersInView: a peer's proxy counts in View with the generation its
// ACKed version has here; a version never published here counts as 0.
func TestPeersInView(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	v1, _, _ := s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	s.SetPeers(map[string]Report{"replica-b": {Proxies: []ReportedProxy{
		{Scope: "a", NodeID: "e1", Types: map[string]TypeStatus{resource.ListenerType: {Acked: v2}, resource.RouteType: {Acked: v1}}},
		{Scope: "a", NodeID: "e2", Types: map[string]TypeStatus{resource.ListenerType: {Acked: "unknown"}}},
	}}})
	got := s.View()["a"].Proxies
	want := []ProxyView{
		{NodeID: "e1", Replica: "replica-b", Acked: map[string]uint64{resource.ListenerType: 2, resource.RouteType: 1}},
		{NodeID: "e2", Replica: "replica-b", Acked: map[string]uint64{resource.ListenerType: 0}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("proxies (-want +got):\n%s", d)
	}
	if !slices.Equal(s.scopes["a"].good, []string{v1, v2}) {
		t.Errorf("good versions %v, want the peer-ACKed %s and %s", s.scopes["a"].good, v1, v2)
	}
	s.SetPeers(nil)
	if ps := s.View()["a"].Proxies; len(ps) != 0 {
		t.Errorf("a gone peer's proxies are still listed: %+v", ps)
	}
}

// TestPeerNackWithdraws: a NACK on another replica rejects the version
// here too (withdrawn to the last good one, listed once in NacksSince with
// the replica's name, never served again), and a version a peer rejected
// before this replica published it is not served.
func TestPeerNackWithdraws(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	v1, _, _ := s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	s.SetPeers(map[string]Report{"replica-b": {Proxies: []ReportedProxy{
		{Scope: "a", NodeID: "e1", Types: map[string]TypeStatus{resource.ListenerType: {Acked: v1}}}}}})
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	if s.Served("a") != v2 {
		t.Fatalf("served %s, want %s", s.Served("a"), v2)
	}
	rejected := Report{
		Proxies: []ReportedProxy{{Scope: "a", NodeID: "e1", Types: map[string]TypeStatus{
			resource.ListenerType: {Acked: v1, Nacked: v2, ErrorDetail: "bad listener"}}}},
		Nacks: []ReportedNack{{Scope: "a", NodeID: "e1", TypeURL: resource.ListenerType, Version: v2, Detail: "bad listener"}},
	}
	s.SetPeers(map[string]Report{"replica-b": rejected})
	eventually(t, "the peer-rejected version withdrawn", func() bool { return s.Served("a") == v1 })
	v := s.View()["a"]
	if v.Rejected == nil || v.Rejected.Version != v2 || v.Rejected.Generation != 2 || v.Rejected.Replica != "replica-b" || v.Rejected.Detail != "bad listener" {
		t.Errorf("rejected = %+v, want generation 2 by replica-b", v.Rejected)
	}
	s.SetPeers(map[string]Report{"replica-b": rejected})
	if n := s.NacksSince(0); len(n) != 1 || n[0].Replica != "replica-b" || n[0].NodeID != "e1" {
		t.Errorf("NacksSince = %+v, want the peer's NACK once", n)
	}
	if r := s.Report(); len(r.Nacks) != 0 {
		t.Errorf("a peer's NACK is reported as ours: %+v", r.Nacks)
	}

	// A version the peer rejected before this replica published it.
	v3 := mustVersion(t, withListener(cluster("three"), "l1"))
	s.SetPeers(map[string]Report{"replica-b": {Nacks: []ReportedNack{{Scope: "a", NodeID: "e1", TypeURL: resource.ListenerType, Version: v3, Detail: "no"}}}})
	if _, _, err := s.Publish(ctx, "a", withListener(cluster("three"), "l1")); err == nil || s.Served("a") != v1 {
		t.Errorf("a peer-rejected version was served (err=%v, served %s)", err, s.Served("a"))
	}
}

// TestPeerAckBeforePublish: a peer's report of a version ACKed before this
// replica published it makes the version good here once published, so
// that a later NACK of the next version withdraws to it.
func TestPeerAckBeforePublish(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	one := withListener(cluster("one"), "l1")
	v1 := mustVersion(t, one)
	acked := ReportedProxy{Scope: "a", NodeID: "e1", Types: map[string]TypeStatus{resource.ListenerType: {Acked: v1}}}
	s.SetPeers(map[string]Report{"replica-b": {Proxies: []ReportedProxy{acked}}})
	s.Publish(ctx, "a", one)
	if !slices.Equal(s.scopes["a"].good, []string{v1}) {
		t.Fatalf("good versions %v, want the peer-ACKed %s", s.scopes["a"].good, v1)
	}
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	acked.Types = map[string]TypeStatus{resource.ListenerType: {Acked: v1, Nacked: v2, ErrorDetail: "bad"}}
	s.SetPeers(map[string]Report{"replica-b": {Proxies: []ReportedProxy{acked}}})
	eventually(t, "withdrawn to the peer-ACKed version", func() bool { return s.Served("a") == v1 })
}

// TestReportIsOwnState: Report lists this replica's proxies and NACKs and
// marshals deterministically.
func TestReportIsOwnState(t *testing.T) {
	s := New(slog.Default())
	at := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return at }
	v1, _, _ := s.Publish(context.Background(), "a", cluster("one"))
	s.onRequest(1, "envoy-1", "a", resource.ListenerType, "", "", false, "")
	respond(s, "1", v1)
	answer(s, "1", "bad")
	s.SetPeers(map[string]Report{"replica-b": {Proxies: []ReportedProxy{{Scope: "a", NodeID: "e9"}}}})
	r := s.Report()
	want := Report{
		Proxies: []ReportedProxy{{Scope: "a", NodeID: "envoy-1", Types: map[string]TypeStatus{resource.ListenerType: {Nacked: v1, ErrorDetail: "bad"}}}},
		Nacks:   []ReportedNack{{Scope: "a", NodeID: "envoy-1", TypeURL: resource.ListenerType, Version: v1, Detail: "bad"}},
		Scopes:  map[string]ReportedScope{"a": {Version: v1, Published: at}},
	}
	if d := cmp.Diff(want, r); d != "" {
		t.Errorf("Report (-want +got):\n%s", d)
	}
	a, _ := json.Marshal(r)
	b, _ := json.Marshal(s.Report())
	if string(a) != string(b) {
		t.Errorf("Report marshals differently twice:\n%s\n%s", a, b)
	}
}

func mustVersion(t *testing.T, r *xdstranslator.Resources) string {
	t.Helper()
	v, err := Version(r)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPeerAckAfterNextPublish: a replica without proxies of its own (say,
// restarted) may learn that a peer's proxies ACKed v1 only after it has
// published v2, even in the very report that carries the peer's NACK of
// v2. v1 is still good here: the NACK withdraws v2 to v1, so that a proxy
// that connects to this replica starts from v1.
func TestPeerAckAfterNextPublish(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	v1, _, _ := s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	s.SetPeers(map[string]Report{"replica-b": {
		Proxies: []ReportedProxy{{Scope: "a", NodeID: "e1", Types: map[string]TypeStatus{
			resource.ListenerType: {Acked: v1, Nacked: v2, ErrorDetail: "bad"}}}},
		Nacks: []ReportedNack{{Scope: "a", NodeID: "e1", TypeURL: resource.ListenerType, Version: v2, Detail: "bad"}},
	}})
	eventually(t, "withdrawn to the version the peer's proxy ACKed", func() bool { return s.Served("a") == v1 })
}

// TestPeerNackAfterRemove: a scope removed and published again still
// refuses a version a peer rejected (the peer's NACK, listed once in
// NacksSince, applies to the new scope state too).
func TestPeerNackAfterRemove(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	v1, _, _ := s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	rep := map[string]Report{"replica-b": {
		Proxies: []ReportedProxy{{Scope: "a", NodeID: "e1", Types: map[string]TypeStatus{
			resource.ListenerType: {Acked: v1, Nacked: v2, ErrorDetail: "bad"}}}},
		Nacks: []ReportedNack{{Scope: "a", NodeID: "e1", TypeURL: resource.ListenerType, Version: v2, Detail: "bad"}},
	}}
	s.SetPeers(rep)
	eventually(t, "withdrawn to v1", func() bool { return s.Served("a") == v1 })
	s.Remove("a")
	s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	if _, _, err := s.Publish(ctx, "a", withListener(cluster("two"), "l1")); err == nil || s.Served("a") != v1 {
		t.Errorf("the peer-rejected version was served again after Remove (err=%v, served %s)", err, s.Served("a"))
	}
	if n := s.NacksSince(0); len(n) != 1 {
		t.Errorf("NacksSince = %+v, want the peer's NACK once", n)
	}
}

// TestReportForProxyStatus: a report carries what proxy-status needs: each
// proxy's connection time and SVID expiry, each scope's newest version
// and when the versions its proxies still hold were replaced, and the
// SVIDs issued here until they expire.
func TestReportForProxyStatus(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	now := t0
	s.now = func() time.Time { return now }
	v1, _, _ := s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	s.acks.Opened(1, t0.Add(time.Second), t0.Add(time.Hour))
	s.onRequest(1, "envoy-1", "a", resource.ListenerType, "", "", false, "")
	respond(s, "1", v1)
	answer(s, "1", "")
	now = t0.Add(time.Minute)
	// New listeners each time: a proxy that holds the listeners of v1 is
	// behind (CarryForward moves it on only while they stay the same).
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l2"))
	now = t0.Add(2 * time.Minute)
	v3, _, _ := s.Publish(ctx, "a", withListener(cluster("three"), "l3"))
	s.RecordSVID("ns", "envoy-1", t0.Add(90*time.Minute))
	s.RecordSVID("ns", "envoy-1", t0.Add(30*time.Minute)) // older: ignored
	s.RecordSVID("ns", "gone", t0.Add(time.Minute))       // expired at now
	r := s.Report()
	if d := cmp.Diff(map[string]ReportedScope{"a": {Version: v3, Published: t0.Add(2 * time.Minute),
		// v1 is still held; v2 no proxy holds.
		Superseded: map[string]time.Time{v1: t0.Add(time.Minute)}}}, r.Scopes); d != "" || v2 == v1 {
		t.Errorf("scopes (-want +got):\n%s", d)
	}
	if p := r.Proxies[0]; !p.Connected.Equal(t0.Add(time.Second)) || !p.SVIDExpiry.Equal(t0.Add(time.Hour)) {
		t.Errorf("proxy connected %v, SVID expiry %v", p.Connected, p.SVIDExpiry)
	}
	if d := cmp.Diff(map[string]time.Time{"ns/envoy-1": t0.Add(90 * time.Minute)}, r.SVIDs); d != "" {
		t.Errorf("SVIDs (-want +got):\n%s", d)
	}
}

// TestReportCompatibility: the fields proxy-status added are optional
// both ways: a report of the previous release (without them) decodes,
// and the previous release's decoder (a struct without them) reads a new
// report's proxies and NACKs.
func TestReportCompatibility(t *testing.T) {
	old := `{"proxies":[{"scope":"a","node":"e1","types":{"t":{"acked":"v1"}}}],"nacks":[{"scope":"a","node":"e1","type":"t","version":"v0"}]}`
	var r Report
	if err := json.Unmarshal([]byte(old), &r); err != nil || len(r.Proxies) != 1 || r.Scopes != nil || !r.Proxies[0].Connected.IsZero() {
		t.Fatalf("an old report: %+v, %v", r, err)
	}
	r.Scopes = map[string]ReportedScope{"a": {Version: "v1", Superseded: map[string]time.Time{"v0": time.Unix(0, 0)}}}
	r.SVIDs = map[string]time.Time{"ns/e1": time.Unix(3600, 0)}
	r.Proxies[0].Connected = time.Unix(60, 0)
	b, _ := json.Marshal(r)
	type oldProxy struct {
		Scope  string                `json:"scope"`
		NodeID string                `json:"node"`
		Types  map[string]TypeStatus `json:"types,omitempty"`
	}
	var o struct {
		Proxies []oldProxy     `json:"proxies,omitempty"`
		Nacks   []ReportedNack `json:"nacks,omitempty"`
	}
	if err := json.Unmarshal(b, &o); err != nil || len(o.Proxies) != 1 || o.Proxies[0].Types["t"].Acked != "v1" || len(o.Nacks) != 1 {
		t.Errorf("the previous release reads %s as %+v, %v", b, o, err)
	}
}
