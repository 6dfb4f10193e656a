// Package session is the session model of the source design (the session
// a first-class entity, not rebuilt from a message queue): one stored
// state per user and conversation, and the rules that say how each event
// changes it and which of its timestamps move. It performs no I/O; the
// server's storage backends apply these rules inside their own atomic
// writes, and clients apply them to their local copies of session
// objects (FromObject, ToObject) to show a change before the server's copy
// arrives, so the rules exist once.
package session

import (
	"github.com/imcore/im/protocol"
)

// State is what is stored of one user's session of one conversation.
type State struct {
	User, Conv   string
	ReadSeq      int64
	WriteSeq     int64
	UnreadCount  int64
	ActiveTS     int64
	WriteTS      int64
	Muted        bool
	MuteUntil    int64 // ms; 0 = until unmuted
	Priority     int64
	Deleted      bool
	MarkedUnread bool
	Category     string
	SubBiz       string // non-empty: listed in that sub-business's nested list
	LastConv     string // the conversation of the last message (a gateway's member)
	LastSeq      int64
	// Request marks a direct chat whose first message came from the other
	// member, until the user's own first send there (PROTOCOL.md,
	// "Requests").
	Request bool
	// Ticks are the conversation's tick boundaries as of the session's
	// last change: every rise of the tick minimum changes every member's
	// session, so a session's version (its active_ts) names one content.
	Ticks protocol.Ticks
}

// Moves says which timestamps an event moves. An event that changes
// nothing moves none.
type Moves struct {
	Active bool // active_ts: every change (the sync key)
	Write  bool // write_ts: changes that move the session in the list
}

// Changed reports whether the event changed the session at all.
func (m Moves) Changed() bool { return m.Active || m.Write }

var (
	activeOnly = Moves{Active: true}
	both       = Moves{Active: true, Write: true}
)

// MutedAt reports whether the session counts as muted at time now (ms): a
// mute with an until in the past has expired.
func (s *State) MutedAt(now int64) bool {
	return s.Muted && (s.MuteUntil == 0 || s.MuteUntil > now)
}

// ExpireMute turns an expired mute into no mute; it reports whether it did.
func (s *State) ExpireMute(now int64) bool {
	if s.Muted && !s.MutedAt(now) {
		s.Muted, s.MuteUntil = false, 0
		return true
	}
	return false
}

// UnreadContribution is what the session adds to its list's total unread:
// its unread count unless it is deleted or muted (a stored mute; expired
// mutes are turned off by ExpireMute before any total is read).
func (s *State) UnreadContribution() int64 {
	if s.Deleted || s.Muted {
		return 0
	}
	return s.UnreadCount
}

// IsGateway reports whether the session is a sub-business gateway.
func (s *State) IsGateway() bool {
	c, ok := protocol.ParseConv(s.Conv)
	return ok && c.Kind == protocol.ConvBiz
}

// OnMessage applies message seq from sender in the session's conversation,
// with ev, what is known of the conversation's events (see Events): only
// the messages that count as unread (CountsAsUnread) are unread. A new
// message, an event too, brings a deleted session back and moves it in
// the list; for the sender it is an implicit read.
func (s *State) OnMessage(seq int64, sender string, ev Events) Moves {
	requestBefore := s.Request
	s.noteSender(sender)
	if seq <= s.WriteSeq {
		if sender == s.User && seq > s.ReadSeq {
			// One's own message applied after a later one (messages can
			// reach the session out of seq order): sending still implies
			// reading up to it.
			m := s.OnRead(seq, ev)
			if s.Request != requestBefore {
				m.Active = true
			}
			return m
		}
		if seq > s.ReadSeq && ev.Covers(s.ReadSeq) {
			// A message that arrives after a later one: ev knows it now,
			// where the later one's may not have.
			if n := ev.Counting(s.ReadSeq, s.WriteSeq); n != s.UnreadCount {
				s.UnreadCount = n
				return activeOnly
			}
		}
		if s.Request != requestBefore {
			return activeOnly
		}
		return Moves{}
	}
	oldWrite := s.WriteSeq
	s.WriteSeq = seq
	s.LastConv, s.LastSeq = s.Conv, seq
	s.Deleted = false
	if sender == s.User {
		s.ReadSeq = seq
		s.MarkedUnread = false
	}
	s.recount(oldWrite, ev)
	return both
}

// OnRelation applies relation entry seq from sender (an edit, a
// deletion, a reaction), with ev, what is known of the conversation's
// events: an event, not a message (PROTOCOL.md, "Replies, edits,
// deletions and reactions"). write_seq rises to it, as to any seq, but it
// is not unread, not the last message, and moves the session neither in
// the list (write_ts) nor back from deleted. Sent by the user it reads
// everything up to it, as any send does. active_ts always moves: the
// entry changed what the conversation shows (its last message perhaps),
// and the user's devices learn it by sync.
func (s *State) OnRelation(seq int64, sender string, ev Events) Moves {
	s.noteSender(sender)
	if seq > s.WriteSeq {
		oldWrite := s.WriteSeq
		s.WriteSeq = seq
		s.recount(oldWrite, ev)
	}
	if sender == s.User {
		s.OnRead(seq, ev)
	}
	return activeOnly
}

