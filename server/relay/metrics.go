package relay

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/imcore/im/server/metrics"
)

// RegisterMetrics exposes the relay's counters (see Stats) on m as
// im_relay_routed_total, im_relay_published_total and
// im_relay_dropped_total.
func (r *Relay) RegisterMetrics(m *metrics.Metrics) {
	for _, c := range []struct {
		name, help string
		value      func() int64
	}{
		{"im_relay_routed_total", "Pushes whose nodes were looked up in presence.", r.routed.Load},
		{"im_relay_published_total", "Pushes sent to another node over its link (one per push and node).", r.published.Load},
		{"im_relay_dropped_total", "Pushes not passed on to other nodes: queue full, presence unreadable, or the node's link failed.", r.dropped.Load},
	} {
		m.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help}, func() float64 {
			return float64(c.value())
		}))
	}
}
