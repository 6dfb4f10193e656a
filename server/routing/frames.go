package routing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/nodelink"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/store"
)

// A client's frame is run, whole, by the node that owns what it touches:
// its conversation's shard (a send, marks, typing, history, receipts, a
// group change) or its user's (sync, a session operation). There the chat
// service checks membership and reply targets, stores, and fans out the
// pushes; the node the client is connected to (its home) forwards the
// frame once and relays the answer. In one process every shard is here.

// routeOf returns the shard that owns frame f of user, and the stream
// that keeps the order of a connection's frames there: a conversation's
// sends, its marks (receipts never wait behind sends), a user's
// operations. conv is the conversation a create_group makes.
func routeOf(f protocol.Frame, user, conv string) (ownership.Shard, string) {
	switch f := f.(type) {
	case *protocol.Send:
		return ownership.ShardOfConv(f.Conv), convStream(f.Conv)
	case *protocol.Delivered:
		return marksRoute(f.Marks, user)
	case *protocol.Read:
		return marksRoute(f.Marks, user)
	case *protocol.Typing:
		return ownership.ShardOfConv(f.Conv), convStream(f.Conv)
	case *protocol.History:
		return ownership.ShardOfConv(f.Conv), convStream(f.Conv)
	case *protocol.ReceiptsRequest:
		return ownership.ShardOfConv(f.Conv), convStream(f.Conv)
	case *protocol.GroupOp:
		return ownership.ShardOfConv(f.Conv), convStream(f.Conv)
	case *protocol.CreateGroup:
		return ownership.ShardOfConv(conv), convStream(conv)
	}
	return ownership.ShardOfUser(user), userStream(user)
}

// marksRoute is routeOf for marks, which name one shard (the Router
// splits a frame that names several).
func marksRoute(marks []protocol.Mark, user string) (ownership.Shard, string) {
	if len(marks) == 0 {
		return ownership.ShardOfUser(user), userStream(user)
	}
	return ownership.ShardOfConv(marks[0].Conv), markStream(marks[0].Conv)
}

func convStream(conv string) string { return "c/" + conv }
func userStream(user string) string { return "u/" + user }

// markStream keeps a conversation's marks in order, apart from its sends:
// receipts never wait behind sends.
func markStream(conv string) string { return "m/" + conv }

// moved is the answer of a frame whose conversation was handed over before
// it was done here: it runs again at the new owner.
var moved = chat.Moved.Frame("")

// startHere starts frame f of caller c on shard when this node serves it
// (ok false when not): the part that keeps the order of a connection's
// frames now (a send takes its seq, marks apply), the rest in finish,
// which returns the frame's answer (nil: none; moved: run it again at the
// new owner). The shard is not handed over before finish returns. conv is
// the conversation a create_group makes.
func (r *Router) startHere(ctx context.Context, shard ownership.Shard, c chat.Caller, f protocol.Frame, conv string) (finish func() protocol.Frame, ok bool) {
	if !r.enter(shard) {
		return nil, false
	}
	done := func(answer protocol.Frame) protocol.Frame {
		r.gates[shard].exit()
		return answer
	}
	switch f := f.(type) {
	case *protocol.Send:
		finish := r.svc.StartSend(ctx, c, f)
		return func() protocol.Frame {
			sent, perr := finish()
			return done(answerOf(sent, perr, f.ID))
		}, true
	case *protocol.Delivered:
		return r.startMarkHere(ctx, c, store.MarkDelivered, f.Marks, f.ID, done), true
	case *protocol.Read:
		return r.startMarkHere(ctx, c, store.MarkRead, f.Marks, f.ID, done), true
	}
	answer := r.runHere(ctx, c, f, conv)
	return func() protocol.Frame { return done(answer) }, true
}

// startMarkHere applies marks now and returns what finishes them: an ok
// (with the frame's id) or an error.
func (r *Router) startMarkHere(ctx context.Context, c chat.Caller, kind store.MarkKind, marks []protocol.Mark, id string, done func(protocol.Frame) protocol.Frame) func() protocol.Frame {
	finish, perr := r.svc.StartMark(ctx, c, kind, marks)
	if perr != nil {
		return func() protocol.Frame { return done(errorFrame(perr, id)) }
	}
	return func() protocol.Frame {
		if perr := finish(ctx); perr != nil {
			return done(errorFrame(perr, id))
		}
		return done(&protocol.OK{Ref: protocol.Ref{ID: id}})
	}
}

