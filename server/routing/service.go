package routing

import (
	"context"
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/store"
)

// The Router answers a connection's frames for the gateway
// (gateway.Service): each runs at the owner of what it touches (frames.go).

// StartSend starts a send at its conversation's owner, in the order of
// the calls; finish returns its answer.
func (r *Router) StartSend(ctx context.Context, c chat.Caller, f *protocol.Send) func() (*protocol.Sent, *protocol.Error) {
	shard, stream := routeOf(f, c.User, "")
	finish := r.start(ctx, shard, stream, c, f, "")
	return func() (*protocol.Sent, *protocol.Error) { return resultOf[*protocol.Sent](finish()) }
}

// StartMark applies marks at their conversations' owners, in the order of
// the calls; finish returns once they are durable and their statuses
// pushed. A frame whose marks name several shards is checked at each
// owner first: refused, it changes nothing anywhere.
func (r *Router) StartMark(ctx context.Context, c chat.Caller, kind store.MarkKind, marks []protocol.Mark) (func(context.Context) *protocol.Error, *protocol.Error) {
	if perr := protocol.ValidateMarks(marks); perr != nil {
		return nil, perr
	}
	groups := byShard(marks)
	if len(groups) > 1 {
		if perr := r.CheckMarks(ctx, c, marks); perr != nil {
			return nil, perr
		}
	}
	finishes := make([]func() protocol.Frame, len(groups))
	for i, g := range groups {
		f := markFrame(kind, g.marks)
		shard, stream := routeOf(f, c.User, "")
		finishes[i] = r.start(ctx, shard, stream, c, f, "")
	}
	return func(context.Context) *protocol.Error {
		var first *protocol.Error
		for _, finish := range finishes {
			if perr := errorOf(finish()); perr != nil && first == nil {
				first = perr
			}
		}
		return first
	}, nil
}

// CheckMarks says whether StartMark would refuse marks, changing nothing:
// their form and a direct chat's membership here, a group's at its owner.
func (r *Router) CheckMarks(ctx context.Context, c chat.Caller, marks []protocol.Mark) *protocol.Error {
	if perr := protocol.ValidateMarks(marks); perr != nil {
		return perr
	}
	for _, g := range byShard(marks) {
		var groupMarks []protocol.Mark
		for _, m := range g.marks {
			conv, _ := protocol.ParseConv(m.Conv)
			if conv.Kind != protocol.ConvGroup {
				if !conv.HasMember(c.User) {
					return protocol.Errorf(protocol.CodeForbidden, "not a member of %s", m.Conv)
				}
				continue
			}
			groupMarks = append(groupMarks, m)
		}
		if len(groupMarks) == 0 {
			continue
		}
		if perr := r.checkMarksAt(ctx, g.shard, c, groupMarks); perr != nil {
			return perr
		}
	}
	return nil
}

// checkMarksAt checks group marks, all of shard, at the shard's owner.
func (r *Router) checkMarksAt(ctx context.Context, shard ownership.Shard, c chat.Caller, marks []protocol.Mark) *protocol.Error {
	var refusal *protocol.Error
	err := r.route(ctx, shard, markStream(marks[0].Conv), mCheckMarks, checkArgs{User: c.User, Marks: marks}, &refusal, func(ctx context.Context) error {
		refusal = r.svc.CheckMarks(ctx, c, marks)
		return nil
	})
	if err != nil {
		return protocol.Errorf(protocol.CodeInternal, "checking marks failed; nothing was changed, try again")
	}
	return refusal
}

// markGroup is the marks of one shard.
type markGroup struct {
	shard ownership.Shard
	marks []protocol.Mark
}

// byShard groups marks by the shard of their conversation, in the order
// the shards first appear.
func byShard(marks []protocol.Mark) []markGroup {
	var out []markGroup
	for _, m := range marks {
		s := ownership.ShardOfConv(m.Conv)
		i := slices.IndexFunc(out, func(g markGroup) bool { return g.shard == s })
		if i < 0 {
			out = append(out, markGroup{shard: s})
			i = len(out) - 1
		}
		out[i].marks = append(out[i].marks, m)
	}
	return out
}

// markFrame is marks as the frame of their kind.
func markFrame(kind store.MarkKind, marks []protocol.Mark) protocol.Frame {
	if kind == store.MarkRead {
		return &protocol.Read{Marks: marks}
	}
	return &protocol.Delivered{Marks: marks}
}

// History implements gateway.Service at the conversation's owner.
func (r *Router) History(ctx context.Context, c chat.Caller, f *protocol.History) (*protocol.Messages, *protocol.Error) {
	return resultOf[*protocol.Messages](r.answer(ctx, c, f, ""))
}

