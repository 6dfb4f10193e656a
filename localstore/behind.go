package localstore

import (
	"database/sql"
	"fmt"
	"sync"

	"github.com/imcore/im/protocol"
)

// Behind says that the server numbered a message of Conv with Seq, a seq
// this device held for another message, up to Held: the server's history
// is behind the device's (it lost data, or is not the server the device
// knew).
type Behind struct {
	Conv      string
	Seq, Held int64
}

// behindNotes collects the Behind notes of committed writes until the
// client takes them.
type behindNotes struct {
	mu    sync.Mutex
	notes []Behind
}

// TakeBehind returns the conversations found behind since the last call:
// the client says so to the user.
func (s *Store) TakeBehind() []Behind {
	s.behind.mu.Lock()
	defer s.behind.mu.Unlock()
	out := s.behind.notes
	s.behind.notes = nil
	return out
}

// noteBehind keeps notes of a committed write for TakeBehind.
func (s *Store) noteBehind(notes []Behind) {
	if len(notes) == 0 {
		return
	}
	s.behind.mu.Lock()
	s.behind.notes = append(s.behind.notes, notes...)
	s.behind.mu.Unlock()
}

// vacateSeq makes room at seq in conv for message msgID, which the server
// numbered seq. When another message holds seq there, the server's history
// is behind the device's: every message of conv the device holds from seq
// on is set aside, in its order, below the conversation's history (negative
// seqs, which the server never gives), so that nothing the user saw is lost
// and the server's numbering goes on; the synced seq, the ticks and the
// session's boundaries come back down to the server's. It returns the note
// when it did so.
func vacateSeq(tx *sql.Tx, conv, msgID string, seq int64) (*Behind, error) {
	var holder string
	err := tx.QueryRow(`SELECT msg_id FROM messages WHERE conv = ? AND seq = ?`, conv, seq).Scan(&holder)
	if err == sql.ErrNoRows || err == nil && holder == msgID {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var held, low int64
	if err := tx.QueryRow(`SELECT MAX(seq) FROM messages WHERE conv = ? AND seq >= ?`, conv, seq).Scan(&held); err != nil {
		return nil, err
	}
	if err := tx.QueryRow(`SELECT COALESCE(MIN(seq), 1) FROM messages WHERE conv = ? AND seq < ?`, conv, seq).Scan(&low); err != nil {
		return nil, err
	}
	// held goes to just below both the lowest seq left and 0.
	shift := held - min(low, 1) + 2
	steps := []struct {
		q    string
		args []any
	}{
		{`UPDATE messages SET seq = seq - ? WHERE conv = ? AND seq >= ?`, []any{shift, conv, seq}},
		{`UPDATE convs SET synced_seq = min(synced_seq, ?) WHERE conv = ?`, []any{seq - 1, conv}},
		{`UPDATE ticks SET delivered_seq = min(delivered_seq, ?), read_seq = min(read_seq, ?) WHERE conv = ?`, []any{seq - 1, seq - 1, conv}},
		{`DELETE FROM tick_rises WHERE conv = ? AND (delivered_seq >= ? OR read_seq >= ?)`, []any{conv, seq, seq}},
	}
	for _, st := range steps {
		if _, err := tx.Exec(st.q, st.args...); err != nil {
			return nil, fmt.Errorf("set aside %s from seq %d: %w", conv, seq, err)
		}
	}
	sess, ok, err := getSession(tx, conv)
	if err != nil {
		return nil, err
	}
	if ok && (sess.WriteSeq >= seq || sess.ReadSeq >= seq) {
		sess.WriteSeq, sess.ReadSeq = min(sess.WriteSeq, seq-1), min(sess.ReadSeq, seq-1)
		sess.Ticks.DeliveredSeq, sess.Ticks.ReadSeq = min(sess.Ticks.DeliveredSeq, seq-1), min(sess.Ticks.ReadSeq, seq-1)
		if err := putSession(tx, sess); err != nil {
			return nil, err
		}
	}
	return &Behind{Conv: conv, Seq: seq, Held: held}, nil
}

// Held is what the device holds of a conversation from the server.
type Held struct {
	// Newest is the newest seq of a message the server gave: messages set
	// aside (negative seqs), outbox messages (no seq yet) and the notice
	// the device writes itself when the user left a group do not count.
	Newest int64
	// MsgID is the msg_id of the message at Newest.
	MsgID string
	// SubBiz is the list its stored session is in ("" for the main list,
	// or when the device stores no session of it).
	SubBiz string
}

// HeldConvs returns, for every conversation the device holds a message of
// from the server, what it holds: what the server must have at least,
// unless it lost data.
func (s *Store) HeldConvs() (map[string]Held, error) {
	rows, err := s.r.Query(`SELECT c.conv, COALESCE(s.sub_biz, ''), n.seq, n.msg_id
		FROM (SELECT conv FROM sessions UNION SELECT conv FROM convs) c
		LEFT JOIN sessions s ON s.conv = c.conv
		JOIN messages n ON n.id = (SELECT m.id FROM messages m WHERE m.conv = c.conv AND m.seq > 0
			AND NOT (m.kind = ? AND m.msg_id LIKE ?) ORDER BY m.seq DESC LIMIT 1)`, protocol.KindSystem, leftNoticeID+"%")
	if err != nil {
		return nil, fmt.Errorf("held conversations: %w", err)
	}
	defer rows.Close()
	out := make(map[string]Held)
	for rows.Next() {
		var conv string
		var h Held
		if err := rows.Scan(&conv, &h.SubBiz, &h.Newest, &h.MsgID); err != nil {
			return nil, fmt.Errorf("held conversations: %w", err)
		}
		out[conv] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("held conversations: %w", err)
	}
	return out, nil
}
