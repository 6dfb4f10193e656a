package localstore

import (
	"errors"
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
)

func outgoing(msgID, body string) protocol.Message {
	return protocol.Message{Conv: conv, MsgID: msgID, From: "alice", Body: body, ClientTS: 5}
}

func TestOutboxMessagesShowAtTheEndUntilSent(t *testing.T) {
	s, _ := openTemp(t)
	mustPut(t, s, msg(conv, 1, "bob"), msg(conv, 2, "bob"))
	for _, id := range []string{"o1", "o2"} {
		if err := s.EnqueueOutbox(outgoing(id, "hi "+id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.EnqueueOutbox(outgoing("o1", "again")); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Messages(conv, 0, 50)
	if !slices.Equal(seqs(got), []int64{1, 2, 0, 0}) || got[2].MsgID != "o1" || !got[3].Outbox || got[2].Body != "hi o1" {
		t.Fatalf("chat = %+v", got)
	}
	if older, _ := s.Messages(conv, 2, 50); len(older) != 1 {
		t.Fatalf("a page below a seq holds outbox messages: %+v", older)
	}
	box, err := s.Outbox()
	if err != nil || len(box) != 2 || box[0].MsgID != "o1" || box[1].MsgID != "o2" {
		t.Fatalf("outbox = %+v, %v", box, err)
	}

	// A push of another message takes seq 3; o1's sent says seq 4.
	mustPut(t, s, msg(conv, 3, "bob"))
	stored, err := s.ConfirmSent(conv, "o1", 4, 2000)
	if err != nil || stored.Seq != 4 || stored.From != "alice" || stored.Body != "hi o1" {
		t.Fatalf("ConfirmSent = %+v, %v", stored, err)
	}
	if _, err := s.ConfirmSent(conv, "o1", 4, 2000); !errors.Is(err, ErrNotInOutbox) {
		t.Fatalf("a repeated sent: %v, want ErrNotInOutbox", err)
	}
	got, _ = s.Messages(conv, 0, 50)
	if !slices.Equal(seqs(got), []int64{1, 2, 3, 4, 0}) || got[4].MsgID != "o2" {
		t.Fatalf("chat after sent = %+v", got)
	}
	if synced, _ := s.SyncedSeq(conv); synced != 4 {
		t.Fatalf("synced seq = %d, want 4", synced)
	}
	if box, _ := s.Outbox(); len(box) != 1 || box[0].MsgID != "o2" {
		t.Fatalf("outbox after sent = %+v", box)
	}
}

func TestOutboxMessageArrivingByHistoryIsStoredOnce(t *testing.T) {
	s, _ := openTemp(t)
	if err := s.EnqueueOutbox(outgoing("o1", "hi")); err != nil {
		t.Fatal(err)
	}
	// The sent answer was lost; a history page brings the message.
	m := outgoing("o1", "hi")
	m.Seq, m.ServerTS = 1, 99
	if n := mustPut(t, s, m); n != 1 {
		t.Fatalf("stored %d", n)
	}
	got, _ := s.Messages(conv, 0, 50)
	if len(got) != 1 || got[0].Seq != 1 || got[0].Outbox {
		t.Fatalf("chat = %+v", got)
	}
	// The retry's sent still takes it out of the outbox, not doubling it.
	if _, err := s.ConfirmSent(conv, "o1", 1, 99); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Messages(conv, 0, 50)
	box, _ := s.Outbox()
	if len(got) != 1 || len(box) != 0 {
		t.Fatalf("chat %+v, outbox %+v", got, box)
	}
}

func TestOutboxSurvivesReopen(t *testing.T) {
	s, path := openTemp(t)
	if err := s.EnqueueOutbox(outgoing("o1", "hi")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	box, _ := again.Outbox()
	if len(box) != 1 || box[0] != (OutboxItem{Conv: conv, MsgID: "o1", Body: "hi", ClientTS: 5}) {
		t.Fatalf("outbox after reopen = %+v", box)
	}
}

func TestRemoveAndDropOutbox(t *testing.T) {
	s, _ := openTemp(t)
	s.EnqueueOutbox(outgoing("keep", "a"))
	s.EnqueueOutbox(outgoing("drop", "b"))
	if err := s.RemoveOutbox(conv, "keep"); err != nil {
		t.Fatal(err)
	}
	if err := s.DropOutbox(conv, "drop"); err != nil {
		t.Fatal(err)
	}
	box, _ := s.Outbox()
	got, _ := s.Messages(conv, 0, 10)
	if len(box) != 0 || len(got) != 1 || got[0].MsgID != "keep" {
		t.Fatalf("outbox %+v, chat %+v", box, got)
	}
}

// TestListShowsTheOutbox checks that a message waiting in the outbox is
// its session's last message in the list (seq 0: not sent yet) and moves
// the session up as a new message does, before the server answers and
// after a restart.
func TestListShowsTheOutbox(t *testing.T) {
	s, path := openTemp(t)
	bobs := testSession(conv, 1, 100, 0)
	older := msg(conv, 3, "alice")
	bobs.WriteSeq, bobs.ReadSeq, bobs.LastMsg = 3, 3, &older
	mustPutSessions(t, s, bobs, testSession("d:alice:carol", 2, 200, 0))
	if err := s.EnqueueOutbox(protocol.Message{Conv: conv, MsgID: "o1", From: "alice", Body: "second offline message", ClientTS: 300}); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store, when string) {
		t.Helper()
		list, err := s.Sessions("")
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].Conv != conv {
			t.Fatalf("%s: list %v, want %s first (its outbox message is the newest)", when, convsOf(list), conv)
		}
		if lm := list[0].LastMsg; lm == nil || lm.Body != "second offline message" || lm.Seq != 0 || lm.From != "alice" {
			t.Fatalf("%s: last message %+v, want the outbox message", when, lm)
		}
	}
	check(s, "queued")
	s.Close()
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	check(again, "after a restart")

	// Once sent, it is the stored message it became.
	m, err := again.ConfirmSent(conv, "o1", 4, 400)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.ApplyMessages([]protocol.Message{m}, "alice"); err != nil {
		t.Fatal(err)
	}
	if lm := mustSession(t, again, conv).LastMsg; lm == nil || lm.Seq != 4 {
		t.Fatalf("after sent: last message %+v", lm)
	}
	list, _ := again.Sessions("")
	if list[0].Conv != conv || list[0].LastMsg.Seq != 4 {
		t.Fatalf("after sent: list %v, last %+v", convsOf(list), list[0].LastMsg)
	}
}

// TestOutboxBringsADeletedSessionBack checks that writing in a chat the
// user deleted brings it back to the list at once, as the server will.
func TestOutboxBringsADeletedSessionBack(t *testing.T) {
	s, _ := openTemp(t)
	gone := testSession(conv, 1, 100, 0)
	gone.Deleted = true
	mustPutSessions(t, s, gone)
	if err := s.EnqueueOutbox(outgoing("o1", "back again")); err != nil {
		t.Fatal(err)
	}
	list, _ := s.Sessions("")
	if len(list) != 1 || list[0].Conv != conv || list[0].LastMsg == nil || list[0].LastMsg.Body != "back again" {
		t.Fatalf("list = %+v", list)
	}
}
