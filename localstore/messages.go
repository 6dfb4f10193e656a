package localstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/imcore/im/protocol"
)

// Message is a message as the store holds it: a stored message, or one of
// the profile's own still in the outbox (Seq 0 and Outbox true).
type Message struct {
	protocol.Message
	// Outbox is true while the server has not answered sent.
	Outbox bool
	// Failed is true for one of the profile's own messages the server
	// refused on a retry after an earlier try may have been stored: it is
	// no longer sent, and has no seq unless a push or history brings it.
	Failed bool
}

// messageColumns are the columns scanMessage reads, in its order.
const messageColumns = `conv, COALESCE(seq, 0), msg_id, sender, body, client_ts, server_ts, kind, reply_to, ref, edited_ts, deleted, reactions`

// rowScanner is a *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(dest ...any) error }

// scanMessage reads messageColumns, then extra, into m.
func scanMessage(r rowScanner, m *protocol.Message, extra ...any) error {
	var reactions string
	dest := append([]any{&m.Conv, &m.Seq, &m.MsgID, &m.From, &m.Body, &m.ClientTS, &m.ServerTS, &m.Kind,
		&m.ReplyTo, &m.RefSeq, &m.EditedTS, &m.Deleted, &reactions}, extra...)
	if err := r.Scan(dest...); err != nil {
		return err
	}
	m.SetReactions(decodeReactions(reactions))
	return nil
}

// shownKinds is the condition on a messages row that it is shown in a
// chat: not a relation entry, which acts on its target instead.
const shownKinds = `kind NOT IN ('edit', 'delete', 'reaction')`

// PutMessages stores messages that came from the server (pushes, history
// pages). It is idempotent: a message whose (conv, msg_id) is already
// stored is not stored again, except that one of the profile's own outbox
// messages takes its seq and server time (it becomes a stored message).
// stored counts the messages that were new or took their seq. Each
// conversation's synced seq rises over what became contiguous.
func (s *Store) PutMessages(msgs []protocol.Message) (stored int, err error) {
	fresh, err := s.PutNewMessages(msgs)
	return len(fresh), err
}

