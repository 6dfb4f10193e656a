package server

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// What a node goes through after Redis lost its data (FLUSHALL, a restart
// without persistence):
//
//   - The relay finds its presence gone within a second and records it
//     again (relay.watchLoop), then has its devices sync: pushes sent
//     meanwhile may have been lost, the messages are not.
//   - The shards' leases are gone too. The first node whose round finds
//     the sentinel gone opens the leases' grace (one lease TTL, 5 s: see
//     package ownership): within it every holder puts its own leases back
//     and keeps serving, and no node takes a shard without a holder, so
//     operations on such a shard (its holder died about when Redis lost
//     its data) wait until the grace is over.
//
// The nodes serve through the grace, so /readyz stays 200; the grace is
// made visible instead: im_recovering is 1 and
// im_recovery_remaining_seconds counts down, and its start and end are
// logged. /readyz answers 503 when the node cannot reach Redis.

// recoveryState remembers whether the last check found the deployment in
// the grace, to log when that changes.
type recoveryState struct {
	mu         sync.Mutex
	recovering bool
}

// recovery is what a check found: why the node is not ready (empty when it
// is), and how much is left of the leases' grace when it is in one.
type recovery struct {
	why        string
	remaining  time.Duration
	recovering bool // in the leases' grace after Redis lost its data
}

// recovering checks, on a node of a cluster, whether the deployment is in
// the leases' grace after Redis lost its data: one round trip, on the
// operators' Redis client, each time /readyz, /metrics or the heartbeat
// asks.
func (s *Server) recovering(ctx context.Context) recovery {
	c := s.cfg.Cluster
	if c == nil || c.Inspector == nil {
		return recovery{}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	left, err := c.Inspector.LeasesGrace(ctx)
	cancel()
	var r recovery
	switch {
	case err != nil:
		r.why = "redis unreachable: " + err.Error()
	case left > 0:
		r = recovery{remaining: left, recovering: true}
	}
	st := &s.recovery
	st.mu.Lock()
	defer st.mu.Unlock()
	if r.recovering != st.recovering {
		if r.recovering {
			s.log.Warn("Redis lost its data: in the leases' grace no node takes a shard without a holder; operations on such shards wait", "for", left.Round(time.Millisecond))
		} else {
			s.log.Info("the leases' grace is over: every shard may be taken again")
		}
	}
	st.recovering = r.recovering
	return r
}

// registerRecoveryMetrics exposes the recovery on /metrics (0 on the
// embedded server, which never recovers this way).
func (s *Server) registerRecoveryMetrics() {
	s.metrics.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "im_recovering",
		Help: "1 while the deployment recovers from Redis losing its data (the leases' grace: no node takes a shard without a holder, and operations on such shards wait), else 0.",
	}, func() float64 {
		if s.recovering(context.Background()).recovering {
			return 1
		}
		return 0
	}))
	s.metrics.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "im_recovery_remaining_seconds",
		Help: "What is left of the leases' grace after Redis lost its data (0 when none).",
	}, func() float64 {
		return s.recovering(context.Background()).remaining.Seconds()
	}))
}

// Connections returns how many WebSocket connections the server holds,
// before and after their hello (im_connections).
func (s *Server) Connections() int {
	var m dto.Metric
	if err := s.metrics.Connections.Write(&m); err != nil {
		return 0
	}
	return int(m.GetGauge().GetValue())
}

// startHeartbeat records this node in Redis at once, so that it is listed
// as soon as it serves, then every heartbeatEvery until Shutdown.
func (s *Server) startHeartbeat() {
	c := s.cfg.Cluster
	if c == nil || c.Inspector == nil {
		return
	}
	s.beatsMu.Lock()
	defer s.beatsMu.Unlock()
	if s.shutDown || s.stopBeats != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if err := c.Inspector.Beat(ctx, s.self()); err != nil {
		s.log.Warn("heartbeat failed: imserver status may not list this node until the next", "err", err)
	}
	cancel()
	s.stopBeats, s.beatsDone = make(chan struct{}), make(chan struct{})
	go s.heartbeat(c.Inspector, s.stopBeats, s.beatsDone)
}

// stopHeartbeat ends the heartbeat and withdraws it; none starts after.
func (s *Server) stopHeartbeat() {
	s.beatsMu.Lock()
	defer s.beatsMu.Unlock()
	s.shutDown = true
	if s.stopBeats != nil {
		close(s.stopBeats)
		<-s.beatsDone
		s.stopBeats = nil
	}
}
