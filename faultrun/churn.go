package faultrun

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// churn has nodes join and leave the cluster at random moments, until the
// target is met or ctx ends, a join then a leave each time: a new node (a
// new node id, address and data directory) starts and takes its share of
// the shards; after a random gap, and once no node is down for a kill, a
// random member gets SIGTERM and hands its shards over before it stops.
// So Nodes members serve at least, besides a kill's, and the proxy sends
// the clients of the node that left to the others as it does after a
// kill. A node that could not join fails the run; one that stopped at the
// end of its shutdown grace is counted (Report.LateLeaves), one that did
// not stop cleanly otherwise is a violation of kind leave.
func (r *run) churn(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 0xc4a2))
	c := r.cluster.cfg
	for n := 1; n <= c.Joins; n++ {
		if !r.awaitEvent(ctx, rng, false) {
			return
		}
		if err := r.join(ctx, n); err != nil {
			if ctx.Err() == nil {
				r.eventFailed(err)
			}
			return
		}
		if !r.awaitEvent(ctx, rng, false) {
			return
		}
		if !r.leave(ctx, n, rng) {
			return
		}
	}
}

// join starts node Nodes+n, a new one, and makes it a member once it
// listens. Like a restart, a start that fails is tried again for a while
// (DynamoDB may be out).
func (r *run) join(ctx context.Context, n int) error {
	s, err := r.newClusterNode(r.cluster.cfg.Nodes + n)
	if err != nil {
		return err
	}
	began := time.Now()
	if err := r.restart(ctx, s); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("join %d: start %s: %w", n, s.Name(), err)
	}
	r.addNode(s)
	r.joins.Add(1)
	r.cfg.Logf("join %d: %s started in %v", n, s.Name(), time.Since(began).Round(time.Millisecond))
	return nil
}

// leave stops a random member with SIGTERM, keeping Nodes members, and
// waits for it to exit; first it waits for a kill under way to end. It
// reports false when ctx ended first.
func (r *run) leave(ctx context.Context, n int, rng *rand.Rand) bool {
	var s *Server
	for s == nil {
		if s = r.takeForLeave(rng, r.cluster.cfg.Nodes); s == nil && !sleepUntil(ctx, time.Now().Add(eventPoll)) {
			return false
		}
	}
	defer r.releaseNode(s)
	began := time.Now()
	if r.cfg.LogDir != "" {
		slow := time.AfterFunc(slowLeave, func() { r.dumpGoroutines(fmt.Sprintf("leave-%d", n), s) })
		defer slow.Stop()
	}
	err := s.Stop()
	r.leaves.Add(1)
	took := time.Since(began).Round(time.Millisecond)
	switch {
	case errors.Is(err, errGraceRanOut):
		// imserver's own bound on a shutdown: requests in flight may wait
		// longer for their shards' owners (after a kill, say); those are
		// cut, and their clients try again elsewhere.
		r.lateLeaves.Add(1)
		r.cfg.Logf("leave %d after %v: %v", n, took, err)
	case err != nil:
		r.cfg.Logf("leave %d after %v: %v", n, took, err)
		r.violationMu.Lock()
		r.leaveFaults = append(r.leaveFaults, Violation{Kind: "leave", Detail: fmt.Sprintf("leave %d: %v", n, err)})
		r.violationMu.Unlock()
	default:
		r.cfg.Logf("leave %d: %s handed its shards over and stopped in %v", n, s.Name(), took)
	}
	return true
}

// eventFailed records the first failure of a chaos event that fails the
// run; the chaos returns it (see checkAlive).
func (r *run) eventFailed(err error) {
	r.violationMu.Lock()
	defer r.violationMu.Unlock()
	if r.eventErr == nil {
		r.eventErr = err
	}
}

// eventError returns the failure eventFailed recorded, nil for none.
func (r *run) eventError() error {
	r.violationMu.Lock()
	defer r.violationMu.Unlock()
	return r.eventErr
}

// leaveViolations returns the leaves that did not stop cleanly.
func (r *run) leaveViolations() []Violation {
	r.violationMu.Lock()
	defer r.violationMu.Unlock()
	return append([]Violation(nil), r.leaveFaults...)
}
