package routing

import (
	"context"
	"fmt"
	"sync/atomic"
)

var barriers atomic.Uint64

// barrierStream is a stream of its own: a barrier waits on nothing but the
// writer.
func barrierStream() string { return fmt.Sprint("b/", barriers.Add(1)) }

// barrierEverywhere waits until every live node's rows put so far are
// written.
func (r *Router) barrierEverywhere(ctx context.Context) error {
	s := r.ownership()
	if s == nil {
		return r.eng.Barrier(ctx)
	}
	for _, n := range s.Nodes() {
		if n.ID == s.NodeID() {
			continue
		}
		req, _ := request(barrierStream(), mBarrier, struct{}{})
		raw, err := r.pool.Forward(ctx, n.Addr, req)
		if err != nil {
			// A node that cannot answer is stopping or gone: what it
			// left underived its shards' next owner derives.
			r.log.Debug("a node did not answer a barrier", "node", n.ID, "err", err)
			continue
		}
		if err := decodeAnswer(raw, nil); err != nil {
			return err
		}
	}
	return r.eng.Barrier(ctx)
}

// Barrier returns once every row put so far, on every live node, is
// written.
func (r *Router) Barrier(ctx context.Context) error { return r.barrierEverywhere(ctx) }
