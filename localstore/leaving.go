package localstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// leftNotice is the line a chat shows where the user stopped being a
// member of its group, when the device did not get the server's system
// message about it. The server pushes that message (which names who
// removed whom) to the removed member's devices that are online then, but
// keeps it pending for nobody and leaves it out of his session: a device
// that was offline learns of the removal by session sync only, and says it
// itself.
const leftNotice = "You are no longer a member of this group"

// leftNoticeID starts the msg_id of a leftNotice (the seq follows).
const leftNoticeID = "left-"

// leftID is the msg_id of the notice stored at seq.
func leftID(seq int64) string { return leftNoticeID + strconv.FormatInt(seq, 10) }

// PutSessionsOf is PutSessions for user self, which also records in the
// history of each group that self is no longer a member of, as the newer
// session says and the stored one did not, that he left: the server's
// system message about it if the device holds it (pushed to it; nothing
// stays unread then, as on the server), else a system message of its own
// (see leftNotice). Either way the chat shows it below the last message
// self could see, above the message that adds self back if that comes, and
// the list shows it instead of the last message as if self still were a
// member. left lists those groups.
func (s *Store) PutSessionsOf(self string, sessions []protocol.Session) (left []string, err error) {
	now := s.now().UnixMilli()
	err = s.withTx(context.Background(), func(tx *sql.Tx) error {
		left = left[:0]
		for _, in := range sessions {
			leaves, err := leavesGroup(tx, self, in)
			if err != nil {
				return err
			}
			if err := putServerSession(tx, in, now); err != nil {
				return err
			}
			if leaves {
				if err := noteLeft(tx, self, in, now); err != nil {
					return err
				}
				left = append(left, in.Conv)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("put sessions: %w", err)
	}
	return left, nil
}

// leavesGroup says that in, newer than the stored session, shows that self
// is no longer a member of a group the stored session has self in.
func leavesGroup(tx *sql.Tx, self string, in protocol.Session) (bool, error) {
	if in.Kind != "group" || slices.Contains(in.Members, self) {
		return false, nil
	}
	old, ok, err := getSession(tx, in.Conv)
	if err != nil || !ok {
		return false, err
	}
	return in.ActiveTS > old.ActiveTS && slices.Contains(old.Members, self), nil
}

// noteLeft records that self left group in. The server's message about it
// takes the seq after the last one self's session has there; if the device
// holds it, it is the session's last message already, and only the unread
// it added goes (the server cleared self's unread, and self may not send
// the read that would clear it). Otherwise the notice is stored in its
// place and made the session's last message; the unread count stays.
func noteLeft(tx *sql.Tx, self string, in protocol.Session, now int64) error {
	told, err := heldFromServer(tx, in.Conv, in.WriteSeq+1)
	if err != nil {
		return err
	}
	if told {
		_, _, err = changeSession(tx, self, in.Conv, now, change{rule: func(st *session.State) session.Moves {
			return st.OnRead(in.WriteSeq+1, session.EventsUnknown)
		}})
		return err
	}
	sess, ok, err := getSession(tx, in.Conv)
	if err != nil || !ok {
		return err
	}
	seq := sess.WriteSeq + 1
	m := protocol.Message{Conv: in.Conv, Seq: seq, MsgID: leftID(seq), From: self, Body: leftNotice,
		Kind: protocol.KindSystem, ClientTS: now, ServerTS: now}
	put, err := prepareMessagePut(tx)
	if err != nil {
		return err
	}
	defer put.close()
	if _, err := put.put(m); err != nil {
		return err
	}
	_, _, err = changeSession(tx, self, in.Conv, now, change{last: &m, rule: func(st *session.State) session.Moves {
		unread := st.UnreadCount
		moves := st.OnMessage(seq, nobody, session.EventsUnknown)
		st.UnreadCount = unread
		return moves
	}})
	return err
}

// heldFromServer says the device holds a message from the server at seq
// of conv (not a notice of its own).
func heldFromServer(tx *sql.Tx, conv string, seq int64) (bool, error) {
	var msgID string
	err := tx.QueryRow(`SELECT msg_id FROM messages WHERE conv = ? AND seq = ?`, conv, seq).Scan(&msgID)
	if err == sql.ErrNoRows {
		return false, nil
	}
	return err == nil && msgID != leftID(seq), err
}

// replaceLeftNotice puts m, a message from the server, in the place of the
// notice that the user left its group, stored at m's seq: the server's
// message about the removal, pushed after the session sync that told of
// it, replaces the notice in the chat and as the session's last message.
// It reports whether there was such a notice.
func (p *messagePut) replaceLeftNotice(m protocol.Message) (bool, error) {
	res, err := p.tx.Exec(`DELETE FROM messages WHERE conv = ? AND seq = ? AND msg_id = ? AND kind = ?`,
		m.Conv, m.Seq, leftID(m.Seq), protocol.KindSystem)
	if err != nil {
		return false, fmt.Errorf("replace the notice at %s/%d: %w", m.Conv, m.Seq, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	if _, err := p.insertMsg(m); err != nil {
		return false, fmt.Errorf("insert %s/%d: %w", m.Conv, m.Seq, err)
	}
	sess, ok, err := getSession(p.tx, m.Conv)
	if err != nil || !ok || sess.LastMsg == nil || sess.LastMsg.Seq != m.Seq || sess.LastMsg.MsgID != leftID(m.Seq) {
		return true, err
	}
	last := m
	sess.LastMsg = &last
	return true, putSession(p.tx, sess)
}
