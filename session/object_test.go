package session_test

import (
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/session"
)

func TestObjectRoundTrip(t *testing.T) {
	last := protocol.Message{Conv: dAB, Seq: 5, From: alice}
	o := protocol.Session{Conv: dAB, Kind: "direct", Title: "alice", Members: []string{alice, bob},
		ReadSeq: 2, WriteSeq: 5, UnreadCount: 3, ActiveTS: 1000, WriteTS: 900, Priority: 1,
		Category: "work", LastMsg: &last, Ticks: protocol.Ticks{DeliveredSeq: 4, ReadSeq: 3}}
	st := session.FromObject(bob, &o)
	if st.User != bob || st.LastConv != dAB || st.LastSeq != 5 || st.UnreadCount != 3 || st.Category != "work" {
		t.Fatalf("FromObject = %+v", st)
	}
	moves := st.OnRead(5, session.Events{})
	if !moves.Changed() {
		t.Fatal("the read changed nothing")
	}
	st.ToObject(&o)
	if o.ReadSeq != 5 || o.UnreadCount != 0 || o.Title != "alice" || o.Ticks.DeliveredSeq != 4 || o.LastMsg != &last {
		t.Fatalf("ToObject = %+v", o)
	}
}

func TestObjectUnreadFollowsMuteExpiry(t *testing.T) {
	const now = 10_000
	cases := []struct {
		name string
		s    protocol.Session
		want int64
	}{
		{"plain", protocol.Session{UnreadCount: 4}, 4},
		{"muted for good", protocol.Session{UnreadCount: 4, Muted: true}, 0},
		{"muted until later", protocol.Session{UnreadCount: 4, Muted: true, MuteUntil: now + 1}, 0},
		{"mute expired", protocol.Session{UnreadCount: 4, Muted: true, MuteUntil: now}, 4},
		{"deleted", protocol.Session{UnreadCount: 4, Deleted: true}, 0},
	}
	for _, c := range cases {
		if got := session.ObjectUnread(&c.s, now); got != c.want {
			t.Errorf("%s: ObjectUnread = %d, want %d", c.name, got, c.want)
		}
		if muted := session.ObjectMuted(&c.s, now); muted != (c.s.Muted && c.want == 0) {
			t.Errorf("%s: ObjectMuted = %v", c.name, muted)
		}
	}
}
