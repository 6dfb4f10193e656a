package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

const messageColumns = `conv, seq, msg_id, sender, body, client_ts, server_ts, kind`

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, req store.AppendRequest) (store.AppendResult, error) {
	var res store.AppendResult
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		res, err = s.appendTx(ctx, tx, req)
		return err
	})
	if err != nil {
		return store.AppendResult{}, fmt.Errorf("append to %s: %w", req.Msg.Conv, err)
	}
	return res, nil
}

func (s *Store) appendTx(ctx context.Context, tx *sql.Tx, req store.AppendRequest) (store.AppendResult, error) {
	m := req.Msg
	var seq int64
	err := tx.QueryRowContext(ctx, `SELECT seq FROM message_ids WHERE conv = ? AND msg_id = ?`, m.Conv, m.MsgID).Scan(&seq)
	switch {
	case err == nil:
		orig, err := scanMessage(tx.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE conv = ? AND seq = ?`, m.Conv, seq))
		if err != nil {
			return store.AppendResult{}, fmt.Errorf("read original of %s: %w", m.MsgID, err)
		}
		return store.AppendResult{Msg: orig, Duplicate: true}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return store.AppendResult{}, err
	}

	conv, err := s.loadOrCreateConversation(ctx, tx, m.Conv, req.Members)
	if err != nil {
		return store.AppendResult{}, err
	}
	m.Seq = conv.maxSeq + 1
	m.ServerTS = s.now().UnixMilli()
	if _, err := tx.ExecContext(ctx, `INSERT INTO messages (`+messageColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		m.Conv, m.Seq, m.MsgID, m.From, m.Body, m.ClientTS, m.ServerTS, m.Kind); err != nil {
		return store.AppendResult{}, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO message_ids (conv, msg_id, seq) VALUES (?, ?, ?)`, m.Conv, m.MsgID, m.Seq); err != nil {
		return store.AppendResult{}, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE conversations SET max_seq = ? WHERE conv = ?`, m.Seq, m.Conv); err != nil {
		return store.AppendResult{}, err
	}
	// Sending implies reading: the sender's boundaries cover its own message.
	if _, err := tx.ExecContext(ctx, `UPDATE message_status SET last_delivered_seq = ?, last_read_seq = ? WHERE user_id = ? AND conv = ?`,
		m.Seq, m.Seq, m.From, m.Conv); err != nil {
		return store.AppendResult{}, err
	}
	// The sender now holds everything: nothing is pending for it here.
	if _, err := tx.ExecContext(ctx, `DELETE FROM pending_deliveries WHERE receiver = ? AND conv = ?`, m.From, m.Conv); err != nil {
		return store.AppendResult{}, err
	}
	for _, user := range req.Offline {
		if user == m.From {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO pending_deliveries (receiver, conv, first_undelivered_seq) VALUES (?, ?, ?)`,
			user, m.Conv, m.Seq); err != nil {
			return store.AppendResult{}, err
		}
	}
	res := store.AppendResult{Msg: m}
	ticks, rose, err := raiseTicks(ctx, tx, m.Conv, conv.ticks)
	if err != nil {
		return store.AppendResult{}, err
	}
	if rose {
		res.Ticks = &ticks
	}
	return res, nil
}

// conversationRow is what a write needs of a conversation.
type conversationRow struct {
	maxSeq int64
	ticks  protocol.Ticks
}

// loadOrCreateConversation reads conv's row, creating it with a boundary row
// for each member when it does not exist yet.
func (s *Store) loadOrCreateConversation(ctx context.Context, tx *sql.Tx, conv string, members []string) (conversationRow, error) {
	var row conversationRow
	err := tx.QueryRowContext(ctx, `SELECT max_seq, tick_delivered, tick_read FROM conversations WHERE conv = ?`, conv).
		Scan(&row.maxSeq, &row.ticks.DeliveredSeq, &row.ticks.ReadSeq)
	if err == nil {
		return row, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return row, err
	}
	parsed, ok := protocol.ParseConv(conv)
	if !ok {
		return row, fmt.Errorf("invalid conversation id %q", conv)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO conversations (conv, kind, created_ts) VALUES (?, ?, ?)`,
		conv, parsed.Kind.String(), s.now().UnixMilli()); err != nil {
		return row, err
	}
	for _, user := range members {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO message_status (user_id, conv) VALUES (?, ?)`, user, conv); err != nil {
			return row, err
		}
	}
	return row, nil
}

// raiseTicks recomputes conv's tick minimum over its members and stores it
// when it rose above prev.
func raiseTicks(ctx context.Context, tx *sql.Tx, conv string, prev protocol.Ticks) (protocol.Ticks, bool, error) {
	var cur protocol.Ticks
	// Two separate MINs so each is answered by its index in O(log n).
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MIN(last_delivered_seq), 0) FROM message_status WHERE conv = ?`, conv).Scan(&cur.DeliveredSeq); err != nil {
		return prev, false, err
	}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MIN(last_read_seq), 0) FROM message_status WHERE conv = ?`, conv).Scan(&cur.ReadSeq); err != nil {
		return prev, false, err
	}
	next := prev.Merge(cur)
	if next == prev {
		return prev, false, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE conversations SET tick_delivered = ?, tick_read = ? WHERE conv = ?`,
		next.DeliveredSeq, next.ReadSeq, conv); err != nil {
		return prev, false, err
	}
	return next, true, nil
}

// History implements store.Store.
func (s *Store) History(ctx context.Context, conv string, q store.HistoryQuery) ([]protocol.Message, bool, error) {
	if q.Limit <= 0 {
		return nil, false, fmt.Errorf("history of %s: limit %d must be positive", conv, q.Limit)
	}
	if err := s.checkOpen(); err != nil {
		return nil, false, err
	}
	var rows *sql.Rows
	var err error
	if q.After {
		rows, err = s.r.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE conv = ? AND seq > ? ORDER BY seq ASC LIMIT ?`,
			conv, q.AfterSeq, q.Limit+1)
	} else {
		before := q.BeforeSeq
		if before <= 0 {
			before = 1<<63 - 1
		}
		rows, err = s.r.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE conv = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
			conv, before, q.Limit+1)
	}
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", conv, err)
	}
	defer rows.Close()
	msgs := make([]protocol.Message, 0, q.Limit+1)
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, false, fmt.Errorf("history of %s: %w", conv, err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", conv, err)
	}
	hasMore := len(msgs) > q.Limit
	if hasMore {
		msgs = msgs[:q.Limit]
	}
	if !q.After {
		for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
			msgs[i], msgs[j] = msgs[j], msgs[i]
		}
	}
	return msgs, hasMore, nil
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanMessage(sc scanner) (protocol.Message, error) {
	var m protocol.Message
	err := sc.Scan(&m.Conv, &m.Seq, &m.MsgID, &m.From, &m.Body, &m.ClientTS, &m.ServerTS, &m.Kind)
	return m, err
}
