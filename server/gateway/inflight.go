package gateway

import (
	"context"
	"runtime/debug"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// maxInFlight bounds a connection's frames started but not yet answered;
// the read loop waits for room beyond it.
const maxInFlight = 64

// inFlight is a frame started in the connection's order, to be answered
// once finish returns (nil: no answer).
type inFlight struct {
	frame  protocol.Frame // the request
	finish func(context.Context) protocol.Frame
}

// send queues a message in the connection's order and answers it once it
// is durable, without holding up the frames after it: a client that keeps
// several sends in flight has their writes overlap, and their seqs follow
// the order it sent them in.
func (c *conn) send(ctx context.Context, f *protocol.Send) protocol.Frame {
	finish := c.g.svc.StartSend(ctx, c.caller(), f)
	return c.start(ctx, f, func(context.Context) protocol.Frame {
		sent, perr := finish()
		return resultOrError(sent, perr, f.ID)
	})
}

// mark applies a delivered or read frame now, in the connection's order,
// and answers it once it is durable, without holding up the frames after
// it: a client that acknowledges every message keeps many marks in flight,
// and their writes overlap.
func (c *conn) mark(ctx context.Context, frame protocol.Frame, id string, kind store.MarkKind, marks []protocol.Mark) protocol.Frame {
	finish, perr := c.g.svc.StartMark(ctx, c.caller(), kind, marks)
	if perr != nil {
		// Refused, changing nothing; answered in its turn.
		return c.start(ctx, frame, func(context.Context) protocol.Frame { return perr.Frame(id) })
	}
	return c.start(ctx, frame, func(ctx context.Context) protocol.Frame { return ack(id, finish(ctx)) })
}

// start queues a started frame's finish behind the connection's others
// and makes sure a runner answers them in order. It answers nothing
// itself (nil), unless the connection is closing.
func (c *conn) start(ctx context.Context, frame protocol.Frame, finish func(context.Context) protocol.Frame) protocol.Frame {
	if c.inFlight == nil {
		c.inFlight = make(chan inFlight, maxInFlight)
	}
	c.inFlightCount.Add(1)
	select {
	case c.inFlight <- inFlight{frame: frame, finish: finish}:
	case <-c.done:
		c.inFlightCount.Add(-1)
		return nil
	}
	if c.inFlightRunning.CompareAndSwap(false, true) {
		c.inFlightDone.Add(1)
		go c.answerInFlight(ctx)
	}
	return nil
}

// answerInFlight finishes the connection's frames in flight in order,
// answering each, until none is left. The connection's run waits for it
// before it ends.
func (c *conn) answerInFlight(ctx context.Context) {
	defer c.inFlightDone.Done()
	for {
		select {
		case p := <-c.inFlight:
			if answer := c.finish(ctx, p); answer != nil {
				c.reply(ctx, answer)
			}
			c.inFlightCount.Add(-1)
			continue
		default:
		}
		c.inFlightRunning.Store(false)
		// A frame queued between the empty check and the flag is ours to
		// answer unless another runner has just started for it.
		if len(c.inFlight) == 0 || !c.inFlightRunning.CompareAndSwap(false, true) {
			return
		}
	}
}

// settle returns once every frame started before it is answered (or the
// connection is closing), so that a request after them sees their effects
// and is answered after them.
func (c *conn) settle(ctx context.Context) {
	if c.inFlightCount.Load() == 0 {
		return
	}
	settled := make(chan struct{})
	c.start(ctx, nil, func(context.Context) protocol.Frame {
		close(settled)
		return nil
	})
	select {
	case <-settled:
	case <-c.done:
	}
}

// finish runs p's finish; a panic in it is logged and answered internal,
// as in dispatch.
func (c *conn) finish(ctx context.Context, p inFlight) (answer protocol.Frame) {
	defer func() {
		if r := recover(); r != nil {
			c.g.log.Error("request handler panicked", "type", p.frame.FrameType(), "user", c.user, "panic", r, "stack", string(debug.Stack()))
			answer = protocol.Errorf(protocol.CodeInternal, "the server failed on this %s", p.frame.FrameType()).Frame(requestID(p.frame))
		}
	}()
	return p.finish(ctx)
}

// ack answers a receipt frame: ok when it carried an id, an error always.
func ack(id string, perr *protocol.Error) protocol.Frame {
	if perr != nil {
		return perr.Frame(id)
	}
	if id == "" {
		return nil
	}
	return &protocol.OK{Ref: protocol.Ref{ID: id}}
}
