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
func (s *Store) Conversation(ctx context.Context, conv string) (store.ConvRecord, error) {
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
func (s *Store) Unrepaired(ctx context.Context) ([]string, error) {
	return s.strings(ctx, qUnrepaired)
}

// ChangeGroup implements store.Backend: the members, the title, the
// version, the system message and the change record in one transaction.
func (s *Store) ChangeGroup(ctx context.Context, c store.GroupRecordChange) (store.GroupRecordResult, error) {
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

func (s *Store) changeGroupTx(ctx context.Context, tx *sql.Tx, c store.GroupRecordChange) (store.GroupRecordResult, error) {
	if c.Create {
		if c.Key != "" {
			var existing string
			err := s.queryRowTx(ctx, tx, qGroupKeyGet, c.Creator, c.Key).Scan(&existing)
			if err == nil {
				g, err := s.groupIn(ctx, tx, existing)
				return store.GroupRecordResult{Group: g, Existing: true}, err
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return store.GroupRecordResult{}, err
			}
			if _, err := s.execTx(ctx, tx, qGroupKeyPut, c.Creator, c.Key, c.Conv); err != nil {
				return store.GroupRecordResult{}, err
			}
		}
		if _, err := s.execTx(ctx, tx, qInsertGroup, c.Conv, c.Title, c.Msg.ServerTS); err != nil {
			return store.GroupRecordResult{}, err
		}
	} else {
		var title string
		var version int64
		err := s.queryRowTx(ctx, tx, qGroupOf, c.Conv).Scan(&title, &version)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return store.GroupRecordResult{}, store.ErrNotFound
		case err != nil:
			return store.GroupRecordResult{}, err
		case version != c.Version:
			return store.GroupRecordResult{}, store.ErrStaleMembers
		}
	}
	appended, err := s.appendTx(ctx, tx, c.Msg, true)
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	seq := appended.Msg.Seq
	for _, u := range c.Remove {
		res, err := s.execTx(ctx, tx, qLeaveGroup, c.Conv, u)
		if err != nil {
			return store.GroupRecordResult{}, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.GroupRecordResult{}, fmt.Errorf("remove %s: not a member", u)
		}
	}
	for _, u := range c.Add {
		if _, err := s.execTx(ctx, tx, qJoinGroup, c.Conv, u, seq); err != nil {
			return store.GroupRecordResult{}, fmt.Errorf("add %s: %w", u, err)
		}
	}
	if c.ChangesMembers() {
		if _, err := s.execTx(ctx, tx, qBumpMembers, c.Conv); err != nil {
			return store.GroupRecordResult{}, err
		}
	}
	if c.Title != "" && !c.Create {
		if _, err := s.execTx(ctx, tx, qSetGroupTitle, c.Title, c.Conv); err != nil {
			return store.GroupRecordResult{}, err
		}
	}
	record, err := json.Marshal(changeRecord{Create: c.Create, Title: c.Title, Add: c.Add, Remove: c.Remove})
	if err != nil {
		return store.GroupRecordResult{}, err
	}
	if _, err := s.execTx(ctx, tx, qRecordChange, c.Conv, seq, string(record)); err != nil {
		return store.GroupRecordResult{}, err
	}
	g, err := s.groupIn(ctx, tx, c.Conv)
	return store.GroupRecordResult{Group: g, Msg: appended.Msg}, err
}

// changeRecord is a group change as group_changes keeps it.
type changeRecord struct {
	Create bool     `json:"create,omitempty"`
	Title  string   `json:"title,omitempty"`
	Add    []string `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// groupIn reads a group's state inside the writer's transaction.
func (s *Store) groupIn(ctx context.Context, tx *sql.Tx, conv string) (store.GroupState, error) {
	g := store.GroupState{Conv: conv, Members: []string{}}
	if err := s.queryRowTx(ctx, tx, qGroupOf, conv).Scan(&g.Title, &g.Version); err != nil {
		return g, err
	}
	rows, err := tx.StmtContext(ctx, mustStmt(s.writeStmts, qMemberNames)).QueryContext(ctx, conv)
	if err != nil {
		return g, err
	}
	defer rows.Close()
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return g, err
		}
		g.Members = append(g.Members, u)
	}
	return g, rows.Err()
}

// GroupChangeAt implements store.Backend.
func (s *Store) GroupChangeAt(ctx context.Context, conv string, seq int64) (store.GroupRecordChange, error) {
	if err := s.checkOpen(); err != nil {
		return store.GroupRecordChange{}, err
	}
	st, err := s.readStmts.get(ctx, qChangeAt)
	if err != nil {
		return store.GroupRecordChange{}, err
	}
	var text string
	err = st.QueryRowContext(ctx, conv, seq).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		return store.GroupRecordChange{}, store.ErrNotFound
	}
	if err != nil {
		return store.GroupRecordChange{}, err
	}
	var r changeRecord
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return store.GroupRecordChange{}, fmt.Errorf("change of %s at %d: %w", conv, seq, err)
	}
	return store.GroupRecordChange{Conv: conv, Create: r.Create, Title: r.Title, Add: slices.Clone(r.Add), Remove: slices.Clone(r.Remove)}, nil
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
func (s *Store) txRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	return tx.StmtContext(ctx, mustStmt(s.readStmts, query)).QueryRowContext(ctx, args...)
}

// txQuery reads rows inside a reader's transaction.
func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	return tx.StmtContext(ctx, mustStmt(s.readStmts, query)).QueryContext(ctx, args...)
}
