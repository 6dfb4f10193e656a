package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// TestFailedSendIsFlagged checks that an own message the server refused
// after it may have stored it stays in the chat, flagged as not sent in
// the error colour instead of showing a tick.
func TestFailedSendIsFlagged(t *testing.T) {
	f := newFixture()
	f.AddMessages(bob,
		msg(bob, 13, "alice", "stored one", ms(-2*time.Minute)),
		client.Message{Message: protocol.Message{Conv: bob, MsgID: "out-f", From: "alice", Body: "refused one",
			ClientTS: ms(-time.Minute)}, Failed: true},
	)
	h := newHarness(t, f, 100, 40)
	openBob(h)
	l := h.lineWith("refused one")
	if !strings.HasSuffix(strings.TrimRight(l, " "), glyphFailed) {
		t.Fatalf("a failed send should end in %q: %q", glyphFailed, l)
	}
	if strings.Contains(l, glyphPending) || strings.Contains(l, glyphSent) {
		t.Errorf("a failed send shows a tick too: %q", l)
	}
	if raw := h.rawLineWith("refused one"); !strings.Contains(raw, "38;2;241;92;109") { // colErr
		t.Errorf("failed mark not in the error colour: %q", raw)
	}
}