// runHere answers a frame answered at once (neither a send nor marks).
func (r *Router) runHere(ctx context.Context, c chat.Caller, f protocol.Frame, conv string) protocol.Frame {
	svc := r.svc
	switch f := f.(type) {
	case *protocol.History:
		page, perr := svc.History(ctx, c, f)
		return answerOf(page, perr, f.ID)
	case *protocol.ReceiptsRequest:
		rcpts, perr := svc.Receipts(ctx, c, f)
		return answerOf(rcpts, perr, f.ID)
	case *protocol.Typing:
		if perr := svc.Typing(ctx, c, f); perr != nil {
			return perr.Frame("")
		}
		return nil
	case *protocol.Sync:
		page, perr := svc.Sync(ctx, c, f)
		return answerOf(page, perr, f.ID)
	case *protocol.SessionOp:
		ok, perr := svc.SessionOp(ctx, c, f)
		return answerOf(ok, perr, f.ID)
	case *protocol.CreateGroup:
		g, perr := svc.CreateGroupIn(ctx, c, conv, f)
		return answerOf(g, perr, f.ID)
	case *protocol.GroupOp:
		g, perr := svc.GroupOp(ctx, c, f)
		return answerOf(g, perr, f.ID)
	case *protocol.SettingsRequest:
		set, perr := svc.Settings(ctx, c, f)
		return answerOf(set, perr, f.ID)
	case *protocol.Block:
		ok, perr := svc.Block(ctx, c, f)
		return answerOf(ok, perr, f.ID)
	case *protocol.Unblock:
		ok, perr := svc.Unblock(ctx, c, f)
		return answerOf(ok, perr, f.ID)
	}
	return protocol.Errorf(protocol.CodeInvalid, "%s is not forwarded between nodes", f.FrameType()).Frame("")
}

// answerOf is the frame answering a request: its result, or its error
// echoing the request's id.
func answerOf[F protocol.Frame](result F, perr *protocol.Error, id string) protocol.Frame {
	if perr != nil {
		return errorFrame(perr, id)
	}
	return result
}

// errorFrame is perr as the frame answering request id; chat.Moved stays
// the moved sentinel, to be run again.
func errorFrame(perr *protocol.Error, id string) protocol.Frame {
	if perr == chat.Moved {
		return moved
	}
	return perr.Frame(id)
}

// start starts frame f of caller c at the owner of shard: here, or
// forwarded now (in the order of the calls on stream) to the owner as
// this node sees it. finish returns the answer; a frame its owner could
// not serve (moved, refused, its link dropped) runs again wherever the
// shard is by then (every frame is idempotent: by msg_id, or as a
// max-merge), for at most routeWait.
func (r *Router) start(ctx context.Context, shard ownership.Shard, stream string, c chat.Caller, f protocol.Frame, conv string) (finish func() protocol.Frame) {
	if finish, ok := r.startHere(ctx, shard, c, f, conv); ok {
		return func() protocol.Frame {
			if answer := finish(); answer != moved {
				return answer
			}
			return r.answerAt(ctx, shard, stream, c, f, conv, false)
		}
	}
	wait := r.startThere(ctx, shard, stream, c, f, conv, false)
	return func() protocol.Frame {
		answer, err := wait(context.WithoutCancel(ctx))
		if err == nil {
			return answer
		}
		// Its owner moved, or the link to it dropped: again, wherever it
		// is now. A send whose answer never came back may have been
		// stored and pushed by nobody: it is pushed as new if found.
		return r.answerAt(ctx, shard, stream, c, f, conv, errors.Is(err, nodelink.ErrLinkDown))
	}
}

