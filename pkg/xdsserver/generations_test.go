package xdsserver

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-controller/xds-controller/internal/xdsclient"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// withListener adds a listener without filter chains (valid for the
// cache and for ValidateAll) to r.
func withListener(r *xdstranslator.Resources, name string) *xdstranslator.Resources {
	r.Listeners = append(r.Listeners, types.Resource(&listenerv3.Listener{Name: name}))
	return r
}

// eventually polls cond for up to 10 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 10s", what)
}

// respond and answer play one proxy on stream 1: the server sends version
// of typ with nonce, the proxy ACKs (detail "") or NACKs it.
func respond(s *Server, nonce, version string) {
	s.onResponse(1, resource.ListenerType, nonce, version)
}

func answer(s *Server, nonce, detail string) {
	s.onRequest(1, "", "", resource.ListenerType, "", nonce, detail != "", detail)
}

func TestNackWithdrawsToLastGood(t *testing.T) {
	s := New(slog.Default())
	reg := prometheus.NewRegistry()
	if err := s.Register(reg); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	notified := s.Subscribe()
	v1, _, err := s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	if err != nil {
		t.Fatal(err)
	}
	// A delta proxy connects, gets v1 and ACKs it.
	s.onRequest(1, "envoy-1", "a", resource.ListenerType, "", "", false, "")
	respond(s, "1", v1)
	answer(s, "1", "")
	<-notified
	if g := s.View()["a"].Proxies[0].Acked[resource.ListenerType]; g != 1 {
		t.Fatalf("ACKed generation = %d, want 1", g)
	}

	v2, _, _ := s.Publish(ctx, "a", withListener(withListener(cluster("two"), "l1"), "l2"))
	respond(s, "2", v2)
	answer(s, "2", "Invalid regex '(': missing )")
	eventually(t, "rejected version withdrawn", func() bool { return s.Served("a") == v1 })

	v := s.View()["a"]
	if v.Generation != 2 || v.Served != 1 || v.Rejected == nil || v.Rejected.Generation != 2 || v.Rejected.NodeID != "envoy-1" {
		t.Errorf("view = %+v rejected %+v, want generation 2 rejected by envoy-1, serving 1", v, v.Rejected)
	}
	if v.Since[resource.ListenerType]["l1"] != 1 || v.Since[resource.ListenerType]["l2"] != 2 {
		t.Errorf("since = %v, want l1 since 1, l2 since 2", v.Since)
	}
	if n := s.NacksSince(0); len(n) != 1 || n[0].Detail != "Invalid regex '(': missing )" || n[0].Version != v2 {
		t.Errorf("NACKs = %+v", n)
	}
	if c := testutil.ToFloat64(s.metrics.nacks.WithLabelValues("a", "Listener")); c != 1 {
		t.Errorf("xds_controller_xds_nacks_total{scope=a,type=Listener} = %v, want 1", c)
	}

	// The same input again changes nothing: the scope stays on the last
	// good configuration.
	if _, changed, _ := s.Publish(ctx, "a", withListener(withListener(cluster("two"), "l1"), "l2")); changed || s.Served("a") != v1 {
		t.Errorf("republishing the rejected input: changed=%v served=%s, want no change and %s", changed, s.Served("a"), v1)
	}
	// A new input is served.
	v3, changed, err := s.Publish(ctx, "a", withListener(cluster("three"), "l1"))
	if err != nil || !changed || s.Served("a") != v3 {
		t.Errorf("new input: changed=%v err=%v served=%s, want %s", changed, err, s.Served("a"), v3)
	}
	if v := s.View()["a"]; v.Rejected != nil || v.Generation != 3 || v.Since[resource.ListenerType]["l1"] != 1 {
		t.Errorf("after a new input: %+v", v)
	}
	// Going back to the rejected content does not serve it again.
	if _, _, err := s.Publish(ctx, "a", withListener(withListener(cluster("two"), "l1"), "l2")); err == nil || s.Served("a") != v3 {
		t.Errorf("a version rejected before was served again (err=%v, served %s)", err, s.Served("a"))
	}
	s.onClosed(1)
	if ps := s.View()["a"].Proxies; len(ps) != 0 {
		t.Errorf("closed proxy still listed: %+v", ps)
	}
}

func TestNackWithoutGoodVersionKeepsSnapshot(t *testing.T) {
	s := New(slog.Default())
	v1, _, _ := s.Publish(context.Background(), "a", cluster("one"))
	s.onRequest(1, "envoy-1", "a", resource.ListenerType, "", "", false, "")
	respond(s, "1", v1)
	answer(s, "1", "bad")
	if s.Served("a") != v1 || s.View()["a"].Rejected == nil {
		t.Errorf("served %q rejected %+v, want %s kept and reported rejected", s.Served("a"), s.View()["a"].Rejected, v1)
	}
}

