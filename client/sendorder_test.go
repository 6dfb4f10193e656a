package client

import (
	"fmt"
	"testing"
	"time"

	"github.com/imcore/im/internal/fakeserver"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// A message whose first send may have been stored (the connection dropped
// before sent) stays in the chat when its retry is refused for good (the
// user was removed from the group meanwhile).
func TestRefusedRetryKeepsPossiblyStoredMessage(t *testing.T) {
	env := servertest.Start(t)
	bob := env.Dial(t, "bob", "phone")
	g := bob.RequestOK(&protocol.CreateGroup{Title: "team", Members: []string{"alice", "carol"}}).(*protocol.Group)

	alice := newProfile(t, env.URL, "alice", "")
	alice.net.tripOnce(`"type":"sent"`)
	alice.start()
	alice.waitOnline()
	alice.net.refuse.Store(true) // she walks into a lift
	sent, err := alice.client.Send(g.Conv, "I'll bring the slides")
	if err != nil {
		t.Fatal(err)
	}
	alice.waitFor("the cut", func() bool { return alice.net.trips.Load() == 1 && alice.client.Conn().State == Offline })
	stored := false
	for _, m := range serverHistory(t, env, g.Conv) {
		stored = stored || m.MsgID == sent.MsgID
	}
	if !stored {
		t.Fatal("the server did not store the message before the cut")
	}
	bob.RequestOK(&protocol.GroupOp{Conv: g.Conv, Op: "remove", Users: []string{"alice"}})

	alice.net.refuse.Store(false)
	alice.waitOutboxEmpty()
	for _, m := range alice.messages(g.Conv) {
		if m.MsgID == sent.MsgID {
			return
		}
	}
	t.Fatalf("alice's chat lost her message %s, which the server stored and the group saw", sent.MsgID)
}

// The server stores a conversation's outbox messages in the order they
// were written, even when it refuses one for a passing reason: the next
// waits until the refused one is stored.
func TestRateLimitedSendKeepsOutboxOrder(t *testing.T) {
	const dm = "d:alice:bob"
	once := onlyOnce()
	srv := fakeserver.Start(t, fakeserver.Options{Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
		s, ok := f.(*protocol.Send)
		if ok && once() {
			c.Push(&protocol.ErrorFrame{Ref: s.Ref, Code: protocol.CodeRateLimited, Message: "too many frames; slow down"})
			return true
		}
		return false
	}})
	alice := newProfile(t, srv.URL, "alice", "")
	first, err := alice.client.Send(dm, "are you coming?")
	if err != nil {
		t.Fatal(err)
	}
	second, err := alice.client.Send(dm, "no")
	if err != nil {
		t.Fatal(err)
	}
	alice.start()
	alice.waitOutboxEmpty()
	msgs := alice.messages(dm)
	if len(msgs) != 2 || msgs[0].MsgID != first.MsgID || msgs[1].MsgID != second.MsgID {
		var got []string
		for _, m := range msgs {
			got = append(got, fmt.Sprintf("%d:%q", m.Seq, m.Body))
		}
		t.Fatalf("the chat reads %v, written in the other order", got)
	}
}

// A chat started while the server cannot be reached is in the session
// list at once, and after a restart, through a placeholder session.
func TestChatStartedOfflineIsListedAfterRestart(t *testing.T) {
	alice := newProfile(t, "ws://127.0.0.1:1/ws", "alice", "")
	alice.net.refuse.Store(true)
	dm := conv(t, "alice", "carol")
	if _, err := alice.client.Send(dm, "hi carol, long time"); err != nil {
		t.Fatal(err)
	}
	path := alice.path
	alice.close()

	alice = newProfile(t, "ws://127.0.0.1:1/ws", "alice", path)
	alice.net.refuse.Store(true)
	if got := alice.messages(dm); len(got) != 1 || !got[0].Outbox {
		t.Fatalf("chat %+v", got)
	}
	list, _, err := alice.client.Sessions("")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Conv == dm {
			return
		}
	}
	t.Fatalf("the list (%d sessions) does not show the chat holding the unsent message", len(list))
}

// Messages written within one millisecond keep the order they were
// written in: each takes a later client_ts and a later msg_id than the one
// before, and the chat and the outbox list them in that order.
func TestSendsInOneMillisecondKeepTheirOrder(t *testing.T) {
	const dm = "d:alice:bob"
	frozen := time.Date(2026, 3, 14, 15, 30, 0, 0, time.UTC)
	alice := newProfile(t, "ws://127.0.0.1:1/ws", "alice", "", func(c *Config) { c.Now = func() time.Time { return frozen } })
	var want []string
	for i := range 5 {
		body := fmt.Sprintf("b1-%d", i+1)
		want = append(want, body)
		if _, err := alice.client.Send(dm, body); err != nil {
			t.Fatal(err)
		}
	}
	msgs := alice.messages(dm)
	box, err := alice.store.Outbox()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != len(want) || len(box) != len(want) {
		t.Fatalf("%d messages in the chat, %d in the outbox, want %d", len(msgs), len(box), len(want))
	}
	for i := range want {
		if msgs[i].Body != want[i] || box[i].Body != want[i] {
			t.Fatalf("message %d is %q in the chat and %q in the outbox, want %q", i, msgs[i].Body, box[i].Body, want[i])
		}
		if i > 0 && (msgs[i].ClientTS <= msgs[i-1].ClientTS || msgs[i].MsgID <= msgs[i-1].MsgID) {
			t.Fatalf("%q (client_ts %d, %s) does not come after %q (client_ts %d, %s)",
				msgs[i].Body, msgs[i].ClientTS, msgs[i].MsgID, msgs[i-1].Body, msgs[i-1].ClientTS, msgs[i-1].MsgID)
		}
	}
}
