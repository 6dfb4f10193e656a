package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// Append implements chat.Engine: the message is appended to the log
// (durable when Append returns), then its derived state is applied in
// memory and written behind.
func (e *Engine) Append(ctx context.Context, req store.AppendRequest) (store.AppendResult, error) {
	if related(req.Msg) {
		return e.appendRelated(ctx, req)
	}
	return e.appendMessage(ctx, req)
}

// appendMessage is Append of a message whose rules the caller checked.
func (e *Engine) appendMessage(ctx context.Context, req store.AppendRequest) (store.AppendResult, error) {
	return e.startAppend(ctx, req)()
}

// StartAppend implements chat.Engine: the message takes its seq now, in
// the order of the calls, and is written behind (ownedappend.go); wait
// returns once it is durable and derived. A reply or a relation entry is
// checked against its target and stored before StartAppend returns.
func (e *Engine) StartAppend(ctx context.Context, req store.AppendRequest) func() (store.AppendResult, error) {
	if related(req.Msg) {
		res, err := e.appendRelated(ctx, req)
		return func() (store.AppendResult, error) { return res, err }
	}
	return e.startAppend(ctx, req)
}

// stamped is m with the server's timestamp.
func (e *Engine) stamped(m protocol.Message) protocol.Message {
	m.ServerTS = e.nowMS()
	return m
}

// afterAppend derives what an appended message implies; a duplicate
// implies nothing new.
func (e *Engine) afterAppend(ctx context.Context, cs *convState, res store.AppendResult) (store.AppendResult, error) {
	if res.Duplicate {
		return res, nil
	}
	// Stored: its derivation goes to its end whatever the caller does.
	d, err := e.deriveMessage(ctx, cs, res.Msg, nil)
	if err != nil {
		return store.AppendResult{}, fmt.Errorf("append to %s: %w", res.Msg.Conv, err)
	}
	e.derivedOnceWritten(cs, res.Msg.Seq, d.pending)
	res.Members = d.members
	if d.rise != nil {
		res.Ticks = &d.rise.next
	}
	return res, nil
}

// derivation is what deriving a message found.
type derivation struct {
	members []string // the members the message was derived for
	rise    *rise
	// clocks are the members' clocks right after their sessions took the
	// message, read in their critical sections.
	clocks map[string]int64
	// pending are the effects applied on other nodes whose rows are not
	// yet known to be written: the conversation's watermark moves past
	// the message once they are (derivedOnceWritten).
	pending []applied
}

