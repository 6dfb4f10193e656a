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

// TestPutSessionsOfKeepsThePushedRemoval checks that a device pushed the
// server's message of its user's removal keeps it as the chat's last line
// and the session's last message when the session sync tells of the
// removal: no notice of its own after it, and nothing left unread (the
// server cleared the unread, and the user may not send a read there).
func TestPutSessionsOfKeepsThePushedRemoval(t *testing.T) {
	s, _ := openTemp(t)
	const g = "g:team"
	member := protocol.Session{Conv: g, Kind: "group", Title: "team", Members: []string{"bob", "carol"},
		WriteSeq: 7, ReadSeq: 7, ActiveTS: 10, WriteTS: 10}
	if _, err := s.PutSessionsOf("bob", []protocol.Session{member}); err != nil {
		t.Fatal(err)
	}
	removal := protocol.Message{Conv: g, Seq: 8, MsgID: "sys-1", From: "carol", Body: "carol removed bob",
		Kind: protocol.KindSystem, ClientTS: 20, ServerTS: 20}
	if _, err := s.PutNewMessages([]protocol.Message{removal}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyMessages([]protocol.Message{removal}, "bob"); err != nil {
		t.Fatal(err)
	}
	// A system message is an event, not unread (PROTOCOL.md, Sessions);
	// it is the session's last message all the same.
	if sess, _, _ := s.Session(g); sess.UnreadCount != 0 || sess.WriteSeq != 8 || sess.LastMsg == nil || sess.LastMsg.MsgID != "sys-1" {
		t.Fatalf("before the sync: unread %d, write_seq %d, last %+v; want 0, 8 and the removal", sess.UnreadCount, sess.WriteSeq, sess.LastMsg)
	}
	// The server's session of the removed member: as it was, no members.
	gone := member
	gone.Members, gone.ActiveTS = []string{}, 11
	left, err := s.PutSessionsOf("bob", []protocol.Session{gone})
	if err != nil || len(left) != 1 || left[0] != g {
		t.Fatalf("put removed = %v, %v; want [%s]", left, err, g)
	}
	msgs, err := s.Messages(g, 0, 10)
	if err != nil || len(msgs) != 1 || msgs[0].MsgID != "sys-1" || msgs[0].Body != "carol removed bob" {
		t.Fatalf("messages after the removal = %+v, %v; want the pushed removal alone", msgs, err)
	}
	sess, _, err := s.Session(g)
	if err != nil || sess.LastMsg == nil || sess.LastMsg.MsgID != "sys-1" || sess.WriteSeq != 8 || sess.UnreadCount != 0 || len(sess.Members) != 0 {
		t.Fatalf("session after the removal = %+v, %v", sess, err)
	}
}

// TestPushedRemovalReplacesTheNotice checks that the server's message of
// the user's removal, pushed after the session sync that told of it (the
// device wrote its own notice then), takes the notice's place in the chat
// and as the session's last message, without saying the server is behind.
func TestPushedRemovalReplacesTheNotice(t *testing.T) {
	s, _ := openTemp(t)
	const g = "g:team"
	member := protocol.Session{Conv: g, Kind: "group", Title: "team", Members: []string{"bob", "carol"},
		WriteSeq: 7, ReadSeq: 7, ActiveTS: 10, WriteTS: 10}
	if _, err := s.PutSessionsOf("bob", []protocol.Session{member}); err != nil {
		t.Fatal(err)
	}
	gone := member
	gone.Members, gone.ActiveTS = []string{}, 11
	if _, err := s.PutSessionsOf("bob", []protocol.Session{gone}); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := s.Messages(g, 0, 10); len(msgs) != 1 || msgs[0].Body != leftNotice {
		t.Fatalf("messages after the sync = %+v, want the notice", msgs)
	}
	removal := protocol.Message{Conv: g, Seq: 8, MsgID: "sys-1", From: "carol", Body: "carol removed bob",
		Kind: protocol.KindSystem, ClientTS: 20, ServerTS: 20}
	fresh, err := s.PutNewMessages([]protocol.Message{removal})
	if err != nil || len(fresh) != 1 {
		t.Fatalf("put the pushed removal = %v, %v", fresh, err)
	}
	if _, err := s.ApplyMessages([]protocol.Message{removal}, "bob"); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Messages(g, 0, 10)
	if err != nil || len(msgs) != 1 || msgs[0].MsgID != "sys-1" || msgs[0].Body != "carol removed bob" || msgs[0].From != "carol" {
		t.Fatalf("messages after the push = %+v, %v; want the pushed removal in the notice's place", msgs, err)
	}
	sess, _, err := s.Session(g)
	if err != nil || sess.LastMsg == nil || sess.LastMsg.MsgID != "sys-1" || sess.WriteSeq != 8 || sess.UnreadCount != 0 {
		t.Fatalf("session after the push = %+v, %v", sess, err)
	}
	if b := s.TakeBehind(); len(b) != 0 {
		t.Fatalf("the store says the server is behind: %+v", b)
	}
	if hits, err := s.SearchMessages(g, "removed", 10); err != nil || len(hits) != 1 {
		t.Fatalf("search for the removal = %+v, %v", hits, err)
	}
}
