package localstore

import (
	"testing"

	"github.com/imcore/im/protocol"
)

// TestPutSessionsOfNotesLeaving checks that a session saying the user is
// no longer a member of a group the stored one has him in records the
// notice once, at the seq after the last one the session had, as the
// session's last message, with the unread count kept.
func TestPutSessionsOfNotesLeaving(t *testing.T) {
	s, _ := openTemp(t)
	const g = "g:team"
	member := protocol.Session{Conv: g, Kind: "group", Title: "team", Members: []string{"alice", "bob"},
		WriteSeq: 7, ReadSeq: 5, UnreadCount: 2, ActiveTS: 10, WriteTS: 10}
	if left, err := s.PutSessionsOf("bob", []protocol.Session{member}); err != nil || len(left) != 0 {
		t.Fatalf("put as a member: %v, %v", left, err)
	}
	gone := member
	gone.Members, gone.ActiveTS = []string{}, 11
	left, err := s.PutSessionsOf("bob", []protocol.Session{gone})
	if err != nil || len(left) != 1 || left[0] != g {
		t.Fatalf("put removed = %v, %v; want [%s]", left, err, g)
	}
	msgs, err := s.Messages(g, 0, 10)
	if err != nil || len(msgs) != 1 || msgs[0].Seq != 8 || msgs[0].Kind != protocol.KindSystem || msgs[0].Body != leftNotice {
		t.Fatalf("messages after the removal = %+v, %v", msgs, err)
	}
	sess, _, err := s.Session(g)
	if err != nil || sess.LastMsg == nil || sess.LastMsg.Body != leftNotice || sess.WriteSeq != 8 || sess.UnreadCount != 2 {
		t.Fatalf("session after the removal = %+v, %v", sess, err)
	}
	// A later session of the same state notes nothing more.
	gone.ActiveTS = 12
	if left, err := s.PutSessionsOf("bob", []protocol.Session{gone}); err != nil || len(left) != 0 {
		t.Fatalf("put again = %v, %v", left, err)
	}
	if msgs, _ := s.Messages(g, 0, 10); len(msgs) != 1 {
		t.Fatalf("messages after a second put = %+v", msgs)
	}
}
