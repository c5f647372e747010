package kubernetes

import (
	"log/slog"
	"os"
	"regexp"
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/status"
	"github.com/xds-controller/xds-controller/pkg/xdsserver"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// TestPipelineMetricsObserve: the object and resource gauges follow the
// last run, and a scope that vanished leaves the resource gauge.
func TestPipelineMetricsObserve(t *testing.T) {
	m := newPipelineMetrics()
	res := &resources.Resources{HTTPRoutes: []*gwapiv1.HTTPRoute{{}, {}, {}}, Gateways: []*gwapiv1.Gateway{{}}}
	m.observe(res, map[string]*xdstranslator.Resources{
		"a": {Clusters: make([]types.Resource, 4)},
		"b": {Routes: make([]types.Resource, 1)},
	})
	if got := testutil.ToFloat64(m.objects.WithLabelValues("HTTPRoute")); got != 3 {
		t.Errorf("objects{HTTPRoute} = %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.resources.WithLabelValues("a", "clusters")); got != 4 {
		t.Errorf("resources{a,clusters} = %v, want 4", got)
	}
	m.observe(&resources.Resources{}, map[string]*xdstranslator.Resources{"a": {}})
	if got := testutil.CollectAndCount(m.resources); got != 5 {
		t.Errorf("%d resource series after scope b vanished, want 5 (scope a's types)", got)
	}
	if got := testutil.ToFloat64(m.objects.WithLabelValues("HTTPRoute")); got != 0 {
		t.Errorf("objects{HTTPRoute} = %v after a run without routes, want 0", got)
	}
}

// collectorSink is a prometheus.Registerer that keeps what is registered.
type collectorSink struct{ cs []prometheus.Collector }

func (s *collectorSink) Register(c prometheus.Collector) error { s.cs = append(s.cs, c); return nil }
func (s *collectorSink) MustRegister(cs ...prometheus.Collector) {
	s.cs = append(s.cs, cs...)
}
func (s *collectorSink) Unregister(prometheus.Collector) bool { return false }

// TestDashboardUsesOurMetrics: every xds_controller_* metric the chart's
// Grafana dashboard queries is one the controller registers (the pipeline,
// the status writer, the xDS server), a histogram's _bucket and _count
// included; test/e2e checks its envoy_* names against a real Envoy.
func TestDashboardUsesOurMetrics(t *testing.T) {
	sink := &collectorSink{}
	if err := registerAll(newPipelineMetrics().collectors())(sink); err != nil {
		t.Fatal(err)
	}
	if err := status.NewWriter(nil, nil, status.Options{}).Register(sink); err != nil {
		t.Fatal(err)
	}
	if err := xdsserver.New(slog.Default()).Register(sink); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	ch := make(chan *prometheus.Desc, 100)
	for _, c := range sink.cs {
		go func() { c.Describe(ch); ch <- nil }()
		for d := <-ch; d != nil; d = <-ch {
			if m := fqName.FindStringSubmatch(d.String()); m != nil {
				for _, suffix := range []string{"", "_bucket", "_count", "_sum"} {
					known[m[1]+suffix] = true
				}
			}
		}
	}
	b, err := os.ReadFile("../../../charts/xds-controller/files/dashboards/xds-controller.json")
	if err != nil {
		t.Fatal(err)
	}
	used := regexp.MustCompile(`xds_controller_[a-z0-9_]+`).FindAllString(string(b), -1)
	if len(used) < 5 {
		t.Fatalf("the dashboard queries %d controller metrics; want its control-plane panels", len(used))
	}
	for _, name := range used {
		if !known[name] {
			t.Errorf("the dashboard queries %s, which the controller does not register", name)
		}
	}
}

// TestTriggersCountedByKind: each handler counts the events that ask for a
// run under its object's kind, and only those: a status-only update of a
// route we own, or a Namespace update that keeps its labels, asks for no
// run and is not counted.
func TestTriggersCountedByKind(t *testing.T) {
	p := &pipeline{kick: make(chan struct{}, 1), metrics: newPipelineMetrics(), writer: status.NewWriter(nil, nil, status.Options{})}
	route := &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "default", Generation: 1}}
	statusOnly := route.DeepCopy()
	statusOnly.Status.Parents = []gwapiv1.RouteParentStatus{{ControllerName: "x"}}
	edited := route.DeepCopy()
	edited.Generation = 2
	ns := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"a": "b"}}}

	owned := p.ownedHandler(gatewayapi.KindHTTPRoute)
	owned.OnAdd(route, false)
	owned.OnUpdate(route, statusOnly)
	owned.OnUpdate(statusOnly, edited)
	p.anyHandler(kindOf(&discoveryv1.EndpointSlice{})).OnAdd(&discoveryv1.EndpointSlice{}, false)
	nsh := p.namespaceHandler()
	nsh.OnUpdate(ns, ns.DeepCopy())
	for kind, want := range map[string]float64{"HTTPRoute": 2, "EndpointSlice": 1, "Namespace": 0} {
		if got := testutil.ToFloat64(p.metrics.triggers.WithLabelValues(kind)); got != want {
			t.Errorf("triggers{kind=%s} = %v, want %v", kind, got, want)
		}
	}
	if got := kindOf(metadataOf("Secret")); got != "Secret" {
		t.Errorf("kindOf(metadata-only Secret) = %q, want Secret", got)
	}
}
