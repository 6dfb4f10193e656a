package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// User implements store.Backend.
func (s *Backend) User(ctx context.Context, user string) (store.UserRecord, error) {
	if err := s.checkOpen(); err != nil {
		return store.UserRecord{}, err
	}
	rec := store.UserRecord{Totals: map[string]int64{}}
	if err := mustStmt(s.readStmts, qLastActive).QueryRowContext(ctx, user).Scan(&rec.Clock); err != nil {
		return rec, fmt.Errorf("user %s: %w", user, err)
	}
	rows, err := s.query(ctx, qTotalsOf, user)
	if err != nil {
		return rec, fmt.Errorf("totals of %s: %w", user, err)
	}
	defer rows.Close()
	for rows.Next() {
		var list string
		var total int64
		if err := rows.Scan(&list, &total); err != nil {
			return rec, err
		}
		rec.Totals[list] = total
	}
	return rec, rows.Err()
}

// Sessions implements store.Backend.
func (s *Backend) Sessions(ctx context.Context, conv string, users []string) (map[string]session.State, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	out := make(map[string]session.State, len(users))
	const chunk = 500 // well under SQLite's limit on variables
	for start := 0; start < len(users); start += chunk {
		part := users[start:min(start+chunk, len(users))]
		args := make([]any, 0, len(part)+1)
		args = append(args, conv)
		for _, u := range part {
			args = append(args, u)
		}
		q := `SELECT ` + sessionColumns + ` FROM sessions WHERE conv = ? AND user_id IN (?` + strings.Repeat(",?", len(part)-1) + `)`
		rows, err := s.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("sessions of %s: %w", conv, err)
		}
		for rows.Next() {
			st, err := scanSession(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out[st.User] = st
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TimedMutes implements store.Backend.
func (s *Backend) TimedMutes(ctx context.Context, user string, now int64) ([]string, error) {
	return s.strings(ctx, qExpiredMutes, user, now)
}

// SessionPage implements store.Backend.
func (s *Backend) SessionPage(ctx context.Context, user string, q store.SyncQuery) ([]store.SessionRow, int64, error) {
	if q.Limit <= 0 {
		return nil, 0, fmt.Errorf("sessions of %s: limit %d must be positive", user, q.Limit)
	}
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	// One read transaction: the page and the total are one snapshot.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("sessions of %s: %w", user, err)
	}
	defer tx.Rollback()
	var rows *sql.Rows
	if q.Conv != "" {
		rows, err = s.txQuery(ctx, tx, qOneSession, user, q.Conv)
	} else {
		rows, err = s.txQuery(ctx, tx, qSyncPage, user, q.SubBiz, q.Since, q.Limit+1)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sessions of %s: %w", user, err)
	}
	var out []store.SessionRow
	var archived []archivedBody // last messages whose bodies are archived
	for rows.Next() {
		row, ref, err := scanSessionRow(rows)
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		if ref != "" {
			archived = append(archived, archivedBody{msg: row.LastMsg, ref: ref})
		}
		out = append(out, row)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, 0, err
	}
	if err := s.loadBodies(ctx, archived); err != nil {
		return nil, 0, fmt.Errorf("sessions of %s: %w", user, err)
	}
	for i := range out {
		if c, _ := protocol.ParseConv(out[i].State.Conv); c.Kind == protocol.ConvGroup {
			if err := s.showGroup(ctx, tx, &out[i], user); err != nil {
				return nil, 0, err
			}
		}
	}
	var total int64
	if err := s.txRow(ctx, tx, qTotalGet, user, q.SubBiz).Scan(&total); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// showGroup fills what user's group session shows of the group: its
// members, or, for a user who left, none and the title and ticks of when
// it left.
func (s *Backend) showGroup(ctx context.Context, tx *sql.Tx, row *store.SessionRow, user string) error {
	rows, err := s.txQuery(ctx, tx, qMemberNames, row.State.Conv)
	if err != nil {
		return err
	}
	members := []string{}
	in := false
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			rows.Close()
			return err
		}
		members = append(members, u)
		in = in || u == user
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return err
	}
	if in {
		row.Members = members
		return nil
	}
	row.Left = true
	var title string
	err = s.txRow(ctx, tx, qFormerOf, user, row.State.Conv).Scan(&title)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	row.Title = title
	return nil
}

// scanSessionRow reads a row of qSessionRows, and the blob key of its last
// message's body when that is archived (the message's Body then empty).
func scanSessionRow(rows *sql.Rows) (store.SessionRow, string, error) {
	var (
		seq, clientTS, serverTS, replyTo, refSeq sql.NullInt64
		msgID, sender, body, kind, ref, state    sql.NullString
		row                                      store.SessionRow
	)
	st, err := scanSession(rows, &seq, &msgID, &sender, &body, &clientTS, &serverTS, &kind, &replyTo, &refSeq, &ref, &state, &row.Title)
	row.State = st
	if err != nil || !seq.Valid {
		return row, "", err
	}
	m, blobRef, err := showState(protocol.Message{Conv: st.LastConv, Seq: seq.Int64, MsgID: msgID.String, From: sender.String,
		Body: body.String, ClientTS: clientTS.Int64, ServerTS: serverTS.Int64, Kind: kind.String,
		ReplyTo: replyTo.Int64, RefSeq: refSeq.Int64}, ref.String, state.String)
	row.LastMsg = &m
	return row, blobRef, err
}

func scanSession(sc scanner, extra ...any) (session.State, error) {
	var st session.State
	dest := []any{&st.User, &st.Conv, &st.ReadSeq, &st.WriteSeq, &st.UnreadCount, &st.ActiveTS, &st.WriteTS,
		&st.Muted, &st.MuteUntil, &st.Priority, &st.Deleted, &st.MarkedUnread, &st.Category, &st.SubBiz, &st.LastConv, &st.LastSeq,
		&st.Ticks.DeliveredSeq, &st.Ticks.ReadSeq, &st.Request}
	err := sc.Scan(append(dest, extra...)...)
	return st, err
}

// Pending implements store.Backend.
func (s *Backend) Pending(ctx context.Context, user string) ([]store.PendingDelivery, error) {
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

// Account implements store.Backend.
func (s *Backend) Account(ctx context.Context, user string) (string, string, error) {
	if err := s.checkOpen(); err != nil {
		return "", "", err
	}
	var category, subBiz string
	err := mustStmt(s.readStmts, qAccountGet).QueryRowContext(ctx, user).Scan(&category, &subBiz)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	return category, subBiz, err
}

// SetAccount implements store.Backend.
func (s *Backend) SetAccount(ctx context.Context, user, category, subBiz string) error {
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := s.execTx(ctx, tx, qAccountPut, user, category, subBiz)
		return err
	})
	if err != nil {
		return fmt.Errorf("set account %s: %w", user, err)
	}
	return nil
}
