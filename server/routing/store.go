package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/nodelink"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

var _ store.Store = (*Router)(nil)

// request is a node link request for method with args.
func request(stream, method string, args any) (nodelink.Request, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nodelink.Request{}, err
	}
	return nodelink.Request{Stream: stream, Method: method, Frame: raw}, nil
}

func convStream(conv string) string { return "c/" + conv }
func userStream(user string) string { return "u/" + user }

// markStream keeps a conversation's marks in order, apart from its sends:
// receipts never wait behind sends.
func markStream(conv string) string { return "m/" + conv }

// Append implements store.Store at the conversation's owner.
func (r *Router) Append(ctx context.Context, req store.AppendRequest) (store.AppendResult, error) {
	return r.appendNoting(ctx, req, false)
}

// appendNoting is Append after an attempt whose answer never came back
// when unanswered is set. The message may then have been stored by that
// attempt and found stored by a later one; but this node, which pushes
// what its callers are answered sent, never learned of it, and nobody
// pushed it. Found stored after such an attempt, it is answered as new,
// so that it is pushed once.
func (r *Router) appendNoting(ctx context.Context, req store.AppendRequest, unanswered bool) (store.AppendResult, error) {
	var res store.AppendResult
	err := r.routeNoting(ctx, ownership.ShardOfConv(req.Msg.Conv), convStream(req.Msg.Conv), mAppend, req, &res, func(ctx context.Context) error {
		var err error
		res, err = r.eng.Append(ctx, req)
		return err
	}, &unanswered)
	if err == nil && unanswered && res.Duplicate {
		res.Duplicate = false
	}
	return res, err
}

// StartAppend implements store.Store at the conversation's owner: the
// append is queued there now, in this call's order, and its answer
// awaited by wait.
func (r *Router) StartAppend(ctx context.Context, req store.AppendRequest) func() (store.AppendResult, error) {
	shard := ownership.ShardOfConv(req.Msg.Conv)
	done := func(res store.AppendResult, err error) func() (store.AppendResult, error) {
		return func() (store.AppendResult, error) { return res, err }
	}
	if r.enter(shard) {
		wait := r.eng.StartAppend(ctx, req)
		var res store.AppendResult
		var err error
		finished := make(chan struct{})
		go func() {
			// The shard is handed over only once the append is derived.
			defer r.gates[shard].exit()
			defer close(finished)
			res, err = wait()
		}()
		return func() (store.AppendResult, error) {
			<-finished
			if errors.Is(err, engine.ErrConvMoved) {
				// Handed over before it was written: at the new owner.
				return r.Append(ctx, req)
			}
			return res, err
		}
	}
	owner, err := r.ownerOf(shard)
	if err != nil {
		return func() (store.AppendResult, error) { return r.Append(ctx, req) }
	}
	fwd, err := request(convStream(req.Msg.Conv), mAppend, req)
	if err != nil {
		return done(store.AppendResult{}, err)
	}
	await, err := r.pool.Start(ctx, owner.Addr, fwd)
	if err != nil {
		return func() (store.AppendResult, error) { return r.Append(ctx, req) }
	}
	return func() (store.AppendResult, error) {
		raw, err := await(context.WithoutCancel(ctx))
		if err != nil {
			// The owner moved or its link dropped: again, wherever it
			// is now (an append is idempotent by its msg_id).
			return r.appendNoting(ctx, req, errors.Is(err, nodelink.ErrLinkDown))
		}
		var res store.AppendResult
		err = decodeAnswer(raw, &res)
		return res, err
	}
}

// History implements store.Store: messages are durable before they are
// answered sent, so any node reads the log as it is.
func (r *Router) History(ctx context.Context, conv string, q store.HistoryQuery) ([]protocol.Message, bool, error) {
	return r.eng.History(ctx, conv, q)
}

