package faultrun

import (
	"context"
	"math/rand/v2"
	"time"
)

// pauseNodes stops a random node with SIGSTOP for longer than its lease,
// at random moments, until the target is met or ctx ends: a frozen node
// keeps its sockets open and answers nothing, as in a long GC pause or a
// stalled VM. Its lease lapses meanwhile and the others take its shards,
// the requests forwarded to it going to them; resumed, it finds its leases
// lost and takes its share back. One node at a time, never during a kill
// or a leave (takeForKill).
func (r *run) pauseNodes(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 0x5157))
	c := r.cluster.cfg
	for n := 1; n <= c.Pauses; n++ {
		if !r.awaitEvent(ctx, rng, false) {
			return
		}
		var s *Server
		for s == nil {
			if s = r.takeForKill(rng); s == nil && !sleepUntil(ctx, time.Now().Add(eventPoll)) {
				return
			}
		}
		length := c.Lease + randBetween(rng, c.MinOutage, c.MaxOutage)
		if err := s.Pause(); err != nil {
			r.releaseNode(s)
			if ctx.Err() == nil {
				r.harnessError(err)
			}
			return
		}
		sleepUntil(ctx, time.Now().Add(length)) // the scenario: frozen past its lease
		err := s.Resume()
		r.releaseNode(s)
		if err != nil {
			r.harnessError(err)
			return
		}
		r.pauses.Add(1)
		r.cfg.Logf("pause %d: %s stopped for %v", n, s.Name(), length.Round(time.Millisecond))
		if ctx.Err() != nil {
			return
		}
	}
}
