package localstore

import (
	"cmp"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/imcore/im/protocol"
)

// A relation entry (an edit, a deletion for everyone, a reaction) is stored
// as a message like any other, and applied to its target: the target's
// row holds it as it stands (body, edited_ts, deleted, reactions), derived
// by refreshTarget from the target as the server gave it (its base) and
// every entry the device holds for it, in seq order, then the profile's
// own entries still in the outbox, in the order they were made. Deriving
// it again from the same rows gives the same result, whatever order the
// entries arrived in: an entry that arrives before its target waits in
// its row until the target comes; an outbox entry shows at once and goes
// when the server refuses it. A deletion erases the text of the target
// and of its edits once the server has stored it (before that, a refusal
// would have to give it back).

// targetBase is a target as the server gave it, before the entries this
// device holds were applied to it.
type targetBase struct {
	Body      string              `json:"body"`
	EditedTS  int64               `json:"edited_ts,omitempty"`
	Deleted   bool                `json:"deleted,omitempty"`
	Reactions []protocol.Reaction `json:"reactions,omitempty"`
}

// relationRow is one stored entry that acts on a target.
type relationRow struct {
	id                 int64
	seq                int64 // 0 while in the outbox
	kind, from, body   string
	serverTS, clientTS int64
}

// targetRow is what refreshTarget reads of a target.
type targetRow struct {
	id                  int64
	seq                 int64
	msgID, from, kind   string
	body                string
	editedTS            int64
	deleted             bool
	reactions, baseJSON string
	conv                string
	replyTo             int64
	clientTS, serverTS  int64
	failed              bool
}

// settleRelations applies message m of the server's (new to the device,
// or, own, one of the profile's own that took its seq): a relation entry
// to its target; a target to the entries the device holds for it, which
// take its seq if they named it by msg_id (only the profile's own entries
// do, and only its own messages).
func settleRelations(tx *sql.Tx, m protocol.Message, own bool) error {
	if m.IsRelation() {
		return refreshTargetOfEntry(tx, m.Conv, m.MsgID)
	}
	if own {
		if err := resolveTarget(tx, m.Conv, m.MsgID, m.Seq); err != nil {
			return err
		}
	}
	return refreshIfTarget(tx, m.Conv, m.MsgID)
}

// refreshTargetOfEntry refreshes the target of the relation entry msgID of
// conv, if the device holds it.
func refreshTargetOfEntry(tx *sql.Tx, conv, msgID string) error {
	var ref int64
	var targetID string
	err := tx.QueryRow(`SELECT ref, target_id FROM messages WHERE conv = ? AND msg_id = ?`, conv, msgID).Scan(&ref, &targetID)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	return refreshTargetOf(tx, conv, ref, targetID)
}

// refreshTargetOf refreshes the target named by ref, or by the msg_id
// targetID while it is in the outbox.
func refreshTargetOf(tx *sql.Tx, conv string, ref int64, targetID string) error {
	var t targetRow
	var err error
	switch {
	case ref > 0:
		err = tx.QueryRow(`SELECT `+targetColumns+` FROM messages WHERE conv = ? AND seq = ?`, conv, ref).Scan(t.fields()...)
	case targetID != "":
		err = tx.QueryRow(`SELECT `+targetColumns+` FROM messages WHERE conv = ? AND msg_id = ?`, conv, targetID).Scan(t.fields()...)
	default:
		return nil
	}
	if err == sql.ErrNoRows {
		return nil // the target comes later
	}
	if err != nil {
		return err
	}
	return refreshTarget(tx, t)
}

// refreshIfTarget refreshes the message msgID of conv if an entry the
// device holds acts on it (it just arrived, or took its seq).
func refreshIfTarget(tx *sql.Tx, conv, msgID string) error {
	var t targetRow
	err := tx.QueryRow(`SELECT `+targetColumns+` FROM messages WHERE conv = ? AND msg_id = ?`, conv, msgID).Scan(t.fields()...)
	if err == sql.ErrNoRows {
		return nil
	}
	if err != nil {
		return err
	}
	if t.kind != "" {
		return nil
	}
	// Each side of the OR on its own partial index: a message without
	// entries, the common case, costs two index probes.
	var acted bool
	if err := tx.QueryRow(`SELECT EXISTS (SELECT 1 FROM messages WHERE conv = ? AND ref = ? AND ref != 0)
		OR EXISTS (SELECT 1 FROM messages WHERE conv = ? AND target_id = ? AND target_id != '')`,
		conv, t.seq, conv, t.msgID).Scan(&acted); err != nil {
		return err
	}
	if !acted {
		return nil
	}
	return refreshTarget(tx, t)
}

// targetColumns are the columns of a targetRow, in fields' order.
const targetColumns = `id, COALESCE(seq, 0), msg_id, sender, kind, body, edited_ts, deleted, reactions, base, conv, reply_to, client_ts, server_ts, failed`

func (t *targetRow) fields() []any {
	return []any{&t.id, &t.seq, &t.msgID, &t.from, &t.kind, &t.body, &t.editedTS, &t.deleted, &t.reactions, &t.baseJSON,
		&t.conv, &t.replyTo, &t.clientTS, &t.serverTS, &t.failed}
}

