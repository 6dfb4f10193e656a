package routing

import (
	"context"
	"fmt"
	"time"

	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/ownership"
)

// owners is the Router as the engine's engine.Owners.
type owners struct{ r *Router }

var _ engine.Owners = owners{}

func (o owners) OwnsConv(conv string) bool {
	shard := ownership.ShardOfConv(conv)
	return o.r.gates[shard].isServing() && o.r.trusted(shard)
}

func (o owners) HoldUser(user string) (func(), bool) {
	shard := ownership.ShardOfUser(user)
	if !o.r.enterWithin(shard) {
		return nil, false
	}
	return o.r.gates[shard].exit, true
}

// UserFence returns the epoch this node took user's shard at, while the
// shard's rows are this node's to write (see gate.seal).
func (o owners) UserFence(user string) (int64, bool) {
	s := o.r.ownership()
	if s == nil {
		return 0, false
	}
	shard := ownership.ShardOfUser(user)
	if !o.r.gates[shard].isWritable() {
		return 0, false
	}
	return s.Epoch(shard)
}

// HoldWrite keeps user's rows this node's to write until release, if
// they still are (see gate.sealWithin). Each write must be done by until,
// asked right before it: when this node stops trusting its lease of the
// user's shard unless it is refreshed (a write that lands later could land
// after a successor read the tables, where no fence shows it stale). Asked
// again for each write, it moves on as the lease is refreshed, so that a
// long write of many rows is not cut at the trust end it began under. A
// lease not trusted right now (a refresh late) gives a deadline already
// past: the write fails and is tried again, once the lease is refreshed,
// or dropped once the lease is lost (Router.lost stops the shard's
// writing at once). It is not dropped here: the node still serves the
// shard from memory, and its rows would be lost from the tables for good.
func (o owners) HoldWrite(user string) (release func(), until func() time.Time, ok bool) {
	shard := ownership.ShardOfUser(user)
	s := o.r.ownership()
	if s == nil {
		return nil, nil, false
	}
	g := &o.r.gates[shard]
	if !g.holdWrite() {
		return nil, nil, false
	}
	return g.releaseWrite, func() time.Time {
		if t, trusted := s.TrustedUntil(shard); trusted {
			return t
		}
		return time.Now()
	}, true
}

// Apply sends effects to the owners of their users, one request per node,
// and waits until each owner has applied them; each result's ticket names
// the node that did (Confirm). Those applied here, by now the users'
// owner, need no ticket: their rows are in this node's own writer, before
// anything the caller puts next. A batch a node refuses (the users'
// shards moved) goes again to where they are now.
func (o owners) Apply(ctx context.Context, effects []engine.Effect) ([]engine.EffectResult, error) {
	r := o.r
	results := make([]engine.EffectResult, len(effects))
	left := make([]int, len(effects)) // indexes of effects not yet applied
	for i := range left {
		left[i] = i
	}
	deadline := time.Now().Add(routeWait)
	backoff := 5 * time.Millisecond
	for len(left) > 0 {
		byNode := map[string][]int{}
		var moving, here []int
		var entered []ownership.Shard
		for _, i := range left {
			shard := ownership.ShardOfUser(effects[i].User)
			if r.enterWithin(shard) {
				// Served here by now (the shard was being taken).
				entered = append(entered, shard)
				here = append(here, i)
				continue
			}
			owner, err := r.ownerOf(shard)
			if err != nil {
				moving = append(moving, i)
				continue
			}
			byNode[owner.Addr] = append(byNode[owner.Addr], i)
		}
		left = moving
		if len(here) > 0 {
			err := o.applyHere(ctx, effects, here, results)
			for _, shard := range entered {
				r.gates[shard].exit()
			}
			if err != nil {
				return nil, err
			}
		}
		for addr, idx := range byNode {
			batch := make([]engine.Effect, len(idx))
			for k, i := range idx {
				batch[k] = effects[i]
				if batch[k].Rows != (engine.WriteTicket{}) && batch[k].Rows.Node == "" {
					batch[k].Rows.Node = r.selfAddr() // the rows are this node's
				}
			}
			req, err := request("fx/"+batch[0].Conv, mEffects, effectsArgs{Effects: batch})
			if err != nil {
				return nil, err
			}
			var got []engine.EffectResult
			raw, err := r.pool.Forward(ctx, addr, req)
			if err == nil {
				err = decodeAnswer(raw, &got)
				if err == nil && len(got) != len(batch) {
					err = fmt.Errorf("session effects: %d results for %d", len(got), len(batch))
				}
				if err != nil {
					return nil, err
				}
				for k, i := range idx {
					results[i] = got[k]
					results[i].Ticket.Node = addr
				}
				continue
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			left = append(left, idx...)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("session effects: %w", errNoOwner)
		}
		if err := r.waitForChange(ctx, backoff); err != nil {
			return nil, err
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
	return results, nil
}

// applyHere applies the effects at idx on this node, which serves their
// users, into results.
func (o owners) applyHere(ctx context.Context, effects []engine.Effect, idx []int, results []engine.EffectResult) error {
	batch := make([]engine.Effect, len(idx))
	for k, i := range idx {
		batch[k] = effects[i]
	}
	got, err := o.r.eng.ApplyEffects(ctx, batch)
	if err != nil {
		return err
	}
	for k, i := range idx {
		// The ticket of this node's writer (Node empty): confirmed here.
		results[i] = got[k]
	}
	return nil
}

// Confirm waits until the node ticket names has written the rows it
// names (see confirms).
func (o owners) Confirm(ctx context.Context, ticket engine.WriteTicket) error {
	return o.r.confirms.wait(ctx, o.r, ticket)
}
