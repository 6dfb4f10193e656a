package engine

import (
	"context"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// eventWindow bounds how many seqs below a conversation's newest the
// engine remembers the events of (messages that do not count as unread,
// session.CountsAsUnread). A session read below it reads the log.
const eventWindow = 1024

// maxEventPages bounds the history pages a read far below the window
// reads to learn the events above it; a read further below counts
// without them (session.State.OnRead).
const maxEventPages = 8

// convEvents is what the engine knows of a conversation's events: every
// event above from is in seqs, ascending. The caller holds the
// conversation's mu.
type convEvents struct {
	from int64
	seqs []int64
}

// note records whether the message at seq is an event, newest being the
// conversation's newest seq; seqs that fall out of the window are
// forgotten.
func (ce *convEvents) note(seq int64, event bool, newest int64) {
	if seq > ce.from {
		i, found := slices.BinarySearch(ce.seqs, seq)
		switch {
		case event && !found:
			ce.seqs = slices.Insert(ce.seqs, i, seq)
		case !event && found:
			ce.seqs = slices.Delete(ce.seqs, i, i+1)
		}
	}
	if floor := newest - eventWindow; floor > ce.from {
		ce.from = floor
		i, _ := slices.BinarySearch(ce.seqs, floor+1)
		ce.seqs = slices.Delete(ce.seqs, 0, i)
	}
}

// above returns what is known of the events above seq after, as a
// session effect carries it.
func (ce *convEvents) above(after int64) session.Events {
	return session.Events{From: ce.from, Seqs: ce.seqs}.Above(after)
}

// eventsAbove returns the events of cs above seq after, complete: from
// memory, or for seqs older than the window from the log (at most
// maxEventPages pages; beyond them, what memory knows).
func (e *Engine) eventsAbove(ctx context.Context, cs *convState, after int64) (session.Events, error) {
	cs.mu.Lock()
	known := cs.events.above(after)
	cs.mu.Unlock()
	if known.Covers(after) {
		return known, nil
	}
	var older []int64
	for seq, pages := after, 0; seq < known.From; pages++ {
		if pages == maxEventPages {
			return known, nil
		}
		page, more, err := e.be.History(ctx, cs.conv, store.HistoryQuery{After: true, AfterSeq: seq, Limit: protocol.MaxHistoryLimit})
		if err != nil {
			return session.Events{}, err
		}
		for _, m := range page {
			if m.Seq <= known.From && !session.CountsAsUnread(m) {
				older = append(older, m.Seq)
			}
		}
		if !more || len(page) == 0 {
			break
		}
		seq = page[len(page)-1].Seq
	}
	return session.Events{From: after, Seqs: append(older, known.Seqs...)}, nil
}
