package xdsserver

import "github.com/prometheus/client_golang/prometheus"

// metrics are the server's Prometheus collectors.
type metrics struct {
	// acks and nacks count ACKs and NACKs by scope and short type name
	// ("Listener", "RouteConfiguration", "Cluster", ...).
	acks, nacks *prometheus.CounterVec
	// ackSeconds is, per ACK of the newest published version of a scope,
	// how long after that publish it came, by short type name.
	ackSeconds *prometheus.HistogramVec
}

func newMetrics() metrics {
	return metrics{
		acks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xds_controller_xds_acks_total",
			Help: "xDS responses Envoy proxies accepted (ACK), by proxy scope and resource type.",
		}, []string{"scope", "type"}),
		nacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "xds_controller_xds_nacks_total",
			Help: "xDS responses Envoy proxies rejected (NACK), by proxy scope and resource type.",
		}, []string{"scope", "type"}),
		ackSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "xds_controller_xds_ack_seconds",
			Help: "Time from the publish of a scope's configuration to each ACK of it by an Envoy proxy (one per proxy and resource type the change reached), by resource type.",
			// 1 ms to about 16 s.
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"type"}),
	}
}

// Register adds the server's metrics to reg: xds_controller_xds_acks_total
// and xds_controller_xds_nacks_total (counters labelled scope and type),
// and xds_controller_xds_ack_seconds (a histogram labelled type, in
// seconds). It fails when reg already has collectors of those names.
func (s *Server) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s.metrics.acks, s.metrics.nacks, s.metrics.ackSeconds} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
