package client

import (
	"testing"

	"github.com/imcore/im/server/servertest"
)

// TestIncomingReportsNewMessagesFromOthers checks that a message pushed
// from another user is reported once as Incoming, and that the user's own
// message from another device is not.
func TestIncomingReportsNewMessagesFromOthers(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	alice := newProfile(t, env.URL, "alice", "").startOnline()
	env.Dial(t, "alice", "tablet").Send(dm, "a1", "from my tablet")
	env.Dial(t, "bob", "b").Send(dm, "b1", "hello alice")
	e := alice.waitEvent("bob's message reported", func(e Event) bool { _, ok := e.(Incoming); return ok }).(Incoming)
	if e.Conv != dm || e.Count != 1 || e.Last.Body != "hello alice" || e.Last.From != "bob" {
		t.Fatalf("Incoming = %+v, want bob's one message", e)
	}
}