// TestNackFallsBackToUnrejectedVersion: with no version ACKed yet, a NACK
// of the served version falls back to the newest earlier version that no
// proxy rejected (a replica that started after its peers knows no ACK).
func TestNackFallsBackToUnrejectedVersion(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	v1, _, _ := s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	s.onRequest(1, "envoy-1", "a", resource.ListenerType, "", "", false, "")
	respond(s, "1", v2)
	answer(s, "1", "bad")
	eventually(t, "fell back to v1", func() bool { return s.Served("a") == v1 })
	// The same input again does not bring the rejected version back.
	s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	if s.Served("a") != v1 {
		t.Errorf("served %s after the same input again, want %s", s.Served("a"), v1)
	}
}

func TestDeltaReconnectHoldingServedVersion(t *testing.T) {
	s := New(slog.Default())
	v1, _, _ := s.Publish(context.Background(), "a", withListener(cluster("one"), "l1"))
	snap := s.scopes["a"].snaps[v1]
	if err := snap.ConstructVersionMap(); err != nil {
		t.Fatal(err)
	}
	held := snap.GetVersionMap(resource.ListenerType)
	s.onRequest(5, "envoy-1", "a", resource.ListenerType, "", "", false, "")
	s.onDeltaInitial(5, "a", resource.ListenerType, map[string]string{"l1": "stale"}, true)
	if g := s.View()["a"].Proxies[0].Acked[resource.ListenerType]; g != 0 {
		t.Errorf("a proxy holding other content counts as serving generation %d", g)
	}
	s.onDeltaInitial(5, "a", resource.ListenerType, held, true)
	if g := s.View()["a"].Proxies[0].Acked[resource.ListenerType]; g != 1 {
		t.Errorf("a proxy holding the served content serves generation %d, want 1", g)
	}
}

func TestPublishRunsValidateAll(t *testing.T) {
	// Cluster.connect_timeout must be positive (validate.rules gt 0s).
	r := cluster("one")
	r.Clusters[0].(*clusterv3.Cluster).ConnectTimeout = durationpb.New(-time.Second)
	if _, _, err := New(slog.Default()).Publish(context.Background(), "a", r); err == nil || !strings.Contains(err.Error(), "ConnectTimeout") {
		t.Errorf("a cluster with a negative connect_timeout was published (err=%v)", err)
	}
}

// TestAckNackOverADS runs the bookkeeping behind go-control-plane's real
// state-of-the-world server with a proxy that ACKs, then NACKs.
func TestAckNackOverADS(t *testing.T) {
	s := New(slog.Default())
	addr, tlsc := serveWith(t, s)
	ctx := context.Background()
	v1, _, _ := s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	p, err := xdsclient.Connect(addr, tlsc, "envoy-1", "a")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	eventually(t, "ACK of generation 1", func() bool {
		v := s.View()["a"]
		return len(v.Proxies) == 1 && v.Proxies[0].Acked[resource.ListenerType] == 1 && v.Proxies[0].Acked[resource.ClusterType] == 1
	})
	p.Reject("no thanks")
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	eventually(t, "NACK of generation 2 and withdrawal", func() bool {
		v := s.View()["a"]
		return v.Rejected != nil && v.Rejected.Version == v2 && v.Rejected.Detail == "no thanks" && s.Served("a") == v1
	})
	p.Reject("")
	// The withdrawal sends generation 1 again, which the proxy accepts.
	eventually(t, "the proxy back on v1", func() bool { return p.Accepted(resource.ClusterType) == v1 })
}

