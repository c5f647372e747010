package xdsserver

import (
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

func TestTrackerStateOfTheWorld(t *testing.T) {
	tr := NewTracker()
	// First request of a fresh stream: nothing accepted yet.
	if o, _ := tr.Request(1, "envoy-1", "s", resource.ListenerType, "", "", false, ""); o != OutcomeNone {
		t.Fatalf("first request: outcome %v, want none", o)
	}
	tr.Sent(1, resource.ListenerType, "1", "v1")
	if o, v := tr.Request(1, "envoy-1", "s", resource.ListenerType, "v1", "1", false, ""); o != OutcomeAck || v != "v1" {
		t.Fatalf("ACK: %v %q, want Ack v1", o, v)
	}
	tr.Sent(1, resource.ListenerType, "2", "v2")
	// A NACK carries the last accepted version in version_info; the
	// rejected one is known by the nonce.
	if o, v := tr.Request(1, "envoy-1", "s", resource.ListenerType, "v1", "2", true, "bad regex"); o != OutcomeNack || v != "v2" {
		t.Fatalf("NACK: %v %q, want Nack v2", o, v)
	}
	ps := tr.Proxies()
	if len(ps) != 1 {
		t.Fatalf("proxies = %+v", ps)
	}
	got := ps[0].Types[resource.ListenerType]
	want := TypeStatus{Acked: "v1", Nacked: "v2", ErrorDetail: "bad regex"}
	if got != want || ps[0].NodeID != "envoy-1" || ps[0].Scope != "s" {
		t.Errorf("state = %+v %+v, want %+v of envoy-1 in s", ps[0], got, want)
	}
	tr.Closed(1)
	if ps := tr.Proxies(); len(ps) != 0 {
		t.Errorf("closed stream still listed: %+v", ps)
	}
}

func TestTrackerReconnectReportsHeldVersion(t *testing.T) {
	tr := NewTracker()
	// A state-of-the-world proxy that reconnects names the version it
	// holds in its first request.
	if o, v := tr.Request(7, "envoy-1", "s", resource.ClusterType, "v9", "", false, ""); o != OutcomeAck || v != "v9" {
		t.Errorf("reconnect: %v %q, want Ack v9", o, v)
	}
}

func TestTrackerDelta(t *testing.T) {
	tr := NewTracker()
	tr.Request(3, "envoy-d", "s", resource.RouteType, "", "", false, "")
	tr.Sent(3, resource.RouteType, "1", "v1")
	// Delta requests after the first carry no node and no version.
	if o, v := tr.Request(3, "", "", resource.RouteType, "", "1", false, ""); o != OutcomeAck || v != "v1" {
		t.Fatalf("delta ACK: %v %q, want Ack v1", o, v)
	}
	tr.Sent(3, resource.RouteType, "2", "v2")
	if o, v := tr.Request(3, "", "", resource.RouteType, "", "2", true, "nope"); o != OutcomeNack || v != "v2" {
		t.Fatalf("delta NACK: %v %q, want Nack v2", o, v)
	}
	// A NACK of an unknown nonce (sent before a restart) rejects an
	// unknown version.
	if o, v := tr.Request(3, "", "", resource.RouteType, "", "99", true, "old"); o != OutcomeNack || v != "" {
		t.Errorf("NACK of an unknown nonce: %v %q, want Nack \"\"", o, v)
	}
	if n, s := tr.Node(3); n != "envoy-d" || s != "s" {
		t.Errorf("node = %q %q, want the first request's", n, s)
	}
	tr.Holds(4, resource.ListenerType, "v2")
	tr.Request(4, "envoy-d", "s", resource.ListenerType, "", "", false, "")
	ps := tr.Proxies()
	if len(ps) != 1 || ps[0].Stream != 4 || ps[0].Types[resource.ListenerType].Acked != "v2" {
		t.Errorf("one node on two streams: %+v, want the newest stream holding v2", ps)
	}
}

func TestTrackerForgetsOldNonces(t *testing.T) {
	tr := NewTracker()
	for i := range sentLimit + 5 {
		tr.Sent(1, resource.ClusterType, string(rune('a'+i)), "v")
	}
	if o, _ := tr.Request(1, "n", "s", resource.ClusterType, "", "a", false, ""); o != OutcomeNone {
		t.Error("an evicted nonce was still known")
	}
}
