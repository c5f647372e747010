package xdstranslator

import (
	"testing"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// TestOriginsOfEarlierTranslations: the Origins of a translation answer
// for its own routes even when first asked after later translations of
// the same Cache changed them (pkg/quarantine compares a version Envoy
// refused with one it accepted earlier); each translation's Origins know
// its routes only.
func TestOriginsOfEarlierTranslations(t *testing.T) {
	key := ir.ObjectKey{Kind: "HTTPRoute", Namespace: "default", Name: "web"}
	route := func(name string, rule int, host string) *ir.HTTPRoute {
		return &ir.HTTPRoute{Name: name, Hostname: host, DirectResponse: &ir.DirectResponse{StatusCode: 200},
			Match:  ir.HTTPMatch{Path: &ir.StringMatch{Type: ir.MatchPathPrefix, Value: "/"}},
			Origin: ir.Origin{Object: key, Rule: rule}}
	}
	irOf := func(routes ...*ir.HTTPRoute) *ir.IR {
		return &ir.IR{Gateways: []*ir.Gateway{{Namespace: "default", Name: "gw", Scope: "s", Listeners: []*ir.Listener{{
			Name: "default/gw/http", Protocol: ir.ProtocolHTTP, Address: "0.0.0.0", Port: 80, GatewayPort: 80, HTTPRoutes: routes,
		}}}}}
	}
	a, b := route("httproute/default/web/rule/0/match/0", 0, "a.example.com"), route("httproute/default/web/rule/1/match/0", 1, "b.example.com")
	c := NewCache()
	first, err := c.Translate(irOf(a, b))
	if err != nil {
		t.Fatal(err)
	}
	// b's virtual host goes, another comes; a's is kept.
	moved := route("httproute/default/web/rule/2/match/0", 2, "c.example.com")
	second, err := c.Translate(irOf(a, moved))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		origins *Origins
		name    string
		want    *ir.Origin
	}{
		{first["s"].Origins, a.Name, &a.Origin},
		{first["s"].Origins, b.Name, &b.Origin},
		{first["s"].Origins, moved.Name, nil},
		{second["s"].Origins, a.Name, &a.Origin},
		{second["s"].Origins, b.Name, nil},
		{second["s"].Origins, moved.Name, &moved.Origin},
		{nil, a.Name, nil},
	} {
		got, ok := tc.origins.Of(tc.name)
		if tc.want == nil && ok || tc.want != nil && (!ok || got != *tc.want) {
			t.Errorf("Of(%s) = %+v, %v; want %+v", tc.name, got, ok, tc.want)
		}
	}
}
