package xdstranslator_test

import (
	"testing"
	"time"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// hcmOf is the HTTP connection manager of the first filter chain of
// listener name.
func hcmOf(t *testing.T, x *ir.IR, name string) *hcmv3.HttpConnectionManager {
	t.Helper()
	l := listener(t, translate(t, x)[scope], name)
	var h hcmv3.HttpConnectionManager
	if err := l.FilterChains[0].Filters[0].GetTypedConfig().UnmarshalTo(&h); err != nil {
		t.Fatal(err)
	}
	return &h
}

// edgeFields are the HCM fields that ir.HTTPEdge sets, as plain values.
type edgeFields struct {
	RequestHeadersTimeout, StreamIdleTimeout, IdleTimeout time.Duration
	Underscores                                           string
	HeadersKB, HeadersCount                               uint32
	Streams, StreamWindow, ConnWindow                     uint32
}

func fieldsOf(h *hcmv3.HttpConnectionManager) edgeFields {
	return edgeFields{
		RequestHeadersTimeout: h.RequestHeadersTimeout.AsDuration(),
		StreamIdleTimeout:     h.StreamIdleTimeout.AsDuration(),
		IdleTimeout:           h.CommonHttpProtocolOptions.IdleTimeout.AsDuration(),
		Underscores:           h.CommonHttpProtocolOptions.HeadersWithUnderscoresAction.String(),
		HeadersKB:             h.MaxRequestHeadersKb.GetValue(),
		HeadersCount:          h.CommonHttpProtocolOptions.MaxHeadersCount.GetValue(),
		Streams:               h.Http2ProtocolOptions.MaxConcurrentStreams.GetValue(),
		StreamWindow:          h.Http2ProtocolOptions.InitialStreamWindowSize.GetValue(),
		ConnWindow:            h.Http2ProtocolOptions.InitialConnectionWindowSize.GetValue(),
	}
}

// TestEdgeDefaults: a listener without limits gets Envoy's edge best
// practices (DefaultEdge).
func TestEdgeDefaults(t *testing.T) {
	got := fieldsOf(hcmOf(t, oneRouteIR(&ir.HTTPRoute{Backends: group(backend("a", 1))}), "listener/0.0.0.0/80"))
	want := edgeFields{10 * time.Second, 5 * time.Minute, time.Hour, "REJECT_REQUEST", 60, 100, 100, 65536, 1048576}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("default edge (-want +got):\n%s", d)
	}
}

// TestEdgeOverridesAndStrictestWins: a listener's own limits replace the
// defaults field by field; two listeners on one port (one connection
// manager) get the strictest value of each field.
func TestEdgeOverridesAndStrictestWins(t *testing.T) {
	x := oneRouteIR(&ir.HTTPRoute{Backends: group(backend("a", 1))})
	l := x.Gateways[0].Listeners[0]
	l.Edge = &ir.HTTPEdge{
		RequestHeadersTimeout:     ir.NewDuration(3 * time.Second),
		HeadersWithUnderscores:    ir.UnderscoresAllow,
		MaxRequestHeadersKB:       90,
		HTTP2MaxConcurrentStreams: 500,
	}
	got := fieldsOf(hcmOf(t, x, "listener/0.0.0.0/80"))
	want := edgeFields{3 * time.Second, 5 * time.Minute, time.Hour, "ALLOW", 90, 100, 500, 65536, 1048576}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("one listener's edge (-want +got):\n%s", d)
	}

	// A second listener on the same port, with a hostname.
	other := &ir.Listener{Name: "default/gw/other", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 80, GatewayPort: 80,
		Hostname: "other.example.com", HTTPRoutes: []*ir.HTTPRoute{{Name: "httproute/default/o/rule/0/match/0", Hostname: "other.example.com", Backends: group(backend("a", 1))}},
		Edge: &ir.HTTPEdge{
			RequestHeadersTimeout:     ir.NewDuration(30 * time.Second),
			StreamIdleTimeout:         ir.NewDuration(time.Minute),
			HeadersWithUnderscores:    ir.UnderscoresDrop,
			MaxRequestHeadersKB:       96,
			HTTP2MaxConcurrentStreams: 50,
		}}
	x.Gateways[0].Listeners = append(x.Gateways[0].Listeners, other)
	got = fieldsOf(hcmOf(t, x, "listener/0.0.0.0/80"))
	want = edgeFields{3 * time.Second, time.Minute, time.Hour, "DROP_HEADER", 90, 100, 50, 65536, 1048576}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("two listeners on one port (-want +got):\n%s", d)
	}
}
