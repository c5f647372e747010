package chart

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMonitorsOnlyWhenEnabled: by default the chart renders no Prometheus
// Operator object; enabled, a PodMonitor selects every Envoy pod the
// controller provisions (any namespace, port metrics, /stats/prometheus)
// and a ServiceMonitor the controller's Service port metrics; enabled on a
// cluster without the operator's CRDs, rendering fails with a clear
// message instead of objects the API server would refuse.
func TestMonitorsOnlyWhenEnabled(t *testing.T) {
	const operator = "monitoring.coreos.com/v1"
	objs, err := renderFor(nil, operator)
	if err != nil {
		t.Fatal(err)
	}
	if k := kinds(objs); k["PodMonitor"]+k["ServiceMonitor"] != 0 {
		t.Errorf("monitors rendered by default: %v", k)
	}
	on := map[string]any{"monitoring": map[string]any{
		"podMonitor": map[string]any{"enabled": true}, "serviceMonitor": map[string]any{"enabled": true},
		"labels": map[string]any{"release": "prom"},
	}}
	objs, err = renderFor(on, operator)
	if err != nil {
		t.Fatal(err)
	}
	pm := find(objs, "PodMonitor", "xds-controller-envoy")
	if pm == nil {
		t.Fatalf("no PodMonitor xds-controller-envoy: %v", kinds(objs))
	}
	if get(pm, "spec", "namespaceSelector", "any") != true || str(pm, "spec", "selector", "matchLabels", "app.kubernetes.io/name") != "envoy" ||
		str(pm, "spec", "selector", "matchLabels", "app.kubernetes.io/managed-by") != "xds-controller" || str(pm, "metadata", "labels", "release") != "prom" {
		t.Errorf("PodMonitor: %v", pm)
	}
	ep, _ := get(pm, "spec", "podMetricsEndpoints").([]any)
	if len(ep) != 1 || str(ep[0].(object), "port") != "metrics" || str(ep[0].(object), "path") != "/stats/prometheus" {
		t.Errorf("PodMonitor endpoints: %v", ep)
	}
	sm := find(objs, "ServiceMonitor", "xds-controller")
	if sm == nil {
		t.Fatalf("no ServiceMonitor xds-controller")
	}
	svc := find(objs, "Service", "xds-controller")
	for k, v := range get(sm, "spec", "selector", "matchLabels").(object) {
		if str(svc, "metadata", "labels", k) != v {
			t.Errorf("the ServiceMonitor selects %s=%v, which the controller's Service lacks (%v)", k, v, get(svc, "metadata", "labels"))
		}
	}
	var hasPort bool
	for _, p := range get(svc, "spec", "ports").([]any) {
		hasPort = hasPort || str(p.(object), "name") == "metrics"
	}
	if !hasPort {
		t.Error("the controller's Service has no port named metrics")
	}
	if _, err := renderFor(on); err == nil || !strings.Contains(err.Error(), "monitoring.coreos.com/v1") {
		t.Errorf("enabled without the operator's CRDs: %v, want a failure naming monitoring.coreos.com/v1", err)
	}
}

// TestDashboardOnlyWhenEnabled: by default no dashboard ConfigMap; enabled,
// one labelled grafana_dashboard "1" whose JSON is the chart's dashboard
// file, valid JSON with panels and queries.
func TestDashboardOnlyWhenEnabled(t *testing.T) {
	objs := render(t, nil)
	if find(objs, "ConfigMap", "xds-controller-dashboard") != nil {
		t.Error("dashboard ConfigMap rendered by default")
	}
	objs = render(t, map[string]any{"monitoring": map[string]any{"grafanaDashboard": map[string]any{"enabled": true}}})
	cm := find(objs, "ConfigMap", "xds-controller-dashboard")
	if cm == nil {
		t.Fatal("no dashboard ConfigMap when enabled")
	}
	if str(cm, "metadata", "labels", "grafana_dashboard") != "1" {
		t.Errorf("labels %v: want grafana_dashboard \"1\"", get(cm, "metadata", "labels"))
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(str(cm, "data", "xds-controller.json")), &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	queries := 0
	for _, p := range d.Panels {
		queries += len(p.Targets)
	}
	if d.UID != "xds-controller" || queries < 10 {
		t.Errorf("dashboard uid %q with %d queries", d.UID, queries)
	}
}
