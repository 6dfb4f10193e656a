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