// Receipts implements gateway.Service at the conversation's owner.
func (r *Router) Receipts(ctx context.Context, c chat.Caller, f *protocol.ReceiptsRequest) (*protocol.ReceiptsReply, *protocol.Error) {
	return resultOf[*protocol.ReceiptsReply](r.answer(ctx, c, f, ""))
}

// Typing implements gateway.Service: the conversation's owner pushes it to
// the members.
func (r *Router) Typing(ctx context.Context, c chat.Caller, f *protocol.Typing) *protocol.Error {
	return errorOf(r.answer(ctx, c, f, ""))
}

// Sync implements gateway.Service at the user's owner.
func (r *Router) Sync(ctx context.Context, c chat.Caller, f *protocol.Sync) (*protocol.Sessions, *protocol.Error) {
	return resultOf[*protocol.Sessions](r.answer(ctx, c, f, ""))
}

// SessionOp implements gateway.Service at the user's owner.
func (r *Router) SessionOp(ctx context.Context, c chat.Caller, f *protocol.SessionOp) (*protocol.OK, *protocol.Error) {
	return resultOf[*protocol.OK](r.answer(ctx, c, f, ""))
}

// Settings implements gateway.Service at the user's owner.
func (r *Router) Settings(ctx context.Context, c chat.Caller, f *protocol.SettingsRequest) (*protocol.SettingsReply, *protocol.Error) {
	return resultOf[*protocol.SettingsReply](r.answer(ctx, c, f, ""))
}

// Block implements gateway.Service at the user's owner.
func (r *Router) Block(ctx context.Context, c chat.Caller, f *protocol.Block) (*protocol.OK, *protocol.Error) {
	return resultOf[*protocol.OK](r.answer(ctx, c, f, ""))
}

// Unblock implements gateway.Service at the user's owner.
func (r *Router) Unblock(ctx context.Context, c chat.Caller, f *protocol.Unblock) (*protocol.OK, *protocol.Error) {
	return resultOf[*protocol.OK](r.answer(ctx, c, f, ""))
}

// CreateGroup implements gateway.Service at the owner of the group it
// makes, whose id is chosen here.
func (r *Router) CreateGroup(ctx context.Context, c chat.Caller, f *protocol.CreateGroup) (*protocol.Group, *protocol.Error) {
	return resultOf[*protocol.Group](r.answer(ctx, c, f, chat.GroupConvOf(c.User, f.Key)))
}

// GroupOp implements gateway.Service at the group's owner.
func (r *Router) GroupOp(ctx context.Context, c chat.Caller, f *protocol.GroupOp) (*protocol.Group, *protocol.Error) {
	return resultOf[*protocol.Group](r.answer(ctx, c, f, ""))
}

// Replay implements gateway.Service on this node, the device's: the
// user's pending rows, once the writes that hold them are confirmed (the
// user's owner knows which: engine.RowsOf), and the log. A node that put
// some and is gone since cannot confirm them: its conversations' next
// owner derives them again, and the replay reads what is there (a message
// it misses reaches the device by its session, or the next hello).
func (r *Router) Replay(ctx context.Context, user string, to chat.ReplayTarget, done chat.Replayed) error {
	var tickets []engine.WriteTicket
	err := r.route(ctx, ownership.ShardOfUser(user), userStream(user), mRows, rowsArgs{User: user}, &tickets, func(context.Context) error {
		tickets = r.eng.RowsOf(user)
		return nil
	})
	if err != nil {
		return fmt.Errorf("the pending rows of %s: %w", user, err)
	}
	for _, t := range tickets {
		if err := r.confirms.wait(ctx, r, t); err != nil && ctx.Err() == nil {
			r.log.Debug("a replay reads pending rows a node may have lost", "user", user, "node", t.Node, "err", err)
		}
	}
	return r.svc.Replay(ctx, user, to, done)
}

// Resync nudges every device of users to sync, each at its user's owner
// (which knows the user's newest session timestamp): pushes to them may
// have been lost.
func (r *Router) Resync(ctx context.Context, users []string) {
	byShard := map[ownership.Shard][]string{}
	for _, u := range users {
		s := ownership.ShardOfUser(u)
		byShard[s] = append(byShard[s], u)
	}
	for s, us := range byShard {
		err := r.route(ctx, s, userStream(us[0]), mResync, resyncArgs{Users: us}, nil, func(ctx context.Context) error {
			r.svc.Resync(ctx, us)
			return nil
		})
		if err != nil {
			r.log.Warn("resync: the users' owner did not answer; their devices sync at their next nudge", "users", len(us), "err", err)
		}
	}
}

// The arguments of the methods that are not a client's frame.
type (
	checkArgs struct {
		User  string
		Marks []protocol.Mark
	}
	resyncArgs struct {
		Users []string
	}
	rowsArgs struct {
		User string
	}
)
