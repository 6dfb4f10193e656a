package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// Conversation implements store.Backend, from one read transaction.
func (s *Backend) Conversation(ctx context.Context, conv string) (store.ConvRecord, error) {
	if err := s.checkOpen(); err != nil {
		return store.ConvRecord{}, err
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return store.ConvRecord{}, fmt.Errorf("conversation %s: %w", conv, err)
	}
	defer tx.Rollback()
	rec := store.ConvRecord{Conv: conv}
	var kind string
	err = s.txRow(ctx, tx, qConversation, conv).Scan(&kind, &rec.Title, &rec.Version, &rec.MaxSeq, &rec.DerivedSeq,
		&rec.Ticks.DeliveredSeq, &rec.Ticks.ReadSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return rec, store.ErrNotFound
	}
	if err != nil {
		return rec, fmt.Errorf("conversation %s: %w", conv, err)
	}
	parsed, _ := protocol.ParseConv(conv)
	rec.Kind = parsed.Kind
	switch parsed.Kind {
	case protocol.ConvGroup:
		rows, err := s.txQuery(ctx, tx, qGroupMembers, conv)
		if err != nil {
			return rec, fmt.Errorf("members of %s: %w", conv, err)
		}
		defer rows.Close()
		for rows.Next() {
			var m store.MemberRecord
			if err := rows.Scan(&m.User, &m.JoinedSeq, &m.DeliveredSeq, &m.ReadSeq, &m.HasBoundaries, &m.IsPending, &m.FirstUndelivered); err != nil {
				return rec, err
			}
			rec.Members = append(rec.Members, m)
		}
		if err := rows.Err(); err != nil {
			return rec, err
		}
	case protocol.ConvDirect:
		for _, u := range []string{parsed.A, parsed.B} {
			m := store.MemberRecord{User: u, JoinedSeq: 1}
			err := s.txRow(ctx, tx, qDirectMember, u, conv).Scan(&m.DeliveredSeq, &m.ReadSeq, &m.HasBoundaries, &m.IsPending, &m.FirstUndelivered)
			if err != nil {
				return rec, fmt.Errorf("member %s of %s: %w", u, conv, err)
			}
			rec.Members = append(rec.Members, m)
		}
	}
	return rec, nil
}

// Unrepaired implements store.Backend.
func (s *Backend) Unrepaired(ctx context.Context) ([]string, error) {
	return s.strings(ctx, qUnrepaired)
}

// ChangeGroup implements store.Backend: the members, the title, the
// version, the system message and the change record in one transaction.
func (s *Backend) ChangeGroup(ctx context.Context, c store.GroupChange) (store.GroupRecordResult, error) {
	var res store.GroupRecordResult
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		res, err = s.changeGroupTx(ctx, tx, c)
		return err
	})
	if err != nil {
		return store.GroupRecordResult{}, fmt.Errorf("change group %s: %w", c.Conv, err)
	}
	return res, nil
}

func (s *Backend) changeGroupTx(ctx context.Context, tx *sql.Tx, c store.GroupChange) (store.GroupRecordResult, error) {
	if c.Create && c.Key != "" {
		var existing string
		err := s.queryRowTx(ctx, tx, qGroupKeyGet, c.Creator, c.Key).Scan(&existing)
		if err == nil {
			g, _, err := s.groupTx(ctx, tx, existing)
			if err == nil && g == nil {
				err = fmt.Errorf("the group %s of key %q is missing", existing, c.Key)
			}
			if err != nil {
				return store.GroupRecordResult{}, err
			}
			return store.GroupRecordResult{Group: g.State(), Existing: true}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return store.GroupRecordResult{}, err
		}
	}
	cur, seq, err := s.groupTx(ctx, tx, c.Conv)
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	if cur != nil && c.Msg.Seq > 0 {
		seq = c.Msg.Seq // the owner's
	}
	c.Msg.Seq = seq
	next, err := store.ApplyGroupChange(cur, c, seq)
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	if err := s.putGroupTx(ctx, tx, c, cur, next); err != nil {
		return store.GroupRecordResult{}, err
	}
	appended, err := s.appendTx(ctx, tx, c.Msg, true)
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	if appended.Msg.Seq != seq {
		return store.GroupRecordResult{}, fmt.Errorf("system message at seq %d, not %d", appended.Msg.Seq, seq)
	}
	joined, left := store.MemberChanges(cur, next)
	for _, u := range left {
		if _, err := s.execTx(ctx, tx, qLeaveGroup, c.Conv, u); err != nil {
			return store.GroupRecordResult{}, fmt.Errorf("remove %s: %w", u, err)
		}
	}
	for _, u := range joined {
		if _, err := s.execTx(ctx, tx, qJoinGroup, c.Conv, u, next.Members[u]); err != nil {
			return store.GroupRecordResult{}, fmt.Errorf("add %s: %w", u, err)
		}
	}
	record, err := json.Marshal(changeRecord{Create: c.Create, Title: c.Title, Add: c.Add, Remove: c.Remove})
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	if _, err := s.execTx(ctx, tx, qRecordChange, c.Conv, seq, string(record)); err != nil {
		return store.GroupRecordResult{}, err
	}
	return store.GroupRecordResult{Group: next.State(), Msg: appended.Msg}, nil
}

