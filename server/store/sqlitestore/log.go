package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
)

// Append implements store.Backend: one write of the writer's next batch,
// at the conversation's next seq.
func (s *Backend) Append(ctx context.Context, msg protocol.Message) (store.AppendResult, error) {
	msg.Seq = 0
	return s.appendQueued(ctx, msg)
}

// AppendAt implements store.Backend: one write of the writer's next
// batch, at msg.Seq, which the conversation's owner gave it.
func (s *Backend) AppendAt(ctx context.Context, msg protocol.Message, _ int64) (store.AppendResult, error) {
	if msg.Seq <= 0 {
		return store.AppendResult{}, fmt.Errorf("append to %s: seq %d is not a seq", msg.Conv, msg.Seq)
	}
	return s.appendQueued(ctx, msg)
}

// AppendWriters implements store.AppendWriters: the writer commits every
// append queued together, with one fsync, and the derived rows in the
// same batches.
func (s *Backend) AppendWriters() int { return maxBatch }

// NewestSeq implements store.Backend.
func (s *Backend) NewestSeq(ctx context.Context, conv string) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	st, err := s.readStmts.get(ctx, qMaxSeq)
	if err != nil {
		return 0, err
	}
	var seq int64
	err = st.QueryRowContext(ctx, conv).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// appendQueued stores msg at msg.Seq, or at the next seq when it is 0,
// in the writer's next batch, and waits for it.
func (s *Backend) appendQueued(ctx context.Context, msg protocol.Message) (store.AppendResult, error) {
	wait, err := s.queueAppend(ctx, msg)
	if err != nil {
		return store.AppendResult{}, err
	}
	return wait()
}

// queueAppend hands the append of msg to the writer and returns a wait for
// its result: the writer takes appends in the order they are queued.
func (s *Backend) queueAppend(ctx context.Context, msg protocol.Message) (func() (store.AppendResult, error), error) {
	var res store.AppendResult
	var erased []string // archived bodies the entry erased
	op, err := s.queueProof(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		erased = nil
		res, err = s.appendTx(ctx, tx, msg, false)
		if err == nil && !res.Duplicate && msg.IsRelation() {
			// The entry and its effect on the target in one transaction.
			erased, err = s.applyRelationTx(ctx, tx, res.Msg)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", msg.Conv, err)
	}
	return sync.OnceValues(func() (store.AppendResult, error) {
		if err := <-op.done; err != nil {
			return store.AppendResult{}, fmt.Errorf("append to %s: %w", msg.Conv, err)
		}
		if err := blob.Erase(ctx, s.blobs, erased); err != nil {
			return store.AppendResult{}, fmt.Errorf("append to %s: %w", msg.Conv, err)
		}
		if res.Duplicate && res.Msg.Body == "" {
			// The original may be archived: read it whole.
			orig, err := s.Message(ctx, res.Msg.Conv, res.Msg.Seq)
			if err != nil {
				return store.AppendResult{}, fmt.Errorf("append to %s: original of %s: %w", msg.Conv, msg.MsgID, err)
			}
			res.Msg = orig
		}
		return res, nil
	}), nil
}

// appendTx stores msg inside the writer's transaction: at m.Seq when it is
// set (ErrSeqTaken when another message holds it), else at its
// conversation's next seq. A group must exist; a direct chat is created
// on its first message. system says the message tells of a group change
// (whose msg_id is the server's: a duplicate is an error, not an answer).
func (s *Backend) appendTx(ctx context.Context, tx *sql.Tx, m protocol.Message, system bool) (store.AppendResult, error) {
	var seq int64
	err := s.queryRowTx(ctx, tx, qSeqOfMsgID, m.Conv, m.MsgID).Scan(&seq)
	switch {
	case err == nil:
		if system {
			return store.AppendResult{}, fmt.Errorf("system message id %s is taken", m.MsgID)
		}
		// An archived original comes back with an empty body: the wait
		// of QueueAppend reads it from the blob store, after the commit,
		// so that the writer never waits on one.
		orig, _, err := scanMessage(s.queryRowTx(ctx, tx, qMessageAt, m.Conv, seq))
		if err != nil {
			return store.AppendResult{}, fmt.Errorf("read original of %s: %w", m.MsgID, err)
		}
		if orig.From != m.From {
			return store.AppendResult{}, store.ErrMsgIDTaken
		}
		return store.AppendResult{Msg: orig, Duplicate: true}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return store.AppendResult{}, err
	}
	var kind string
	var maxSeq, version int64
	err = s.queryRowTx(ctx, tx, qConvHead, m.Conv).Scan(&kind, &maxSeq, &version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		parsed, ok := protocol.ParseConv(m.Conv)
		if !ok || parsed.Kind != protocol.ConvDirect {
			return store.AppendResult{}, store.ErrNotFound
		}
		if _, err := s.execTx(ctx, tx, qInsertConv, m.Conv, parsed.Kind.String(), m.ServerTS); err != nil {
			return store.AppendResult{}, err
		}
	case err != nil:
		return store.AppendResult{}, err
	}
	if m.Seq == 0 {
		m.Seq = maxSeq + 1
	}
	res, err := s.execTx(ctx, tx, qInsertMessage, m.Conv, m.Seq, m.MsgID, m.From, m.Body, m.ClientTS, m.ServerTS, m.Kind, m.ReplyTo, m.RefSeq)
	if err != nil {
		return store.AppendResult{}, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return store.AppendResult{}, errors.Join(store.ErrSeqTaken, err)
	}
	for _, st := range []struct {
		query string
		args  []any
	}{
		{qInsertMsgID, []any{m.Conv, m.MsgID, m.Seq}},
		{qRaiseMaxSeq, []any{m.Seq, m.Conv}},
	} {
		if _, err := s.execTx(ctx, tx, st.query, st.args...); err != nil {
			return store.AppendResult{}, err
		}
	}
	return store.AppendResult{Msg: m}, nil
}

// History implements store.Backend.
func (s *Backend) History(ctx context.Context, conv string, q store.HistoryQuery) ([]protocol.Message, bool, error) {
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
	// The rows first, the archived bodies after (no blob read holds a
	// reader), then the byte budget counted on whole messages.
	msgs := make([]protocol.Message, 0, min(q.Limit+1, 64))
	var archived []int // indexes in msgs of archived messages
	var refs []string  // and their bodies' keys
	for rows.Next() {
		m, ref, err := scanMessage(rows)
		if err != nil {
			rows.Close()
			return nil, false, fmt.Errorf("history of %s: %w", conv, err)
		}
		if ref != "" {
			archived, refs = append(archived, len(msgs)), append(refs, ref)
		}
		msgs = append(msgs, m)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, false, fmt.Errorf("history of %s: %w", conv, err)
	}
	if len(archived) > 0 {
		load := make([]archivedBody, len(archived))
		for i, at := range archived {
			load[i] = archivedBody{msg: &msgs[at], ref: refs[i]}
		}
		if err := s.loadBodies(ctx, load); err != nil {
			return nil, false, fmt.Errorf("history of %s: %w", conv, err)
		}
	}
	// Rows come from the bound asked from: stop at the byte budget.
	msgs, cut := store.WithinBytes(msgs, q.MaxBytes)
	hasMore := cut || len(msgs) > q.Limit
	if len(msgs) > q.Limit {
		msgs = msgs[:q.Limit]
	}
	if !q.After {
		for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
			msgs[i], msgs[j] = msgs[j], msgs[i]
		}
	}
	return msgs, hasMore, nil
}

