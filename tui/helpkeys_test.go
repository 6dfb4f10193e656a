package tui

import "testing"

// TestHelpShowsTheNewKeys checks that the help screen lists the keys for
// links, copying, jumping and searching every chat.
func TestHelpShowsTheNewKeys(t *testing.T) {
	h := newHarness(t, newFixture(), 120, 60)
	h.press("?")
	h.contains("open the selected message's link", "copy the selected message (OSC 52)",
		"jump to the first unread", "jump to the newest", "ctrl+s", "search the messages of every chat")
}
