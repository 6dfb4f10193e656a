package session

import "github.com/imcore/im/protocol"

// A client holds sessions as the protocol's session objects. FromObject and
// ToObject let it change them by the same rules as the server, so that what
// a client shows before the server's copy arrives is what the server will
// decide.

// FromObject returns the state behind user's session object s.
func FromObject(user string, s *protocol.Session) State {
	st := State{
		User:         user,
		Conv:         s.Conv,
		ReadSeq:      s.ReadSeq,
		WriteSeq:     s.WriteSeq,
		UnreadCount:  s.UnreadCount,
		ActiveTS:     s.ActiveTS,
		WriteTS:      s.WriteTS,
		Muted:        s.Muted,
		MuteUntil:    s.MuteUntil,
		Priority:     s.Priority,
		Deleted:      s.Deleted,
		MarkedUnread: s.MarkedUnread,
		Category:     s.Category,
		SubBiz:       s.SubBiz,
		Request:      s.Request,
	}
	if s.LastMsg != nil {
		st.LastConv, st.LastSeq = s.LastMsg.Conv, s.LastMsg.Seq
	}
	return st
}

// ToObject writes what the rules decide back into session object s. The
// fields no rule touches (kind, title, members, ticks) and the last message,
// which the caller holds, stay as they are.
func (s *State) ToObject(o *protocol.Session) {
	o.ReadSeq, o.WriteSeq, o.UnreadCount = s.ReadSeq, s.WriteSeq, s.UnreadCount
	o.ActiveTS, o.WriteTS = s.ActiveTS, s.WriteTS
	o.Muted, o.MuteUntil = s.Muted, s.MuteUntil
	o.Priority, o.Deleted, o.MarkedUnread = s.Priority, s.Deleted, s.MarkedUnread
	o.Category, o.SubBiz = s.Category, s.SubBiz
	o.Request = s.Request
}

// UnreadContributionAt is UnreadContribution at time now (ms): a mute whose
// until has passed no longer holds the count back, as if ExpireMute had run.
func (s State) UnreadContributionAt(now int64) int64 {
	s.ExpireMute(now)
	return s.UnreadContribution()
}

// ObjectUnread is what session object s adds to its list's total unread at
// time now (ms): its unread count unless it is deleted or muted then.
func ObjectUnread(s *protocol.Session, now int64) int64 {
	st := State{UnreadCount: s.UnreadCount, Deleted: s.Deleted, Muted: s.Muted, MuteUntil: s.MuteUntil}
	return st.UnreadContributionAt(now)
}

// ObjectMuted reports whether session object s counts as muted at time now
// (ms).
func ObjectMuted(s *protocol.Session, now int64) bool {
	st := State{Muted: s.Muted, MuteUntil: s.MuteUntil}
	return st.MutedAt(now)
}
