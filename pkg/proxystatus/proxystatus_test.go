package proxystatus

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/xds-controller/xds-controller/pkg/xdsserver"
)

var t0 = time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)

func TestDecide(t *testing.T) {
	sc := xdsserver.ReportedScope{Version: "v3", Published: t0.Add(-time.Minute),
		Superseded: map[string]time.Time{"v2": t0.Add(-time.Minute), "v1": t0.Add(-10 * time.Minute)}}
	now := t0
	connected := t0.Add(-30 * time.Second)
	for name, tc := range map[string]struct {
		ts         xdsserver.TypeStatus
		subscribed bool
		sc         xdsserver.ReportedScope
		ok         bool
		want       TypeState
	}{
		"never asked":         {subscribed: false, sc: sc, ok: true, want: TypeState{State: NotSubscribed}},
		"newest ACKed":        {ts: xdsserver.TypeStatus{Acked: "v3"}, subscribed: true, sc: sc, ok: true, want: TypeState{State: Synced, Version: "v3", Newest: "v3"}},
		"newest after a NACK": {ts: xdsserver.TypeStatus{Acked: "v3", Nacked: "v2", ErrorDetail: "old"}, subscribed: true, sc: sc, ok: true, want: TypeState{State: Synced, Version: "v3", Newest: "v3"}},
		"newest NACKed": {ts: xdsserver.TypeStatus{Acked: "v2", Nacked: "v3", ErrorDetail: "Invalid regex"}, subscribed: true, sc: sc, ok: true,
			want: TypeState{State: Nacked, Version: "v2", Newest: "v3", Rejected: "v3", Message: "Invalid regex"}},
		"older held": {ts: xdsserver.TypeStatus{Acked: "v1"}, subscribed: true, sc: sc, ok: true,
			want: TypeState{State: Stale, Version: "v1", Newest: "v3", StaleSince: ptr(t0.Add(-10 * time.Minute)), StaleSeconds: 600}},
		"older, replacement time unknown": {ts: xdsserver.TypeStatus{Acked: "v0"}, subscribed: true, sc: sc, ok: true,
			want: TypeState{State: Stale, Version: "v0", Newest: "v3"}},
		"nothing accepted since it connected": {ts: xdsserver.TypeStatus{}, subscribed: true, sc: sc, ok: true,
			want: TypeState{State: Stale, Newest: "v3", StaleSince: ptr(connected), StaleSeconds: 30}},
		"no newest version reported": {ts: xdsserver.TypeStatus{Acked: "v3"}, subscribed: true, ok: false, want: TypeState{State: Unknown, Version: "v3"}},
	} {
		got := Decide(tc.ts, tc.subscribed, tc.sc, tc.ok, connected, now)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
}

func ptr(t time.Time) *time.Time { return &t }

func gateway(ns, name, class string) *gwapiv1.Gateway {
	return &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gwapiv1.GatewaySpec{GatewayClassName: gwapiv1.ObjectName(class)}}
}

// testInput: two replicas; a shared fleet of class "xds" (two pods, one
// of them reported by both replicas after it moved) and a dedicated
// fleet of Gateway apps/api.
func testInput() Input {
	all := func(v string) map[string]xdsserver.TypeStatus {
		return map[string]xdsserver.TypeStatus{resource.ListenerType: {Acked: v}, resource.RouteType: {Acked: v}, resource.ClusterType: {Acked: v}}
	}
	nacked := all("v1")
	nacked[resource.RouteType] = xdsserver.TypeStatus{Acked: "v1", Nacked: "v2", ErrorDetail: "Invalid regex: missing )\n in route"}
	return Input{
		ControllerNamespace: "xds-system",
		Now:                 t0,
		Gateways:            []*gwapiv1.Gateway{gateway("apps", "web", "xds"), gateway("default", "other", "xds"), gateway("apps", "api", "xds"), gateway("x", "y", "foreign")},
		Reports: map[string]xdsserver.Report{
			"ctrl-a": {
				Proxies: []xdsserver.ReportedProxy{
					{Scope: "gatewayclass/xds", NodeID: "envoy-xds-1", Types: all("v2"), Connected: t0.Add(-time.Hour), SVIDExpiry: t0.Add(10 * time.Minute)},
					{Scope: "gatewayclass/xds", NodeID: "envoy-xds-2", Types: all("v1"), Connected: t0.Add(-2 * time.Hour)},
				},
				Scopes: map[string]xdsserver.ReportedScope{"gatewayclass/xds": {Version: "v2", Superseded: map[string]time.Time{"v1": t0.Add(-90 * time.Second)}},
					"gateway/apps/api": {Version: "v1"}},
				SVIDs: map[string]time.Time{"xds-system/envoy-xds-1": t0.Add(50 * time.Minute)},
			},
			"ctrl-b": {
				Proxies: []xdsserver.ReportedProxy{
					// Moved from ctrl-a: the newer connection wins.
					{Scope: "gatewayclass/xds", NodeID: "envoy-xds-2", Types: all("v2"), Connected: t0.Add(-time.Minute), SVIDExpiry: t0.Add(-time.Minute)},
					{Scope: "gateway/apps/api", NodeID: "api-xds-1", Types: nacked, Connected: t0.Add(-time.Minute)},
				},
				Scopes: map[string]xdsserver.ReportedScope{"gatewayclass/xds": {Version: "v2"}, "gateway/apps/api": {Version: "v2"}},
			},
		},
	}
}