// OnRead applies the user's read up to seq (clamped to write_seq), with
// ev, what is known of the conversation's events: read_seq never goes
// back, the unread count is what counts above it, and a read clears
// marked_unread.
func (s *State) OnRead(seq int64, ev Events) Moves {
	seq = min(seq, s.WriteSeq)
	changed := false
	if seq > s.ReadSeq {
		s.ReadSeq = seq
		s.recount(s.WriteSeq, ev)
		changed = true
	}
	if s.MarkedUnread {
		s.MarkedUnread = false
		changed = true
	}
	if !changed {
		return Moves{}
	}
	return activeOnly
}

// OnJoin applies the user joining a group after seq before: what came
// before is not the user's to read, so nothing before it counts as unread.
// A member added back keeps its session; its read_seq moves up to before.
func (s *State) OnJoin(before int64) Moves {
	if before <= s.ReadSeq && before <= s.WriteSeq {
		return Moves{}
	}
	s.WriteSeq = max(s.WriteSeq, before)
	s.ReadSeq = max(s.ReadSeq, before)
	s.UnreadCount = s.WriteSeq - s.ReadSeq
	return activeOnly
}

// OnLeave applies the user leaving or being removed from a group: the
// session keeps its messages and place in the list (write_ts does not
// move), and its unread is cleared, since the user can no longer send the
// read that would clear it. active_ts moves so that the user's devices
// learn of it on their next sync.
func (s *State) OnLeave() Moves {
	s.ReadSeq = s.WriteSeq
	s.UnreadCount = 0
	s.MarkedUnread = false
	return activeOnly
}

// TakeTicks merges the conversation's tick boundaries t into the session
// (they only rise) and reports whether they rose. Whether that moves
// active_ts is the caller's to say: it does when the rise covers the
// user's own messages.
func (s *State) TakeTicks(t protocol.Ticks) bool {
	next := s.Ticks.Merge(t)
	if next == s.Ticks {
		return false
	}
	s.Ticks = next
	return true
}

// Op names a session operation of the protocol.
type Op string

// The session operations.
const (
	OpPin         Op = "pin"
	OpUnpin       Op = "unpin"
	OpMute        Op = "mute"
	OpUnmute      Op = "unmute"
	OpMarkUnread  Op = "mark_unread"
	OpDelete      Op = "delete"
	OpSetCategory Op = "set_category"
)

// MaxCategoryLen bounds a category name.
const MaxCategoryLen = 32

// OpArgs are an operation's optional arguments.
type OpArgs struct {
	Until    int64  // mute: ms, 0 = until unmuted
	Category string // set_category: "" clears
}

// Validate checks an operation and its arguments.
func Validate(op Op, args OpArgs) *protocol.Error {
	switch op {
	case OpPin, OpUnpin, OpUnmute, OpMarkUnread, OpDelete:
		return nil
	case OpMute:
		if args.Until < 0 {
			return protocol.Errorf(protocol.CodeInvalid, "until cannot be negative")
		}
		return nil
	case OpSetCategory:
		if args.Category != "" && (len(args.Category) > MaxCategoryLen || !protocol.ValidUser(args.Category)) {
			return protocol.Errorf(protocol.CodeInvalid, "category must be empty or 1-%d characters of [a-z0-9_.-]", MaxCategoryLen)
		}
		return nil
	}
	return protocol.Errorf(protocol.CodeInvalid, "unknown session op %q (want pin, unpin, mute, unmute, mark_unread, delete or set_category)", op)
}

// Apply applies a validated operation at time now (ms). An operation that
// changes nothing moves nothing.
func (s *State) Apply(op Op, args OpArgs, now int64) Moves {
	switch op {
	case OpPin:
		if s.Priority == 1 {
			return Moves{}
		}
		s.Priority = 1
		return both
	case OpUnpin:
		if s.Priority == 0 {
			return Moves{}
		}
		s.Priority = 0
		return activeOnly
	case OpMute:
		if args.Until > 0 && args.Until <= now {
			return Moves{} // a mute that has already ended mutes nothing
		}
		if s.MutedAt(now) && s.MuteUntil == args.Until && !s.MarkedUnread {
			return Moves{}
		}
		s.Muted, s.MuteUntil, s.MarkedUnread = true, args.Until, false
		return activeOnly
	case OpUnmute:
		if !s.Muted {
			return Moves{}
		}
		s.Muted, s.MuteUntil = false, 0
		return activeOnly
	case OpMarkUnread:
		if s.MarkedUnread {
			return Moves{}
		}
		s.MarkedUnread = true
		return both
	case OpDelete:
		if s.Deleted && s.UnreadCount == 0 {
			return Moves{}
		}
		// A soft delete clears the unread count; it is not a read receipt:
		// the other members' ticks do not move.
		s.Deleted = true
		s.ReadSeq = s.WriteSeq
		s.UnreadCount = 0
		return activeOnly
	case OpSetCategory:
		if s.Category == args.Category {
			return Moves{}
		}
		s.Category = args.Category
		return activeOnly
	}
	return Moves{}
}

// noteSender applies the request rule to a message or relation entry from
// sender: the user's own send clears the request; in a direct chat, the
// first seq the session sees from the other member makes one.
func (s *State) noteSender(sender string) {
	switch {
	case sender == s.User:
		s.Request = false
	case s.WriteSeq == 0 && len(s.Conv) > 2 && s.Conv[:2] == "d:" && sender != "":
		s.Request = true
	}
}
