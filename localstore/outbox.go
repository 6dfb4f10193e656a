package localstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imcore/im/protocol"
)

// OutboxItem is one of the profile's messages waiting for the server's
// sent: what a send frame repeats, with the same MsgID, until it is
// answered.
type OutboxItem struct {
	Conv     string
	MsgID    string
	Body     string
	ClientTS int64
	// Tried is true once a send of it was written to a connection
	// (MarkTried): the server may hold it although no sent came.
	Tried bool
	// Kind is a relation entry's kind ("" for a message), RefSeq its
	// target's seq, ReplyTo the seq a reply answers. RefSeq (or ReplyTo)
	// is 0 while the target, named by its msg_id TargetID, has no seq: the
	// seq it takes is filled in when the server stores it; still 0 when
	// the entry is sent, the target was never stored.
	Kind     string
	RefSeq   int64
	ReplyTo  int64
	TargetID string
}

// ErrNotInOutbox is returned by ConfirmSent for a message that is not
// waiting in the outbox (already confirmed, or dropped).
var ErrNotInOutbox = errors.New("not in the outbox")

// EnqueueOutbox puts one of the profile's own messages (Conv, MsgID, From,
// Body, ClientTS; no seq yet) in the outbox and in the chat, where it shows
// after every stored message until its sent arrives. A conversation with
// no session yet (a chat started offline) gets a placeholder session
// (active_ts 0), which the server's copy replaces at the first sync.
// Enqueuing a (conv, msg_id) already known changes nothing.
func (s *Store) EnqueueOutbox(m protocol.Message) error { return s.EnqueueRelated(m, "") }

// EnqueueRelated is EnqueueOutbox for a reply (m.ReplyTo) or a relation
// entry (m.Kind and m.RefSeq) too. targetID names the target by its
// msg_id when it has no seq yet (RefSeq or ReplyTo 0: it is in the
// outbox, before this): it takes the seq the server gives the target. A
// relation entry applies to its target at once (Messages shows the target
// as it will stand), and neither brings a deleted session back nor shows
// as the session's last message.
func (s *Store) EnqueueRelated(m protocol.Message, targetID string) error {
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT OR IGNORE INTO messages (conv, msg_id, seq, sender, body, client_ts, server_ts, kind, reply_to, ref, target_id)
			VALUES (?, ?, NULL, ?, ?, ?, 0, ?, ?, ?, ?)`, m.Conv, m.MsgID, m.From, m.Body, m.ClientTS, m.Kind, m.ReplyTo, m.RefSeq, targetID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		if _, err = tx.Exec(`INSERT OR IGNORE INTO outbox (conv, msg_id, body, client_ts, kind, ref, reply_to, target_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			m.Conv, m.MsgID, m.Body, m.ClientTS, m.Kind, m.RefSeq, m.ReplyTo, targetID); err != nil {
			return err
		}
		if m.IsRelation() {
			return refreshTargetOf(tx, m.Conv, m.RefSeq, targetID)
		}
		return ensureSession(tx, m)
	})
	if err != nil {
		return fmt.Errorf("enqueue %s/%s: %w", m.Conv, m.MsgID, err)
	}
	return nil
}

