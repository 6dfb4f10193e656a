package localstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
)

// ApplyMessages updates the stored sessions from messages that arrived
// live, the way the server does (it sends no nudge for new messages):
// write_seq, last message and unread count move, a deleted session comes
// back, and a message from self (another device of the user, or a sent
// answer) reads everything before it. A nested list's gateway follows.
// unknown lists the conversations that have no session yet (the caller
// should sync). Applying a message twice, or an older one, changes nothing.
func (s *Store) ApplyMessages(msgs []protocol.Message, self string) (unknown []string, err error) {
	err = s.withTx(context.Background(), func(tx *sql.Tx) error {
		unknown = unknown[:0]
		for _, m := range msgs {
			known, err := applyMessage(tx, m, self)
			if err != nil {
				return fmt.Errorf("%s/%d: %w", m.Conv, m.Seq, err)
			}
			if !known && !slices.Contains(unknown, m.Conv) {
				unknown = append(unknown, m.Conv)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("apply messages to sessions: %w", err)
	}
	return unknown, nil
}

// applyMessage is one message of ApplyMessages.
func applyMessage(tx *sql.Tx, m protocol.Message, self string) (known bool, err error) {
	sess, ok, err := getSession(tx, m.Conv)
	if err != nil || !ok {
		return false, err
	}
	before := sess.UnreadCount
	if m.Seq <= sess.WriteSeq {
		// An older message (concurrent senders arrive out of order) moves
		// nothing but the read its sender implies when it is self.
		if m.From != self || m.Seq <= sess.ReadSeq {
			return true, nil
		}
		sess.ReadSeq, sess.MarkedUnread = m.Seq, false
		sess.UnreadCount = max(0, sess.WriteSeq-sess.ReadSeq)
		if err := putSession(tx, sess); err != nil {
			return true, err
		}
		return true, updateGateway(tx, sess.SubBiz, sess.UnreadCount-before, nil)
	}
	msg := m
	sess.WriteSeq, sess.LastMsg, sess.Deleted = m.Seq, &msg, false
	sess.WriteTS = max(sess.WriteTS, m.ServerTS)
	if m.From == self {
		sess.ReadSeq, sess.MarkedUnread = m.Seq, false
	}
	sess.UnreadCount = max(0, sess.WriteSeq-sess.ReadSeq)
	if err := putSession(tx, sess); err != nil {
		return true, err
	}
	return true, updateGateway(tx, sess.SubBiz, sess.UnreadCount-before, &msg)
}

// ApplyRead applies the user's own read up to seq to the stored session
// of conv at once, before the server confirms it: read_seq rises (never
// above write_seq), the unread count drops, marked_unread clears. In the
// same transaction the read is kept as pending (PendingReads) until
// ClearPendingRead. changed is false when the session already showed it
// (or does not exist).
func (s *Store) ApplyRead(conv string, seq int64) (changed bool, err error) {
	err = s.withTx(context.Background(), func(tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO pending_reads (conv, seq) VALUES (?, ?)
			ON CONFLICT (conv) DO UPDATE SET seq = max(seq, excluded.seq)`, conv, seq); err != nil {
			return err
		}
		sess, ok, err := getSession(tx, conv)
		if err != nil || !ok {
			return err
		}
		seq = min(seq, sess.WriteSeq)
		if seq <= sess.ReadSeq && !sess.MarkedUnread {
			return nil
		}
		changed = true
		before := sess.UnreadCount
		sess.ReadSeq = max(sess.ReadSeq, seq)
		sess.MarkedUnread = false
		sess.UnreadCount = max(0, sess.WriteSeq-sess.ReadSeq)
		if err := putSession(tx, sess); err != nil {
			return err
		}
		return updateGateway(tx, sess.SubBiz, sess.UnreadCount-before, nil)
	})
	if err != nil {
		return false, fmt.Errorf("apply read of %s: %w", conv, err)
	}
	return changed, nil
}

// updateGateway moves the main list's gateway of a nested list: its
// unread count by delta and, for a new message, its last message and
// write_ts.
func updateGateway(tx *sql.Tx, subBiz string, delta int64, msg *protocol.Message) error {
	if subBiz == "" || (delta == 0 && msg == nil) {
		return nil
	}
	gw, ok, err := getSession(tx, protocol.GatewayConv(subBiz))
	if err != nil || !ok {
		return err
	}
	gw.UnreadCount = max(0, gw.UnreadCount+delta)
	if msg != nil {
		gw.LastMsg, gw.Deleted = msg, false
		gw.WriteTS = max(gw.WriteTS, msg.ServerTS)
	}
	return putSession(tx, gw)
}
