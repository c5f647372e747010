package gatewayapi

import (
	"reflect"
	"testing"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// TestEdgeOption: Options.Edge reaches the HTTP and HTTPS listeners of the
// Gateways it names (a copy each), never a TCP listener; a Cache that
// translated without it gives the same listeners their edge once it is set
// for the same objects (a GatewayParameters change), and takes it back.
func TestEdgeOption(t *testing.T) {
	res := fixture()
	res.Gateways[0].Spec.Listeners = append(res.Gateways[0].Spec.Listeners, gwapiv1.Listener{Name: "tcp", Protocol: gwapiv1.TCPProtocolType, Port: 9000})
	edge := &ir.HTTPEdge{RequestHeadersTimeout: ir.NewDuration(3 * time.Second), MaxRequestHeadersKB: 32}
	on := Options{Edge: func(gw *gwapiv1.Gateway) *ir.HTTPEdge {
		if gw.Name == "web" {
			return edge
		}
		return nil
	}}
	edges := func(r *Result) map[string]*ir.HTTPEdge {
		out := map[string]*ir.HTTPEdge{}
		for _, gw := range r.IR.Gateways {
			for _, l := range gw.Listeners {
				out[l.Name] = l.Edge
			}
		}
		return out
	}
	got := edges(Translate(res, on))
	if len(got) == 0 {
		t.Fatal("no listeners")
	}
	for name, e := range got {
		http := name != "default/web/tcp"
		if http && (e == nil || !reflect.DeepEqual(e, edge) || e == edge) {
			t.Errorf("%s: edge %+v, want a copy of %+v", name, e, edge)
		}
		if !http && e != nil {
			t.Errorf("%s: a TCP listener with edge %+v", name, e)
		}
	}
	c := NewCache()
	for i, opts := range []Options{{}, on, {}} {
		got, want := edges(c.Translate(res, opts)), edges(Translate(res, opts))
		for name, e := range want {
			if !reflect.DeepEqual(e, got[name]) {
				t.Errorf("run %d, %s: edge %+v, a translation from scratch gives %+v", i, name, got[name], e)
			}
		}
	}
}
