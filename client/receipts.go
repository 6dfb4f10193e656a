package client

import (
	"cmp"
	"slices"
	"time"

	"github.com/imcore/im/protocol"
)

// maxMarks bounds the marks of one delivered or read frame, well within
// the server's frame size limit.
const maxMarks = 1000

// armAck schedules the delivered frame for what was just stored: when no
// message has come for AckDelay (the burst is over), and at the latest
// AckMaxDelay after the first unacknowledged one.
func (l *link) armAck() {
	now := time.Now()
	if l.ackSince.IsZero() {
		l.ackSince = now
	}
	wait := min(l.c.cfg.AckDelay, l.ackSince.Add(l.c.cfg.AckMaxDelay).Sub(now))
	l.ackTimer.Reset(max(wait, 0))
}

// flushDelivered acknowledges every conversation with newly stored
// messages in one delivered frame, one mark each at the seq up to which
// the profile holds everything. A conversation with a hole starts a gap
// fill; it is acknowledged once filled.
func (l *link) flushDelivered() {
	l.ackTimer.Stop()
	l.ackSince = time.Time{}
	var marks []protocol.Mark
	for conv := range l.unacked {
		synced, err := l.c.store.SyncedSeq(conv)
		if err != nil {
			l.c.log.Error("read synced seq", "conv", conv, "err", err)
			continue
		}
		if l.seen[conv] > synced {
			l.fillGap(conv)
		}
		if synced > max(l.acked[conv], l.acking[conv]) {
			l.acking[conv] = synced
			marks = append(marks, protocol.Mark{Conv: conv, Seq: synced})
		}
	}
	clear(l.unacked)
	slices.SortFunc(marks, func(a, b protocol.Mark) int { return cmp.Compare(a.Conv, b.Conv) })
	for chunk := range slices.Chunk(marks, maxMarks) {
		l.sendDelivered(chunk)
	}
}

// sendDelivered sends one delivered frame; a mark counts as acknowledged
// only once the server answers ok. A frame refused for a passing reason
// is sent again after a backoff. The server refuses a frame whole when
// one mark is refused (a group the user just left), so a frame of several
// marks refused for good is sent again one mark per frame.
func (l *link) sendDelivered(marks []protocol.Mark) {
	l.request(&request{op: "delivered", frame: &protocol.Delivered{Marks: marks}, answer: func(l *link, f protocol.Frame) {
		for _, m := range marks {
			if l.acking[m.Conv] == m.Seq {
				delete(l.acking, m.Conv)
			}
		}
		perr := answerError(f)
		if perr == nil {
			l.ackFail = 0
			for _, m := range marks {
				l.acked[m.Conv] = max(l.acked[m.Conv], m.Seq)
			}
			return
		}
		l.c.log.Warn("delivered refused", "marks", len(marks), "err", perr)
		if temporary(f) {
			l.ackFail++
			l.after(retryDelay(l.ackFail-1), func(l *link) {
				for _, m := range marks {
					l.unacked[m.Conv] = true
				}
				l.flushDelivered()
			})
			return
		}
		if len(marks) > 1 {
			for _, m := range marks {
				l.acking[m.Conv] = max(l.acking[m.Conv], m.Seq)
				l.sendDelivered([]protocol.Mark{m})
			}
			return
		}
		l.acked[marks[0].Conv] = max(l.acked[marks[0].Conv], marks[0].Seq) // refused for good: not again
	}})
}

// MarkRead records that the user has seen conv up to seq: the local
// session shows it at once, and the client sends a read mark (coalesced
// with others, and kept until a connection takes it).
func (c *Client) MarkRead(conv string, seq int64) {
	if seq <= 0 {
		return
	}
	changed, err := c.store.ApplyRead(conv, seq)
	if err != nil {
		c.log.Error("apply read", "conv", conv, "err", err)
	}
	if changed {
		c.events.push(SessionsChanged{})
	}
	c.mu.Lock()
	if seq > c.reads[conv] {
		c.reads[conv] = seq
	}
	c.mu.Unlock()
	c.wake()
}