// TestAckSeconds: xds_controller_xds_ack_seconds counts the ACKs of a
// publish by a proxy that was connected when it happened (one per type
// the change reached), and not the first configuration of a proxy that
// connects afterwards.
func TestAckSeconds(t *testing.T) {
	s := New(slog.Default())
	addr, tlsc := serveWith(t, s)
	ctx := context.Background()
	acked := func(typ string) uint64 {
		m := &dto.Metric{}
		if err := s.metrics.ackSeconds.WithLabelValues(typ).(prometheus.Histogram).Write(m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	p, err := xdsclient.Connect(addr, tlsc, "envoy-1", "a")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	eventually(t, "ACK of generation 1", func() bool { return p.Accepted(resource.ClusterType) != "" })
	if n := acked("Cluster"); n != 0 {
		t.Errorf("the first configuration of a proxy that connected after the publish counted %d times", n)
	}
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	eventually(t, "ACK of generation 2", func() bool { return p.Accepted(resource.ClusterType) == v2 })
	eventually(t, "one ACK of the change counted", func() bool { return acked("Cluster") == 1 })
}

// TestUnchangedTypesCarryForward: delta xDS sends nothing for a type whose
// resources a publish left alone, so a proxy that ACKed them holds the new
// version of that type without an ACK of it (proxy-status says SYNCED, not
// STALE); a type that changed waits for its ACK. A late ACK of an older
// version whose resources of the type are the newest's counts as the
// newest.
func TestUnchangedTypesCarryForward(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	acked := func() string { return s.acks.Proxies()[0].Types[resource.ListenerType].Acked }
	v1, _, _ := s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	s.onRequest(1, "envoy-1", "a", resource.ListenerType, "", "", false, "")
	respond(s, "1", v1)
	answer(s, "1", "")
	// Clusters change, listeners do not.
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	if got := acked(); got != v2 {
		t.Errorf("listeners left alone by %s: the proxy holds %s, want %s", v2, got, v2)
	}
	// Listeners change: the proxy holds v2 until it ACKs v3.
	v3, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l2"))
	if got := acked(); got != v2 {
		t.Errorf("listeners changed by %s: the proxy holds %s before any ACK, want %s", v3, got, v2)
	}
	respond(s, "2", v3)
	// Clusters change again before the ACK of v3 arrives.
	v4, _, _ := s.Publish(ctx, "a", withListener(cluster("three"), "l2"))
	answer(s, "2", "")
	if got := acked(); got != v4 {
		t.Errorf("the ACK of %s, whose listeners are %s's: the proxy holds %s, want %s", v3, v4, got, v4)
	}
}

// TestCarryForwardAfterANack: a proxy whose listeners were carried to a
// version it then rejected (its clusters), and that the server withdrew
// (and forgot), holds the listeners of the next publish of the good
// content: the carry compares digests kept per version, not snapshots.
func TestCarryForwardAfterANack(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	ack := func(typeURL, nonce, version string) {
		s.onResponse(1, typeURL, nonce, version)
		s.onRequest(1, "envoy-1", "a", typeURL, "", nonce, false, "")
	}
	v1, _, _ := s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	ack(resource.ListenerType, "1", v1)
	ack(resource.ClusterType, "2", v1)
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	s.onResponse(1, resource.ClusterType, "3", v2)
	s.onRequest(1, "envoy-1", "a", resource.ClusterType, "", "3", true, "bad cluster")
	eventually(t, "the withdrawal to v1", func() bool { return s.Served("a") == v1 })
	if v3, _, _ := s.Publish(ctx, "a", withListener(cluster("one"), "l1")); v3 != v1 {
		t.Fatalf("the same content published again is %s, not %s", v3, v1)
	}
	types := s.acks.Proxies()[0].Types
	if got := types[resource.ListenerType].Acked; got != v1 {
		t.Errorf("listeners: the proxy holds %s, want %s", got, v1)
	}
	if got := types[resource.ClusterType].Acked; got != v1 {
		t.Errorf("clusters: the proxy holds %s, want %s", got, v1)
	}
}

// TestVerdict: a version is accepted once a proxy ACKed it, rejected
// (with the NACK) once one NACKed it, undecided before, and unknown for a
// scope or version never published.
func TestVerdict(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	v1, _, err := s.Publish(ctx, "a", withListener(cluster("one"), "l1"))
	if err != nil {
		t.Fatal(err)
	}
	s.onRequest(1, "envoy-1", "a", resource.ListenerType, "", "", false, "")
	respond(s, "1", v1)
	if ok, nack := s.Verdict("a", v1, resource.ListenerType); ok || nack != nil {
		t.Errorf("before the ACK: accepted %v, nack %+v", ok, nack)
	}
	answer(s, "1", "")
	if ok, nack := s.Verdict("a", v1, resource.ListenerType); !ok || nack != nil {
		t.Errorf("after the ACK: accepted %v, nack %+v", ok, nack)
	}
	v2, _, _ := s.Publish(ctx, "a", withListener(cluster("two"), "l1"))
	respond(s, "2", v2)
	answer(s, "2", "Invalid regex '(': missing )")
	if ok, nack := s.Verdict("a", v2, resource.ListenerType); ok || nack == nil || nack.Detail != "Invalid regex '(': missing )" || nack.NodeID != "envoy-1" || nack.Version != v2 {
		t.Errorf("after the NACK: accepted %v, nack %+v", ok, nack)
	}
	// A version ACKed for one type is undecided for another.
	if ok, nack := s.Verdict("a", v1, resource.RouteType); ok || nack != nil {
		t.Errorf("v1 for routes, never sent: accepted %v, nack %+v", ok, nack)
	}
	for _, c := range [][2]string{{"b", v1}, {"a", "unknown"}, {"a", ""}} {
		if ok, nack := s.Verdict(c[0], c[1], resource.ListenerType); ok || nack != nil {
			t.Errorf("Verdict(%q, %q) = %v, %+v", c[0], c[1], ok, nack)
		}
	}
}
