package localstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// ApplyMessages updates the stored sessions from messages that arrived
// live, by the server's rules (it sends no nudge for new messages):
// write_seq, last message and unread count move, a deleted session comes
// back, and a message from self (another device of the user, or a sent
// answer) reads everything before it. A nested list's gateway follows.
// unknown lists the conversations that have no session yet (the caller
// should sync). Applying a message twice, or an older one, changes nothing
// but the read an older message of self implies.
func (s *Store) ApplyMessages(msgs []protocol.Message, self string) (unknown []string, err error) {
	now := s.now().UnixMilli()
	err = s.withTx(context.Background(), func(tx *sql.Tx) error {
		unknown = unknown[:0]
		for _, m := range msgs {
			found, _, err := changeSession(tx, self, m.Conv, now, messageChange(m, self))
			if err != nil {
				return fmt.Errorf("%s/%d: %w", m.Conv, m.Seq, err)
			}
			if !found && !slices.Contains(unknown, m.Conv) {
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

// messageChange is the change message m makes to its session. Messages of
// concurrent senders can arrive out of order: one of self's older than the
// newest held still reads up to it, as it did on the server.
func messageChange(m protocol.Message, self string) change {
	if m.IsRelation() {
		return relationChange(m, self)
	}
	return change{last: &m, rule: func(st *session.State) session.Moves {
		if m.Seq <= st.WriteSeq && m.From == self {
			return st.OnRead(m.Seq, session.EventsUnknown)
		}
		return st.OnMessage(m.Seq, m.From, session.EventsUnknown)
	}}
}

// relationChange is the change relation entry m makes to its session: an
// event, not a message (PROTOCOL.md, Sessions). write_seq rises to it, as
// it does for any seq; it is not unread, not the last message, and moves
// the session neither in the list (write_ts) nor back from deleted. Sent
// by self, it reads everything before it, as any send does.
func relationChange(m protocol.Message, self string) change {
	return change{rule: func(st *session.State) session.Moves {
		var moves session.Moves
		if m.Seq > st.WriteSeq {
			st.WriteSeq = m.Seq
			moves.Active = true
		}
		if m.From == self && st.OnRead(m.Seq, session.EventsUnknown).Changed() {
			moves.Active = true
		}
		return moves
	}}
}

// ApplyRead applies the user's own read up to seq to the stored session
// of conv at once, before the server confirms it, by the server's rule:
// read_seq rises (never above write_seq), the unread count drops,
// marked_unread clears. In the same transaction the read is kept as
// pending (PendingReads) until ClearPendingRead. changed is false when the
// session already showed it (or does not exist).
func (s *Store) ApplyRead(conv string, seq int64) (changed bool, err error) {
	now := s.now().UnixMilli()
	err = s.withTx(context.Background(), func(tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO pending_reads (conv, seq) VALUES (?, ?)
			ON CONFLICT (conv) DO UPDATE SET seq = max(seq, excluded.seq)`, conv, seq); err != nil {
			return err
		}
		var err error
		_, changed, err = changeSession(tx, nobody, conv, now, change{rule: func(st *session.State) session.Moves {
			return st.OnRead(seq, session.EventsUnknown)
		}})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("apply read of %s: %w", conv, err)
	}
	return changed, nil
}
