package localstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	json "github.com/go-json-experiment/json"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// PutSessions stores sessions from a sync page or an operation's answer.
// A session replaces the stored one only if it is newer (a higher
// active_ts): a late page never undoes a later change. What the profile
// saw live since (a newer message, its own read) is kept: write_seq,
// read_seq and the last message never go back; the user's session
// operations the server has not answered are applied again over it. The
// sessions' ticks are max-merged into the conversations' boundaries.
func (s *Store) PutSessions(sessions []protocol.Session) error {
	now := s.now().UnixMilli()
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		for _, in := range sessions {
			if err := putServerSession(tx, in, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put sessions: %w", err)
	}
	return nil
}

// putServerSession is one session of PutSessions.
func putServerSession(tx *sql.Tx, in protocol.Session, now int64) error {
	old, ok, err := getSession(tx, in.Conv)
	if err != nil {
		return err
	}
	if in.Ticks != (protocol.Ticks{}) {
		if _, _, err := raiseTicks(tx, in.Conv, in.Ticks, now); err != nil {
			return err
		}
	}
	if ok && in.ActiveTS <= old.ActiveTS {
		return nil
	}
	if ok {
		if in, err = keepRequestAnswered(tx, in, old); err != nil {
			return err
		}
		in = keepLiveState(in, old)
	}
	if in.UnreadCount, err = discountEvents(tx, in.Conv, in.ReadSeq, in.WriteSeq, in.UnreadCount); err != nil {
		return err
	}
	var prev *protocol.Message
	if ok {
		prev = old.LastMsg
	}
	if in.LastMsg, err = lastAsItStands(tx, in.LastMsg, prev); err != nil {
		return err
	}
	if err := putSession(tx, in); err != nil {
		return err
	}
	return reapplyPending(tx, in.Conv, now)
}

// lastAsItStands is a session's last message from the server as the
// device holds it (edited, deleted, with its reactions). A relation entry
// is never the last message: a server that gives one is answered with the
// newest message before it the device holds, or prev, the last message it
// showed.
func lastAsItStands(tx *sql.Tx, last, prev *protocol.Message) (*protocol.Message, error) {
	if last == nil || last.Conv == "" {
		return last, nil
	}
	q := `SELECT ` + messageColumns + ` FROM messages WHERE conv = ? AND seq = ? AND msg_id = ?`
	args := []any{last.Conv, last.Seq, last.MsgID}
	if last.IsRelation() {
		q = `SELECT ` + messageColumns + ` FROM messages WHERE conv = ? AND seq > 0 AND seq < ? AND ` + shownKinds + ` ORDER BY seq DESC LIMIT 1`
		args = args[:2]
	}
	var held protocol.Message
	err := scanMessage(tx.QueryRow(q, args...), &held)
	switch {
	case err == sql.ErrNoRows && last.IsRelation():
		if prev != nil && prev.IsRelation() {
			return nil, nil
		}
		return prev, nil
	case err == sql.ErrNoRows:
		return last, nil
	case err != nil:
		return nil, err
	}
	return &held, nil
}

// keepLiveState carries into a newer session from the server what the
// stored one learned live and the server's copy may predate, by the rules
// the server will apply when it learns them too: a newer message, a further
// read, higher ticks.
func keepLiveState(in, old protocol.Session) protocol.Session {
	st := session.FromObject(nobody, &in)
	if old.WriteSeq > in.WriteSeq {
		// If the message was the user's own, the read it implied is in
		// old's read_seq, which the read below carries over.
		st.OnMessage(old.WriteSeq, "", session.EventsUnknown)
		in.LastMsg = old.LastMsg
		st.WriteTS = max(st.WriteTS, old.WriteTS)
	}
	if old.ReadSeq > st.ReadSeq {
		st.OnRead(old.ReadSeq, session.EventsUnknown)
	}
	st.ToObject(&in)
	in.Ticks = in.Ticks.Merge(old.Ticks)
	return in
}

// keepRequestAnswered clears the request flag of in, a server's session
// older in messages than the stored old, when the device holds a message
// of the profile's user above in's newest: the user has written there
// since (a reply sent while the page was on its way), which clears a
// request on the server too.
func keepRequestAnswered(tx *sql.Tx, in, old protocol.Session) (protocol.Session, error) {
	if !in.Request || old.WriteSeq <= in.WriteSeq {
		return in, nil
	}
	var n int
	err := tx.QueryRow(`SELECT COUNT(*) FROM messages WHERE conv = ? AND seq > ?
		AND sender = (SELECT value FROM meta WHERE key = 'user')`, in.Conv, in.WriteSeq).Scan(&n)
	if err != nil {
		return in, fmt.Errorf("request of %s: %w", in.Conv, err)
	}
	if n > 0 {
		in.Request = false
	}
	return in, nil
}

// Session returns the stored session of conv (deleted ones included); ok
// is false when there is none.
func (s *Store) Session(conv string) (sess protocol.Session, ok bool, err error) {
	var object string
	var t protocol.Ticks
	err = s.r.QueryRow(`SELECT s.object, COALESCE(t.delivered_seq, 0), COALESCE(t.read_seq, 0)
		FROM sessions s LEFT JOIN ticks t ON t.conv = s.conv WHERE s.conv = ?`, conv).Scan(&object, &t.DeliveredSeq, &t.ReadSeq)
	if err == sql.ErrNoRows {
		return protocol.Session{}, false, nil
	}
	if err == nil {
		err = json.Unmarshal([]byte(object), &sess)
	}
	if err != nil {
		return protocol.Session{}, false, fmt.Errorf("session %s: %w", conv, err)
	}
	sess.Ticks = sess.Ticks.Merge(t)
	return sess, true, nil
}

// Sessions returns the list subBiz ("" the main list) as it is shown:
// deleted sessions hidden, sorted by priority descending, then write_ts
// descending, then conv. Each session's ticks are the highest known. A
// session with messages of the user's waiting in the outbox shows the
// newest of them as its last message (seq 0: not sent yet), and moves up
// as the server will move it once the message is stored.
func (s *Store) Sessions(subBiz string) ([]protocol.Session, error) {
	outbox, err := s.newestOutbox()
	if err != nil {
		return nil, fmt.Errorf("sessions of %q: %w", subBiz, err)
	}
	rows, err := s.r.Query(`SELECT s.object, COALESCE(t.delivered_seq, 0), COALESCE(t.read_seq, 0)
		FROM sessions s LEFT JOIN ticks t ON t.conv = s.conv
		WHERE s.sub_biz = ? AND s.deleted = 0
		ORDER BY s.priority DESC, s.write_ts DESC, s.conv`, subBiz)
	if err != nil {
		return nil, fmt.Errorf("sessions of %q: %w", subBiz, err)
	}
	defer rows.Close()
	var objects [][]byte
	var ticks []protocol.Ticks
	for rows.Next() {
		var object []byte
		var t protocol.Ticks
		if err := rows.Scan(&object, &t.DeliveredSeq, &t.ReadSeq); err != nil {
			return nil, fmt.Errorf("sessions of %q: %w", subBiz, err)
		}
		objects, ticks = append(objects, object), append(ticks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sessions of %q: %w", subBiz, err)
	}
	out := make([]protocol.Session, len(objects))
	if err := decodeSessions(objects, out); err != nil {
		return nil, fmt.Errorf("sessions of %q: %w", subBiz, err)
	}
	moved := false
	for i := range out {
		sess := &out[i]
		sess.Ticks = sess.Ticks.Merge(ticks[i])
		if m, ok := outbox[sess.Conv]; ok {
			sess.LastMsg = &m
			if m.ClientTS > sess.WriteTS {
				sess.WriteTS, moved = m.ClientTS, true
			}
		}
	}
	if moved {
		slices.SortStableFunc(out, func(a, b protocol.Session) int {
			return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(b.WriteTS, a.WriteTS), cmp.Compare(a.Conv, b.Conv))
		})
	}
	return out, nil
}

// decodeSessions decodes the session objects into out, on two CPUs or
// more for a long list: decoding is most of the time a list takes to read,
// and a start reads the whole list before its first paint.
func decodeSessions(objects [][]byte, out []protocol.Session) error {
	const perWorker = 256
	workers := min(runtime.GOMAXPROCS(0), (len(objects)+perWorker-1)/perWorker)
	decode := func(from, step int) error {
		for i := from; i < len(objects); i += step {
			if err := json.Unmarshal(objects[i], &out[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if workers <= 1 {
		return decode(0, 1)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { errs[w] = decode(w, workers) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// newestOutbox returns, per conversation, the newest of the user's
// messages waiting in the outbox.
func (s *Store) newestOutbox() (map[string]protocol.Message, error) {
	// The partial index of unsent messages: the table would be scanned
	// whole otherwise, every time the list is read.
	rows, err := s.r.Query(`SELECT conv, msg_id, sender, body, client_ts FROM messages INDEXED BY messages_unsent
		WHERE seq IS NULL AND failed = 0 AND ` + shownKinds + ` ORDER BY conv, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out map[string]protocol.Message
	for rows.Next() {
		var m protocol.Message
		if err := rows.Scan(&m.Conv, &m.MsgID, &m.From, &m.Body, &m.ClientTS); err != nil {
			return nil, err
		}
		if out == nil {
			out = make(map[string]protocol.Message)
		}
		out[m.Conv] = m
	}
	return out, rows.Err()
}

// TotalUnread returns the unread count of the list subBiz ("" the main
// list) by the session rules: the sum over sessions neither deleted nor
// muted (a mute whose until has passed no longer counts as muted).
func (s *Store) TotalUnread(subBiz string) (int64, error) {
	n, err := listTotal(s.r, subBiz, s.now().UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("total unread of %q: %w", subBiz, err)
	}
	return n, nil
}

// SubBizLists returns the names of the nested lists the main list has a
// gateway session for.
func (s *Store) SubBizLists() ([]string, error) {
	rows, err := s.r.Query(`SELECT conv FROM sessions WHERE sub_biz = '' AND conv LIKE ? ORDER BY conv`, protocol.GatewayConv("")+"%")
	if err != nil {
		return nil, fmt.Errorf("sub-business lists: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var conv string
		if err := rows.Scan(&conv); err != nil {
			return nil, err
		}
		if name, ok := protocol.IsGateway(conv); ok {
			out = append(out, name)
		}
	}
	return out, rows.Err()
}

// getSession reads a stored session inside a transaction.
func getSession(tx *sql.Tx, conv string) (protocol.Session, bool, error) {
	var object string
	err := tx.QueryRow(`SELECT object FROM sessions WHERE conv = ?`, conv).Scan(&object)
	if err == sql.ErrNoRows {
		return protocol.Session{}, false, nil
	}
	var sess protocol.Session
	if err == nil {
		err = json.Unmarshal([]byte(object), &sess)
	}
	if err != nil {
		return protocol.Session{}, false, fmt.Errorf("session %s: %w", conv, err)
	}
	return sess, true, nil
}

// putSession writes a session's object and the columns it is sorted and
// counted by.
func putSession(tx *sql.Tx, sess protocol.Session) error {
	if sess.Members == nil {
		sess.Members = []string{}
	}
	object, err := json.Marshal(sess)
	if err != nil {
		return err
	}
	_, err = tx.Exec(`INSERT INTO sessions (conv, sub_biz, priority, write_ts, active_ts, deleted, muted, mute_until, unread_count, object)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (conv) DO UPDATE SET sub_biz = excluded.sub_biz, priority = excluded.priority,
			write_ts = excluded.write_ts, active_ts = excluded.active_ts, deleted = excluded.deleted,
			muted = excluded.muted, mute_until = excluded.mute_until, unread_count = excluded.unread_count,
			object = excluded.object`,
		sess.Conv, sess.SubBiz, sess.Priority, sess.WriteTS, sess.ActiveTS, sess.Deleted, sess.Muted,
		sess.MuteUntil, sess.UnreadCount, string(object))
	if err != nil {
		return fmt.Errorf("put session %s: %w", sess.Conv, err)
	}
	return nil
}

// HideSession marks the stored session of conv deleted on this device
// only, leaving its active_ts as it is, so that any later change from the
// server (a new message, being added back) replaces it. It is for sessions
// the server takes no operations on any more: a group the user has left.
// It reports whether there was a session to hide.
func (s *Store) HideSession(conv string) (bool, error) {
	found := false
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		sess, ok, err := getSession(tx, conv)
		if err != nil || !ok {
			return err
		}
		found = true
		sess.Deleted = true
		return putSession(tx, sess)
	})
	if err != nil {
		return false, fmt.Errorf("hide session %s: %w", conv, err)
	}
	return found, nil
}