// takeReads empties the read marks waiting to be sent.
func (c *Client) takeReads() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	reads := c.reads
	c.reads = make(map[string]int64)
	return reads
}

// loadPendingReads queues the read marks the store keeps as not yet
// confirmed (made offline, or before a restart) for the new connection.
func (c *Client) loadPendingReads() {
	pending, err := c.store.PendingReads()
	if err != nil {
		c.log.Error("read pending reads", "err", err)
		return
	}
	c.restoreReads(pending)
}

// restoreReads puts back read marks that were not confirmed.
func (c *Client) restoreReads(reads map[string]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for conv, seq := range reads {
		c.reads[conv] = max(c.reads[conv], seq)
	}
}

// flushReads sends the waiting read marks in one frame.
func (l *link) flushReads() {
	reads := l.c.takeReads()
	if len(reads) == 0 {
		return
	}
	marks := make([]protocol.Mark, 0, len(reads))
	for conv, seq := range reads {
		marks = append(marks, protocol.Mark{Conv: conv, Seq: seq})
	}
	slices.SortFunc(marks, func(a, b protocol.Mark) int { return cmp.Compare(a.Conv, b.Conv) })
	for chunk := range slices.Chunk(marks, maxMarks) {
		l.sendRead(chunk)
	}
}

// sendRead sends one read frame. The marks stay pending in the store
// until the server answers: a lost frame is sent again on the next
// connection, one refused for a passing reason after a wait, a refused one
// of several marks again one mark per frame.
func (l *link) sendRead(marks []protocol.Mark) {
	l.request(&request{
		op:    "read",
		frame: &protocol.Read{Marks: marks},
		answer: func(l *link, f protocol.Frame) {
			perr := answerError(f)
			if perr == nil {
				l.c.clearPendingReads(marks)
				return
			}
			if temporary(f) {
				l.c.events.push(ErrorEvent{Op: "read", Err: perr})
				l.c.restoreReads(markMap(marks))
				time.AfterFunc(sendRetryDelay, l.c.wake)
				return
			}
			if len(marks) > 1 {
				for _, m := range marks {
					l.sendRead([]protocol.Mark{m})
				}
				return
			}
			l.c.clearPendingReads(marks) // refused for good: not again
			if leftGroupRefusal(marks[0].Conv, perr) {
				// The user is no longer a member (removed while the chat
				// was open): his session tells him, not an error.
				l.c.log.Info("read of a group the user left refused", "conv", marks[0].Conv)
				return
			}
			l.c.events.push(ErrorEvent{Op: "read", Err: perr})
		},
		lost: func(error) { l.c.restoreReads(markMap(marks)) },
	})
}

// leftGroupRefusal says perr is the refusal of a frame about group conv
// that the server sends a user who is no longer a member. A removed
// member's device is pushed the removal's message and may mark it before
// its session says he left; that mark is refused, and says nothing the
// user needs to be told.
func leftGroupRefusal(conv string, perr *protocol.Error) bool {
	parsed, ok := protocol.ParseConv(conv)
	return ok && parsed.Kind == protocol.ConvGroup && perr.Code == protocol.CodeForbidden
}

// clearPendingReads forgets the stored pending reads the server answered.
func (c *Client) clearPendingReads(marks []protocol.Mark) {
	for _, m := range marks {
		if err := c.store.ClearPendingRead(m.Conv, m.Seq); err != nil {
			c.log.Error("clear pending read", "conv", m.Conv, "err", err)
		}
	}
}

// markMap turns marks into a map of conversation to seq.
func markMap(marks []protocol.Mark) map[string]int64 {
	out := make(map[string]int64, len(marks))
	for _, m := range marks {
		out[m.Conv] = max(out[m.Conv], m.Seq)
	}
	return out
}
