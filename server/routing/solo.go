package routing

import (
	"context"
	"time"

	"github.com/imcore/im/server/ownership"
)

// Solo is the placement of a server alone: it owns every shard, for ever,
// at one epoch, with no lease to renew and no other node to reach. The
// embedded server is a cluster of one, served by the same Router as a
// node of several.
type Solo struct {
	// ID names the server (-node-id; may be empty).
	ID string
}

var _ Placement = Solo{}

// soloEpoch is the epoch of every shard a Solo server holds.
const soloEpoch = 1

// NodeID implements Placement.
func (s Solo) NodeID() string { return s.ID }

// NodeAddr implements Placement: no other node reaches it.
func (Solo) NodeAddr() string { return "" }

// Owner implements Placement: every shard is this server's.
func (s Solo) Owner(ownership.Shard) ownership.Node { return ownership.Node{ID: s.ID} }

// Nodes implements Placement.
func (s Solo) Nodes() []ownership.Node { return []ownership.Node{{ID: s.ID}} }

// Changed implements Placement: nothing ever changes.
func (Solo) Changed() <-chan struct{} { return nil }

// Wake implements Placement.
func (Solo) Wake() {}

// Epoch implements Placement.
func (Solo) Epoch(ownership.Shard) (int64, bool) { return soloEpoch, true }

// TrustedUntil implements Placement: for ever (the zero time bounds no
// write).
func (Solo) TrustedUntil(ownership.Shard) (time.Time, bool) { return time.Time{}, true }

// ServeAlone attaches s and opens every shard at once, as a node opens
// those it takes: what an earlier run left underived is derived again in
// the background while the shards are served.
func (r *Router) ServeAlone(ctx context.Context, s Solo) error {
	r.Attach(s)
	for shard := range ownership.Shard(ownership.Shards) {
		if err := r.acquired(ctx, shard, ownership.Fence{Shard: shard, Epoch: soloEpoch}); err != nil {
			return err
		}
	}
	return nil
}
