package client

import (
	"errors"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// A message sent while the server cannot be reached waits in the outbox,
// survives closing the client and its database, and once a connection is
// made reaches the peer exactly once.
func TestOfflineOutboxSurvivesRestartAndIsDeliveredOnce(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	bob := newProfile(t, env.URL, "bob", "").start()

	alice := newProfile(t, env.URL, "alice", "")
	alice.net.refuse.Store(true)
	sent, err := alice.client.Send(dm, "written offline")
	if err != nil {
		t.Fatalf("send offline: %v", err)
	}
	if !sent.Outbox || sent.Seq != 0 || sent.From != "alice" {
		t.Fatalf("offline send returned %+v", sent)
	}
	alice.start()
	alice.waitFor("an offline state with a retry time", func() bool {
		c := alice.client.Conn()
		return c.State == Offline && !c.RetryAt.IsZero() && errors.Is(c.Err, errRefused)
	})
	if got := alice.messages(dm); len(got) != 1 || !got[0].Outbox {
		t.Fatalf("chat while offline: %+v", got)
	}
	path := alice.path
	alice.close()

	alice = newProfile(t, env.URL, "alice", path).start()
	alice.waitOutboxEmpty()
	if got := alice.messages(dm); len(got) != 1 || got[0].Outbox || got[0].Seq != 1 || got[0].MsgID != sent.MsgID {
		t.Fatalf("alice's chat after sent: %+v", got)
	}
	alice.waitFor("the new chat in the list", func() bool {
		list, _, _ := alice.client.Sessions("")
		return len(list) == 1 && list[0].Conv == dm && list[0].LastMsg != nil && list[0].LastMsg.MsgID == sent.MsgID
	})
	bob.waitFor("alice's message", func() bool { return len(bob.messages(dm)) > 0 })
	got := bob.messages(dm)
	if len(got) != 1 || got[0].Body != "written offline" || got[0].MsgID != sent.MsgID {
		t.Fatalf("bob holds %+v", got)
	}
	if history := serverHistory(t, env, dm); len(history) != 1 {
		t.Fatalf("the server stores %d messages, want 1", len(history))
	}
}

// When the connection drops after the server stored a message but before
// its sent answer arrived, the retry (same msg_id) does not double it.
func TestLostSentAnswerIsNotDoubled(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	bob := newProfile(t, env.URL, "bob", "").start()
	alice := newProfile(t, env.URL, "alice", "")
	alice.net.tripOnce(`"type":"sent"`)
	if _, err := alice.client.Send(dm, "once"); err != nil {
		t.Fatal(err)
	}
	alice.start()
	alice.waitOutboxEmpty()
	if alice.net.trips.Load() != 1 {
		t.Fatalf("the sent answer was not cut (trips: %d)", alice.net.trips.Load())
	}
	if got := alice.messages(dm); len(got) != 1 || got[0].Seq != 1 {
		t.Fatalf("alice holds %+v", got)
	}
	bob.waitFor("alice's message", func() bool { return len(bob.messages(dm)) > 0 })
	if history := serverHistory(t, env, dm); len(history) != 1 {
		t.Fatalf("the server stores %d messages, want 1: %+v", len(history), history)
	}
	if got := bob.messages(dm); len(got) != 1 {
		t.Fatalf("bob holds %+v", got)
	}
	if got := alice.client.sentCount("send"); got != 2 {
		t.Errorf("alice sent %d send frames, want 2 (the first and its retry)", got)
	}
}

// A send the server refuses for good (not a member) leaves the outbox and
// the chat, and is reported.
func TestRefusedSendIsDroppedAndReported(t *testing.T) {
	env := servertest.Start(t)
	alice := newProfile(t, env.URL, "alice", "").startOnline()
	others := conv(t, "bob", "carol")
	if _, err := alice.client.Send(others, "not mine"); err != nil {
		t.Fatal(err)
	}
	e := alice.waitEvent("a refused send", func(e Event) bool { ev, ok := e.(ErrorEvent); return ok && ev.Op == "send" }).(ErrorEvent)
	var perr *protocol.Error
	if !errors.As(e.Err, &perr) || perr.Code != protocol.CodeForbidden {
		t.Fatalf("error %v, want forbidden", e.Err)
	}
	box, _ := alice.store.Outbox()
	if len(box) != 0 || len(alice.messages(others)) != 0 {
		t.Fatalf("outbox %+v, chat %+v", box, alice.messages(others))
	}
	// Its text comes back, for the UI to keep it as the chat's draft.
	r := alice.waitEvent("the refused text", func(e Event) bool { _, ok := e.(SendRefused); return ok }).(SendRefused)
	if r.Conv != others || r.Body != "not mine" || r.Kept {
		t.Fatalf("SendRefused = %+v", r)
	}
}

// Local failures of Send are returned at once.
func TestSendChecksLocally(t *testing.T) {
	alice := newProfile(t, "ws://127.0.0.1:1/ws", "alice", "")
	for _, tc := range []struct{ conv, body string }{
		{"d:bob:alice", "wrong order"},
		{"biz:shop", "a gateway"},
		{conv(t, "alice", "bob"), ""},
		{conv(t, "alice", "bob"), string(make([]byte, protocol.DefaultMaxBody+1))},
	} {
		if _, err := alice.client.Send(tc.conv, tc.body); err == nil {
			t.Errorf("Send(%q, %d bytes) succeeded", tc.conv, len(tc.body))
		}
	}
}
