package gateway

import (
	"context"
	"runtime/debug"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// Marks without an id are answered by nobody (an error excepted), and marks
// are max-merges: several of a connection's id-less marks applied as one
// leave the same boundaries as applied one by one. A client that
// acknowledges each message as it comes sends a delivered and a read per
// message; applied one by one, each costs its own application, its own
// durable write to wait for and its own status pushes, and under a
// closed-loop sender they fall behind the sends they answer.
//
// So a connection has at most one batch of id-less marks in flight (applied,
// its rows not yet durable, its statuses not yet pushed). The id-less marks
// read meanwhile are held, merged (the highest per conversation and kind),
// and applied together once that batch is done, by the connection's marks
// runner; or, earlier, before the connection's next frame of any other kind,
// so that its frames still apply in the order they came. A mark the server
// would refuse is refused on its own, in its turn, before it is merged.

// heldMarks are a connection's id-less marks read and not yet applied: the
// highest per conversation and kind, in the order the conversations came.
type heldMarks struct {
	delivered, read markSet
}

// markSet is the highest mark per conversation.
type markSet struct {
	marks []protocol.Mark
	index map[string]int
}

func (s *markSet) add(m protocol.Mark) {
	if i, ok := s.index[m.Conv]; ok {
		s.marks[i].Seq = max(s.marks[i].Seq, m.Seq)
		return
	}
	if s.index == nil {
		s.index = make(map[string]int)
	}
	s.index[m.Conv] = len(s.marks)
	s.marks = append(s.marks, m)
}

func (h *heldMarks) empty() bool { return len(h.delivered.marks) == 0 && len(h.read.marks) == 0 }

// add merges a frame's marks of kind into what is held.
func (h *heldMarks) add(kind store.MarkKind, marks []protocol.Mark) {
	set := &h.delivered
	if kind == store.MarkRead {
		set = &h.read
	}
	for _, m := range marks {
		set.add(m)
	}
}

// take returns what is held and empties it: the reads, and the delivered
// marks a read of the same conversation does not cover (read implies
// delivered).
func (h *heldMarks) take() (delivered, read []protocol.Mark) {
	read = h.read.marks
	for _, m := range h.delivered.marks {
		if i, ok := h.read.index[m.Conv]; !ok || read[i].Seq < m.Seq {
			delivered = append(delivered, m)
		}
	}
	*h = heldMarks{}
	return delivered, read
}

// markFinish finishes applied marks: it waits until they are durable and
// pushes what they changed.
type markFinish func(context.Context) *protocol.Error

// markWithoutID applies an id-less delivered or read frame now, when no
// id-less batch of the connection is in flight, or holds it to be applied
// merged with the others read meanwhile. It answers nothing, unless the
// frame is refused.
func (c *conn) markWithoutID(ctx context.Context, frame protocol.Frame, kind store.MarkKind, marks []protocol.Mark) protocol.Frame {
	if perr := c.g.svc.CheckMarks(ctx, c.caller(), marks); perr != nil {
		// Refused, changing nothing; answered in its turn.
		return c.start(ctx, frame, func(context.Context) protocol.Frame { return perr.Frame("") })
	}
	c.marksMu.Lock()
	defer c.marksMu.Unlock()
	c.marksHeld.add(kind, marks)
	if c.marksIdle != nil {
		return nil // the runner applies it once the batch in flight is done
	}
	c.marksIdle = make(chan struct{})
	c.applyHeldLocked(ctx)
	c.inFlightDone.Add(1)
	go c.runMarks(ctx)
	return nil
}

// applyHeldMarks applies the id-less marks held, if any: called before a
// frame of another kind is handled, so that it comes after them.
func (c *conn) applyHeldMarks(ctx context.Context) {
	c.marksMu.Lock()
	defer c.marksMu.Unlock()
	if !c.marksHeld.empty() {
		c.applyHeldLocked(ctx) // the runner, which runs while marks are held, finishes them
	}
}

// applyHeldLocked applies the held marks, reads first, and queues their
// finishes for the runner; c.marksMu is held, so that the connection's
// read loop handles no frame meanwhile.
func (c *conn) applyHeldLocked(ctx context.Context) {
	delivered, read := c.marksHeld.take()
	for _, batch := range []struct {
		kind  store.MarkKind
		marks []protocol.Mark
	}{{store.MarkRead, read}, {store.MarkDelivered, delivered}} {
		if len(batch.marks) == 0 {
			continue
		}
		finish, perr := c.startMark(ctx, batch.kind, batch.marks)
		switch {
		case perr == nil:
			c.marksDue = append(c.marksDue, finish)
		case perr.Code == protocol.CodeForbidden || perr.Code == protocol.CodeNotFound:
			// Each frame was checked when it came; a membership may have
			// been lost since. Apply each conversation's mark on its own,
			// so that one refusal does not drop the others.
			for _, m := range batch.marks {
				finish, perr := c.startMark(ctx, batch.kind, []protocol.Mark{m})
				if perr != nil {
					finish = func(context.Context) *protocol.Error { return perr }
				}
				c.marksDue = append(c.marksDue, finish)
			}
		default:
			c.marksDue = append(c.marksDue, func(context.Context) *protocol.Error { return perr })
		}
	}
}

// startMark is chat's StartMark; a panic in it is logged and refused
// internal, as in dispatch (the runner applies marks outside dispatch).
func (c *conn) startMark(ctx context.Context, kind store.MarkKind, marks []protocol.Mark) (finish markFinish, perr *protocol.Error) {
	defer func() {
		if r := recover(); r != nil {
			c.g.log.Error("request handler panicked", "type", "marks without id", "user", c.user, "panic", r, "stack", string(debug.Stack()))
			finish, perr = nil, protocol.Errorf(protocol.CodeInternal, "the server failed on these marks")
		}
	}()
	return c.g.svc.StartMark(ctx, c.caller(), kind, marks)
}

// runMarks finishes the connection's id-less marks batch after batch: it
// waits for a batch to be durable and pushes what it changed, then applies
// what was held meanwhile, until nothing is left. The connection's run
// waits for it before it ends.
func (c *conn) runMarks(ctx context.Context) {
	defer c.inFlightDone.Done()
	for {
		c.marksMu.Lock()
		if len(c.marksDue) == 0 && !c.marksHeld.empty() {
			c.applyHeldLocked(ctx) // the batch before is done
		}
		due := c.marksDue
		c.marksDue = nil
		if len(due) == 0 {
			close(c.marksIdle)
			c.marksIdle = nil
			c.marksMu.Unlock()
			return
		}
		c.marksMu.Unlock()
		for _, finish := range due {
			if answer := c.finishMark(ctx, finish); answer != nil {
				c.reply(ctx, answer)
			}
		}
	}
}

// finishMark runs an id-less batch's finish and returns its answer (an
// error, or nil); a panic in it is logged and answered internal, as in
// dispatch.
func (c *conn) finishMark(ctx context.Context, finish markFinish) (answer protocol.Frame) {
	defer func() {
		if r := recover(); r != nil {
			c.g.log.Error("request handler panicked", "type", "marks without id", "user", c.user, "panic", r, "stack", string(debug.Stack()))
			answer = protocol.Errorf(protocol.CodeInternal, "the server failed on these marks").Frame("")
		}
	}()
	return ack("", finish(ctx))
}

// settleMarks returns once the connection's id-less marks are finished
// (or the connection is closing). Called by the read loop, which alone
// brings new ones, after applyHeldMarks.
func (c *conn) settleMarks() {
	c.marksMu.Lock()
	idle := c.marksIdle
	c.marksMu.Unlock()
	if idle == nil {
		return
	}
	select {
	case <-idle:
	case <-c.done:
	}
}
