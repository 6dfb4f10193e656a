package localstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// PendingOp is one of the user's session operations the server has not
// answered yet.
type PendingOp struct {
	ID       int64
	Conv     string
	Op       string // pin, unpin, mute, unmute, mark_unread, delete, set_category
	Until    int64  // mute: ms, 0 = until unmuted
	Category string // set_category
}

// ApplySessionOp keeps op as pending and applies it at once to the stored
// session, by the server's rule, so that the list shows it before the
// server answers (offline, after a restart). It returns the op's id for
// FinishSessionOp.
func (s *Store) ApplySessionOp(op PendingOp) (int64, error) {
	now := s.now().UnixMilli()
	var id int64
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		var before []byte
		if sess, ok, err := getSession(tx, op.Conv); err != nil {
			return err
		} else if ok {
			if before, err = json.Marshal(sess); err != nil {
				return err
			}
		}
		err := tx.QueryRow(`INSERT INTO pending_ops (conv, op, until, category, before) VALUES (?, ?, ?, ?, ?) RETURNING id`,
			op.Conv, op.Op, op.Until, op.Category, string(before)).Scan(&id)
		if err != nil {
			return err
		}
		_, _, err = changeSession(tx, nobody, op.Conv, now, opChange(op, now))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("session op %s on %s: %w", op.Op, op.Conv, err)
	}
	return id, nil
}

// opChange is the change op makes to its session at time now (ms).
func opChange(op PendingOp, now int64) change {
	return change{writeTS: now, rule: func(st *session.State) session.Moves {
		return st.Apply(session.Op(op.Op), session.OpArgs{Until: op.Until, Category: op.Category}, now)
	}}
}

// PendingOps returns the session operations the server has not answered,
// oldest first.
func (s *Store) PendingOps() ([]PendingOp, error) {
	rows, err := s.r.Query(`SELECT id, conv, op, until, category FROM pending_ops ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("pending session ops: %w", err)
	}
	defer rows.Close()
	var out []PendingOp
	for rows.Next() {
		var op PendingOp
		if err := rows.Scan(&op.ID, &op.Conv, &op.Op, &op.Until, &op.Category); err != nil {
			return nil, fmt.Errorf("pending session ops: %w", err)
		}
		out = append(out, op)
	}
	return out, rows.Err()
}

// FinishSessionOp forgets pending op id once the server has answered it:
// with the session as the server now has it (stored as PutSessions does),
// or nil when the server refused it, whose next copy of the session then
// shows the operation undone.
func (s *Store) FinishSessionOp(id int64, answer *protocol.Session) error {
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DELETE FROM pending_ops WHERE id = ?`, id); err != nil {
			return err
		}
		if answer == nil {
			return nil
		}
		return putServerSession(tx, *answer, s.now().UnixMilli())
	})
	if err != nil {
		return fmt.Errorf("finish session op %d: %w", id, err)
	}
	return nil
}

// UndoSessionOp forgets pending op id, which the server refused for good,
// and undoes it on the stored session: the fields the operation changed
// take back the values they had before it (a refused folder leaves the
// list), then the user's other pending operations on the conversation are
// applied again over them. The server's copy of the session, which did not
// change, would never come to do it. Undoing an unknown id does nothing.
func (s *Store) UndoSessionOp(id int64) error {
	now := s.now().UnixMilli()
	err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		var conv, op, before string
		err := tx.QueryRow(`DELETE FROM pending_ops WHERE id = ? RETURNING conv, op, before`, id).Scan(&conv, &op, &before)
		if err == sql.ErrNoRows {
			return nil
		}
		if err != nil || before == "" {
			return err
		}
		var was protocol.Session
		if err := json.Unmarshal([]byte(before), &was); err != nil {
			return err
		}
		undo := change{rule: func(st *session.State) session.Moves {
			undoFields(st, session.Op(op), &was)
			return session.Moves{Active: true}
		}}
		if _, _, err := changeSession(tx, nobody, conv, now, undo); err != nil {
			return err
		}
		return reapplyPending(tx, conv, now)
	})
	if err != nil {
		return fmt.Errorf("undo session op %d: %w", id, err)
	}
	return nil
}

// undoFields puts back in st the fields op changes, from was (the session
// before op). A delete's cleared unread comes back only while no message
// arrived since.
func undoFields(st *session.State, op session.Op, was *protocol.Session) {
	switch op {
	case session.OpPin, session.OpUnpin:
		st.Priority = was.Priority
	case session.OpMute, session.OpUnmute:
		st.Muted, st.MuteUntil = was.Muted, was.MuteUntil
	case session.OpMarkUnread:
		st.MarkedUnread = was.MarkedUnread
	case session.OpDelete:
		st.Deleted = was.Deleted
		if st.WriteSeq == was.WriteSeq {
			st.ReadSeq, st.UnreadCount = was.ReadSeq, was.UnreadCount
		}
	case session.OpSetCategory:
		st.Category = was.Category
	}
}

// reapplyPending applies again, over a copy of conv's session from the
// server, the user's operations on it that the server has not answered.
func reapplyPending(tx *sql.Tx, conv string, now int64) error {
	rows, err := tx.Query(`SELECT id, conv, op, until, category FROM pending_ops WHERE conv = ? ORDER BY id`, conv)
	if err != nil {
		return err
	}
	var ops []PendingOp
	for rows.Next() {
		var op PendingOp
		if err := rows.Scan(&op.ID, &op.Conv, &op.Op, &op.Until, &op.Category); err != nil {
			rows.Close()
			return err
		}
		ops = append(ops, op)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, op := range ops {
		if _, _, err := changeSession(tx, nobody, conv, now, opChange(op, now)); err != nil {
			return err
		}
	}
	return nil
}
