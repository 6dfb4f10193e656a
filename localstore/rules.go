package localstore

import (
	"database/sql"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// The stored sessions change by the rules of package session, the server's
// own: a change loads the session's state, applies one rule, and writes it
// back together with what derives from it, the nested list's gateway. Local
// changes never move active_ts, so that the server's copy of a session,
// which arrives by sync or as an answer, replaces the local one.

// nobody is the user a rule is applied for when the change does not depend
// on who the user is: no sender is nobody.
const nobody = "\x00"

// change is one local change of a session.
type change struct {
	// rule changes the state and says which timestamps the server would
	// move.
	rule func(st *session.State) session.Moves
	// last, if set, is the message that made the change: it becomes the
	// session's last message, and write_ts rises to its server time.
	last *protocol.Message
	// writeTS is where write_ts rises to when the rule moves it and there
	// is no message (a pin, a mark unread): the local clock.
	writeTS int64
}

// changeSession applies ch to the stored session of conv for user self at
// time now (ms). found is false when there is no such session; changed
// says whether the rule changed it.
func changeSession(tx *sql.Tx, self, conv string, now int64, ch change) (found, changed bool, err error) {
	sess, ok, err := getSession(tx, conv)
	if err != nil || !ok {
		return false, false, err
	}
	st := session.FromObject(self, &sess)
	moves := ch.rule(&st)
	if !moves.Changed() {
		return true, false, nil
	}
	if st.UnreadCount, err = discountEvents(tx, conv, st.ReadSeq, st.WriteSeq, st.UnreadCount); err != nil {
		return true, false, err
	}
	st.ToObject(&sess)
	if moves.Write {
		switch {
		case ch.last != nil:
			sess.WriteTS = max(sess.WriteTS, ch.last.ServerTS)
		default:
			sess.WriteTS = max(sess.WriteTS, ch.writeTS)
		}
	}
	if ch.last != nil && moves.Write {
		msg := *ch.last
		sess.LastMsg = &msg
	}
	if err := putSession(tx, sess); err != nil {
		return true, true, err
	}
	if sess.SubBiz != "" {
		var newMsg *protocol.Message
		var movedTo int64
		if moves.Write {
			newMsg, movedTo = ch.last, sess.WriteTS
		}
		if err := refreshGateway(tx, sess.SubBiz, now, newMsg, movedTo); err != nil {
			return true, true, err
		}
	}
	return true, true, nil
}

// refreshGateway brings the gateway session of sub-business subBiz up to
// date as the server does: its unread count is the nested list's total; a
// nested session's new message (newMsg) is the gateway's last message and
// brings a deleted gateway back; a nested session that moved in its list
// (to write_ts movedTo, 0 if it did not) moves the gateway with it.
func refreshGateway(tx *sql.Tx, subBiz string, now int64, newMsg *protocol.Message, movedTo int64) error {
	gw, ok, err := getSession(tx, protocol.GatewayConv(subBiz))
	if err != nil || !ok {
		return err
	}
	total, err := listTotal(tx, subBiz, now)
	if err != nil {
		return err
	}
	changed := gw.UnreadCount != total || gw.WriteTS < movedTo || newMsg != nil
	if !changed {
		return nil
	}
	gw.UnreadCount = total
	gw.WriteTS = max(gw.WriteTS, movedTo)
	if newMsg != nil {
		msg := *newMsg
		gw.LastMsg, gw.Deleted = &msg, false
	}
	return putSession(tx, gw)
}

// discountEvents returns unread, a session's unread count between
// readSeq and writeSeq, without the events the device holds there: the
// messages that do not count as unread by session.CountsAsUnread. The
// rules of package session count a seq the device was told nothing about,
// and a server may too; the count never rises here.
func discountEvents(tx *sql.Tx, conv string, readSeq, writeSeq, unread int64) (int64, error) {
	if unread <= 0 || writeSeq <= readSeq {
		return unread, nil
	}
	rows, err := tx.Query(`SELECT kind, count(*) FROM messages INDEXED BY messages_events
		WHERE conv = ? AND seq > ? AND seq <= ? AND kind != '' GROUP BY kind`, conv, readSeq, writeSeq)
	if err != nil {
		return unread, fmt.Errorf("events of %s: %w", conv, err)
	}
	defer rows.Close()
	var events int64
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			return unread, fmt.Errorf("events of %s: %w", conv, err)
		}
		if !session.KindCountsAsUnread(kind) {
			events += n
		}
	}
	if err := rows.Err(); err != nil {
		return unread, fmt.Errorf("events of %s: %w", conv, err)
	}
	return min(unread, max(0, writeSeq-readSeq-events)), nil
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	Query(query string, args ...any) (*sql.Rows, error)
}

// listTotal is the total unread of the list subBiz ("" the main list) at
// time now (ms): what each of its sessions adds by the session rules.
func listTotal(q querier, subBiz string, now int64) (int64, error) {
	rows, err := q.Query(`SELECT unread_count, deleted, muted, mute_until FROM sessions WHERE sub_biz = ? AND unread_count > 0`, subBiz)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var total int64
	for rows.Next() {
		var st session.State
		if err := rows.Scan(&st.UnreadCount, &st.Deleted, &st.Muted, &st.MuteUntil); err != nil {
			return 0, err
		}
		total += st.UnreadContributionAt(now)
	}
	return total, rows.Err()
}
