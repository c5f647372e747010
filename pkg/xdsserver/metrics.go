package xdsserver

import "github.com/prometheus/client_golang/prometheus"

// metrics are the server's Prometheus collectors.
type metrics struct {
	// acks and nacks count ACKs and NACKs by scope and short type name
	// ("Listener", "RouteConfiguration", "Cluster", ...).
	acks, nacks *prometheus.CounterVec
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
	}
}

// Register adds the server's metrics (xds_controller_xds_acks_total and
// xds_controller_xds_nacks_total, counters labelled scope and type) to reg.
// It fails when reg already has collectors of those names.
func (s *Server) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{s.metrics.acks, s.metrics.nacks} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
