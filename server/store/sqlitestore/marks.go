package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// Mark implements store.Store.
func (s *Store) Mark(ctx context.Context, user string, kind store.MarkKind, marks []protocol.Mark) ([]store.TickChange, error) {
	var changes []store.TickChange
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		changes = changes[:0]
		for _, m := range highestPerConv(marks) {
			change, err := markTx(ctx, tx, user, kind, m)
			if err != nil {
				return fmt.Errorf("mark %s: %w", m.Conv, err)
			}
			if change != nil {
				changes = append(changes, *change)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changes, nil
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

func markTx(ctx context.Context, tx *sql.Tx, user string, kind store.MarkKind, m protocol.Mark) (*store.TickChange, error) {
	var conv conversationRow
	err := tx.QueryRowContext(ctx, `SELECT max_seq, tick_delivered, tick_read FROM conversations WHERE conv = ?`, m.Conv).
		Scan(&conv.maxSeq, &conv.ticks.DeliveredSeq, &conv.ticks.ReadSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // nothing stored yet: every mark clamps to 0
	}
	if err != nil {
		return nil, err
	}
	var cur protocol.Ticks
	err = tx.QueryRowContext(ctx, `SELECT last_delivered_seq, last_read_seq FROM message_status WHERE user_id = ? AND conv = ?`, user, m.Conv).
		Scan(&cur.DeliveredSeq, &cur.ReadSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // not a member: the caller checks membership
	}
	if err != nil {
		return nil, err
	}
	target := min(m.Seq, conv.maxSeq)
	next := cur
	switch kind {
	case store.MarkDelivered:
		next = cur.Merge(protocol.Ticks{DeliveredSeq: target})
	case store.MarkRead:
		next = cur.Merge(protocol.Ticks{ReadSeq: target})
	default:
		return nil, fmt.Errorf("unknown mark kind %d", kind)
	}
	if next.DeliveredSeq >= conv.maxSeq {
		if _, err := tx.ExecContext(ctx, `DELETE FROM pending_deliveries WHERE receiver = ? AND conv = ?`, user, m.Conv); err != nil {
			return nil, err
		}
	}
	if next == cur {
		return nil, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE message_status SET last_delivered_seq = ?, last_read_seq = ? WHERE user_id = ? AND conv = ?`,
		next.DeliveredSeq, next.ReadSeq, user, m.Conv); err != nil {
		return nil, err
	}
	ticks, rose, err := raiseTicks(ctx, tx, m.Conv, conv.ticks)
	if err != nil || !rose {
		return nil, err
	}
	return &store.TickChange{Conv: m.Conv, Ticks: ticks}, nil
}

// Pending implements store.Store.
func (s *Store) Pending(ctx context.Context, user string) ([]store.PendingDelivery, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `
		SELECT p.conv, p.first_undelivered_seq, COALESCE(st.last_delivered_seq, 0), c.max_seq
		FROM pending_deliveries p
		JOIN conversations c ON c.conv = p.conv
		LEFT JOIN message_status st ON st.user_id = p.receiver AND st.conv = p.conv
		WHERE p.receiver = ?
		ORDER BY p.conv`, user)
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

// EnsurePending implements store.Store.
func (s *Store) EnsurePending(ctx context.Context, user, conv string) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `
			INSERT OR IGNORE INTO pending_deliveries (receiver, conv, first_undelivered_seq)
			SELECT st.user_id, st.conv, st.last_delivered_seq + 1
			FROM message_status st JOIN conversations c ON c.conv = st.conv
			WHERE st.user_id = ? AND st.conv = ? AND st.last_delivered_seq < c.max_seq`, user, conv)
		return err
	})
	if err != nil {
		return fmt.Errorf("ensure pending %s %s: %w", user, conv, err)
	}
	return nil
}

// Receipts implements store.Store.
func (s *Store) Receipts(ctx context.Context, conv string) ([]protocol.MemberReceipt, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT user_id, last_delivered_seq, last_read_seq FROM message_status WHERE conv = ? ORDER BY user_id`, conv)
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
