package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// A write transaction changes sessions only through changeSession, which
// applies one of the session package's rules and keeps everything derived
// in step: the user's clock, the unread totals and the sub-business
// gateway. The single writer makes each user's changes atomic.

// sessionRule changes a session and says which timestamps move.
type sessionRule func(st *session.State) session.Moves

// changeSession applies rule to user's session of conv at time now (ms; one
// reading of the clock per store call, so that what a call expires and what
// it shows agree), creating the session when create is set and it does not
// exist. It returns the new state and whether anything changed.
func (s *Store) changeSession(ctx context.Context, tx *sql.Tx, now int64, user, conv string, create bool, rule sessionRule) (session.State, bool, error) {
	st, found, err := s.loadSession(ctx, tx, user, conv)
	if err != nil {
		return st, false, err
	}
	if !found {
		if !create {
			return st, false, nil
		}
		if st, err = s.newSession(ctx, tx, user, conv); err != nil {
			return st, false, err
		}
	}
	old := st
	expired := st.ExpireMute(now)
	moves := rule(&st)
	if !moves.Changed() && !expired && found {
		return st, false, nil
	}
	ts, err := s.tick(ctx, tx, user, now)
	if err != nil {
		return st, false, err
	}
	st.ActiveTS = ts
	if moves.Write {
		st.WriteTS = ts
	}
	if err := s.saveSession(ctx, tx, st); err != nil {
		return st, false, err
	}
	if err := s.settleTotals(ctx, tx, old, st, found); err != nil {
		return st, false, err
	}
	if st.SubBiz != "" {
		newMessage := st.LastConv != old.LastConv || st.LastSeq != old.LastSeq
		if err := s.refreshGateway(ctx, tx, now, st, moves.Write, newMessage); err != nil {
			return st, false, err
		}
	}
	return st, true, nil
}

// scanLastTS stores user's last session timestamp in dst.
func (s *Store) scanLastTS(ctx context.Context, tx *sql.Tx, user string, dst *int64) error {
	last, err := s.lastTS(ctx, tx, user)
	*dst = last
	return err
}

// newSession is the initial state of user's session of conv. A direct chat
// with an account that files its conversations is filed accordingly.
func (s *Store) newSession(ctx context.Context, tx *sql.Tx, user, conv string) (session.State, error) {
	st := session.State{User: user, Conv: conv}
	c, ok := protocol.ParseConv(conv)
	if !ok {
		return st, fmt.Errorf("invalid conversation id %q", conv)
	}
	if c.Kind == protocol.ConvDirect {
		var category, subBiz string
		err := s.queryRowTx(ctx, tx, qAccountGet, c.Peer(user)).Scan(&category, &subBiz)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return st, err
		}
		st.Category, st.SubBiz = category, subBiz
	}
	return st, nil
}

// tick returns the user's next session timestamp: now, or one past the
// last one if the clock has not moved on (or stepped back), so that no two
// changes of one user ever share a timestamp and none goes back.
//
// The last timestamps live in memory: only the writer goroutine changes
// sessions. On first use a user's is read from its sessions (the highest
// active_ts), so a restart continues from what is on disk. A write that is
// rolled back leaves the clock ahead, which only skips values.
func (s *Store) tick(ctx context.Context, tx *sql.Tx, user string, now int64) (int64, error) {
	last, err := s.lastTS(ctx, tx, user)
	if err != nil {
		return 0, err
	}
	ts := max(now, last+1)
	s.clocks[user] = ts
	return ts, nil
}

// lastTS returns the last session timestamp given to user (writer only).
func (s *Store) lastTS(ctx context.Context, tx *sql.Tx, user string) (int64, error) {
	if last, ok := s.clocks[user]; ok {
		return last, nil
	}
	var last int64
	if err := s.queryRowTx(ctx, tx, qLastActive, user).Scan(&last); err != nil {
		return 0, err
	}
	s.clocks[user] = last
	return last, nil
}

// settleTotals moves the session's contribution to its list's unread total
// from what it was to what it is.
func (s *Store) settleTotals(ctx context.Context, tx *sql.Tx, old, cur session.State, existed bool) error {
	var before int64
	if existed {
		before = old.UnreadContribution()
	}
	after := cur.UnreadContribution()
	if old.SubBiz == cur.SubBiz || !existed {
		if after != before {
			_, err := s.execTx(ctx, tx, qTotalAdd, cur.User, cur.SubBiz, after-before)
			return err
		}
		return nil
	}
	if _, err := s.execTx(ctx, tx, qTotalAdd, old.User, old.SubBiz, -before); err != nil {
		return err
	}
	_, err := s.execTx(ctx, tx, qTotalAdd, cur.User, cur.SubBiz, after)
	return err
}