// putGroupTx writes a group's row as next has it: a created group's row
// (with its key, if any), or the title and version that changed.
func (s *Backend) putGroupTx(ctx context.Context, tx *sql.Tx, c store.GroupChange, cur *store.GroupRecord, next store.GroupRecord) error {
	if cur == nil {
		if c.Key != "" {
			if _, err := s.execTx(ctx, tx, qGroupKeyPut, c.Creator, c.Key, c.Conv); err != nil {
				return err
			}
		}
		_, err := s.execTx(ctx, tx, qInsertGroup, c.Conv, next.Title, next.Version, c.Msg.ServerTS)
		return err
	}
	if next.Title == cur.Title && next.Version == cur.Version {
		return nil
	}
	_, err := s.execTx(ctx, tx, qSetGroupState, next.Title, next.Version, c.Conv)
	return err
}

// changeRecord is a group change as group_changes keeps it.
type changeRecord struct {
	Create bool     `json:"create,omitempty"`
	Title  string   `json:"title,omitempty"`
	Add    []string `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// groupTx reads a group inside the writer's transaction, with the seq its
// next message takes; nil and 1 when there is none.
func (s *Backend) groupTx(ctx context.Context, tx *sql.Tx, conv string) (*store.GroupRecord, int64, error) {
	g := store.GroupRecord{Conv: conv, Members: map[string]int64{}}
	var maxSeq int64
	err := s.queryRowTx(ctx, tx, qGroupOf, conv).Scan(&g.Title, &g.Version, &maxSeq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, 1, nil
	case err != nil:
		return nil, 0, err
	}
	rows, err := tx.StmtContext(ctx, mustStmt(s.writeStmts, qGroupJoined)).QueryContext(ctx, conv)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var u string
		var joined int64
		if err := rows.Scan(&u, &joined); err != nil {
			return nil, 0, err
		}
		g.Members[u] = joined
	}
	return &g, maxSeq + 1, rows.Err()
}

// GroupChangeAt implements store.Backend.
func (s *Backend) GroupChangeAt(ctx context.Context, conv string, seq int64) (store.GroupChange, error) {
	if err := s.checkOpen(); err != nil {
		return store.GroupChange{}, err
	}
	st, err := s.readStmts.get(ctx, qChangeAt)
	if err != nil {
		return store.GroupChange{}, err
	}
	var text string
	err = st.QueryRowContext(ctx, conv, seq).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return store.GroupChange{}, store.ErrNotFound
	}
	if err != nil {
		return store.GroupChange{}, err
	}
	var r changeRecord
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return store.GroupChange{}, fmt.Errorf("change of %s at %d: %w", conv, seq, err)
	}
	return store.GroupChange{Conv: conv, Create: r.Create, Title: r.Title, Add: slices.Clone(r.Add), Remove: slices.Clone(r.Remove)}, nil
}

// mustStmt returns a statement prepared at open.
func mustStmt(c *stmtCache, query string) *sql.Stmt {
	st, err := c.get(context.Background(), query)
	if err != nil {
		panic(err) // a query missing from the prepared lists: a programming error
	}
	return st
}

// txRow reads one row inside a reader's transaction.
func (s *Backend) txRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	return tx.StmtContext(ctx, mustStmt(s.readStmts, query)).QueryRowContext(ctx, args...)
}

// txQuery reads rows inside a reader's transaction.
func (s *Backend) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	return tx.StmtContext(ctx, mustStmt(s.readStmts, query)).QueryContext(ctx, args...)
}