// refreshTarget derives target t as it stands from its base and the
// entries the device holds for it, and writes it (and the session's last
// message, when it is that).
func refreshTarget(tx *sql.Tx, t targetRow) error {
	if t.kind != "" {
		return nil // only ordinary messages are edited, deleted or reacted to
	}
	entries, err := relationsOf(tx, t)
	if err != nil {
		return err
	}
	if len(entries) == 0 && t.baseJSON == "" {
		return nil
	}
	var base targetBase
	if t.baseJSON == "" {
		base = targetBase{Body: t.body, EditedTS: t.editedTS, Deleted: t.deleted, Reactions: decodeReactions(t.reactions)}
	} else if err := json.Unmarshal([]byte(t.baseJSON), &base); err != nil {
		return fmt.Errorf("target %s/%s: %w", t.conv, t.msgID, err)
	}
	st := applyRelations(t.from, base, entries)
	if st.erase {
		base.Body = ""
		for _, q := range []string{
			`UPDATE messages SET body = '' WHERE conv = ? AND ref = ? AND ref != 0 AND kind = ? AND body != ''`,
			`UPDATE messages SET body = '' WHERE conv = ? AND target_id = ? AND target_id != '' AND kind = ? AND body != ''`,
		} {
			var key any = t.seq
			if strings.Contains(q, "target_id") {
				key = t.msgID
			}
			if _, err := tx.Exec(q, t.conv, key, protocol.KindEdit); err != nil {
				return err
			}
		}
	}
	baseJSON, err := json.Marshal(base)
	if err != nil {
		return err
	}
	reactions := encodeReactions(st.reactions)
	if _, err := tx.Exec(`UPDATE messages SET body = ?, edited_ts = ?, deleted = ?, reactions = ?, base = ? WHERE id = ?`,
		st.body, st.editedTS, st.deleted, reactions, string(baseJSON), t.id); err != nil {
		return err
	}
	if t.seq <= 0 {
		return nil
	}
	m := protocol.Message{Conv: t.conv, Seq: t.seq, MsgID: t.msgID, From: t.from, Body: st.body, ClientTS: t.clientTS,
		ServerTS: t.serverTS, ReplyTo: t.replyTo, EditedTS: st.editedTS, Deleted: st.deleted}
	m.SetReactions(st.reactions)
	return refreshLastMsg(tx, m)
}

// refreshLastMsg puts m, as it now stands, as its session's last message
// if it is that.
func refreshLastMsg(tx *sql.Tx, m protocol.Message) error {
	sess, ok, err := getSession(tx, m.Conv)
	if err != nil || !ok || sess.LastMsg == nil || sess.LastMsg.Seq != m.Seq || sess.LastMsg.MsgID != m.MsgID {
		return err
	}
	sess.LastMsg = &m
	return putSession(tx, sess)
}

