package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/nodelink"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/store"
)

var (
	_ nodelink.Handler = (*Router)(nil)
	_ nodelink.Starter = (*Router)(nil)
)

// ServeForwarded implements nodelink.Handler (StartForwarded, finished).
func (r *Router) ServeForwarded(ctx context.Context, req nodelink.Request) (json.RawMessage, error) {
	return r.StartForwarded(ctx, req)()
}

// StartForwarded serves what another node forwarded to this one as the
// owner: the part that must keep the stream's order (applying) now, the
// rest (waiting for writes) in what it returns. A request on a shard this
// node does not serve is refused, and the asking node looks for the owner
// again.
func (r *Router) StartForwarded(ctx context.Context, req nodelink.Request) func() (json.RawMessage, error) {
	answered := func(result any, err error) func() (json.RawMessage, error) {
		raw, encErr := encodeAnswer(result, err)
		return func() (json.RawMessage, error) { return raw, encErr }
	}
	refused := func(err error) func() (json.RawMessage, error) {
		return func() (json.RawMessage, error) { return nil, err }
	}
	// onShard runs fn on shard if this node serves it.
	onShard := func(shard ownership.Shard, fn func() (any, error)) func() (json.RawMessage, error) {
		if !r.enter(shard) {
			return refused(fmt.Errorf("%s %d", notOwner, shard))
		}
		defer r.gates[shard].exit()
		return answered(fn())
	}
	switch req.Method {
	case mAppend:
		var a store.AppendRequest
		if err := json.Unmarshal(req.Frame, &a); err != nil {
			return answered(nil, err)
		}
		shard := ownership.ShardOfConv(a.Msg.Conv)
		if !r.enter(shard) {
			return refused(fmt.Errorf("%s %d", notOwner, shard))
		}
		wait := r.eng.StartAppend(ctx, a)
		return func() (json.RawMessage, error) {
			res, err := wait()
			r.gates[shard].exit()
			if errors.Is(err, engine.ErrConvMoved) {
				// Refused, not answered: the asking node sends it to the
				// new owner.
				return nil, fmt.Errorf("%s %d", notOwner, shard)
			}
			return encodeAnswer(res, err)
		}
	case mMark:
		var a markArgs
		if err := json.Unmarshal(req.Frame, &a); err != nil || len(a.Marks) == 0 {
			return answered(nil, errors.Join(err, errors.New("a mark request without marks")))
		}
		return onShard(ownership.ShardOfConv(a.Marks[0].Conv), func() (any, error) {
			res, tickets, err := r.eng.MarkForwarded(ctx, a.User, a.Kind, a.Marks)
			self := r.selfAddr()
			for i := range tickets {
				if tickets[i].Node == "" {
					tickets[i].Node = self
				}
			}
			return markAnswer{Ticks: res.Ticks, SessionsChanged: res.SessionsChanged, Cursor: res.Cursor, Tickets: tickets}, err
		})
	case mWake:
		if s := r.ownership(); s != nil {
			s.Wake()
		}
		return answered(struct{}{}, nil)
	case mBarrier:
		return func() (json.RawMessage, error) { return encodeAnswer(struct{}{}, r.eng.Barrier(ctx)) }
	case mWritten:
		var t engine.WriteTicket
		if err := json.Unmarshal(req.Frame, &t); err != nil {
			return answered(nil, err)
		}
		return func() (json.RawMessage, error) { return encodeAnswer(struct{}{}, r.eng.WaitWritten(ctx, t)) }
	case mEffects:
		var a effectsArgs
		if err := json.Unmarshal(req.Frame, &a); err != nil {
			return answered(nil, err)
		}
		return r.serveEffects(ctx, a.Effects)
	case mSessionOp:
		var a sessionOpArgs
		if err := json.Unmarshal(req.Frame, &a); err != nil {
			return answered(nil, err)
		}
		return onShard(ownership.ShardOfUser(a.User), func() (any, error) {
			return r.eng.SessionOp(ctx, a.User, a.Conv, a.Op, a.Args)
		})
	case mSync:
		var a syncArgs
		if err := json.Unmarshal(req.Frame, &a); err != nil {
			return answered(nil, err)
		}
		return onShard(ownership.ShardOfUser(a.User), func() (any, error) { return r.eng.Sync(ctx, a.User, a.Query) })
	case mClock:
		var a convArgs
		if err := json.Unmarshal(req.Frame, &a); err != nil {
			return answered(nil, err)
		}
		return onShard(ownership.ShardOfUser(a.User), func() (any, error) { return r.eng.SessionClock(ctx, a.User) })
	case mReceipts, mGroup, mMembership:
		var a convArgs
		if err := json.Unmarshal(req.Frame, &a); err != nil {
			return answered(nil, err)
		}
		return onShard(ownership.ShardOfConv(a.Conv), func() (any, error) {
			switch req.Method {
			case mReceipts:
				return r.eng.Receipts(ctx, a.Conv)
			case mGroup:
				return r.eng.Group(ctx, a.Conv)
			default:
				return r.eng.Membership(ctx, a.Conv, a.User)
			}
		})
	case mChange:
		var a store.GroupChange
		if err := json.Unmarshal(req.Frame, &a); err != nil {
			return answered(nil, err)
		}
		return onShard(ownership.ShardOfConv(a.Conv), func() (any, error) { return r.eng.ChangeGroup(ctx, a) })
	}
	return answered(nil, fmt.Errorf("unknown method %q", req.Method))
}

// serveEffects applies session effects sent by a conversation's owner, if
// this node serves every one of their users, and answers once they are
// applied, with the tickets of their rows.
func (r *Router) serveEffects(ctx context.Context, effects []engine.Effect) func() (json.RawMessage, error) {
	var shards []ownership.Shard
	for _, ef := range effects {
		shards = append(shards, ownership.ShardOfUser(ef.User))
	}
	shards = slices.Compact(slices.Sorted(slices.Values(shards)))
	for i, s := range shards {
		// A step of an operation in flight on another node: admitted
		// while the shard drains too, as the drains of both nodes would
		// otherwise wait on each other (each for operations waiting on
		// a shard the other is draining).
		if !r.enterWithin(s) {
			for _, entered := range shards[:i] {
				r.gates[entered].exit()
			}
			return func() (json.RawMessage, error) { return nil, fmt.Errorf("%s %d", notOwner, s) }
		}
	}
	results, err := r.eng.ApplyEffects(ctx, effects)
	for _, s := range shards {
		r.gates[s].exit()
	}
	raw, err := encodeAnswer(results, err)
	return func() (json.RawMessage, error) { return raw, err }
}
