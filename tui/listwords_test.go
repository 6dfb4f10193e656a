package tui

import (
	"testing"
)

// Words typed while the list has the keys (the whole screen at 80
// columns) delete nothing, quit nothing and send nothing: "daily" is not
// d (delete) then y (yes), "quick note" is not q (quit).
func TestWordsTypedOnTheListDeleteNothingAndQuitNothing(t *testing.T) {
	for _, width := range []int{80, 120} {
		f := newFixture()
		h := newHarness(t, f, width, 24)
		if width > 100 {
			openBob(h)
			h.press("esc") // the list has the keys, bob's chat stays beside it
		}
		for _, words := range []string{"daily", "quick note", "hello group 🎉", "yes", "quit", "delete my daily notes"} {
			h.typeText(words)
			h.press("enter")
			if h.quit {
				t.Fatalf("%d columns: typing %q on the list quit", width, words)
			}
			for _, c := range f.Calls() {
				if c.Method == "SessionOp" && c.Op == "delete" || c.Method == "Send" || c.Method == "GroupOp" {
					t.Fatalf("%d columns: typing %q on the list called %v", width, words, c)
				}
			}
			h.press("esc", "esc")
		}
	}
}
