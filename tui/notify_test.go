package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
)

// incoming is an client report of one new message in conv.
func incoming(conv string, seq int64, from, body string) client.Incoming {
	return client.Incoming{Conv: conv, Count: 1, Last: msg(conv, seq, from, body, ms(0)).Message}
}

// TestNotifiesOfMessagesElsewhere checks that a message from someone else
// that is not on screen rings the bell and asks the terminal for a desktop
// notification (OSC 9 and OSC 777), unless its chat is muted; in the
// narrow layout the open chat says where it came.
func TestNotifiesOfMessagesElsewhere(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 80, 24)
	openBob(h)

	// In the open chat, on screen: nothing to ring.
	h.event(incoming(bob, 13, "bob", "you there?"))
	if len(h.raws) != 0 {
		t.Fatalf("a message on screen rang: %q", h.raws)
	}
	// A muted chat: nothing either.
	h.event(incoming("d:alice:carol", 7, "carol", "lunch now?"))
	if len(h.raws) != 0 {
		t.Fatalf("a muted chat rang: %q", h.raws)
	}
	h.lacks("new message in carol")

	// Elsewhere: the bell and both desktop notifications, sanitized.
	h.event(incoming("d:alice:dave", 5, "dave", "call me\x1b]52;c;evil\x07 back"))
	out := strings.Join(h.raws, "")
	for _, want := range []string{"\a", "\x1b]9;dave: call me back\x07", "\x1b]777;notify;dave;call me back\x07"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q: %q", want, out)
		}
	}
	if strings.Contains(out, "52;c") {
		t.Errorf("a peer's escape sequence reached the notification: %q", out)
	}
	// Narrow, the list is not on screen: the chat says where it came.
	h.contains("new message in dave")
	h.checkGeometry()
	h.press("esc")
	h.lacks("new message in dave")

	// The terminal without focus: even the open chat rings.
	h.raws = nil
	h.press("j", "enter") // dave
	h.send(tea.BlurMsg{})
	h.event(incoming("d:alice:dave", 6, "dave", "hello?"))
	if len(h.raws) == 0 {
		t.Fatal("a message in the open chat of an unfocused terminal did not ring")
	}

	// Turned off: no bell, no desktop notification; the hint stays.
	f2 := newFixture()
	h2 := newHarnessOpts(t, f2, 80, 24, Options{NoNotify: true})
	openBob(h2)
	h2.event(incoming("d:alice:dave", 5, "dave", "call me"))
	if len(h2.raws) != 0 {
		t.Fatalf("NoNotify rang: %q", h2.raws)
	}
	h2.contains("new message in dave")
}
