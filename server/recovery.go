package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// What a node goes through after Redis lost its data (FLUSHALL, a restart
// without persistence), as found in the engine it runs today:
//
//   - The relay finds its presence gone within a second and records it
//     again (relay.watchLoop), then has its devices sync: pushes sent
//     meanwhile may have been lost, the messages are not.
//   - The per-operation locks (package distlock) are gone too, and with
//     them the gate that says from when locks may be granted. The first
//     operation to want a lock sets the gate a grace period ahead (half the
//     lock expiry: 5 s), and no conversation or user lock is granted, so no
//     send, receipt or group change is served, until it opens. That is the
//     pause clients see while they are still connected.
//
// A node cannot end that pause without changing the engine (the grace is
// what keeps two nodes out of one section), so it makes it visible: while
// the gate is closed /readyz answers 503 saying for how long, im_recovering
// is 1 and im_recovery_remaining_seconds counts down, and the start and the
// end are logged. A gate missing is not counted as recovering: a
// deployment that never locked anything has none either, and a node
// unready until traffic arrives would never get any. The ownership of
// conversations by shard (issue 18) removes the locks and their gate; its
// own "rebuilding a shard" state belongs here then.

// recoveryState remembers whether the last check found the node
// recovering, to log when that changes.
type recoveryState struct {
	mu         sync.Mutex
	recovering bool
}

// recovery is what a check found: why the node is not ready (empty when it
// is), and for how long it expects to stay so when it is recovering.
type recovery struct {
	why        string
	remaining  time.Duration
	recovering bool // why is a recovery, not Redis unreachable
}

// recovering checks, on a node of a cluster, whether it waits for the lock
// gate after Redis lost its data: one pipelined round trip, on the
// operators' Redis client, each time /readyz, /metrics or the heartbeat
// asks.
func (s *Server) recovering(ctx context.Context) recovery {
	c := s.cfg.Cluster
	if c == nil || c.Inspector == nil {
		return recovery{}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	wait, err := c.Inspector.LockGate(ctx)
	cancel()
	var r recovery
	switch {
	case err != nil:
		r.why = "redis unreachable: " + err.Error()
	case wait > 0:
		r = recovery{
			why:        fmt.Sprintf("recovering: Redis lost its data; no lock is granted, so sends and receipts wait, for %v more", wait.Round(time.Millisecond)),
			remaining:  wait,
			recovering: true,
		}
	}
	st := &s.recovery
	st.mu.Lock()
	defer st.mu.Unlock()
	if r.recovering != st.recovering {
		if r.recovering {
			s.log.Warn("recovering after Redis lost its data: sends and receipts wait for the lock gate; /readyz answers 503", "for", wait.Round(time.Millisecond))
		} else {
			s.log.Info("recovered: locks are granted again; /readyz answers 200 unless something else fails")
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
		Help: "1 while the node recovers from Redis losing its data (no lock granted: sends and receipts wait; /readyz answers 503), else 0.",
	}, func() float64 {
		if s.recovering(context.Background()).recovering {
			return 1
		}
		return 0
	}))
	s.metrics.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "im_recovery_remaining_seconds",
		Help: "How long the node expects to go on recovering from Redis losing its data (0 when it is not).",
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
