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
}

// ErrNotInOutbox is returned by ConfirmSent for a message that is not
// waiting in the outbox (already confirmed, or dropped).
var ErrNotInOutbox = errors.New("not in the outbox")

// EnqueueOutbox puts one of the profile's own messages (Conv, MsgID, From,
// Body, ClientTS; no seq yet) in the outbox and in the chat, where it shows
// after every stored message until its sent arrives. Enqueuing a (conv,
// msg_id) already known changes nothing.
func (s *Store) EnqueueOutbox(m protocol.Message) error {
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		res, err := tx.Exec(`INSERT OR IGNORE INTO messages (conv, msg_id, seq, sender, body, client_ts, server_ts, kind)
			VALUES (?, ?, NULL, ?, ?, ?, 0, '')`, m.Conv, m.MsgID, m.From, m.Body, m.ClientTS)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		_, err = tx.Exec(`INSERT OR IGNORE INTO outbox (conv, msg_id, body, client_ts) VALUES (?, ?, ?, ?)`,
			m.Conv, m.MsgID, m.Body, m.ClientTS)
		return err
	})
	if err != nil {
		return fmt.Errorf("enqueue %s/%s: %w", m.Conv, m.MsgID, err)
	}
	return nil
}

// Outbox returns every message waiting for sent, oldest first.
func (s *Store) Outbox() ([]OutboxItem, error) {
	rows, err := s.r.Query(`SELECT conv, msg_id, body, client_ts FROM outbox ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	defer rows.Close()
	var out []OutboxItem
	for rows.Next() {
		var it OutboxItem
		if err := rows.Scan(&it.Conv, &it.MsgID, &it.Body, &it.ClientTS); err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// ConfirmSent applies the server's sent answer: the message takes its seq
// and server time and leaves the outbox, in one step. It returns the
// stored message. A sent for a message no longer in the outbox (a repeated
// answer) returns ErrNotInOutbox and changes nothing.
func (s *Store) ConfirmSent(conv, msgID string, seq, serverTS int64) (protocol.Message, error) {
	var m protocol.Message
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		res, err := tx.Exec(`DELETE FROM outbox WHERE conv = ? AND msg_id = ?`, conv, msgID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotInOutbox
		}
		if _, err := tx.Exec(`UPDATE messages SET seq = ?, server_ts = ? WHERE conv = ? AND msg_id = ? AND seq IS NULL`,
			seq, serverTS, conv, msgID); err != nil {
			return err
		}
		err = tx.QueryRow(`SELECT `+messageColumns+` FROM messages WHERE conv = ? AND msg_id = ?`, conv, msgID).
			Scan(&m.Conv, &m.Seq, &m.MsgID, &m.From, &m.Body, &m.ClientTS, &m.ServerTS, &m.Kind)
		if err != nil {
			return err
		}
		_, err = extendSynced(tx, conv, 0)
		return err
	})
	if err != nil {
		return protocol.Message{}, fmt.Errorf("confirm %s/%s: %w", conv, msgID, err)
	}
	return m, nil
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
		_, err := tx.Exec(`DELETE FROM messages WHERE conv = ? AND msg_id = ? AND seq IS NULL`, conv, msgID)
		return err
	})
	if err != nil {
		return fmt.Errorf("drop %s/%s: %w", conv, msgID, err)
	}
	return nil
}
