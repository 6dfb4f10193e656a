package client

import (
	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
)

// flushOps sends the session operations the store keeps as pending and
// that are not on their way on this connection: the oldest of each
// conversation, one at a time, so that the server applies a
// conversation's operations in the order they were made.
func (l *link) flushOps() {
	ops, err := l.c.store.PendingOps()
	if err != nil {
		l.c.log.Error("read pending session ops", "err", err)
		return
	}
	next := make(map[string]bool) // conversations whose oldest op was seen
	for _, op := range ops {
		if next[op.Conv] {
			continue
		}
		next[op.Conv] = true
		if l.opsSent[op.ID] || l.opsWait[op.Conv] {
			continue
		}
		l.opsSent[op.ID] = true
		l.request(&request{
			op:     "session_op " + op.Op,
			frame:  &protocol.SessionOp{Conv: op.Conv, Op: op.Op, Until: op.Until, Category: op.Category},
			answer: func(l *link, f protocol.Frame) { l.onOpAnswer(op, f) },
		})
	}
}

// onOpAnswer applies the server's answer to a session operation: the
// session it returns replaces what was shown; a refusal for a passing
// reason leaves the operation for a later try; a refusal for good forgets
// it and syncs, for the list to show the server's state again.
func (l *link) onOpAnswer(op localstore.PendingOp, f protocol.Frame) {
	delete(l.opsSent, op.ID)
	if temporary(f) {
		l.opsFail++
		l.opsWait[op.Conv] = true
		l.after(retryDelay(l.opsFail-1), func(l *link) {
			delete(l.opsWait, op.Conv)
			l.flushOps()
		})
		return
	}
	l.opsFail = 0
	var answer *protocol.Session
	ok, isOK := f.(*protocol.OK)
	if isOK {
		answer = ok.Session
	}
	finish := func() error { return l.c.store.FinishSessionOp(op.ID, answer) }
	if !isOK {
		// Refused for good: the server's copy did not change and will not
		// come to replace what this device showed, so it is undone here.
		finish = func() error { return l.c.store.UndoSessionOp(op.ID) }
	}
	if err := finish(); err != nil {
		l.c.log.Error("finish session op", "conv", op.Conv, "op", op.Op, "err", err)
	}
	if !isOK {
		l.c.events.push(ErrorEvent{Op: "session_op " + op.Op, Err: l.c.refusal(f)})
		l.syncAll()
	}
	l.c.events.push(SessionsChanged{})
	l.flushOps()
}
