package server_test

import (
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// A msg_id belongs to the user who used it first in its conversation:
// another member's send with it is invalid, changes nothing, and never
// returns the first user's message as the second's.
func TestForeignMsgIDIsInvalid(t *testing.T) {
	env := servertest.Start(t)
	const conv = "d:bob:mallory"
	mallory := env.Dial(t, "mallory", "m")
	bob := env.Dial(t, "bob", "b")

	first := mallory.Send(conv, "bob-0001", "planted by mallory")
	bob.ExpectMsg(conv)

	e := bob.RequestError(&protocol.Send{Conv: conv, MsgID: "bob-0001", Body: "bob's real text"}, protocol.CodeInvalid)
	if !strings.Contains(e.Message, "msg_id already used") {
		t.Errorf("error message %q does not say the msg_id is taken", e.Message)
	}
	// Nothing changed: one message, mallory's; no push to mallory.
	mallory.ExpectNone("msg", servertest.OfType("msg"))
	page := bob.RequestOK(&protocol.History{Conv: conv}).(*protocol.Messages)
	if len(page.Messages) != 1 || page.Messages[0].From != "mallory" || page.Messages[0].Seq != first.Seq {
		t.Fatalf("history after the refused send: %+v", page.Messages)
	}
	// Bob's own retry of his own key is still idempotent.
	again := bob.Send(conv, "bob-0002", "mine")
	if dup := bob.Send(conv, "bob-0002", "mine, retried"); dup.Seq != again.Seq || dup.ServerTS != again.ServerTS {
		t.Fatalf("retry of bob's own key: %+v, want %+v", dup, again)
	}
	// And mallory cannot claim it either.
	mallory.RequestError(&protocol.Send{Conv: conv, MsgID: "bob-0002", Body: "x"}, protocol.CodeInvalid)
}