// deriveMessage applies what stored message m implies — the sender's
// implicit read, the other members' pending rows, the tick minimum, every
// member's session and the sessions of those whose messages a tick rise
// covers. The caller moves the conversation's derived watermark past it
// once the rows are written (derivedOnceWritten with the derivation's
// pending).
// before, when set, runs first in the conversation's critical section
// (a group change applies its membership there). It is idempotent: a
// message derived twice changes nothing the second time but timestamps.
func (e *Engine) deriveMessage(ctx context.Context, cs *convState, m protocol.Message, before func(cs *convState)) (derivation, error) {
	cs.mu.Lock()
	if before != nil {
		before(cs)
	}
	cs.exists = true
	cs.maxSeq = max(cs.maxSeq, m.Seq)
	cs.events.note(m.Seq, !session.CountsAsUnread(m), cs.maxSeq)
	var boundaries []store.BoundaryRow
	var puts []store.PendingRow
	if s := cs.members[m.From]; s != nil {
		// The implicit read of a send moves the read boundary and the
		// shown one (member.unshown).
		s.delivered, s.read = max(s.delivered, m.Seq), max(s.read, m.Seq, s.unshown)
		s.unshown = 0
		boundaries = append(boundaries, store.BoundaryRow{User: m.From, Conv: cs.conv, DeliveredSeq: s.delivered, ReadSeq: s.read})
		if s.pending && s.delivered >= cs.maxSeq {
			s.pending = false
			puts = append(puts, store.PendingRow{User: m.From, Conv: cs.conv, Clear: s.delivered})
		}
		cs.recordOwn(m.From, m.Seq)
	}
	for _, u := range cs.sorted {
		if mm := cs.members[u]; u != m.From && !mm.pending && mm.delivered < m.Seq {
			mm.pending, mm.first = true, mm.delivered+1
			puts = append(puts, store.PendingRow{User: u, Conv: cs.conv, FirstUndelivered: mm.first})
		}
	}
	r := cs.raiseTicks()
	members := slices.Clone(cs.sorted)
	head := cs.head()
	// The events every member's unread count needs: those above the
	// lowest read boundary (a session read further up needs fewer).
	events := cs.events.above(cs.ticks.ReadSeq)
	// The members' pending rows are written behind: each member's owner
	// keeps the ticket of the write that holds them, and a hello of the
	// member waits for it before it reads them (RowsOf).
	rows := WriteTicket{Boot: e.life()}
	rows.Gen = e.flush.put(func(b *batch) {
		for _, row := range boundaries {
			b.boundary(row)
		}
		for _, p := range puts {
			if p.Clear > 0 {
				b.clearPending(p.User, p.Conv, p.Clear)
			} else {
				b.putPending(p.User, p.Conv, p.FirstUndelivered)
			}
		}
		b.conv(head)
	})
	cs.mu.Unlock()

	// Every member's session takes the message with the ticks after it, a
	// rise included; a session whose own messages the rise covers moves
	// even where the message itself is not news to it.
	covered, err := e.coveredBy(ctx, r)
	if err != nil {
		return derivation{}, err
	}
	now := e.nowMS()
	kind := effectMessage
	if m.IsRelation() {
		kind = effectRelation
	}
	effects := make([]Effect, len(members))
	for i, u := range members {
		_, isCovered := slices.BinarySearch(covered, u)
		effects[i] = Effect{User: u, Now: now, SessionEffect: SessionEffect{Kind: kind, Conv: cs.conv, Ticks: head.Ticks, Seq: m.Seq, Ref: m.RefSeq, From: m.From, Covered: isCovered, Events: events, Rows: rows}}
	}
	results, pending, err := e.affect(ctx, effects)
	if err != nil {
		return derivation{}, err
	}
	clocks := make(map[string]int64, len(members))
	for u, r := range results {
		clocks[u] = r.Clock
	}
	return derivation{members: members, rise: r, clocks: clocks, pending: pending}, nil
}

// derived moves the conversation's watermark past seq, once every row seq
// implies is put.
func (e *Engine) derived(cs *convState, seq int64) {
	cs.mu.Lock()
	cs.markDerived(seq)
	head := cs.head()
	e.flush.put(func(b *batch) { b.conv(head) })
	cs.mu.Unlock()
}

// coveredBy returns the members whose own messages a tick rise covers,
// sorted, asking the backend about seqs older than the conversation's
// memory.
func (e *Engine) coveredBy(ctx context.Context, r *rise) ([]string, error) {
	if r == nil {
		return nil, nil
	}
	covered := slices.Clone(r.covered)
	if r.floor > 0 {
		for _, rg := range r.ranges() {
			if rg[0] >= r.floor {
				continue
			}
			senders, err := e.be.Senders(ctx, r.conv, rg[0], min(rg[1], r.floor))
			if err != nil {
				return nil, err
			}
			for _, s := range senders {
				if _, member := slices.BinarySearch(r.members, s); member {
					covered = append(covered, s)
				}
			}
		}
	}
	slices.Sort(covered)
	return slices.Compact(covered), nil
}

// spread gives a rise of conv's tick minimum to the sessions of its
// members: those whose own messages it covers change (active_ts moves, so
// that their offline devices learn it by sync); the others take it in
// place. It returns the effects applied on other nodes, not yet written.
func (e *Engine) spread(ctx context.Context, conv string, members []string, r *rise, now int64) ([]applied, error) {
	covered, err := e.coveredBy(ctx, r)
	if err != nil {
		return nil, err
	}
	effects := make([]Effect, len(members))
	for i, u := range members {
		_, isCovered := slices.BinarySearch(covered, u)
		effects[i] = Effect{User: u, Now: now, SessionEffect: SessionEffect{Kind: effectRise, Conv: conv, Ticks: r.next, Covered: isCovered}}
	}
	_, pending, err := e.affect(ctx, effects)
	return pending, err
}

// retryMissing loads needs and runs apply, again as long as apply finds an
// entry forgotten since (rare: only a full cache forgets).
func (e *Engine) retryMissing(ctx context.Context, needs []need, apply func() error) error {
	for {
		if err := e.load(ctx, needs); err != nil {
			return err
		}
		err := apply()
		if !errors.Is(err, errMissing) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
