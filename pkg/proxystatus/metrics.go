package proxystatus

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xds-controller/xds-controller/pkg/xdsserver"
)

// proxiesHelp and proxiesDesc describe xds_controller_proxies
// (docs/metrics.md).
const proxiesHelp = "Envoy proxies connected to this controller replica, by proxy scope and state: SYNCED (every type it asked for is the newest), STALE (one holds an older version), NACKED (it rejected one), UNKNOWN."

var proxiesDesc = prometheus.NewDesc("xds_controller_proxies", proxiesHelp, []string{"scope", "state"}, nil)

// Collector counts the proxies connected to one replica by scope and state
// at every scrape, with the same decisions as `xds-controller
// proxy-status` (Build, Decide) on the replica's own report. Create it
// with NewCollector.
type Collector struct {
	report func() xdsserver.Report
	now    func() time.Time
}

// NewCollector returns a Collector over report (usually the replica's
// xdsserver.Server.Report).
func NewCollector(report func() xdsserver.Report) *Collector {
	return &Collector{report: report, now: time.Now}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- proxiesDesc }

// Collect implements prometheus.Collector: one gauge per scope and state
// that has proxies. A proxy's state is its worst type: NACKED, then
// STALE, then UNKNOWN, then SYNCED.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	type key struct{ scope, state string }
	counts := map[key]int{}
	for _, p := range Build(Input{Reports: map[string]xdsserver.Report{"": c.report()}, Now: c.now()}) {
		counts[key{p.Scope, string(Worst(p))}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(proxiesDesc, prometheus.GaugeValue, float64(n), k.scope, k.state)
	}
}

// Worst is a proxy's state over its resource types: NACKED if it rejected
// any, else STALE if any is older than the newest, else UNKNOWN if any is
// unknown, else SYNCED (types it never asked for do not count).
func Worst(p Proxy) State {
	rank := map[State]int{Synced: 1, Unknown: 2, Stale: 3, Nacked: 4}
	worst := Synced
	for _, ts := range p.Types {
		if rank[ts.State] > rank[worst] {
			worst = ts.State
		}
	}
	return worst
}
