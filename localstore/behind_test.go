package localstore

import (
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
)

// The user's own message answered with a seq the device holds for another
// message (the server lost its history and numbers from 1 again) settles:
// it takes its seq, what the device held is set aside before it, in its
// order, and the note says the server is behind. A pushed message of
// another user at such a seq is noted too.
func TestOwnMessageNumberedBehindTheDeviceSettles(t *testing.T) {
	s, _ := openTemp(t)
	const conv = "d:alice:bob"
	if _, err := s.PutMessages([]protocol.Message{msg(conv, 1, "bob"), msg(conv, 2, "alice"), msg(conv, 3, "bob")}); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueOutbox(protocol.Message{Conv: conv, MsgID: "new-1", From: "alice", Body: "after the loss", ClientTS: 5000}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConfirmSent(conv, "new-1", 1, 5001); err != nil {
		t.Fatalf("the send does not settle: %v", err)
	}
	got, err := s.Messages(conv, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range got {
		bodies = append(bodies, m.Body)
	}
	want := []string{msg(conv, 1, "bob").Body, msg(conv, 2, "alice").Body, msg(conv, 3, "bob").Body, "after the loss"}
	if !slices.Equal(bodies, want) {
		t.Fatalf("the chat reads %q, want %q", bodies, want)
	}
	if got[3].Seq != 1 || got[3].Outbox || got[2].Seq >= 0 {
		t.Fatalf("seqs %v (outbox %v), want the set-aside ones negative and the new one at 1", seqs(got), got[3].Outbox)
	}
	if notes := s.TakeBehind(); len(notes) != 1 || notes[0] != (Behind{Conv: conv, Seq: 1, Held: 3}) {
		t.Fatalf("notes %+v, want the server behind in %s at 1, held up to 3", notes, conv)
	}
	if n := s.TakeBehind(); len(n) != 0 {
		t.Fatalf("the notes were taken twice: %+v", n)
	}

	// bob's next message is numbered 2 by that server: free now.
	if n, err := s.PutMessages([]protocol.Message{{Conv: conv, Seq: 2, MsgID: "new-2", From: "bob", Body: "welcome back"}}); err != nil || n != 1 {
		t.Fatalf("bob's new message: stored %d, %v", n, err)
	}
	// One at a seq still held is kept out, and noted.
	odd := protocol.Message{Conv: conv, Seq: 1, MsgID: "odd", From: "bob", Body: "odd"}
	if n, err := s.PutMessages([]protocol.Message{odd}); err != nil || n != 0 {
		t.Fatalf("odd: stored %d, %v", n, err)
	}
	if notes := s.TakeBehind(); len(notes) != 1 || notes[0].Conv != conv {
		t.Fatalf("notes %+v, want one for %s", notes, conv)
	}
}

// HeldConvs says what the server must hold at least: the newest seq it
// gave in each conversation, not the outbox, not messages set aside, not
// the notice the device writes when the user left a group.
func TestHeldConvsCountsOnlyWhatTheServerGave(t *testing.T) {
	s, _ := openTemp(t)
	const plain, unsent, shop, setAside, group = "d:alice:bob", "d:alice:carol", "d:alice:dave", "d:alice:erin", "g:team"
	mustPut(t, s, msg(plain, 1, "bob"), msg(plain, 2, "bob"), msg(plain, 3, "alice"))
	for _, conv := range []string{plain, unsent} {
		if err := s.EnqueueOutbox(protocol.Message{Conv: conv, MsgID: "out-" + conv, From: "alice", Body: "waiting", ClientTS: 9000}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutSessions([]protocol.Session{{Conv: shop, Kind: "direct", SubBiz: "shop", WriteSeq: 2, ActiveTS: 1, WriteTS: 1}}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, msg(shop, 1, "dave"), msg(shop, 2, "dave"))
	mustPut(t, s, msg(setAside, 1, "erin"), msg(setAside, 2, "erin"))
	if err := s.EnqueueOutbox(protocol.Message{Conv: setAside, MsgID: "new-1", From: "alice", Body: "after the loss", ClientTS: 9001}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConfirmSent(setAside, "new-1", 1, 9002); err != nil {
		t.Fatal(err)
	}
	s.TakeBehind()
	in := protocol.Session{Conv: group, Kind: "group", Title: "team", Members: []string{"alice", "bob"}, WriteSeq: 2, ActiveTS: 2, WriteTS: 2}
	if _, err := s.PutSessionsOf("alice", []protocol.Session{in}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, msg(group, 1, "bob"), msg(group, 2, "bob"))
	in.Members, in.ActiveTS = []string{}, 3
	if left, err := s.PutSessionsOf("alice", []protocol.Session{in}); err != nil || len(left) != 1 {
		t.Fatalf("leaving: %v, %v", left, err)
	}
	if held, err := s.Messages(group, 0, 10); err != nil || len(held) != 3 || held[2].Body != leftNotice {
		t.Fatalf("the group holds %+v, %v; want its two messages and the notice", held, err)
	}

	got, err := s.HeldConvs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Held{plain: {Newest: 3, MsgID: "m3"}, shop: {Newest: 2, MsgID: "m2", SubBiz: "shop"},
		setAside: {Newest: 1, MsgID: "new-1"}, group: {Newest: 2, MsgID: "m2"}}
	if len(got) != len(want) {
		t.Errorf("held %+v, want %+v", got, want)
	}
	for conv, w := range want {
		if got[conv] != w {
			t.Errorf("%s: held %+v, want %+v", conv, got[conv], w)
		}
	}
}