// Message implements store.Backend.
func (s *Backend) Message(ctx context.Context, conv string, seq int64) (protocol.Message, error) {
	if err := s.checkOpen(); err != nil {
		return protocol.Message{}, err
	}
	st, err := s.readStmts.get(ctx, qMessageAt)
	if err != nil {
		return protocol.Message{}, err
	}
	m, ref, err := scanMessage(st.QueryRowContext(ctx, conv, seq))
	if errors.Is(err, sql.ErrNoRows) {
		return m, store.ErrNotFound
	}
	if err != nil || ref == "" {
		return m, err
	}
	if err := s.loadBodies(ctx, []archivedBody{{msg: &m, ref: ref}}); err != nil {
		return protocol.Message{}, err
	}
	return m, nil
}

// Senders implements store.Backend.
func (s *Backend) Senders(ctx context.Context, conv string, after, upTo int64) ([]string, error) {
	return s.strings(ctx, qSenders, conv, after, upTo)
}

// strings runs a read returning one string column.
func (s *Backend) strings(ctx context.Context, query string, args ...any) ([]string, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanMessage reads a row of messageReadColumns: the message as it
// stands and, when it shows a body that is archived, the body's blob key
// (its Body then empty).
func scanMessage(sc scanner) (m protocol.Message, ref string, err error) {
	var state string
	err = sc.Scan(&m.Conv, &m.Seq, &m.MsgID, &m.From, &m.Body, &m.ClientTS, &m.ServerTS, &m.Kind, &m.ReplyTo, &m.RefSeq, &ref, &state)
	if err != nil {
		return m, "", err
	}
	return showState(m, ref, state)
}

// showState is m, read from its row, as it stands by the row's state;
// ref is kept only when m shows its stored body.
func showState(m protocol.Message, ref, state string) (protocol.Message, string, error) {
	if state == "" {
		return m, ref, nil
	}
	storedBody, err := store.ShowStored(&m, state)
	if err != nil {
		return m, "", fmt.Errorf("%s/%d: %w", m.Conv, m.Seq, err)
	}
	if !storedBody {
		ref = ""
	}
	return m, ref, nil
}