// relationsOf returns the entries the device holds for t: the stored ones
// by seq, then the outbox's in the order they were made (refused ones
// excepted).
func relationsOf(tx *sql.Tx, t targetRow) ([]relationRow, error) {
	const cols = `SELECT id, COALESCE(seq, 0), kind, sender, body, server_ts, client_ts FROM messages WHERE conv = ? AND `
	const rest = ` AND failed = 0 AND kind IN (?, ?, ?)`
	rows, err := tx.Query(cols+`ref = ? AND ref != 0`+rest+` UNION `+cols+`target_id = ? AND target_id != ''`+rest,
		t.conv, t.seq, protocol.KindEdit, protocol.KindDelete, protocol.KindReaction,
		t.conv, t.msgID, protocol.KindEdit, protocol.KindDelete, protocol.KindReaction)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []relationRow
	for rows.Next() {
		var r relationRow
		if err := rows.Scan(&r.id, &r.seq, &r.kind, &r.from, &r.body, &r.serverTS, &r.clientTS); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	// Stored ones by seq, then the outbox's in the order they were made.
	slices.SortFunc(out, func(a, b relationRow) int {
		return cmp.Or(cmp.Compare(b2i(a.seq == 0), b2i(b.seq == 0)), cmp.Compare(a.seq, b.seq), cmp.Compare(a.id, b.id))
	})
	return out, rows.Err()
}

// standing is a target as it stands.
type standing struct {
	body      string
	editedTS  int64
	deleted   bool
	erase     bool // a stored deletion: the texts go
	reactions []protocol.Reaction
}

// applyRelations applies entries, in their order, to base, a message from
// sender: edits and deletions only from the sender (as the server checks),
// an edit older than the one base already shows changing nothing; one
// reaction per user, the newer replacing the older, an empty one removing
// it.
func applyRelations(sender string, base targetBase, entries []relationRow) standing {
	st := standing{body: base.Body, editedTS: base.EditedTS, deleted: base.Deleted, erase: base.Deleted}
	type given struct {
		body string
		pos  [2]int64 // order: base first, then stored by seq, then the outbox's
	}
	users := map[string]given{}
	i := int64(0)
	for _, r := range base.Reactions {
		for _, u := range r.Users {
			users[u] = given{r.Body, [2]int64{0, i}}
			i++
		}
	}
	for _, e := range entries {
		pos := [2]int64{1, e.seq}
		if e.seq == 0 {
			pos = [2]int64{2, e.id}
		}
		switch e.kind {
		case protocol.KindEdit:
			if e.from != sender || (e.seq > 0 && e.serverTS < base.EditedTS) {
				continue
			}
			st.body, st.editedTS = e.body, e.serverTS
			if e.seq == 0 {
				st.editedTS = e.clientTS
			}
		case protocol.KindDelete:
			if e.from != sender {
				continue
			}
			st.deleted = true
			st.erase = st.erase || e.seq > 0
		case protocol.KindReaction:
			if e.body == "" {
				delete(users, e.from)
				continue
			}
			users[e.from] = given{e.body, pos}
		}
	}
	if st.deleted {
		st.body = ""
	}
	type reactor struct {
		user string
		given
	}
	list := make([]reactor, 0, len(users))
	for u, g := range users {
		list = append(list, reactor{u, g})
	}
	slices.SortFunc(list, func(a, b reactor) int {
		return cmp.Or(cmp.Compare(a.pos[0], b.pos[0]), cmp.Compare(a.pos[1], b.pos[1]), cmp.Compare(a.user, b.user))
	})
	for _, r := range list {
		j := slices.IndexFunc(st.reactions, func(x protocol.Reaction) bool { return x.Body == r.body })
		if j < 0 {
			st.reactions = append(st.reactions, protocol.Reaction{Body: r.body})
			j = len(st.reactions) - 1
		}
		st.reactions[j].Users = append(st.reactions[j].Users, r.user)
	}
	return st
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// encodeReactions is the reactions column of rs: JSON, ” for none.
func encodeReactions(rs []protocol.Reaction) string {
	if len(rs) == 0 {
		return ""
	}
	b, err := json.Marshal(rs)
	if err != nil {
		return ""
	}
	return string(b)
}

// decodeReactions reads a reactions column.
func decodeReactions(col string) []protocol.Reaction {
	if col == "" {
		return nil
	}
	var rs []protocol.Reaction
	if json.Unmarshal([]byte(col), &rs) != nil {
		return nil
	}
	return rs
}

// resolveTarget gives the seq the server gave message msgID of conv to
// the profile's own entries and replies that named it by msg_id while it
// was in the outbox.
func resolveTarget(tx *sql.Tx, conv, msgID string, seq int64) error {
	for _, q := range []string{
		`UPDATE messages SET ref = ? WHERE conv = ? AND target_id = ? AND target_id != '' AND kind != '' AND ref = 0`,
		`UPDATE messages SET reply_to = ? WHERE conv = ? AND target_id = ? AND target_id != '' AND kind = '' AND reply_to = 0`,
		`UPDATE outbox SET ref = ? WHERE conv = ? AND target_id = ? AND target_id != '' AND kind != '' AND ref = 0`,
		`UPDATE outbox SET reply_to = ? WHERE conv = ? AND target_id = ? AND target_id != '' AND kind = '' AND reply_to = 0`,
	} {
		if _, err := tx.Exec(q, seq, conv, msgID); err != nil {
			return fmt.Errorf("resolve the target %s/%s: %w", conv, msgID, err)
		}
	}
	return nil
}

// TargetSeq returns the seq of message msgID of conv (0 while it is in the
// outbox or when the device does not hold it), and whether the device
// holds it.
func (s *Store) TargetSeq(conv, msgID string) (seq int64, held bool, err error) {
	err = s.r.QueryRow(`SELECT COALESCE(seq, 0) FROM messages WHERE conv = ? AND msg_id = ?`, conv, msgID).Scan(&seq)
	if err == sql.ErrNoRows {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("message %s/%s: %w", conv, msgID, err)
	}
	return seq, true, nil
}

// Message returns message msgID of conv as the device holds it (as it
// stands, an outbox message included); ok is false when it holds none.
func (s *Store) Message(conv, msgID string) (m Message, ok bool, err error) {
	rows, err := s.r.Query(`SELECT `+messageColumns+`, failed FROM messages WHERE conv = ? AND msg_id = ?`, conv, msgID)
	if err != nil {
		return Message{}, false, fmt.Errorf("message %s/%s: %w", conv, msgID, err)
	}
	out, err := scanMessages(rows, nil)
	if err != nil || len(out) == 0 {
		return Message{}, false, err
	}
	return out[0], true, nil
}

// MessagesAt returns the messages of conv the device holds at seqs, as
// they stand, in ascending seq order (the targets of replies, say).
func (s *Store) MessagesAt(conv string, seqs []int64) ([]Message, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(seqs)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.Query(`SELECT `+messageColumns+`, failed FROM messages
		WHERE conv = ? AND seq IN (SELECT value FROM json_each(?)) ORDER BY seq`, conv, string(list))
	if err != nil {
		return nil, fmt.Errorf("messages of %s: %w", conv, err)
	}
	return scanMessages(rows, nil)
}
