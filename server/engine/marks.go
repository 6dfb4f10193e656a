package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// Mark implements chat.Engine: the marks apply in memory now; the result's
// Written waits for their rows.
func (e *Engine) Mark(ctx context.Context, user string, kind store.MarkKind, marks []protocol.Mark) (store.MarkResult, error) {
	res, g, pending, err := e.mark(ctx, user, kind, marks)
	if err != nil {
		return store.MarkResult{}, err
	}
	res.Written = func(ctx context.Context) error {
		if err := e.flush.wait(ctx, g); err != nil {
			return fmt.Errorf("mark: %w", err)
		}
		// What went to other nodes: a session read, the sessions a rise
		// covers.
		if err := e.confirm(ctx, pending); err != nil {
			return fmt.Errorf("mark: %w", err)
		}
		return nil
	}
	return res, nil
}

// mark applies marks in memory and returns what they changed, the
// generation that holds the rows put here, and the effects applied on
// other nodes.
func (e *Engine) mark(ctx context.Context, user string, kind store.MarkKind, marks []protocol.Mark) (store.MarkResult, uint64, []applied, error) {
	if kind != store.MarkDelivered && kind != store.MarkRead {
		return store.MarkResult{}, 0, nil, fmt.Errorf("unknown mark kind %d", kind)
	}
	ctx, err := e.begin(ctx)
	if err != nil {
		return store.MarkResult{}, 0, nil, err
	}
	var res store.MarkResult
	now := e.nowMS()
	var pending []applied // effects applied on other nodes, not yet written
	for _, m := range highestPerConv(marks) {
		change, sessionChanged, clock, err := e.markOne(ctx, now, user, kind, m, &pending)
		if err != nil {
			return store.MarkResult{}, 0, nil, fmt.Errorf("mark %s: %w", m.Conv, err)
		}
		if change != nil {
			res.Ticks = append(res.Ticks, *change)
		}
		res.SessionsChanged = res.SessionsChanged || sessionChanged
		if sessionChanged {
			res.Cursor = max(res.Cursor, clock)
		}
	}
	return res, e.flush.current(), pending, nil
}

// highestPerConv keeps one mark per conversation, the highest, in the order
// the conversations first appear.
func highestPerConv(marks []protocol.Mark) []protocol.Mark {
	out := make([]protocol.Mark, 0, len(marks))
	index := make(map[string]int, len(marks))
	for _, m := range marks {
		if i, ok := index[m.Conv]; ok {
			out[i].Seq = max(out[i].Seq, m.Seq)
			continue
		}
		index[m.Conv] = len(out)
		out = append(out, m)
	}
	return out
}

// markOne applies one mark: the boundary's max-merge, clamped to the
// newest seq, the pending row once the delivered boundary reaches the
// newest seq, and a rise of the tick minimum; then the session read (a
// read) and the rise in every member's session. When the user's session
// changed it returns the user's clock as that change left it, read in the
// user's critical section (any later read could see another operation's
// change, and two nudges would carry one cursor).
func (e *Engine) markOne(ctx context.Context, now int64, user string, kind store.MarkKind, m protocol.Mark, pending *[]applied) (*store.TickChange, bool, int64, error) {
	cs, err := e.convs.get(ctx, e.be, m.Conv)
	if err != nil {
		return nil, false, 0, err
	}
	shown := true
	if kind == store.MarkRead {
		if shown, err = e.readsShown(ctx, m.Conv); err != nil {
			return nil, false, 0, err
		}
	}
	cs.mu.Lock()
	if !cs.exists {
		// No message yet: every mark clamps to 0. A read is still the
		// session read of a session an operation created (it clears
		// marked_unread).
		ticks := cs.ticks
		cs.mu.Unlock()
		if kind != store.MarkRead {
			return nil, false, 0, nil
		}
		changed, clock, err := e.readSession(ctx, now, user, m.Conv, ticks, 0, session.Events{}, false, nil, pending)
		return nil, changed, clock, err
	}
	mm := cs.members[user]
	if mm == nil {
		cs.mu.Unlock()
		return nil, false, 0, nil // the caller checks membership
	}
	target := min(m.Seq, cs.maxSeq)
	r, rows := e.moveBoundary(cs, user, mm, kind, target, shown)
	ticks := cs.ticks
	members := slices.Clone(cs.sorted)
	cs.mu.Unlock()

	sessionChanged, clock := false, int64(0)
	if kind == store.MarkRead {
		// The unread count left is what counts above the read: the
		// events there go with the read to the user's session.
		events, err := e.eventsAbove(ctx, cs, target)
		if err != nil {
			if rows != nil {
				e.flush.put(rows) // the boundary moved all the same
			}
			return nil, false, 0, err
		}
		// The boundary's rows go with the session read, in one write: a
		// crash between two writes would leave the boundary moved and
		// the session not, and a retried read finds nothing to move.
		if sessionChanged, clock, err = e.readSession(ctx, now, user, m.Conv, ticks, target, events, true, rows, pending); err != nil {
			return nil, false, 0, err
		}
	} else if rows != nil {
		e.flush.put(rows)
	}
	if r == nil {
		return nil, sessionChanged, clock, nil
	}
	spread, err := e.spread(ctx, m.Conv, members, r, now)
	if err != nil {
		return nil, false, 0, err
	}
	*pending = append(*pending, spread...)
	return &store.TickChange{Conv: m.Conv, Ticks: r.next, Members: members}, sessionChanged, clock, nil
}