// PutNewMessages is PutMessages returning the messages that were new (or
// took their seq), in the order given. A message whose seq the device
// holds for another one (the server is behind) is noted for TakeBehind;
// the device keeps what it holds, but for its own messages, which take
// the seq the server gave them (room is made for them, as ConfirmSent
// does).
func (s *Store) PutNewMessages(msgs []protocol.Message) (fresh []protocol.Message, err error) {
	for _, m := range msgs {
		if m.Conv == "" || m.MsgID == "" || m.Seq <= 0 {
			return nil, fmt.Errorf("put message %q in %q: conv, msg_id and a positive seq are required", m.MsgID, m.Conv)
		}
	}
	var behind []Behind
	err = s.withTx(context.Background(), func(tx *sql.Tx) error {
		put, err := prepareMessagePut(tx)
		if err != nil {
			return err
		}
		defer put.close()
		defer func() { behind = put.behind }()
		fresh = fresh[:0]
		touched := make(map[string]bool)
		for _, m := range msgs {
			n, err := put.put(m)
			if err != nil {
				return err
			}
			if n > 0 {
				fresh = append(fresh, m)
			}
			touched[m.Conv] = true
		}
		for conv := range touched {
			if _, err := extendSynced(tx, conv, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("put messages: %w", err)
	}
	s.noteBehind(behind)
	return fresh, nil
}

// messagePut holds the statements that store messages in one transaction,
// and the notes of conversations found behind (vacateSeq) meanwhile.
type messagePut struct {
	tx              *sql.Tx
	confirm, insert *sql.Stmt
	behind          []Behind
}

func prepareMessagePut(tx *sql.Tx) (*messagePut, error) {
	confirm, err := tx.Prepare(`UPDATE messages SET seq = ?, server_ts = ?, kind = ?, failed = 0
		WHERE conv = ? AND msg_id = ? AND seq IS NULL`)
	if err != nil {
		return nil, err
	}
	insert, err := tx.Prepare(`INSERT OR IGNORE INTO messages (conv, msg_id, seq, sender, body, client_ts, server_ts, kind,
			reply_to, ref, edited_ts, deleted, reactions)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		confirm.Close()
		return nil, err
	}
	return &messagePut{tx: tx, confirm: confirm, insert: insert}, nil
}

func (p *messagePut) close() {
	p.confirm.Close()
	p.insert.Close()
}

// insertMsg inserts m as it stands, unless its (conv, msg_id) is held.
func (p *messagePut) insertMsg(m protocol.Message) (sql.Result, error) {
	return p.insert.Exec(m.Conv, m.MsgID, m.Seq, m.From, m.Body, m.ClientTS, m.ServerTS, m.Kind,
		m.ReplyTo, m.RefSeq, m.EditedTS, m.Deleted, encodeReactions(m.ReactionList()))
}

// put stores one message and reports whether it was new (or an outbox
// message that took its seq).
func (p *messagePut) put(m protocol.Message) (int, error) {
	res, err := p.confirm.Exec(m.Seq, m.ServerTS, m.Kind, m.Conv, m.MsgID)
	if err != nil {
		// The seq may be another message's: the server is behind.
		if moved, verr := p.vacate(m); verr != nil || !moved {
			return 0, fmt.Errorf("confirm %s/%s: %w", m.Conv, m.MsgID, err)
		}
		if res, err = p.confirm.Exec(m.Seq, m.ServerTS, m.Kind, m.Conv, m.MsgID); err != nil {
			return 0, fmt.Errorf("confirm %s/%s: %w", m.Conv, m.MsgID, err)
		}
	}
	if n, _ := res.RowsAffected(); n > 0 {
		// One of the profile's own: it took its seq.
		if _, err := p.tx.Exec(`UPDATE messages SET ref = max(ref, ?), reply_to = max(reply_to, ?) WHERE conv = ? AND msg_id = ?`,
			m.RefSeq, m.ReplyTo, m.Conv, m.MsgID); err != nil {
			return 0, err
		}
		return 1, settleRelations(p.tx, m, true)
	}
	res, err = p.insertMsg(m)
	if err != nil {
		return 0, fmt.Errorf("insert %s/%d: %w", m.Conv, m.Seq, err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		if err := settleRelations(p.tx, m, false); err != nil {
			return 0, err
		}
	}
	if n == 0 {
		replaced, err := p.replaceLeftNotice(m)
		if err != nil {
			return 0, err
		}
		if replaced {
			return 1, nil
		}
		// Held already, or its seq is another message's: the server is
		// behind. The store keeps the message it holds (the user's own
		// send, answered with that seq, makes room: ConfirmSent), and
		// notes it, so that the user is told.
		if err := p.noteConflict(m); err != nil {
			return 0, err
		}
	}
	return int(n), nil
}

// noteConflict notes the server behind when another message than m holds
// m's seq.
func (p *messagePut) noteConflict(m protocol.Message) error {
	var held string
	err := p.tx.QueryRow(`SELECT msg_id FROM messages WHERE conv = ? AND seq = ?`, m.Conv, m.Seq).Scan(&held)
	if err == sql.ErrNoRows || err == nil && held == m.MsgID {
		return nil
	}
	if err != nil {
		return err
	}
	var top int64
	if err := p.tx.QueryRow(`SELECT MAX(seq) FROM messages WHERE conv = ?`, m.Conv).Scan(&top); err != nil {
		return err
	}
	p.behind = append(p.behind, Behind{Conv: m.Conv, Seq: m.Seq, Held: top})
	return nil
}

// vacate makes room for the user's own message m at its seq (vacateSeq);
// it reports whether it moved messages.
func (p *messagePut) vacate(m protocol.Message) (bool, error) {
	b, err := vacateSeq(p.tx, m.Conv, m.MsgID, m.Seq)
	if b != nil {
		p.behind = append(p.behind, *b)
	}
	return b != nil, err
}

// Messages returns the newest limit stored messages of conv below
// beforeSeq (0: the newest), in ascending seq order, each as it stands
// (edited, deleted, with its reactions). With beforeSeq 0 the profile's
// own outbox messages of conv follow, oldest first, beyond limit: they are
// the end of the chat. Relation entries are not listed: they show in their
// targets.
func (s *Store) Messages(conv string, beforeSeq int64, limit int) ([]Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	if beforeSeq <= 0 {
		beforeSeq = 1<<63 - 1
	}
	rows, err := s.r.Query(`SELECT `+messageColumns+`, failed FROM (
			SELECT * FROM messages WHERE conv = ? AND seq IS NOT NULL AND seq < ? AND `+shownKinds+`
			ORDER BY seq DESC LIMIT ?)
		ORDER BY seq`, conv, beforeSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("messages of %s: %w", conv, err)
	}
	out, err := scanMessages(rows, make([]Message, 0, limit))
	if err != nil || beforeSeq != 1<<63-1 {
		return out, err
	}
	rows, err = s.r.Query(`SELECT `+messageColumns+`, failed FROM messages WHERE conv = ? AND seq IS NULL AND `+shownKinds+` ORDER BY id`, conv)
	if err != nil {
		return nil, fmt.Errorf("outbox messages of %s: %w", conv, err)
	}
	return scanMessages(rows, out)
}

// scanMessages appends every row (messageColumns and failed) to out and
// closes rows.
func scanMessages(rows *sql.Rows, out []Message) ([]Message, error) {
	defer rows.Close()
	for rows.Next() {
		var m Message
		if err := scanMessage(rows, &m.Message, &m.Failed); err != nil {
			return nil, err
		}
		m.Failed = m.Failed && m.Seq == 0
		m.Outbox = m.Seq == 0 && !m.Failed
		out = append(out, m)
	}
	return out, rows.Err()
}

// HoldsMessages reports whether the profile stores any message of conv
// from the server (one with a seq).
func (s *Store) HoldsMessages(conv string) (bool, error) {
	var n int
	err := s.r.QueryRow(`SELECT count(*) FROM (SELECT 1 FROM messages WHERE conv = ? AND seq IS NOT NULL LIMIT 1)`, conv).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("messages of %s: %w", conv, err)
	}
	return n > 0, nil
}

// SyncedSeq returns the seq of conv up to which the profile holds every
// message the server has, as far as it knows: messages arrived contiguous
// up to it, or a history page said so (RaiseSyncedSeq). A session whose
// write_seq is above it has a gap to fill with history after it.
func (s *Store) SyncedSeq(conv string) (int64, error) {
	var seq int64
	err := s.r.QueryRow(`SELECT synced_seq FROM convs WHERE conv = ?`, conv).Scan(&seq)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("synced seq of %s: %w", conv, err)
	}
	return seq, nil
}

// RaiseSyncedSeq records that the profile holds every message of conv up
// to seq (the server's history said so; a seq it skipped never comes), then
// extends it over the stored messages that follow contiguously. It never
// lowers the synced seq and returns the new value.
func (s *Store) RaiseSyncedSeq(conv string, seq int64) (int64, error) {
	var out int64
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		var err error
		out, err = extendSynced(tx, conv, seq)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("raise synced seq of %s: %w", conv, err)
	}
	return out, nil
}

// extendSynced raises conv's synced seq to at least floor, then over every
// stored seq that follows it without a hole.
func extendSynced(tx *sql.Tx, conv string, floor int64) (int64, error) {
	var old int64
	err := tx.QueryRow(`SELECT synced_seq FROM convs WHERE conv = ?`, conv).Scan(&old)
	if err != nil && err != sql.ErrNoRows {
		return 0, err
	}
	h := max(old, floor)
	for {
		end, err := contiguousEnd(tx, conv, h)
		if err != nil {
			return 0, err
		}
		if end == h {
			break
		}
		h = end
	}
	if h <= old {
		return old, nil
	}
	_, err = tx.Exec(`INSERT INTO convs (conv, synced_seq) VALUES (?, ?)
		ON CONFLICT (conv) DO UPDATE SET synced_seq = max(synced_seq, excluded.synced_seq)`, conv, h)
	return h, err
}

// contiguousWindow is how many seqs contiguousEnd reads at once.
var contiguousWindow = 64

// contiguousEnd returns the end of the run of stored seqs h+1, h+2, … of
// conv that starts right above h (reading at most contiguousWindow of
// them), or h when h+1 is not stored.
func contiguousEnd(tx *sql.Tx, conv string, h int64) (int64, error) {
	rows, err := tx.Query(`SELECT seq FROM messages WHERE conv = ? AND seq > ? ORDER BY seq LIMIT ?`, conv, h, contiguousWindow)
	if err != nil {
		return h, err
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return h, err
		}
		if seq != h+1 {
			break
		}
		h = seq
	}
	return h, rows.Err()
}
