package sqlitestore

import (
	"context"
	"database/sql"
	"slices"

	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// SessionOp implements store.Store.
func (s *Store) SessionOp(ctx context.Context, user, conv string, op session.Op, args session.OpArgs) (store.SessionResult, error) {
	var res store.SessionResult
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, found, err := s.loadSession(ctx, tx, user, conv)
		if err != nil {
			return err
		}
		if c, _ := protocol.ParseConv(conv); !found && c.Kind == protocol.ConvBiz {
			return store.ErrNotFound
		}
		now := s.now().UnixMilli()
		st, changed, err := s.changeSession(ctx, tx, now, user, conv, true, func(st *session.State) session.Moves {
			return st.Apply(op, args, now)
		})
		if err != nil {
			return err
		}
		res.Changed = changed
		if res.Session, err = s.renderInTx(ctx, tx, now, st); err != nil {
			return err
		}
		return s.scanLastTS(ctx, tx, user, &res.Cursor)
	})
	if err != nil {
		return store.SessionResult{}, fmt.Errorf("session op %s on %s for %s: %w", op, conv, user, err)
	}
	return res, nil
}

// SetAccount implements store.Store.
func (s *Store) SetAccount(ctx context.Context, user, category, subBiz string) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := s.execTx(ctx, tx, qAccountPut, user, category, subBiz)
		return err
	})
	if err != nil {
		return fmt.Errorf("set account %s: %w", user, err)
	}
	return nil
}

// Sync implements store.Store. Mutes that have expired are turned off
// first, as a change of their sessions, so that the totals are exact and
// every device learns it.
func (s *Store) Sync(ctx context.Context, user string, q store.SyncQuery) (store.SyncPage, error) {
	if q.Limit <= 0 {
		return store.SyncPage{}, fmt.Errorf("sync of %s: limit %d must be positive", user, q.Limit)
	}
	if err := s.checkOpen(); err != nil {
		return store.SyncPage{}, err
	}
	// One reading of the clock: what expires and what is shown agree.
	now := s.now().UnixMilli()
	if err := s.expireMutes(ctx, now, user); err != nil {
		return store.SyncPage{}, err
	}
	// One read transaction: the page and the total are one snapshot.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return store.SyncPage{}, fmt.Errorf("sync of %s: %w", user, err)
	}
	defer tx.Rollback()
	page, err := s.syncPage(ctx, tx, now, user, q)
	if err != nil {
		return store.SyncPage{}, fmt.Errorf("sync of %s: %w", user, err)
	}
	return page, nil
}

func (s *Store) syncPage(ctx context.Context, tx *sql.Tx, now int64, user string, q store.SyncQuery) (store.SyncPage, error) {
	pageStmt, err := s.readStmts.get(ctx, qSyncPage)
	if err != nil {
		return store.SyncPage{}, err
	}
	rows, err := tx.StmtContext(ctx, pageStmt).QueryContext(ctx, user, q.SubBiz, q.Since, q.Limit+1)
	if err != nil {
		return store.SyncPage{}, err
	}
	defer rows.Close()
	page := store.SyncPage{Sessions: []protocol.Session{}, Cursor: q.Since}
	var groups []int // indexes of group sessions, whose members are read next
	for rows.Next() {
		st, last, view, err := scanSyncRow(rows)
		if err != nil {
			return store.SyncPage{}, err
		}
		if len(page.Sessions) == q.Limit {
			page.HasMore = true
			break
		}
		if isGroup(st.Conv) {
			groups = append(groups, len(page.Sessions))
		}
		page.Sessions = append(page.Sessions, render(st, last, view, now))
		page.Cursor = st.ActiveTS
	}
	if err := rows.Err(); err != nil {
		return store.SyncPage{}, err
	}
	rows.Close()
	formerStmt, err := s.readStmts.get(ctx, qFormerOf)
	if err != nil {
		return store.SyncPage{}, err
	}
	for _, i := range groups {
		if err := s.showGroup(ctx, tx, formerStmt, &page.Sessions[i], user, false); err != nil {
			return store.SyncPage{}, err
		}
	}
	totalStmt, err := s.readStmts.get(ctx, qTotalGet)
	if err != nil {
		return store.SyncPage{}, err
	}
	if err := tx.StmtContext(ctx, totalStmt).QueryRowContext(ctx, user, q.SubBiz).Scan(&page.TotalUnread); err != nil {
		return store.SyncPage{}, err
	}
	return page, nil
}