// answerAt runs frame f at the owner of shard, waiting out a move of the
// shard, and returns its answer. again says an earlier attempt reached
// an owner whose answer never came back.
func (r *Router) answerAt(ctx context.Context, shard ownership.Shard, stream string, c chat.Caller, f protocol.Frame, conv string, again bool) protocol.Frame {
	deadline := time.Now().Add(routeWait)
	backoff := 5 * time.Millisecond
	for {
		var err error
		if finish, ok := r.startHere(ctx, shard, repeated(c, again), f, conv); ok {
			answer := finish()
			if answer != moved {
				return answer
			}
			err = errMoving
		} else {
			var answer protocol.Frame
			answer, err = r.startThere(ctx, shard, stream, c, f, conv, again)(ctx)
			if err == nil {
				return answer
			}
			again = again || errors.Is(err, nodelink.ErrLinkDown)
		}
		if ctx.Err() != nil || !retryable(err) || time.Now().After(deadline) {
			r.log.Error("a frame found no node to serve it", "type", f.FrameType(), "user", c.User, "shard", shard, "err", err)
			return protocol.Errorf(protocol.CodeInternal, "no node could serve this %s; try again", f.FrameType()).Frame(requestID(f))
		}
		if err := r.waitForChange(ctx, backoff); err != nil {
			return protocol.Errorf(protocol.CodeInternal, "%s: %v", f.FrameType(), err).Frame(requestID(f))
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

// startThere forwards frame f now to the owner of shard as this node sees
// it, and returns what waits for its answer.
func (r *Router) startThere(ctx context.Context, shard ownership.Shard, stream string, c chat.Caller, f protocol.Frame, conv string, again bool) func(context.Context) (protocol.Frame, error) {
	failed := func(err error) func(context.Context) (protocol.Frame, error) {
		return func(context.Context) (protocol.Frame, error) { return nil, err }
	}
	owner, err := r.ownerOf(shard)
	if err != nil {
		return failed(err)
	}
	raw, err := protocol.Encode(f)
	if err != nil {
		return failed(err)
	}
	req := nodelink.Request{Stream: stream, User: c.User, Device: deviceName(c.Device), Node: r.selfID(),
		Conv: conv, Again: again, Frame: raw}
	await, err := r.pool.Start(ctx, owner.Addr, req)
	if err != nil {
		return failed(&transportError{err})
	}
	return func(ctx context.Context) (protocol.Frame, error) {
		raw, err := await(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &transportError{err}
		}
		if len(raw) == 0 || string(raw) == "null" {
			return nil, nil // a frame answered by nothing (typing)
		}
		answer, _, perr := protocol.DecodeServerFrame(raw)
		if perr != nil {
			return nil, fmt.Errorf("the owner's answer: %w", perr)
		}
		return answer, nil
	}
}

// deviceName is the name of the device d (empty for none).
func deviceName(d hub.Device) string {
	if d == nil {
		return ""
	}
	return d.Name()
}

// requestID returns the id a frame carries, "" for none.
func requestID(f protocol.Frame) string {
	if r, ok := f.(interface{ RequestID() string }); ok {
		return r.RequestID()
	}
	return ""
}

// answer runs a frame answered at once (not two-step) at its owner.
func (r *Router) answer(ctx context.Context, c chat.Caller, f protocol.Frame, conv string) protocol.Frame {
	shard, stream := routeOf(f, c.User, conv)
	return r.start(ctx, shard, stream, c, f, conv)()
}

// errorOf is the error an answer frame carries (nil for any other
// frame); a frame of an unexpected type is an internal error.
func errorOf(answer protocol.Frame) *protocol.Error {
	if e, ok := answer.(*protocol.ErrorFrame); ok {
		return &protocol.Error{Code: e.Code, Message: e.Message, RetryAfterMS: e.RetryAfterMS}
	}
	return nil
}

// resultOf is an answer as the result type the gateway expects, or the
// error it carries.
func resultOf[F protocol.Frame](answer protocol.Frame) (F, *protocol.Error) {
	var zero F
	if perr := errorOf(answer); perr != nil {
		return zero, perr
	}
	if res, ok := answer.(F); ok {
		return res, nil
	}
	return zero, protocol.Errorf(protocol.CodeInternal, "the owner answered with a %T where a %T was due", answer, zero)
}

// repeated is c, marked as repeating a request whose answer never came
// back when again is set.
func repeated(c chat.Caller, again bool) chat.Caller {
	c.Repeat = c.Repeat || again
	return c
}
