package kubernetes

import (
	"testing"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/prometheus/client_golang/prometheus/testutil"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/resources"
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
