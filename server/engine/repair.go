package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// Repair derives again what a crash may have cut short in every
// conversation: every message after its derived watermark, in seq order
// (see the package doc), and waits until the rows are written. It is for
// an engine alone on its backend (a tool, a test); a server repairs each
// shard as it takes it (RepairConvs).
func (e *Engine) Repair(ctx context.Context) error {
	convs, err := e.be.Unrepaired(ctx)
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	for _, conv := range convs {
		if err := e.repairConv(ctx, conv); err != nil {
			return fmt.Errorf("repair %s: %w", conv, err)
		}
	}
	if len(convs) > 0 {
		e.log.Info("repaired derived state after a crash", "conversations", len(convs))
	}
	return e.flush.barrier(ctx)
}

// repairConv derives conv's messages after its watermark again, with the
// group's members rewound to what they were then and its recorded changes
// applied again in order.
func (e *Engine) repairConv(ctx context.Context, conv string) error {
	cs, err := e.convs.get(ctx, e.be, conv)
	if err != nil {
		return err
	}
	cs.mu.Lock()
	from, to := cs.derived, cs.maxSeq
	cs.mu.Unlock()
	var msgs []protocol.Message
	for after := from; after < to; {
		page, more, err := e.be.History(ctx, conv, store.HistoryQuery{After: true, AfterSeq: after, Limit: protocol.MaxHistoryLimit})
		if err != nil {
			return err
		}
		for _, m := range page {
			if m.Seq <= to {
				msgs = append(msgs, m)
			}
		}
		if !more || len(page) == 0 {
			break
		}
		after = page[len(page)-1].Seq
	}
	changes := map[int64]store.GroupChange{}
	if cs.isGroup() {
		for _, m := range msgs {
			if m.Kind != protocol.KindSystem {
				continue
			}
			c, err := e.be.GroupChangeAt(ctx, conv, m.Seq)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			changes[m.Seq] = c
		}
	}
	if cs.isGroup() {
		cs.rewind(changes)
	}
	for _, m := range msgs {
		if m.IsRelation() {
			// A backend that stores an entry and applies it to its target
			// in two steps (DynamoDB) may have been cut between them.
			if err := e.be.ApplyRelation(ctx, m); err != nil {
				return err
			}
		}
		var d derivation
		var err error
		if c, ok := changes[m.Seq]; ok {
			d, err = e.deriveChange(ctx, cs, c, m)
		} else {
			d, err = e.deriveMessage(ctx, cs, m, nil)
		}
		if err == nil {
			// Written before the watermark moves past it, below.
			err = e.confirm(ctx, d.pending)
		}
		if err != nil {
			return err
		}
	}
	// Seqs the log skipped (an owner died between giving one and writing
	// its message) hold the watermark back no longer.
	cs.mu.Lock()
	present := make(map[int64]bool, len(msgs))
	for _, m := range msgs {
		present[m.Seq] = true
	}
	for seq := from + 1; seq <= to; seq++ {
		cs.markDerived(seq)
		if !present[seq] {
			// An owner gives it to its next message (ownedappend.go).
			cs.holes = append(cs.holes, seq)
		}
	}
	head := cs.head()
	e.flush.put(func(b *batch) { b.conv(head) })
	cs.mu.Unlock()
	return nil
}

// rewind undoes, in memory, the membership changes of changes (newest
// first), so that the messages before them are derived again for the
// members of then. A member put back has the boundaries of a row long
// gone: zero, raised again by what is derived.
func (cs *convState) rewind(changes map[int64]store.GroupChange) {
	seqs := make([]int64, 0, len(changes))
	for seq := range changes {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for i := len(seqs) - 1; i >= 0; i-- {
		c := changes[seqs[i]]
		for _, u := range c.Add {
			delete(cs.members, u)
		}
		for _, u := range c.Remove {
			cs.members[u] = &member{joined: 1}
		}
		if c.Create {
			cs.exists = false
		} else if c.ChangesMembers() {
			cs.version--
		}
	}
	cs.resort()
}
