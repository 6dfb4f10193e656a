package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/client"
)

// firstMessageLine returns the first "message N" shown in the history.
func firstMessageLine(h *harness) string {
	for _, l := range strings.Split(h.screen(), "\n")[chatHeaderHeight:] {
		if i := strings.Index(l, "message "); i >= 0 {
			return strings.Fields(l[i:])[0] + " " + strings.Fields(l[i:])[1]
		}
	}
	return ""
}

// TestNewMessagesMarker checks that a message arriving while the user
// reads further up says so at the bottom of the history, "new message ↓",
// until the user is back at the bottom.
func TestNewMessagesMarker(t *testing.T) {
	f := historyFixture()
	h := newHarness(t, f, 80, 24)
	h.press("enter")
	h.lacks("↓")
	h.press("pgup", "pgup")
	f.AddMessages(bob, msg(bob, 201, "bob", "look at this", ms(time.Minute)))
	h.event(client.MessagesChanged{Conv: bob})
	h.contains("1 new message ↓")
	h.lacks("look at this")
	f.AddMessages(bob, msg(bob, 202, "bob", "and this", ms(2*time.Minute)))
	h.event(client.MessagesChanged{Conv: bob})
	h.contains("2 new messages ↓")
	h.checkGeometry()
	// At the bottom the marker goes, with the messages on screen.
	h.press("pgdown", "pgdown", "pgdown")
	h.contains("look at this", "and this")
	h.lacks("new message")
	// Following the bottom, new messages show without a marker.
	f.AddMessages(bob, msg(bob, 203, "bob", "one more", ms(3*time.Minute)))
	h.event(client.MessagesChanged{Conv: bob})
	h.contains("one more")
	h.lacks("new message")
}

// TestReopeningAChatReturnsToWhereTheUserWas checks that a chat left while
// reading further up opens again at the same place, even with new messages
// since.
func TestReopeningAChatReturnsToWhereTheUserWas(t *testing.T) {
	f := historyFixture()
	h := newHarness(t, f, 80, 24)
	h.press("enter")
	for range 12 {
		h.press("pgup")
	}
	before := firstMessageLine(h)
	if before == "" || before == "message 200" {
		t.Fatalf("scrolled to %q", before)
	}
	h.press("esc") // 80 columns: the chat closes
	for s := int64(201); s <= 260; s++ {
		f.AddMessages(bob, msg(bob, s, "bob", fmt.Sprintf("message %d", s), ms(time.Duration(s-200)*time.Minute)))
	}
	h.press("enter")
	if got := firstMessageLine(h); got != before {
		t.Fatalf("reopened at %q, want %q where the user left", got, before)
	}
	// A chat left at the bottom opens at the bottom.
	h.press("tab", "G", "esc", "enter")
	h.contains("message 260")
}
