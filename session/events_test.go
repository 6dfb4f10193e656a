package session_test

import (
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

func TestCountsAsUnread(t *testing.T) {
	for _, tc := range []struct {
		kind string
		want bool
	}{
		{"", true},
		{protocol.KindSystem, false},
		{protocol.KindEdit, false},
		{protocol.KindDelete, false},
		{protocol.KindReaction, false},
	} {
		m := protocol.Message{Conv: "g:x", Seq: 1, Kind: tc.kind, RefSeq: 1}
		if got := session.CountsAsUnread(m); got != tc.want {
			t.Errorf("CountsAsUnread(kind %q) = %v, want %v", tc.kind, got, tc.want)
		}
	}
	deleted := protocol.Message{Conv: "g:x", Seq: 2, Deleted: true}
	if !session.CountsAsUnread(deleted) {
		t.Error("a deleted message stays a placeholder in the chat: it counts")
	}
}

func TestEventsCounting(t *testing.T) {
	ev := session.Events{From: 2, Seqs: []int64{3, 5, 6}}
	for _, tc := range []struct{ after, upTo, want int64 }{
		{0, 0, 0},
		{0, 7, 4}, // 1, 2 (unknown, counted), 4, 7
		{2, 7, 2}, // 4, 7
		{4, 6, 0},
		{6, 9, 3},
		{7, 5, 0},
	} {
		if got := ev.Counting(tc.after, tc.upTo); got != tc.want {
			t.Errorf("Counting(%d, %d) = %d, want %d", tc.after, tc.upTo, got, tc.want)
		}
	}
	if ev.Covers(1) || !ev.Covers(2) {
		t.Error("Covers: want known from 2 up")
	}
	above := ev.Above(4)
	if above.From != 4 || len(above.Seqs) != 2 || above.Seqs[0] != 5 {
		t.Errorf("Above(4) = %+v", above)
	}
	if session.EventsUnknown.Covers(1 << 40) {
		t.Error("EventsUnknown covers nothing")
	}
}

// A group's system lines are not unread; a text message after them is.
func TestOnMessageEventsAreNotUnread(t *testing.T) {
	st := session.State{User: "bob", Conv: "g:team"}
	var ev session.Events
	for seq := int64(1); seq <= 3; seq++ { // created, added, renamed
		ev.Seqs = append(ev.Seqs, seq)
		if moves := st.OnMessage(seq, "alice", ev); !moves.Write {
			t.Fatalf("system message %d: moves %+v, want it to move the session in the list", seq, moves)
		}
		if st.UnreadCount != 0 || st.WriteSeq != seq || st.LastSeq != seq {
			t.Fatalf("after system message %d: %+v", seq, st)
		}
	}
	st.OnMessage(4, "alice", ev)
	if st.UnreadCount != 1 {
		t.Fatalf("after a text message: unread %d, want 1", st.UnreadCount)
	}
}

// A read below write_seq leaves unread what counts above it.
func TestOnReadCountsOnlyMessagesAbove(t *testing.T) {
	st := session.State{User: "bob", Conv: "g:team"}
	ev := session.Events{Seqs: []int64{1, 4, 6}}
	for seq := int64(1); seq <= 7; seq++ {
		st.OnMessage(seq, "alice", ev)
	}
	if st.UnreadCount != 4 { // 2, 3, 5, 7
		t.Fatalf("unread %d, want 4", st.UnreadCount)
	}
	if moves := st.OnRead(3, ev.Above(3)); !moves.Active {
		t.Fatal("a read that moves read_seq changes the session")
	}
	if st.UnreadCount != 2 { // 5, 7
		t.Fatalf("after reading to 3: unread %d, want 2", st.UnreadCount)
	}
}

// An event that reaches the session after a later message is taken back
// out of the count once known.
func TestOnMessageLateEvent(t *testing.T) {
	st := session.State{User: "bob", Conv: "d:alice:bob"}
	st.OnMessage(2, "alice", session.Events{}) // 1 not known yet
	if st.UnreadCount != 2 {
		t.Fatalf("unread %d, want 2", st.UnreadCount)
	}
	moves := st.OnMessage(1, "alice", session.Events{Seqs: []int64{1}})
	if st.UnreadCount != 1 || !moves.Active || moves.Write {
		t.Fatalf("late event: unread %d, moves %+v; want 1, active only", st.UnreadCount, moves)
	}
}

// Without knowledge of older seqs, what was counted stays and the new
// seqs add what counts among them.
func TestOnMessageBeyondKnownEvents(t *testing.T) {
	st := session.State{User: "bob", Conv: "g:team", WriteSeq: 3, UnreadCount: 0}
	st.OnMessage(5, "alice", session.Events{From: 3, Seqs: []int64{4}})
	if st.UnreadCount != 1 {
		t.Fatalf("unread %d, want 1", st.UnreadCount)
	}
	st.OnMessage(6, "alice", session.EventsUnknown)
	if st.UnreadCount != 2 {
		t.Fatalf("unknown events count: unread %d, want 2", st.UnreadCount)
	}
}
