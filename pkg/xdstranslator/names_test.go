package xdstranslator

import (
	"strings"
	"testing"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

func TestStatSafe(t *testing.T) {
	for in, want := range map[string]string{
		"default/web/http":            "default/web/http",
		"default/web.v2/http.public":  "default/web_v2/http_public",
		"*.example.com":               "*_example_com",
		"fd00::1/port=80":             "fd00__1/port=80",
		"a b\tc\n\x00é\"{},;@+~\\":    "a_b_c____________",
		"UPPER-lower_under/slash*=eq": "UPPER-lower_under/slash*=eq",
	} {
		got := statSafe(in)
		if got != want {
			t.Errorf("statSafe(%q) = %q, want %q", in, got, want)
		}
		if strings.ContainsAny(got, ".:") {
			t.Errorf("statSafe(%q) = %q keeps a character Envoy splits or rewrites", in, got)
		}
	}
}

// gatewayListeners returns a map from IR listener to Gateway, as the
// scopeBuilder keeps it, and a function that makes a listener of a
// Gateway and records it there.
func gatewayListeners() (map[*ir.Listener]string, func(name, gateway string, gatewayPort uint32) *ir.Listener) {
	gw := map[*ir.Listener]string{}
	return gw, func(name, gateway string, gatewayPort uint32) *ir.Listener {
		x := &ir.Listener{Name: name, GatewayPort: gatewayPort}
		gw[x] = gateway
		return x
	}
}

// Distinct Gateway listeners, ListenerSet listeners and shared names never
// get one stat name: Kubernetes names only differ by their dots, which
// become "_", a character none of them has, and the shared names carry
// "=", which none has either.
func TestStatNamesDoNotCollide(t *testing.T) {
	gw, l := gatewayListeners()
	k := bindKey{address: "0.0.0.0", port: 10080}
	names := map[string]string{}
	add := func(what, name string) {
		if prev, ok := names[name]; ok {
			t.Errorf("%s and %s have the same stat name %q", prev, what, name)
		}
		names[name] = what
	}
	for _, n := range []string{
		"ns/a.b/c", "ns/a/b.c", "ns.a/b/c", // dots in different places
		"ns/gw/port.80", "ns/gw/port-80", "ns/gw/80", // listeners named like a port
		"ns/gw/port/80/udp", "ns/gw/udp", // a ListenerSet in namespace "port", a listener "udp"
		"ns/gw/ns/set/http", "ns/gw/http", // a ListenerSet's listener, the Gateway's own
	} {
		add("listener "+n, listenerStatName(l(n, "", 0)))
	}
	oneGateway := []*ir.Listener{l("ns/gw/a", "ns/gw", 80), l("ns/gw/b", "ns/gw", 80)}
	add("ns/gw's port 80", sharedStatName(k, oneGateway, gw))
	add("ns/gw's port 80, UDP", sharedStatName(bindKey{address: "0.0.0.0", port: 10080, udp: true}, oneGateway, gw))
	twoGateways := []*ir.Listener{l("ns/gw/a", "ns/gw", 80), l("ns/other/a", "ns/other", 80)}
	add("bind port 10080", sharedStatName(k, twoGateways, gw))
	add("bind port 10080, UDP", sharedStatName(bindKey{address: "0.0.0.0", port: 10080, udp: true}, twoGateways, gw))
	add("127.0.0.1:10080", sharedStatName(bindKey{address: "127.0.0.1", port: 10080}, twoGateways, gw))
	for name, what := range names {
		if strings.ContainsAny(name, ".:") {
			t.Errorf("%s: stat name %q is not one element of an Envoy stat name", what, name)
		}
	}
}

func TestSharedStatName(t *testing.T) {
	gw, l := gatewayListeners()
	a, b := l("default/web/a", "default/web", 80), l("default/web/b", "default/web", 80)
	other := l("default/other/a", "default/other", 80)
	other443 := l("default/web/c", "default/web", 443)
	dotted := l("default/web.v2/a", "default/web.v2", 80)
	for _, tc := range []struct {
		k    bindKey
		ls   []*ir.Listener
		want string
	}{
		// The Gateway's port, not the bind port a provisioner chose.
		{bindKey{"0.0.0.0", 10080, false}, []*ir.Listener{a}, "default/web/port=80"},
		{bindKey{"0.0.0.0", 10080, false}, []*ir.Listener{a, b}, "default/web/port=80"},
		{bindKey{"::", 10080, true}, []*ir.Listener{a}, "default/web/port=80/udp"},
		{bindKey{"0.0.0.0", 10080, false}, []*ir.Listener{dotted}, "default/web_v2/port=80"},
		// Several Gateways, or one Gateway's two ports: the bind port.
		{bindKey{"0.0.0.0", 80, false}, []*ir.Listener{a, other}, "port=80"},
		{bindKey{"0.0.0.0", 80, false}, []*ir.Listener{a, other443}, "port=80"},
		{bindKey{"::", 53, true}, []*ir.Listener{a, other}, "port=53/udp"},
		{bindKey{"127.0.0.1", 80, false}, []*ir.Listener{a, other}, "127_0_0_1/port=80"},
		{bindKey{"fd00::1", 80, false}, []*ir.Listener{a, other}, "fd00__1/port=80"},
		{bindKey{"0.0.0.0", 80, false}, nil, "port=80"},
	} {
		if got := sharedStatName(tc.k, tc.ls, gw); got != tc.want {
			t.Errorf("sharedStatName(%v, %d listeners) = %q, want %q", tc.k, len(tc.ls), got, tc.want)
		}
	}
	// The HTTP connection manager of one listener is named after it, of
	// several after their port.
	k := bindKey{"0.0.0.0", 10080, false}
	if got := httpStatName(k, []*ir.Listener{a}, gw); got != "default/web/a" {
		t.Errorf("one HTTP listener: %q", got)
	}
	if got := httpStatName(k, []*ir.Listener{a, b}, gw); got != "default/web/port=80" {
		t.Errorf("two HTTP listeners of one Gateway: %q", got)
	}
}

// The longest names Kubernetes allows stay whole (Envoy 1.40 limits no
// stat name's length) and one element.
func TestLongStatNames(t *testing.T) {
	ns, name, section := strings.Repeat("n", 63), strings.Repeat("g.", 126)+"g", strings.Repeat("l.", 126)+"l"
	il := &ir.Listener{Name: ns + "/" + name + "/" + ns + "/" + name + "/" + section}
	got := listenerStatName(il)
	if len(got) != len(il.Name) || strings.Contains(got, ".") {
		t.Errorf("a ListenerSet listener's stat name of %d characters became %d: %.80s...", len(il.Name), len(got), got)
	}
	if vh := virtualHostName(il, "*."+strings.Repeat("h", 63)+".example.com"); strings.Contains(vh, ".") || !strings.HasPrefix(vh, got+"/*_hhh") {
		t.Errorf("virtual host name %.80s...", vh)
	}
}

func TestVirtualHostAndRouteStatNames(t *testing.T) {
	il := &ir.Listener{Name: "default/web/default/team-a/https"}
	for host, want := range map[string]string{
		"*":                 "default/web/default/team-a/https/*",
		"*.example.com":     "default/web/default/team-a/https/*_example_com",
		"api.v2.example.io": "default/web/default/team-a/https/api_v2_example_io",
	} {
		if got := virtualHostName(il, host); got != want {
			t.Errorf("virtualHostName(%q) = %q, want %q", host, got, want)
		}
	}
	if got := routeStatName(&ir.HTTPRoute{StatName: "grpcroute/default/echo.v1/rule/2"}); got != "grpcroute/default/echo_v1/rule/2" {
		t.Errorf("routeStatName = %q", got)
	}
}
