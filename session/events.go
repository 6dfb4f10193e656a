package session

import (
	"math"
	"slices"

	"github.com/imcore/im/protocol"
)

// CountsAsUnread reports whether message m counts in a session's
// unread_count. A system message (a group created, a member added) and a
// relation entry (an edit, a deletion, a reaction) are events, not
// messages, and do not (PROTOCOL.md, Sessions).
func CountsAsUnread(m protocol.Message) bool {
	return KindCountsAsUnread(m.Kind)
}

// KindCountsAsUnread is CountsAsUnread for a message of kind kind.
func KindCountsAsUnread(kind string) bool {
	return kind != protocol.KindSystem && !protocol.IsRelationKind(kind)
}

// Events are what is known of which seqs of a conversation are events
// (messages that do not count as unread): Seqs, ascending, holds every
// one of them above From. Of the seqs at or below From nothing is known,
// and each counts as unread.
type Events struct {
	From int64   `json:"from"`
	Seqs []int64 `json:"seqs,omitempty"`
}

// EventsUnknown knows of no event: every seq counts as unread.
var EventsUnknown = Events{From: math.MaxInt64}

// Covers reports whether ev knows every event above seq after.
func (ev Events) Covers(after int64) bool { return after >= ev.From }

// Counting returns how many seqs in (after, upTo] count as unread: those
// that are not events ev knows of.
func (ev Events) Counting(after, upTo int64) int64 {
	if upTo <= after {
		return 0
	}
	lo, _ := slices.BinarySearch(ev.Seqs, after+1)
	hi, _ := slices.BinarySearch(ev.Seqs, upTo+1)
	return upTo - after - int64(hi-lo)
}

// Above returns the part of ev that knows the seqs above after: the
// events above it (a fresh slice), and From raised to after.
func (ev Events) Above(after int64) Events {
	i, _ := slices.BinarySearch(ev.Seqs, after+1)
	return Events{From: max(ev.From, after), Seqs: slices.Clone(ev.Seqs[i:])}
}

// recount sets the unread count after the session's write_seq rose from
// oldWrite or its read_seq rose: exactly the messages in (read_seq,
// write_seq] that count when ev knows that range; else what was counted
// stays and what counts among the new seqs adds to it, never more than
// the seqs unread.
func (s *State) recount(oldWrite int64, ev Events) {
	if ev.Covers(s.ReadSeq) {
		s.UnreadCount = ev.Counting(s.ReadSeq, s.WriteSeq)
		return
	}
	unread := s.UnreadCount + ev.Counting(max(oldWrite, s.ReadSeq), s.WriteSeq)
	s.UnreadCount = min(max(unread, 0), s.WriteSeq-s.ReadSeq)
}
