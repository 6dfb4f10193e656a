package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// On a node of a scaled-out deployment, what a message does to members
// owned by other nodes is applied there in memory and written behind by
// their engines, like this engine's own rows: the send is answered then,
// without waiting for any write behind. The conversation's derived
// watermark (repair.go) moves past the message only once those nodes
// confirm the rows written (confirm), in the background and one wait per
// node however many messages share it; until then the message counts as
// underived, and a crash of this node leaves it for the next owner to
// derive again. A node that applied the effects and then died or
// restarted before writing them cannot confirm them: they are applied
// again where their users are now (every effect is idempotent), so the
// watermark never moves over rows that were lost.

// newBoot returns a name for this engine's life, unique across restarts.
func newBoot() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newLife starts a new life of the engine's writer: the tickets of the
// earlier one no longer confirm.
func (e *Engine) newLife() {
	b := newBoot()
	e.boot.Store(&b)
}

// life names the writer's current life, for a WriteTicket. Read it before
// the rows the ticket covers are put: a life that ends meanwhile makes
// the ticket unconfirmable, never the reverse.
func (e *Engine) life() string { return *e.boot.Load() }

// derivedOnceWritten moves cs's watermark past seq once the rows of
// pending are written: now when there are none, else in the background.
// The shard may be handed over meanwhile: the conversation row put then
// is a merge that only raises the tick minimum and the watermark, and
// only over seqs whose rows are written, so the next owner loses nothing
// by it (it derives again what its watermark shows behind).
func (e *Engine) derivedOnceWritten(cs *convState, seq int64, pending []applied) {
	if len(pending) == 0 {
		e.derived(cs, seq)
		return
	}
	if gen, boot, ok := ownRows(pending); ok {
		// Rows of this engine's own writer, the common case (and the
		// only one in one process): the watermark moves once they are
		// written, from the writer itself, unless the writer dropped
		// rows meanwhile (a new life), when they are confirmed as
		// another node's would be.
		e.flush.afterDone(gen, func() {
			if e.life() == boot {
				e.derived(cs, seq)
				return
			}
			e.settleElsewhere(cs, seq, pending)
		})
		return
	}
	e.settleElsewhere(cs, seq, pending)
}

// ownRows reports whether every ticket of pending names this engine's
// writer in one life (Node empty), with the newest generation among them
// and that life.
func ownRows(pending []applied) (gen uint64, boot string, ok bool) {
	for i, p := range pending {
		if p.Ticket.Node != "" || (i > 0 && p.Ticket.Boot != boot) {
			return 0, "", false
		}
		boot, gen = p.Ticket.Boot, max(gen, p.Ticket.Gen)
	}
	return gen, boot, true
}

// settleElsewhere moves cs's watermark past seq once the rows of pending
// are confirmed written, in the background (see confirm).
func (e *Engine) settleElsewhere(cs *convState, seq int64, pending []applied) {
	e.settling.Add(1)
	go func() {
		defer e.settling.Done()
		if err := e.confirm(e.stopCtx, pending); err != nil {
			// seq stays underived: the conversation's next owner derives
			// it again from the log.
			e.log.Warn("session effects on other nodes unconfirmed; the conversation stays behind until repaired",
				"conv", cs.conv, "seq", seq, "err", err)
			return
		}
		e.derived(cs, seq)
	}()
}

// confirm returns once the rows of pending are written. The effects whose
// node cannot confirm them are applied again where their users are now,
// and those confirmed in turn.
func (e *Engine) confirm(ctx context.Context, pending []applied) error {
	if gen, boot, ok := ownRows(pending); ok && len(pending) > 0 {
		// This engine's own rows: one wait, no request.
		if err := e.flush.waitDone(ctx, gen); err != nil {
			return err
		}
		if e.life() == boot {
			return nil
		}
	}
	for len(pending) > 0 {
		type node struct{ addr, boot string }
		latest := map[node]WriteTicket{}
		var order []node
		for _, p := range pending {
			n := node{p.Ticket.Node, p.Ticket.Boot}
			t, seen := latest[n]
			if !seen {
				order = append(order, n)
			}
			if !seen || p.Ticket.Gen > t.Gen {
				latest[n] = p.Ticket
			}
		}
		failed := make([]bool, len(order))
		var wg sync.WaitGroup
		for i, n := range order {
			wg.Go(func() { failed[i] = e.owners.Confirm(ctx, latest[n]) != nil })
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return err
		}
		lost := map[node]bool{}
		for i, n := range order {
			lost[n] = failed[i]
		}
		var again []Effect
		for _, p := range pending {
			if lost[node{p.Ticket.Node, p.Ticket.Boot}] {
				again = append(again, p.Effect)
			}
		}
		if len(again) == 0 {
			return nil
		}
		var err error
		if _, pending, err = e.affect(ctx, again); err != nil {
			return fmt.Errorf("session effects applied again: %w", err)
		}
	}
	return nil
}

// noteTicket keeps t among tickets, the newest of each node's life, and
// at most maxTickets lives (the oldest go: a life that ended long ago
// holds no row still unwritten).
func noteTicket(tickets []WriteTicket, t WriteTicket) []WriteTicket {
	for i, had := range tickets {
		if had.Node == t.Node && had.Boot == t.Boot {
			tickets[i].Gen = max(had.Gen, t.Gen)
			return tickets
		}
	}
	if len(tickets) == maxTickets {
		tickets = slices.Delete(tickets, 0, 1)
	}
	return append(tickets, t)
}

// maxTickets bounds the lives noteTicket keeps.
const maxTickets = 4

// WaitWritten returns once this engine wrote every row up to ticket's
// generation; it fails for a ticket of another engine's life (its rows
// were that life's, and may be lost).
func (e *Engine) WaitWritten(ctx context.Context, ticket WriteTicket) error {
	if err := e.sameLife(ticket); err != nil {
		return err
	}
	if err := e.flush.waitDone(ctx, ticket.Gen); err != nil {
		return err
	}
	// A write that dropped rows ends the life before it is done.
	return e.sameLife(ticket)
}

// sameLife fails for a ticket of an earlier life of the writer.
func (e *Engine) sameLife(ticket WriteTicket) error {
	if now := e.life(); ticket.Boot != now {
		return fmt.Errorf("rows put by engine %s, not by this one (%s): %w", ticket.Boot, now, errNotThisLife)
	}
	return nil
}

// errNotThisLife refuses a WriteTicket of another life of the engine.
var errNotThisLife = errors.New("engine restarted since")