func TestBuild(t *testing.T) {
	got := Build(testInput())
	var lines []string
	for _, p := range got {
		line := p.Namespace + "/" + p.Pod + " " + p.Scope + " [" + strings.Join(p.Gateways, ",") + "] " + p.Replica
		for _, typ := range Types {
			line += " " + Cell(p.Types[typ.Name])
		}
		lines = append(lines, line+" "+Expiry(p.SVIDExpiry, t0))
	}
	want := []string{
		// After the NACK the replica withdrew to v1: the proxy holds v1
		// of every type, and rejected v2's routes.
		"apps/api-xds-1 gateway/apps/api [apps/api] ctrl-b STALE NACKED STALE - - -",
		"xds-system/envoy-xds-1 gatewayclass/xds [apps/web,default/other] ctrl-a SYNCED SYNCED SYNCED - - in 50m0s",
		"xds-system/envoy-xds-2 gatewayclass/xds [apps/web,default/other] ctrl-b SYNCED SYNCED SYNCED - - EXPIRED 1m0s ago",
	}
	if d := cmp.Diff(want, lines); d != "" {
		t.Errorf("Build (-want +got):\n%s", d)
	}
	if r := got[0].Types["routes"]; r.Rejected != "v2" || !strings.HasPrefix(r.Message, "Invalid regex") {
		t.Errorf("the NACK: %+v", r)
	}
}

func TestBuildStaleAndUnknownGateways(t *testing.T) {
	in := testInput()
	in.Gateways = nil
	rep := in.Reports["ctrl-a"]
	rep.Scopes["gatewayclass/xds"] = xdsserver.ReportedScope{Version: "v3", Superseded: map[string]time.Time{"v2": t0.Add(-90 * time.Second)}}
	in.Reports["ctrl-a"] = rep
	got := Build(in)
	p := got[1]
	if p.Pod != "envoy-xds-1" || len(p.Gateways) != 0 || p.Types["listeners"].State != Stale || Cell(p.Types["listeners"]) != "STALE 1m30s" {
		t.Errorf("envoy-xds-1: %+v, want STALE 1m30s against ctrl-a's v3 and no Gateways", p)
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, Build(testInput()), t0); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE   POD          SCOPE             GATEWAYS                REPLICA  LISTENERS  ROUTES  CLUSTERS  ENDPOINTS  SECRETS  SVID EXPIRES
apps        api-xds-1    gateway/apps/api  apps/api                ctrl-b   STALE      NACKED  STALE     -          -        -
xds-system  envoy-xds-1  gatewayclass/xds  apps/web,default/other  ctrl-a   SYNCED     SYNCED  SYNCED    -          -        in 50m0s
xds-system  envoy-xds-2  gatewayclass/xds  apps/web,default/other  ctrl-b   SYNCED     SYNCED  SYNCED    -          -        EXPIRED 1m0s ago

NACKs (Envoy's message):
  apps/api-xds-1 routes rejected version v2: Invalid regex: missing ) in route
`
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("Table (-want +got):\n%s", d)
	}
	b.Reset()
	_ = Table(&b, nil, t0)
	if !strings.Contains(b.String(), "No Envoy proxy") {
		t.Errorf("empty table: %q", b.String())
	}
}

func TestJSONAndYAML(t *testing.T) {
	proxies := Build(testInput())
	var j, y bytes.Buffer
	if err := JSON(&j, proxies); err != nil {
		t.Fatal(err)
	}
	if err := YAML(&y, proxies); err != nil {
		t.Fatal(err)
	}
	var fromJSON, fromYAML Output
	if err := json.Unmarshal(j.Bytes(), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(y.Bytes(), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(fromJSON, fromYAML); d != "" {
		t.Errorf("JSON and YAML differ (-json +yaml):\n%s", d)
	}
	if d := cmp.Diff(Output{Proxies: proxies}, fromJSON); d != "" {
		t.Errorf("JSON does not round-trip (-built +decoded):\n%s", d)
	}
	for _, want := range []string{`"state": "NACKED"`, `"message": "Invalid regex: missing )\n in route"`, `"replica": "ctrl-b"`, `"svidExpiry": "2026-12-01T20:50:00Z"`, `"gateways": [`} {
		if !strings.Contains(j.String(), want) {
			t.Errorf("JSON lacks %s:\n%s", want, j.String())
		}
	}
	j.Reset()
	_ = JSON(&j, nil)
	if strings.TrimSpace(j.String()) != "{\n  \"proxies\": []\n}" {
		t.Errorf("no proxies: %s", j.String())
	}
}
