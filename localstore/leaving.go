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
// member of its group. The server tells the members who stay (its system
// message names who removed whom) but not the one who goes, whose frames
// about the group are refused from then on: the device says it itself.
const leftNotice = "You are no longer a member of this group"

// leftNoticeID starts the msg_id of a leftNotice (the seq follows).
const leftNoticeID = "left-"

// PutSessionsOf is PutSessions for user self, which also records in the
// history of each group that self is no longer a member of, as the newer
// session says and the stored one did not, a system message saying so
// (see leftNotice): the chat shows it below the last message self could
// see, above the message that adds self back if that comes, and the list
// shows it instead of the last message as if self still were a member.
// left lists those groups.
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

// noteLeft stores the notice that self left group in, in the place of the
// system message the server wrote about it and does not send to self (the
// seq after the last one self's session has), and makes it the session's
// last message; the unread count stays.
func noteLeft(tx *sql.Tx, self string, in protocol.Session, now int64) error {
	sess, ok, err := getSession(tx, in.Conv)
	if err != nil || !ok {
		return err
	}
	seq := sess.WriteSeq + 1
	m := protocol.Message{Conv: in.Conv, Seq: seq, MsgID: leftNoticeID + strconv.FormatInt(seq, 10), From: self, Body: leftNotice,
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
		moves := st.OnMessage(seq, nobody)
		st.UnreadCount = unread
		return moves
	}})
	return err
}
