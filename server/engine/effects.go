package engine

import (
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

// effectKind names what an operation does to a member's session.
type effectKind uint8

const (
	// effectMessage: a message arrived (Seq from From); the session is
	// created if need be, and its active_ts moves also when Covered.
	effectMessage effectKind = iota + 1
	// effectRise: the conversation's ticks rose; the session changes when
	// Covered (the rise covers the user's own messages), else takes the
	// ticks in place.
	effectRise
	// effectJoin: the user joined a group at the message after Seq.
	effectJoin
	// effectLeave: the user left or was removed from a group.
	effectLeave
	// effectRead: the user read up to Seq; the session is created only
	// with Create.
	effectRead
	// effectOp: a session operation (Op with Args).
	effectOp
	// effectExpire: nothing but what the passing of time changes (a timed
	// mute ending).
	effectExpire
	// effectRelation: a relation entry arrived (Seq from From): an event
	// that changes what the conversation shows, not a new message.
	effectRelation
)

// SessionEffect is what an operation on a conversation does to one of its
// members' sessions, named and made of plain values rather than a
// closure: the one place where an operation reaches into a user's state,
// so that it can be applied on whichever node owns the user (see
// docs/SCALING.md and owned.go).
type SessionEffect struct {
	Kind effectKind
	Conv string
	// Ticks are the conversation's ticks as the operation left them.
	Ticks protocol.Ticks
	Seq   int64
	// Ref is, for effectRelation, the seq of the entry's target.
	Ref     int64
	From    string
	Covered bool
	Create  bool // effectRead only: create the session if missing
	Op      session.Op
	Args    session.OpArgs
	// Events are what the conversation's owner knows of its events
	// (effectMessage, effectRelation, effectRead): the unread count is
	// computed from them where the user's session is, without reading
	// messages there.
	Events session.Events
	// Rows names the write that holds the rows the conversation's owner
	// put for the operation (effectMessage, effectRelation: the members'
	// pending rows), there: the user's owner keeps it, and a hello of the
	// user waits for it before it reads the user's pending rows.
	Rows WriteTicket `json:",omitzero"`
}

// creates reports whether the effect creates a missing session.
func (ef SessionEffect) creates() bool {
	switch ef.Kind {
	case effectMessage, effectRelation, effectJoin, effectOp:
		return true
	case effectRead:
		return ef.Create
	default:
		return false
	}
}

// rule is the effect as a change of the session at time now (ms).
func (ef SessionEffect) rule(now int64) sessionRule {
	switch ef.Kind {
	case effectMessage:
		return func(st *session.State) session.Moves {
			moves := st.OnMessage(ef.Seq, ef.From, ef.Events)
			moves.Active = moves.Active || ef.Covered
			return moves
		}
	case effectRelation:
		return func(st *session.State) session.Moves { return st.OnRelation(ef.Seq, ef.From, ef.Events) }
	case effectRise:
		return func(*session.State) session.Moves { return session.Moves{Active: ef.Covered} }
	case effectJoin:
		return func(st *session.State) session.Moves { return st.OnJoin(ef.Seq) }
	case effectLeave:
		return func(st *session.State) session.Moves { return st.OnLeave() }
	case effectRead:
		return func(st *session.State) session.Moves { return st.OnRead(ef.Seq, ef.Events) }
	case effectOp:
		return func(st *session.State) session.Moves { return st.Apply(ef.Op, ef.Args, now) }
	default:
		return func(*session.State) session.Moves { return session.Moves{} }
	}
}

// applyEffect applies ef to u's session at time now (see changeSession);
// the caller holds u's shard lock.
func (e *Engine) applyEffect(u *userState, now int64, ef SessionEffect) (session.State, bool, error) {
	if ef.Rows != (WriteTicket{}) {
		u.rows = noteTicket(u.rows, ef.Rows)
	}
	st, changed, err := e.changeSession(u, now, ef.Conv, ef.Ticks, ef.creates(), ef.rule(now))
	if err == nil && ef.Kind == effectRelation && st.SubBiz != "" {
		err = e.touchGateway(u, now, st.SubBiz, ef.Conv, ef.Ref)
	}
	return st, changed, err
}

// touchGateway moves the active_ts of the gateway of sub-business subBiz
// when its last message is the one at seq ref of conv, which a relation
// entry just changed: the user's devices learn by sync the last message
// as it stands now. The caller holds u's shard lock.
func (e *Engine) touchGateway(u *userState, now int64, subBiz, conv string, ref int64) error {
	_, _, err := e.changeSession(u, now, protocol.GatewayConv(subBiz), protocol.Ticks{}, false, func(g *session.State) session.Moves {
		return session.Moves{Active: g.LastConv == conv && g.LastSeq == ref}
	})
	return err
}
