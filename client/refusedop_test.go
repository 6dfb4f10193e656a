package client

import (
	"strings"
	"testing"

	"github.com/imcore/im/internal/fakeserver"
	"github.com/imcore/im/protocol"
)

// A session operation the server refuses for good is undone on the device:
// the folder a refused set_category showed is gone, after the refusal and
// after a restart, while the server kept the session as it was.
func TestRefusedSessionOpIsUndone(t *testing.T) {
	const dm = "d:alice:bob"
	srv := fakeserver.Start(t, fakeserver.Options{Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
		op, ok := f.(*protocol.SessionOp)
		if !ok {
			return false
		}
		c.Push(&protocol.ErrorFrame{Ref: op.Ref, Code: protocol.CodeForbidden, Message: "not allowed here"})
		return true
	}})
	alice := newProfile(t, srv.URL, "alice", "")
	if err := alice.store.PutSessions([]protocol.Session{{Conv: dm, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"}, ActiveTS: 5, WriteTS: 5}}); err != nil {
		t.Fatal(err)
	}
	alice.client.SessionOp(dm, "set_category", 0, "work")
	if s, _ := alice.session(dm); s.Category != "work" {
		t.Fatalf("the folder does not show at once: category %q", s.Category)
	}
	alice.start()
	alice.waitFor("the refusal to be handled", func() bool {
		ops, err := alice.store.PendingOps()
		return err == nil && len(ops) == 0
	})
	if s, _ := alice.session(dm); s.Category != "" {
		t.Fatalf("after the refusal the device still files the chat under %q", s.Category)
	}
	path := alice.path
	alice.close()
	alice = newProfile(t, srv.URL, "alice", path)
	if s, _ := alice.session(dm); s.Category != "" {
		t.Fatalf("after a restart the device files the chat under %q", s.Category)
	}
}

// A folder name the server's rule refuses is refused at once, on the
// device, with the rule: nothing is shown, kept or sent.
func TestInvalidFolderNameIsRefusedOnTheDevice(t *testing.T) {
	const dm = "d:alice:bob"
	alice := newProfile(t, "ws://127.0.0.1:1/ws", "alice", "")
	if err := alice.store.PutSessions([]protocol.Session{{Conv: dm, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"}, ActiveTS: 5, WriteTS: 5}}); err != nil {
		t.Fatal(err)
	}
	alice.client.SessionOp(dm, "set_category", 0, "Work Stuff")
	ev := alice.waitEvent("the refusal", func(e Event) bool { _, ok := e.(ErrorEvent); return ok }).(ErrorEvent)
	if ev.Err == nil || !containsAny(ev.Err.Error(), "a-z") {
		t.Fatalf("the refusal does not say the rule: %v", ev.Err)
	}
	if s, _ := alice.session(dm); s.Category != "" {
		t.Fatalf("the refused name shows: category %q", s.Category)
	}
	if ops, err := alice.store.PendingOps(); err != nil || len(ops) != 0 {
		t.Fatalf("the refused name is kept to send: %v %v", ops, err)
	}
}

// containsAny reports whether s holds any of subs.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
