package kubernetes

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/resources"
	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// pipelineMetrics are the pipeline's Prometheus collectors (docs/metrics.md).
type pipelineMetrics struct {
	// runs observes each run's duration, from reading the caches to the
	// last scope published, by result: "ok", "failed" (the inputs could
	// not be read or the translation failed; nothing changed).
	runs *prometheus.HistogramVec
	// objects is the number of objects of each kind the last run
	// translated; resources the xDS resources of each scope and type it
	// produced.
	objects   *prometheus.GaugeVec
	resources *prometheus.GaugeVec
	// published counts the snapshots published per scope (a run publishes
	// only the scopes whose configuration changed).
	published *prometheus.CounterVec
	// triggers counts the watch events that asked for a run, by the kind
	// of their object ("start" and "retry": the pipeline's own).
	triggers *prometheus.CounterVec
}

func newPipelineMetrics() *pipelineMetrics {
	return &pipelineMetrics{
		runs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "xds_controller_translation_duration_seconds",
			Help:    "Duration of one pipeline run (read, translate, pre-validate, publish), in seconds, by result (ok, failed).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15), // 1 ms .. 16 s
		}, []string{"result"}),
		objects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "xds_controller_translation_objects",
			Help: "Objects the last pipeline run translated, by kind (Gateway, HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute, Service, EndpointSlice).",
		}, []string{"kind"}),
		resources: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "xds_controller_xds_resources",
			Help: "xDS resources of each proxy scope's last translation, by type (listeners, routes, clusters, endpoints, secrets).",
		}, []string{"scope", "type"}),
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xds_controller_snapshots_published_total",
			Help: "Configuration snapshots published to the xDS server, by proxy scope.",
		}, []string{"scope"}),
		triggers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xds_controller_pipeline_triggers_total",
			Help: "Watch events that asked for a pipeline run, by the kind of their object (start, retry: the pipeline's own); runs coalesce bursts of them.",
		}, []string{"kind"}),
	}
}

func (m *pipelineMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.runs, m.objects, m.resources, m.published, m.triggers}
}

// objectKinds are the kinds the objects gauge counts: Gateways, every
// route kind (gatewayapi.RouteKinds), Services and EndpointSlices.
func objectKinds() []resources.Kind {
	out := []resources.Kind{resources.GatewayKind}
	for _, k := range gatewayapi.RouteKinds() {
		out = append(out, k.Kind)
	}
	return append(out, resources.ServiceKind, resources.EndpointSliceKind)
}

// observe records the sizes of one run's input and output.
func (m *pipelineMetrics) observe(res *resources.Resources, x map[string]*xdstranslator.Resources) {
	for _, k := range objectKinds() {
		m.objects.WithLabelValues(k.Name()).Set(float64(k.Len(res)))
	}
	m.resources.Reset() // scopes that vanished go
	for scope, r := range x {
		for typ, n := range map[string]int{
			"listeners": len(r.Listeners), "routes": len(r.Routes), "clusters": len(r.Clusters),
			"endpoints": len(r.Endpoints), "secrets": len(r.Secrets),
		} {
			m.resources.WithLabelValues(scope, typ).Set(float64(n))
		}
	}
}
