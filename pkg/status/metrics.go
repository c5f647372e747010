package status

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// writerMetrics are the status writer's Prometheus collectors (docs/metrics.md).
type writerMetrics struct {
	// writes counts status writes by object kind and result: "written",
	// "conflict" (another writer changed the object first; retried from a
	// fresh read) or "error" (retried with back-off).
	writes *prometheus.CounterVec
	// The queue of objects waiting for a comparison with their live
	// status (workqueue.MetricsProvider).
	depth                   prometheus.Gauge
	adds, retries           prometheus.Counter
	latency, workDuration   prometheus.Histogram
	unfinished, longestWork prometheus.Gauge
}

func newWriterMetrics() *writerMetrics {
	buckets := prometheus.ExponentialBuckets(0.001, 4, 9) // 1 ms .. 65 s
	return &writerMetrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xds_controller_status_writes_total",
			Help: "Status writes to the API server, by object kind and result (written, conflict, error).",
		}, []string{"kind", "result"}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "xds_controller_status_queue_depth",
			Help: "Objects waiting for their status to be compared and written.",
		}),
		adds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "xds_controller_status_queue_adds_total",
			Help: "Objects queued for a status comparison.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "xds_controller_status_queue_retries_total",
			Help: "Status comparisons queued again after a failed write.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "xds_controller_status_queue_wait_seconds",
			Help:    "How long an object waited in the status queue, in seconds.",
			Buckets: buckets,
		}),
		workDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "xds_controller_status_write_duration_seconds",
			Help:    "How long one object's status comparison and write took, in seconds (rate limiting included).",
			Buckets: buckets,
		}),
		unfinished: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "xds_controller_status_queue_unfinished_seconds",
			Help: "Seconds of work in progress not yet finished, summed over the workers (grows when a write hangs).",
		}),
		longestWork: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "xds_controller_status_queue_longest_running_seconds",
			Help: "Seconds the longest-running status write has been running.",
		}),
	}
}

func (m *writerMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.writes, m.depth, m.adds, m.retries, m.latency, m.workDuration, m.unfinished, m.longestWork}
}

// queueMetrics hands the writer's collectors to its workqueue
// (workqueue.MetricsProvider; the queue has one name, "status").
type queueMetrics struct{ m *writerMetrics }

func (q queueMetrics) NewDepthMetric(string) workqueue.GaugeMetric  { return q.m.depth }
func (q queueMetrics) NewAddsMetric(string) workqueue.CounterMetric { return q.m.adds }
func (q queueMetrics) NewLatencyMetric(string) workqueue.HistogramMetric {
	return q.m.latency
}
func (q queueMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return q.m.workDuration
}
func (q queueMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return q.m.unfinished
}
func (q queueMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return q.m.longestWork
}
func (q queueMetrics) NewRetriesMetric(string) workqueue.CounterMetric { return q.m.retries }

// Register adds the writer's metrics (xds_controller_status_*, listed in
// docs/metrics.md) to reg. It fails when reg has collectors of those
// names already.
func (w *Writer) Register(reg prometheus.Registerer) error {
	for _, c := range w.metrics.collectors() {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
