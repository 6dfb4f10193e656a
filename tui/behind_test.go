package tui

import (
	"fmt"
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

// The warning the client gives on connecting to a server behind the
// device reads in a 78-column status bar, and its key shows it whole:
// how many conversations, and that the device keeps what it holds.
func TestServerBehindWarningReadsInTheStatusBar(t *testing.T) {
	f := statusFake()
	h := newHarness(t, f, 78, 24)
	h.event(client.ConnChanged{Conn: client.Conn{State: client.Online}})
	warning := fmt.Errorf("%w in 2 conversations (d:alice:bob, d:alice:carol): it holds less than this device (it lost messages?); the device keeps what it holds", client.ErrServerBehind)
	h.event(client.ErrorEvent{Op: "sync", Err: warning})
	bar := h.lineWith("● online")
	if !strings.Contains(bar, "history is behind this device's in 2") || !strings.Contains(bar, "ctrl+x") {
		t.Fatalf("the status bar reads %q, want the warning's start and the key that shows it", bar)
	}
	h.showsWhole("conversations (d:alice:bob, d:alice:carol)", "the device keeps what it holds")
	h.checkGeometry()
}
