package gateway

import (
	"context"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// maxMarksInFlight bounds a connection's marks applied but not yet
// answered; the read loop waits for room beyond it.
const maxMarksInFlight = 64

// pendingMark is a mark frame applied in memory, to be answered once
// durable.
type pendingMark struct {
	id     string
	finish func(context.Context) *protocol.Error
}

// mark applies a delivered or read frame now, in the connection's order,
// and answers it once it is durable, without holding up the frames after
// it: a client that acknowledges every message keeps many marks in flight,
// and their writes overlap. A refused frame is answered at once.
func (c *conn) mark(ctx context.Context, id string, kind store.MarkKind, marks []protocol.Mark) protocol.Frame {
	finish, perr := c.g.svc.StartMark(ctx, c.caller(), kind, marks)
	if perr != nil {
		return perr.Frame(id)
	}
	if c.marks == nil {
		c.marks = make(chan pendingMark, maxMarksInFlight)
	}
	select {
	case c.marks <- pendingMark{id: id, finish: finish}:
	case <-c.done:
		return nil
	}
	if c.marksRunning.CompareAndSwap(false, true) {
		c.marksDone.Add(1)
		go c.answerMarks(ctx)
	}
	return nil
}

// answerMarks finishes the connection's pending marks in order, answering
// each that carried an id, until none is left.
func (c *conn) answerMarks(ctx context.Context) {
	defer c.marksDone.Done()
	for {
		select {
		case p := <-c.marks:
			if answer := ack(p.id, p.finish(ctx)); answer != nil {
				c.reply(ctx, answer)
			}
			continue
		default:
		}
		c.marksRunning.Store(false)
		// A mark queued between the empty check and the flag is ours to
		// answer unless another runner has just started for it.
		if len(c.marks) == 0 || !c.marksRunning.CompareAndSwap(false, true) {
			return
		}
	}
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