// refreshGateway brings the gateway session of member's sub-business up to
// date: its unread count is the nested list's total; a member that moved in
// the list moves the gateway too; a member's new message is the gateway's
// last message and brings a deleted gateway back.
func (s *Store) refreshGateway(ctx context.Context, tx *sql.Tx, now int64, member session.State, moved, newMessage bool) error {
	var total int64
	if err := s.queryRowTx(ctx, tx, qTotalGet, member.User, member.SubBiz).Scan(&total); err != nil {
		return err
	}
	gateway := protocol.Conv{Kind: protocol.ConvBiz, Name: member.SubBiz}.String()
	_, _, err := s.changeSession(ctx, tx, now, member.User, gateway, true, func(g *session.State) session.Moves {
		var moves session.Moves
		if g.UnreadCount != total {
			g.UnreadCount = total
			moves.Active = true
		}
		if newMessage {
			g.LastConv, g.LastSeq = member.LastConv, member.LastSeq
			g.Deleted = false
		}
		if moved || newMessage {
			moves = session.Moves{Active: true, Write: true}
		}
		return moves
	})
	return err
}

func (s *Store) loadSession(ctx context.Context, tx *sql.Tx, user, conv string) (session.State, bool, error) {
	st, err := scanSession(s.queryRowTx(ctx, tx, qSessionGet, user, conv))
	if errors.Is(err, sql.ErrNoRows) {
		return session.State{User: user, Conv: conv}, false, nil
	}
	return st, err == nil, err
}

func (s *Store) saveSession(ctx context.Context, tx *sql.Tx, st session.State) error {
	_, err := s.execTx(ctx, tx, qSessionPut, st.User, st.Conv, st.ReadSeq, st.WriteSeq, st.UnreadCount, st.ActiveTS, st.WriteTS,
		st.Muted, st.MuteUntil, st.Priority, st.Deleted, st.MarkedUnread, st.Category, st.SubBiz, st.LastConv, st.LastSeq)
	return err
}

func scanSession(sc scanner, extra ...any) (session.State, error) {
	var st session.State
	dest := []any{&st.User, &st.Conv, &st.ReadSeq, &st.WriteSeq, &st.UnreadCount, &st.ActiveTS, &st.WriteTS,
		&st.Muted, &st.MuteUntil, &st.Priority, &st.Deleted, &st.MarkedUnread, &st.Category, &st.SubBiz, &st.LastConv, &st.LastSeq}
	err := sc.Scan(append(dest, extra...)...)
	return st, err
}

// touchCoveredSenders moves active_ts of every member whose own messages a
// rise of conv's ticks from prev to next covers, so that their offline
// devices learn the new ticks by sync. Senders who are no longer members
// are left alone: their sessions show the ticks of when they left.
func (s *Store) touchCoveredSenders(ctx context.Context, tx *sql.Tx, now int64, conv string, prev, next protocol.Ticks) error {
	senders := map[string]bool{}
	for _, r := range [][2]int64{{prev.DeliveredSeq, next.DeliveredSeq}, {prev.ReadSeq, next.ReadSeq}} {
		if r[1] <= r[0] {
			continue
		}
		rows, err := tx.StmtContext(ctx, mustStmt(s.writeStmts, qSendersInRange)).QueryContext(ctx, conv, r[0], r[1], conv)
		if err != nil {
			return err
		}
		for rows.Next() {
			var sender string
			if err := rows.Scan(&sender); err != nil {
				rows.Close()
				return err
			}
			senders[sender] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for sender := range senders {
		if _, _, err := s.changeSession(ctx, tx, now, sender, conv, false, func(st *session.State) session.Moves { return st.OnTicks() }); err != nil {
			return err
		}
	}
	return nil
}

// mustStmt returns a statement prepared at open.
func mustStmt(c *stmtCache, query string) *sql.Stmt {
	st, err := c.get(context.Background(), query)
	if err != nil {
		panic(err) // a query missing from writerQueries: a programming error
	}
	return st
}
