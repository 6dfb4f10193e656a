package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// TestListFilterByTitle checks that / in the list filters the chats by
// title as the user types, chats inside folders included; enter opens the
// chat under the cursor, esc gives the whole list back.
func TestListFilterByTitle(t *testing.T) {
	h := newHarness(t, newFixture(), 80, 24)
	h.press("/")
	h.typeText("e")
	h.contains("/ e", "👤 erin", "👥 team", "👤 dave") // erin lives in the folder work
	h.lacks("👤 bob", "📁 work")
	h.typeText("r")
	h.contains("👤 erin")
	h.lacks("👥 team", "👤 dave")
	h.press("esc")
	h.contains("👤 bob", "📁 work")
	h.lacks("/ er")

	// Case does not matter, a paste is typed too; enter opens the chat
	// under the cursor.
	h.press("/")
	h.send(tea.PasteMsg{Content: "YUK"})
	h.press("enter")
	if h.m.chat.conv() != "d:alice:yuki" {
		t.Fatalf("enter opened %q, want yuki's chat", h.m.chat.conv())
	}
	h.press("esc")
	h.lacks("/ YUK") // the filter ends with the chat it opened
	h.contains("👤 bob")

	// Nothing found says so. What is typed is text, q and ? included.
	h.press("/")
	h.typeText("zq?")
	if h.quit {
		t.Fatal("q in the search field quit")
	}
	h.contains("/ zq?", "No chat titled like “zq?”.")
	h.checkGeometry()
}

// TestSearchMessagesJumpsToAHit checks that / in a chat's history searches
// the messages stored on this device and that choosing a hit shows it,
// selected, with the history around it loaded.
func TestSearchMessagesJumpsToAHit(t *testing.T) {
	f := historyFixture()
	h := newHarness(t, f, 80, 24)
	h.press("enter", "tab")
	h.press("/")
	h.contains("Search in bob")
	h.typeText("message 9")
	if c := f.CallsOf("SearchMessages"); len(c) == 0 || c[len(c)-1].Body != "message 9" {
		t.Fatalf("SearchMessages calls %v", c)
	}
	// Hits newest first: 99, 98, ... 90.
	h.contains("message 99", "message 90")
	h.press("down", "enter") // the second hit: message 98
	h.lacks("Search in bob")
	c := h.m.chat.c
	if c.sel < 0 || c.msgs[c.sel].Seq != 98 || h.m.focusArea() != focusHistory {
		t.Fatalf("after the jump: selection %d (focus %v)", c.sel, h.m.focusArea())
	}
	if !c.visible(c.msgLine[c.sel]) {
		t.Fatal("the hit is not on screen")
	}
	// The history around it is loaded: a few above, all below.
	if o := c.oldestSeq(); o > 98-5 {
		t.Fatalf("oldest loaded %d: nothing above the hit", o)
	}
	h.contains("message 98")
	h.checkGeometry()
	if !strings.Contains(h.lineWith("message 98"), "▌") {
		t.Errorf("the hit is not marked selected: %q", h.lineWith("message 98"))
	}
}