// expireMutes turns off user's mutes whose time is up.
func (s *Store) expireMutes(ctx context.Context, now int64, user string) error {
	rows, err := s.query(ctx, qExpiredMutes, user, now)
	if err != nil {
		return err
	}
	var convs []string
	for rows.Next() {
		var conv string
		if err := rows.Scan(&conv); err != nil {
			rows.Close()
			return err
		}
		convs = append(convs, conv)
	}
	rows.Close()
	if len(convs) == 0 {
		return rows.Err()
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, conv := range convs {
			// changeSession expires the mute; the rule itself changes nothing.
			if _, _, err := s.changeSession(ctx, tx, now, user, conv, false, func(*session.State) session.Moves { return session.Moves{} }); err != nil {
				return err
			}
		}
		return nil
	})
}

// scanSyncRow reads a row of qSyncPage.
func scanSyncRow(rows *sql.Rows) (session.State, *protocol.Message, convView, error) {
	var (
		seq, clientTS, serverTS   sql.NullInt64
		msgID, sender, body, kind sql.NullString
		view                      convView
	)
	st, err := scanSession(rows, &seq, &msgID, &sender, &body, &clientTS, &serverTS, &kind,
		&view.ticks.DeliveredSeq, &view.ticks.ReadSeq, &view.title)
	if err != nil || !seq.Valid {
		return st, nil, view, err
	}
	return st, &protocol.Message{Conv: st.LastConv, Seq: seq.Int64, MsgID: msgID.String, From: sender.String,
		Body: body.String, ClientTS: clientTS.Int64, ServerTS: serverTS.Int64, Kind: kind.String}, view, nil
}

// convView is what a session shows of its conversation.
type convView struct {
	ticks protocol.Ticks
	title string // a group's
}

// isGroup reports whether conv is a group conversation id.
func isGroup(conv string) bool {
	c, ok := protocol.ParseConv(conv)
	return ok && c.Kind == protocol.ConvGroup
}

// renderInTx renders a session inside a write, reading its last message
// and ticks.
func (s *Store) renderInTx(ctx context.Context, tx *sql.Tx, now int64, st session.State) (protocol.Session, error) {
	var last *protocol.Message
	if st.LastSeq > 0 {
		m, err := scanMessage(s.queryRowTx(ctx, tx, qMessageAt, st.LastConv, st.LastSeq))
		if err != nil {
			return protocol.Session{}, err
		}
		last = &m
	}
	conv, found, err := s.loadConversation(ctx, tx, st.Conv)
	if err != nil {
		return protocol.Session{}, err
	}
	var view convView
	if found {
		view.ticks, view.title = conv.ticks, conv.title
	}
	out := render(st, last, view, now)
	if isGroup(st.Conv) {
		if err := s.showGroup(ctx, tx, mustStmt(s.writeStmts, qFormerOf), &out, st.User, true); err != nil {
			return protocol.Session{}, err
		}
	}
	return out, nil
}

// showGroup fills what user's group session shows of the group: its
// members, or, for a user who left, no members and the title and ticks of
// when it left. writer says whether tx is the writer's.
func (s *Store) showGroup(ctx context.Context, tx *sql.Tx, formerStmt *sql.Stmt, out *protocol.Session, user string, writer bool) error {
	members, err := s.membersIn(ctx, tx, out.Conv, writer)
	if err != nil {
		return err
	}
	if _, in := slices.BinarySearch(members, user); in {
		out.Members = members
		return nil
	}
	out.Members = []string{}
	former, ok, err := formerView(ctx, tx, formerStmt, user, out.Conv)
	if err != nil || !ok {
		return err
	}
	out.Title, out.Ticks = former.title, former.ticks
	return nil
}

// render is the wire form of a session: every field present.
func render(st session.State, last *protocol.Message, view convView, now int64) protocol.Session {
	out := protocol.Session{
		Conv:         st.Conv,
		Members:      []string{},
		UnreadCount:  st.UnreadCount,
		ReadSeq:      st.ReadSeq,
		WriteSeq:     st.WriteSeq,
		ActiveTS:     st.ActiveTS,
		WriteTS:      st.WriteTS,
		Muted:        st.MutedAt(now),
		MuteUntil:    st.MuteUntil,
		Priority:     st.Priority,
		Deleted:      st.Deleted,
		MarkedUnread: st.MarkedUnread,
		Category:     st.Category,
		SubBiz:       st.SubBiz,
		LastMsg:      last,
		Ticks:        view.ticks,
	}
	if !out.Muted {
		out.MuteUntil = 0
	}
	c, _ := protocol.ParseConv(st.Conv)
	out.Kind = c.Kind.String()
	switch c.Kind {
	case protocol.ConvDirect:
		out.Title = c.Peer(st.User)
		out.Members = []string{c.A, c.B}
	case protocol.ConvGroup:
		out.Title = view.title
	case protocol.ConvBiz:
		out.Title = c.Name
	}
	return out
}
