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
	err := s.queryRowTx(ctx, tx, qSeqOfMsgID, m.Conv, m.MsgID).Scan(&seq)
	switch {
	case err == nil:
		orig, err := scanMessage(s.queryRowTx(ctx, tx, qMessageAt, m.Conv, seq))
		if err != nil {
			return store.AppendResult{}, fmt.Errorf("read original of %s: %w", m.MsgID, err)
		}
		return store.AppendResult{Msg: orig, Duplicate: true}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return store.AppendResult{}, err
	}

	conv, err := s.conversationToAppend(ctx, tx, req)
	if err != nil {
		return store.AppendResult{}, err
	}
	now := s.now().UnixMilli()
	m.Seq = conv.maxSeq + 1
	m.ServerTS = now
	steps := []struct {
		query string
		args  []any
	}{
		{qInsertMessage, []any{m.Conv, m.Seq, m.MsgID, m.From, m.Body, m.ClientTS, m.ServerTS, m.Kind}},
		{qInsertMsgID, []any{m.Conv, m.MsgID, m.Seq}},
		{qSetMaxSeq, []any{m.Seq, m.Conv}},
		// Sending implies reading: the sender's boundaries cover its own
		// message, so nothing is pending for it here.
		{qSetBoundaries, []any{m.Seq, m.Seq, m.From, m.Conv}},
		{qDeletePending, []any{m.From, m.Conv}},
		// Every other member has this message undelivered (seed 001).
		{qPutPendingForRecipients, []any{m.Conv, m.From}},
	}
	for _, st := range steps {
		if _, err := s.execTx(ctx, tx, st.query, st.args...); err != nil {
			return store.AppendResult{}, err
		}
	}
	for _, member := range req.Members {
		if _, _, err := s.changeSession(ctx, tx, now, member, m.Conv, true, func(st *session.State) session.Moves {
			return st.OnMessage(m.Seq, m.From)
		}); err != nil {
			return store.AppendResult{}, err
		}
	}
	res := store.AppendResult{Msg: m}
	ticks, rose, err := s.raiseTicks(ctx, tx, m.Conv, conv.ticks)
	if err != nil {
		return store.AppendResult{}, err
	}
	if rose {
		res.Ticks = &ticks
		if err := s.touchCoveredSenders(ctx, tx, now, m.Conv, conv.ticks, ticks); err != nil {
			return store.AppendResult{}, err
		}
	}
	return res, nil
}

// conversationRow is what a write needs of a conversation.
type conversationRow struct {
	maxSeq         int64
	ticks          protocol.Ticks
	membersVersion int64
	title          string
}

// loadConversation reads conv's row; found is false when it does not exist.
func (s *Store) loadConversation(ctx context.Context, tx *sql.Tx, conv string) (row conversationRow, found bool, err error) {
	err = s.queryRowTx(ctx, tx, qConversation, conv).Scan(&row.maxSeq, &row.ticks.DeliveredSeq, &row.ticks.ReadSeq, &row.membersVersion, &row.title)
	if errors.Is(err, sql.ErrNoRows) {
		return row, false, nil
	}
	return row, err == nil, err
}

// conversationToAppend reads the conversation a message goes to: a direct
// chat is created on its first message; a group must exist and have the
// membership the request was made with.
func (s *Store) conversationToAppend(ctx context.Context, tx *sql.Tx, req store.AppendRequest) (conversationRow, error) {
	parsed, ok := protocol.ParseConv(req.Msg.Conv)
	if !ok {
		return conversationRow{}, fmt.Errorf("invalid conversation id %q", req.Msg.Conv)
	}
	if parsed.Kind != protocol.ConvGroup {
		return s.loadOrCreateConversation(ctx, tx, req.Msg.Conv, req.Members)
	}
	row, found, err := s.loadConversation(ctx, tx, req.Msg.Conv)
	switch {
	case err != nil:
		return row, err
	case !found:
		return row, store.ErrNotFound
	case row.membersVersion != req.MembersVersion:
		return row, store.ErrStaleMembers
	}
	return row, nil
}

// loadOrCreateConversation reads conv's row, creating it with a boundary row
// for each member when it does not exist yet.
func (s *Store) loadOrCreateConversation(ctx context.Context, tx *sql.Tx, conv string, members []string) (conversationRow, error) {
	row, found, err := s.loadConversation(ctx, tx, conv)
	if err != nil || found {
		return row, err
	}
	parsed, ok := protocol.ParseConv(conv)
	if !ok {
		return row, fmt.Errorf("invalid conversation id %q", conv)
	}
	if _, err := s.execTx(ctx, tx, qInsertConv, conv, parsed.Kind.String(), s.now().UnixMilli()); err != nil {
		return row, err
	}
	for _, user := range members {
		if _, err := s.execTx(ctx, tx, qInsertMember, user, conv); err != nil {
			return row, err
		}
	}
	return row, nil
}

// raiseTicks recomputes conv's tick minimum over its members and stores it
// when it rose above prev.
func (s *Store) raiseTicks(ctx context.Context, tx *sql.Tx, conv string, prev protocol.Ticks) (protocol.Ticks, bool, error) {
	var cur protocol.Ticks
	// Two separate MINs so each is answered by its index in O(log n).
	if err := s.queryRowTx(ctx, tx, qMinDelivered, conv).Scan(&cur.DeliveredSeq); err != nil {
		return prev, false, err
	}
	if err := s.queryRowTx(ctx, tx, qMinRead, conv).Scan(&cur.ReadSeq); err != nil {
		return prev, false, err
	}
	next := prev.Merge(cur)
	if next == prev {
		return prev, false, nil
	}
	if _, err := s.execTx(ctx, tx, qSetTicks, next.DeliveredSeq, next.ReadSeq, conv); err != nil {
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
		rows, err = s.query(ctx, qHistoryAfter, conv, max(q.AfterSeq, q.MinSeq-1), q.Limit+1)
	} else {
		before := q.BeforeSeq
		if before <= 0 {
			before = 1<<63 - 1
		}
		rows, err = s.query(ctx, qHistoryBefore, conv, before, q.MinSeq, q.Limit+1)
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