// moveBoundary max-merges user's boundary of kind with target, clears its
// pending row once it holds the newest seq, and returns the rise of the
// tick minimum it caused (nil for none) and the rows to write (nil for
// none); the caller holds cs.mu. shown says whether a read is shown (see
// member.unshown): a read not shown moves the delivered boundary alone
// (read implies delivered, and delivered ticks are never hidden); a read
// shown moves the shown boundary to the member's whole read, covering the
// reads made while they were hidden.
func (e *Engine) moveBoundary(cs *convState, user string, mm *member, kind store.MarkKind, target int64, shown bool) (*rise, func(b *batch)) {
	cur := protocol.Ticks{DeliveredSeq: mm.delivered, ReadSeq: mm.read}
	var next protocol.Ticks
	switch {
	case kind == store.MarkDelivered:
		next = cur.Merge(protocol.Ticks{DeliveredSeq: target})
	case shown:
		next = cur.Merge(protocol.Ticks{ReadSeq: max(target, mm.unshown)})
		mm.unshown = 0
	default:
		mm.unshown = max(mm.unshown, target, mm.read)
		next = cur.Merge(protocol.Ticks{DeliveredSeq: mm.unshown})
	}
	if next == cur {
		return nil, nil
	}
	mm.delivered, mm.read = next.DeliveredSeq, next.ReadSeq
	clear := int64(0)
	if mm.pending && mm.delivered >= cs.maxSeq {
		mm.pending, clear = false, mm.delivered
	}
	r := cs.raiseTicks()
	row := store.BoundaryRow{User: user, Conv: cs.conv, DeliveredSeq: mm.delivered, ReadSeq: mm.read}
	head := cs.head()
	return r, func(b *batch) {
		b.boundary(row)
		if clear > 0 {
			b.clearPending(user, cs.conv, clear)
		}
		b.conv(head)
	}
}

// readSession is the session read of user in conv up to seq, with the
// conversation's ticks as they are and its events above seq; rows, when
// set, are written with it; a read applied on another node (the user's
// owner) goes to pending, to be confirmed written.
// It returns whether the session changed and the user's clock right after.
func (e *Engine) readSession(ctx context.Context, now int64, user, conv string, ticks protocol.Ticks, seq int64, events session.Events, create bool, rows func(b *batch), pending *[]applied) (bool, int64, error) {
	release, local := e.holdUser(user)
	if local {
		defer release()
	} else {
		// The session is another node's: the boundary's rows here, the
		// read there. It is sent even when the boundary did not move, so
		// that a read retried after a crash between the two still
		// reaches the session.
		if rows != nil {
			e.flush.put(rows)
		}
		// Applied there now, written behind: Mark's Written waits for it.
		results, applied, err := e.affect(ctx, []Effect{{User: user, Now: now, SessionEffect: SessionEffect{Kind: effectRead, Conv: conv, Ticks: ticks, Seq: seq, Create: create, Events: events}}})
		if err != nil {
			return false, 0, err
		}
		*pending = append(*pending, applied...)
		return results[user].Changed, results[user].Clock, nil
	}
	var changed bool
	var clock int64
	err := e.retryMissing(ctx, []need{{user, conv}}, func() error {
		return e.withUsers([]string{user}, func(u *userState) error {
			var err error
			_, changed, err = e.applyEffect(u, now, SessionEffect{Kind: effectRead, Conv: conv, Ticks: ticks, Seq: seq, Create: create, Events: events})
			clock = u.clock
			if err == nil && rows != nil {
				// Staged in the session's critical section: one write.
				var gen uint64
				u.shard.stage(&gen, rows)
				rows = nil
			}
			return err
		})
	})
	if rows != nil {
		e.flush.put(rows) // the session read failed: the boundary still moved
	}
	return changed, clock, err
}