// Outbox returns every message waiting for sent, oldest first.
func (s *Store) Outbox() ([]OutboxItem, error) {
	rows, err := s.r.Query(`SELECT conv, msg_id, body, client_ts, tried, kind, ref, reply_to, target_id FROM outbox ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	defer rows.Close()
	var out []OutboxItem
	for rows.Next() {
		var it OutboxItem
		if err := rows.Scan(&it.Conv, &it.MsgID, &it.Body, &it.ClientTS, &it.Tried, &it.Kind, &it.RefSeq, &it.ReplyTo, &it.TargetID); err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// ConfirmSent applies the server's sent answer: the message takes its seq
// and server time and leaves the outbox, in one step. It returns the
// stored message. A sent for a message no longer in the outbox (a repeated
// answer) returns ErrNotInOutbox and changes nothing. A seq the device
// holds for another message (the server is behind) is made room for, and
// noted for TakeBehind: an answered send always settles.
func (s *Store) ConfirmSent(conv, msgID string, seq, serverTS int64) (protocol.Message, error) {
	var m protocol.Message
	var behind *Behind
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM outbox WHERE conv = ? AND msg_id = ?`, conv, msgID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotInOutbox
		}
		if behind, err = vacateSeq(tx, conv, msgID, seq); err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE messages SET seq = ?, server_ts = ? WHERE conv = ? AND msg_id = ? AND seq IS NULL`,
			seq, serverTS, conv, msgID); err != nil {
			return err
		}
		err = scanMessage(tx.QueryRow(`SELECT `+messageColumns+` FROM messages WHERE conv = ? AND msg_id = ?`, conv, msgID), &m)
		if err != nil {
			return err
		}
		if err := settleRelations(tx, m, true); err != nil {
			return err
		}
		_, err = extendSynced(tx, conv, 0)
		return err
	})
	if err != nil {
		return protocol.Message{}, fmt.Errorf("confirm %s/%s: %w", conv, msgID, err)
	}
	if behind != nil {
		s.noteBehind([]Behind{*behind})
	}
	return m, nil
}

// MarkTried records that a send of an outbox message is about to be
// written to a connection.
func (s *Store) MarkTried(conv, msgID string) error {
	if _, err := s.w.Exec(`UPDATE outbox SET tried = 1 WHERE conv = ? AND msg_id = ? AND tried = 0`, conv, msgID); err != nil {
		return fmt.Errorf("mark %s/%s tried: %w", conv, msgID, err)
	}
	return nil
}

// FailOutbox abandons a message the server refused after an earlier try
// may have been stored: it leaves the outbox but stays in the chat,
// marked failed (Message.Failed), until a push or history page gives it
// its seq.
func (s *Store) FailOutbox(conv, msgID string) error {
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DELETE FROM outbox WHERE conv = ? AND msg_id = ?`, conv, msgID); err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE messages SET failed = 1 WHERE conv = ? AND msg_id = ? AND seq IS NULL`, conv, msgID); err != nil {
			return err
		}
		// A failed entry no longer shows in its target.
		return refreshTargetOfEntry(tx, conv, msgID)
	})
	if err != nil {
		return fmt.Errorf("fail %s/%s: %w", conv, msgID, err)
	}
	return nil
}

// RemoveOutbox takes a message out of the outbox, keeping its row in the
// chat (stored by then, or to be stored by a push or history page).
func (s *Store) RemoveOutbox(conv, msgID string) error {
	if _, err := s.w.Exec(`DELETE FROM outbox WHERE conv = ? AND msg_id = ?`, conv, msgID); err != nil {
		return fmt.Errorf("remove %s/%s from the outbox: %w", conv, msgID, err)
	}
	return nil
}

// DropOutbox abandons a message the server refused for good: it leaves the
// outbox and, if it never got a seq, the chat.
func (s *Store) DropOutbox(conv, msgID string) error {
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DELETE FROM outbox WHERE conv = ? AND msg_id = ?`, conv, msgID); err != nil {
			return err
		}
		var ref int64
		var targetID string
		err := tx.QueryRow(`DELETE FROM messages WHERE conv = ? AND msg_id = ? AND seq IS NULL RETURNING ref, target_id`, conv, msgID).Scan(&ref, &targetID)
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil {
			return err
		}
		// A dropped entry no longer shows in its target.
		return refreshTargetOf(tx, conv, ref, targetID)
	})
	if err != nil {
		return fmt.Errorf("drop %s/%s: %w", conv, msgID, err)
	}
	return nil
}

// ensureSession stores a placeholder session for the conversation of the
// profile's own message m when it has none, and brings a deleted one back.
func ensureSession(tx *sql.Tx, m protocol.Message) error {
	sess, ok, err := getSession(tx, m.Conv)
	if err != nil {
		return err
	}
	if ok {
		if sess.Deleted {
			// A new message brings a deleted session back, as the server
			// will when it stores it.
			sess.Deleted = false
			return putSession(tx, sess)
		}
		return nil
	}
	parsed, valid := protocol.ParseConv(m.Conv)
	if !valid {
		return nil
	}
	sess = protocol.Session{Conv: m.Conv, Title: parsed.Name, Members: []string{}, WriteTS: m.ClientTS, Kind: parsed.Kind.String()}
	switch parsed.Kind {
	case protocol.ConvDirect:
		sess.Members, sess.Title = []string{parsed.A, parsed.B}, parsed.A
		if parsed.A == m.From {
			sess.Title = parsed.B
		}
	case protocol.ConvGroup:
	default:
		return nil
	}
	return putSession(tx, sess)
}
