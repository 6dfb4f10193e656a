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

// A group's members are its message_status rows: joining inserts one (with
// both boundaries at the seq before the join), leaving deletes it. The tick
// minimum, pending rows and receipts therefore count members only, with no
// separate membership table to keep in step.

// Group implements store.Store.
func (s *Store) Group(ctx context.Context, conv string) (store.GroupState, error) {
	if err := s.checkOpen(); err != nil {
		return store.GroupState{}, err
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return store.GroupState{}, fmt.Errorf("group %s: %w", conv, err)
	}
	defer tx.Rollback()
	g := store.GroupState{Conv: conv}
	stmt, err := s.readStmts.get(ctx, qGroupOf)
	if err != nil {
		return g, err
	}
	err = tx.StmtContext(ctx, stmt).QueryRowContext(ctx, conv).Scan(&g.Title, &g.Version)
	if errors.Is(err, sql.ErrNoRows) {
		return g, store.ErrNotFound
	}
	if err != nil {
		return g, fmt.Errorf("group %s: %w", conv, err)
	}
	if g.Members, err = s.membersIn(ctx, tx, conv, false); err != nil {
		return g, fmt.Errorf("members of %s: %w", conv, err)
	}
	return g, nil
}

// Membership implements store.Store.
func (s *Store) Membership(ctx context.Context, conv, user string) (store.Membership, error) {
	if err := s.checkOpen(); err != nil {
		return store.Membership{}, err
	}
	stmt, err := s.readStmts.get(ctx, qMembershipOf)
	if err != nil {
		return store.Membership{}, err
	}
	var m store.Membership
	err = stmt.QueryRowContext(ctx, conv, user).Scan(&m.JoinedSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return m, store.ErrNotFound
	}
	if err != nil {
		return m, fmt.Errorf("membership of %s in %s: %w", user, conv, err)
	}
	return m, nil
}

// membersIn reads conv's members, sorted, inside tx: the writer's
// transaction when writer is set, else a reader's.
func (s *Store) membersIn(ctx context.Context, tx *sql.Tx, conv string, writer bool) ([]string, error) {
	cache := s.readStmts
	if writer {
		cache = s.writeStmts
	}
	stmt, err := cache.get(ctx, qMembersOf)
	if err != nil {
		return nil, err
	}
	rows, err := tx.StmtContext(ctx, stmt).QueryContext(ctx, conv)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	members := []string{}
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return nil, err
		}
		members = append(members, u)
	}
	return members, rows.Err()
}

// ChangeGroup implements store.Store.
func (s *Store) ChangeGroup(ctx context.Context, req store.GroupChange) (store.GroupResult, error) {
	var res store.GroupResult
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		res, err = s.changeGroupTx(ctx, tx, req)
		return err
	})
	if err != nil {
		return store.GroupResult{}, fmt.Errorf("change group %s: %w", req.Conv, err)
	}
	return res, nil
}

func (s *Store) changeGroupTx(ctx context.Context, tx *sql.Tx, req store.GroupChange) (store.GroupResult, error) {
	now := s.now().UnixMilli()
	conv, existing, err := s.groupToChange(ctx, tx, now, req)
	if err != nil || existing != "" {
		if existing != "" {
			g, err := s.groupIn(ctx, tx, existing)
			return store.GroupResult{Group: g, Existing: true}, err
		}
		return store.GroupResult{}, err
	}
	cursors := make(map[string]int64)
	for _, user := range req.Remove {
		if err := s.removeMember(ctx, tx, now, req.Conv, user, conv); err != nil {
			return store.GroupResult{}, err
		}
		cursors[user] = 0
	}
	for _, user := range req.Add {
		if err := s.addMember(ctx, tx, now, req.Conv, user, conv.maxSeq); err != nil {
			return store.GroupResult{}, err
		}
	}
	if len(req.Add)+len(req.Remove) > 0 && !req.Create {
		if _, err := s.execTx(ctx, tx, qBumpMembers, req.Conv); err != nil {
			return store.GroupResult{}, err
		}
		conv.membersVersion++
	}
	if req.Title != "" && !req.Create {
		if _, err := s.execTx(ctx, tx, qSetGroupTitle, req.Title, req.Conv); err != nil {
			return store.GroupResult{}, err
		}
	}
	members, err := s.membersIn(ctx, tx, req.Conv, true)
	if err != nil {
		return store.GroupResult{}, err
	}
	msg := req.Msg
	msg.Conv, msg.Kind = req.Conv, protocol.KindSystem
	appended, err := s.appendTx(ctx, tx, store.AppendRequest{Msg: msg, Members: members, MembersVersion: conv.membersVersion})
	if err != nil {
		return store.GroupResult{}, err
	}
	if appended.Duplicate {
		// Never with the server's random ids; refuse rather than record a
		// change without its message.
		return store.GroupResult{}, fmt.Errorf("system message id %s is taken", msg.MsgID)
	}
	g, err := s.groupIn(ctx, tx, req.Conv)
	if err != nil {
		return store.GroupResult{}, err
	}
	for _, m := range members {
		cursors[m] = 0
	}
	for user := range cursors {
		if cursors[user], err = s.lastTS(ctx, tx, user); err != nil {
			return store.GroupResult{}, err
		}
	}
	return store.GroupResult{Group: g, Msg: appended.Msg, Ticks: appended.Ticks, Cursors: cursors}, nil
}

