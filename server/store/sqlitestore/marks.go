package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// Mark implements store.Store.
func (s *Store) Mark(ctx context.Context, user string, kind store.MarkKind, marks []protocol.Mark) (store.MarkResult, error) {
	var res store.MarkResult
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res = store.MarkResult{}
		now := s.now().UnixMilli()
		for _, m := range highestPerConv(marks) {
			change, sessionChanged, err := s.markTx(ctx, tx, now, user, kind, m)
			if err != nil {
				return fmt.Errorf("mark %s: %w", m.Conv, err)
			}
			if change != nil {
				res.Ticks = append(res.Ticks, *change)
			}
			res.SessionsChanged = res.SessionsChanged || sessionChanged
		}
		if res.SessionsChanged {
			return s.scanLastTS(ctx, tx, user, &res.Cursor)
		}
		return nil
	})
	if err != nil {
		return store.MarkResult{}, err
	}
	return res, nil
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

func (s *Store) markTx(ctx context.Context, tx *sql.Tx, now int64, user string, kind store.MarkKind, m protocol.Mark) (*store.TickChange, bool, error) {
	conv, found, err := s.loadConversation(ctx, tx, m.Conv)
	if err != nil {
		return nil, false, err
	}
	if !found {
		// No message yet: every mark clamps to 0. A read is still the
		// session read of a session an op created (it clears marked_unread).
		if kind != store.MarkRead {
			return nil, false, nil
		}
		_, changed, err := s.changeSession(ctx, tx, now, user, m.Conv, false, func(st *session.State) session.Moves {
			return st.OnRead(0)
		})
		return nil, changed, err
	}
	var cur protocol.Ticks
	err = s.queryRowTx(ctx, tx, qBoundaries, user, m.Conv).Scan(&cur.DeliveredSeq, &cur.ReadSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil // not a member: the caller checks membership
	}
	if err != nil {
		return nil, false, err
	}
	target := min(m.Seq, conv.maxSeq)
	sessionChanged := false
	if kind == store.MarkRead {
		// The session read: read_seq moves, marked_unread clears.
		if _, sessionChanged, err = s.changeSession(ctx, tx, now, user, m.Conv, true, func(st *session.State) session.Moves {
			return st.OnRead(target)
		}); err != nil {
			return nil, false, err
		}
	}
	var next protocol.Ticks
	switch kind {
	case store.MarkDelivered:
		next = cur.Merge(protocol.Ticks{DeliveredSeq: target})
	case store.MarkRead:
		next = cur.Merge(protocol.Ticks{ReadSeq: target})
	default:
		return nil, false, fmt.Errorf("unknown mark kind %d", kind)
	}
	if next == cur {
		return nil, sessionChanged, nil
	}
	if _, err := s.execTx(ctx, tx, qSetBoundaries, next.DeliveredSeq, next.ReadSeq, user, m.Conv); err != nil {
		return nil, false, err
	}
	if next.DeliveredSeq >= conv.maxSeq {
		if _, err := s.execTx(ctx, tx, qDeletePending, user, m.Conv); err != nil {
			return nil, false, err
		}
	}
	ticks, rose, err := s.raiseTicks(ctx, tx, m.Conv, conv.ticks)
	if err != nil || !rose {
		return nil, sessionChanged, err
	}
	if err := s.touchCoveredSenders(ctx, tx, now, m.Conv, conv.ticks, ticks); err != nil {
		return nil, false, err
	}
	return &store.TickChange{Conv: m.Conv, Ticks: ticks}, sessionChanged, nil
}

// Pending implements store.Store.
func (s *Store) Pending(ctx context.Context, user string) ([]store.PendingDelivery, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, qPendingOf, user)
	if err != nil {
		return nil, fmt.Errorf("pending of %s: %w", user, err)
	}
	defer rows.Close()
	var out []store.PendingDelivery
	for rows.Next() {
		var p store.PendingDelivery
		if err := rows.Scan(&p.Conv, &p.FirstUndelivered, &p.LastDeliveredSeq, &p.NewestSeq); err != nil {
			return nil, fmt.Errorf("pending of %s: %w", user, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Receipts implements store.Store.
func (s *Store) Receipts(ctx context.Context, conv string) ([]protocol.MemberReceipt, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, qReceiptsOf, conv)
	if err != nil {
		return nil, fmt.Errorf("receipts of %s: %w", conv, err)
	}
	defer rows.Close()
	out := []protocol.MemberReceipt{}
	for rows.Next() {
		var r protocol.MemberReceipt
		if err := rows.Scan(&r.User, &r.DeliveredSeq, &r.ReadSeq); err != nil {
			return nil, fmt.Errorf("receipts of %s: %w", conv, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
