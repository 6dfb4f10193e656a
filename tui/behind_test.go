package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// Messages the device set aside when the server came back behind it
// (negative seqs, before the server's history) were sent once: they show
// a sent tick, not the clock of a message waiting for the server.
func TestMessagesSetAsideShowSent(t *testing.T) {
	f := newFixture()
	f.AddMessages(bob,
		client.Message{Message: protocol.Message{Conv: bob, Seq: -1, MsgID: "old-1", From: "alice", Body: "kept from before", ClientTS: ms(-time.Hour)}},
	)
	h := newHarness(t, f, 100, 40)
	openBob(h)
	l := h.lineWith("kept from before")
	if strings.Contains(l, glyphPending) || !strings.HasSuffix(strings.TrimRight(l, " "), glyphSent) {
		t.Fatalf("a message set aside shows %q, want the sent tick %q", l, glyphSent)
	}
}