// groupToChange returns the row of the group req changes, creating it for
// a create. A create whose key already names a group returns that group's
// conversation id as existing and changes nothing.
func (s *Store) groupToChange(ctx context.Context, tx *sql.Tx, now int64, req store.GroupChange) (row conversationRow, existing string, err error) {
	if !req.Create {
		row, found, err := s.loadConversation(ctx, tx, req.Conv)
		switch {
		case err != nil:
			return row, "", err
		case !found || !isGroup(req.Conv):
			return row, "", store.ErrNotFound
		case row.membersVersion != req.Version:
			return row, "", store.ErrStaleMembers
		}
		return row, "", nil
	}
	if req.Key != "" {
		err := s.queryRowTx(ctx, tx, qGroupKeyGet, req.Creator, req.Key).Scan(&existing)
		if err == nil {
			return row, existing, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return row, "", err
		}
		if _, err := s.execTx(ctx, tx, qGroupKeyPut, req.Creator, req.Key, req.Conv); err != nil {
			return row, "", err
		}
	}
	if _, err := s.execTx(ctx, tx, qInsertGroup, req.Conv, req.Title, now); err != nil {
		return row, "", err
	}
	return row, "", nil
}

// addMember makes user a member of conv after seq before: its boundaries
// start there and its session has nothing unread before it.
func (s *Store) addMember(ctx context.Context, tx *sql.Tx, now int64, conv, user string, before int64) error {
	if _, err := s.execTx(ctx, tx, qJoinMember, user, conv, before, before, before+1); err != nil {
		return fmt.Errorf("add %s: %w", user, err)
	}
	if _, err := s.execTx(ctx, tx, qFormerDelete, user, conv); err != nil {
		return err
	}
	_, _, err := s.changeSession(ctx, tx, now, user, conv, true, func(st *session.State) session.Moves {
		return st.OnJoin(before)
	})
	return err
}

// removeMember ends user's membership of conv: its boundaries and pending
// row go; its session stays, showing the group as it was then.
func (s *Store) removeMember(ctx context.Context, tx *sql.Tx, now int64, conv, user string, row conversationRow) error {
	res, err := s.execTx(ctx, tx, qRemoveMember, user, conv)
	if err != nil {
		return fmt.Errorf("remove %s: %w", user, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("remove %s: not a member", user)
	}
	if _, err := s.execTx(ctx, tx, qDeletePending, user, conv); err != nil {
		return err
	}
	if _, err := s.execTx(ctx, tx, qFormerPut, user, conv, row.title, row.ticks.DeliveredSeq, row.ticks.ReadSeq); err != nil {
		return err
	}
	_, _, err = s.changeSession(ctx, tx, now, user, conv, false, func(st *session.State) session.Moves {
		return st.OnLeave()
	})
	return err
}

// formerView is what user's session of conv shows when user left it, or
// ok false when user never left it.
func formerView(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, user, conv string) (view convView, ok bool, err error) {
	err = tx.StmtContext(ctx, stmt).QueryRowContext(ctx, user, conv).Scan(&view.title, &view.ticks.DeliveredSeq, &view.ticks.ReadSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return view, false, nil
	}
	return view, err == nil, err
}

// groupIn reads a group's state inside the writer's transaction.
func (s *Store) groupIn(ctx context.Context, tx *sql.Tx, conv string) (store.GroupState, error) {
	g := store.GroupState{Conv: conv}
	if err := s.queryRowTx(ctx, tx, qGroupOf, conv).Scan(&g.Title, &g.Version); err != nil {
		return g, err
	}
	members, err := s.membersIn(ctx, tx, conv, true)
	g.Members = members
	return g, err
}