// Mark implements store.Store: each conversation's marks are applied at
// its owner, in this call's order; Written waits for the rows of every
// owner involved.
func (r *Router) Mark(ctx context.Context, user string, kind store.MarkKind, marks []protocol.Mark) (store.MarkResult, error) {
	if s, ok := oneShard(marks); ok {
		got, written, err := r.markAt(ctx, user, kind, s, marks)
		if err != nil {
			return store.MarkResult{}, err
		}
		return store.MarkResult{Ticks: got.Ticks, SessionsChanged: got.SessionsChanged, Cursor: got.Cursor, Written: written}, nil
	}
	byShard := map[ownership.Shard][]protocol.Mark{}
	var order []ownership.Shard
	for _, m := range marks {
		s := ownership.ShardOfConv(m.Conv)
		if _, seen := byShard[s]; !seen {
			order = append(order, s)
		}
		byShard[s] = append(byShard[s], m)
	}
	var res store.MarkResult
	var writtens []func(context.Context) error
	for _, s := range order {
		got, written, err := r.markAt(ctx, user, kind, s, byShard[s])
		if err != nil {
			return store.MarkResult{}, err
		}
		writtens = append(writtens, written)
		res.Ticks = append(res.Ticks, got.Ticks...)
		res.SessionsChanged = res.SessionsChanged || got.SessionsChanged
		res.Cursor = max(res.Cursor, got.Cursor)
	}
	res.Written = func(ctx context.Context) error {
		for _, w := range writtens {
			if err := w(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	return res, nil
}

// oneShard returns the shard of marks' conversations when they share one
// (a frame's marks most often name one conversation).
func oneShard(marks []protocol.Mark) (ownership.Shard, bool) {
	if len(marks) == 0 {
		return 0, false
	}
	s := ownership.ShardOfConv(marks[0].Conv)
	for _, m := range marks[1:] {
		if ownership.ShardOfConv(m.Conv) != s {
			return 0, false
		}
	}
	return s, true
}

// markAt applies marks, all of conversations of shard s, at the shard's
// owner and returns what they changed and what waits for their rows. The
// rows of an owner that stops or dies before writing them cannot be
// confirmed: the marks are then applied again where the shard is now
// (max-merges, so applying them twice changes nothing more), and those
// rows confirmed in turn, as the client would have retried.
func (r *Router) markAt(ctx context.Context, user string, kind store.MarkKind, s ownership.Shard, ms []protocol.Mark) (markAnswer, func(context.Context) error, error) {
	apply := func(ctx context.Context) (markAnswer, func(context.Context) error, error) {
		var got markAnswer
		var local store.MarkResult
		err := r.route(ctx, s, markStream(ms[0].Conv), mMark, markArgs{User: user, Kind: kind, Marks: ms}, &got, func(ctx context.Context) error {
			var err error
			local, err = r.eng.Mark(ctx, user, kind, ms)
			return err
		})
		if err != nil {
			return markAnswer{}, nil, err
		}
		if local.Written != nil {
			return markAnswer{Ticks: local.Ticks, SessionsChanged: local.SessionsChanged, Cursor: local.Cursor}, local.Written, nil
		}
		// Served by the owner: its rows, and those its effects put on
		// other nodes, are confirmed where they were put.
		tickets := got.Tickets
		return got, func(ctx context.Context) error {
			for _, t := range tickets {
				if err := r.confirms.wait(ctx, r, t); err != nil {
					return err
				}
			}
			return nil
		}, nil
	}
	got, written, err := apply(ctx)
	if err != nil {
		return markAnswer{}, nil, err
	}
	if got.Tickets == nil {
		// Applied here: the engine's own wait confirms every row, and
		// applies again what another node lost.
		return got, written, nil
	}
	return got, func(ctx context.Context) error {
		err := written(ctx)
		for attempt := 1; err != nil && attempt < markAttempts && ctx.Err() == nil; attempt++ {
			r.log.Debug("a mark's rows unconfirmed; applying it again at the owner", "user", user, "conv", ms[0].Conv, "err", err)
			var again func(context.Context) error
			if _, again, err = apply(ctx); err == nil {
				err = again(ctx)
			}
		}
		return err
	}, nil
}

// markAttempts bounds how often a mark is applied again whose rows its
// owner could not confirm.
const markAttempts = 3

var barriers atomic.Uint64

// barrierStream is a stream of its own: a barrier waits on nothing but the
// writer.
func barrierStream() string { return fmt.Sprint("b/", barriers.Add(1)) }

// SessionOp implements store.Store at the user's owner.
func (r *Router) SessionOp(ctx context.Context, user, conv string, op session.Op, args session.OpArgs) (store.SessionResult, error) {
	var res store.SessionResult
	err := r.route(ctx, ownership.ShardOfUser(user), userStream(user), mSessionOp, sessionOpArgs{User: user, Conv: conv, Op: op, Args: args}, &res, func(ctx context.Context) error {
		var err error
		res, err = r.eng.SessionOp(ctx, user, conv, op, args)
		return err
	})
	return res, err
}

// Sync implements store.Store at the user's owner.
func (r *Router) Sync(ctx context.Context, user string, q store.SyncQuery) (store.SyncPage, error) {
	var page store.SyncPage
	err := r.route(ctx, ownership.ShardOfUser(user), userStream(user), mSync, syncArgs{User: user, Query: q}, &page, func(ctx context.Context) error {
		var err error
		page, err = r.eng.Sync(ctx, user, q)
		return err
	})
	return page, err
}

// SessionClock returns user's newest session timestamp, at its owner.
func (r *Router) SessionClock(ctx context.Context, user string) (int64, error) {
	var clock int64
	err := r.route(ctx, ownership.ShardOfUser(user), userStream(user), mClock, convArgs{User: user}, &clock, func(ctx context.Context) error {
		var err error
		clock, err = r.eng.SessionClock(ctx, user)
		return err
	})
	return clock, err
}

// SetAccount implements store.Store: a write of the shared tables, read
// when a session is created.
func (r *Router) SetAccount(ctx context.Context, user, category, subBiz string) error {
	return r.eng.SetAccount(ctx, user, category, subBiz)
}

// Pending implements store.Store: the user's pending rows are written by
// the owners of its conversations, so every node's rows put so far are
// written first.
func (r *Router) Pending(ctx context.Context, user string) ([]store.PendingDelivery, error) {
	if err := r.barrierEverywhere(ctx); err != nil {
		return nil, err
	}
	return r.eng.Pending(ctx, user)
}

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

// Receipts implements store.Store at the conversation's owner.
func (r *Router) Receipts(ctx context.Context, conv string) ([]protocol.MemberReceipt, error) {
	var out []protocol.MemberReceipt
	err := r.route(ctx, ownership.ShardOfConv(conv), convStream(conv), mReceipts, convArgs{Conv: conv}, &out, func(ctx context.Context) error {
		var err error
		out, err = r.eng.Receipts(ctx, conv)
		return err
	})
	return out, err
}

// Group implements store.Store at the conversation's owner.
func (r *Router) Group(ctx context.Context, conv string) (store.GroupState, error) {
	var g store.GroupState
	err := r.route(ctx, ownership.ShardOfConv(conv), convStream(conv), mGroup, convArgs{Conv: conv}, &g, func(ctx context.Context) error {
		var err error
		g, err = r.eng.Group(ctx, conv)
		return err
	})
	return g, err
}

// Membership implements store.Store at the conversation's owner.
func (r *Router) Membership(ctx context.Context, conv, user string) (store.Membership, error) {
	var m store.Membership
	err := r.route(ctx, ownership.ShardOfConv(conv), convStream(conv), mMembership, convArgs{Conv: conv, User: user}, &m, func(ctx context.Context) error {
		var err error
		m, err = r.eng.Membership(ctx, conv, user)
		return err
	})
	return m, err
}

// ChangeGroup implements store.Store at the conversation's owner.
func (r *Router) ChangeGroup(ctx context.Context, req store.GroupChange) (store.GroupResult, error) {
	var res store.GroupResult
	err := r.route(ctx, ownership.ShardOfConv(req.Conv), convStream(req.Conv), mChange, req, &res, func(ctx context.Context) error {
		var err error
		res, err = r.eng.ChangeGroup(ctx, req)
		return err
	})
	return res, err
}

// Barrier returns once every row put so far, on every live node, is
// written.
func (r *Router) Barrier(ctx context.Context) error { return r.barrierEverywhere(ctx) }
