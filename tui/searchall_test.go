package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// TestSearchEveryChatFromTheList checks that ctrl+s on the list searches
// the messages of every chat, names each hit's chat, marks the words
// found, and that enter opens the hit's chat with the hit selected.
func TestSearchEveryChatFromTheList(t *testing.T) {
	f := newFixture()
	f.AddMessages("d:alice:yuki", msg("d:alice:yuki", 3, "yuki", "offline until friday", ms(-2*time.Hour)))
	f.AddMessages("d:alice:dave", msg("d:alice:dave", 7, "dave", "I was offline, sorry", ms(-time.Hour)))
	h := newHarness(t, f, 100, 30)
	h.press("ctrl+s")
	h.contains("Search in every chat")
	h.typeText("FFLINE")
	if c := f.CallsOf("SearchMessages"); len(c) == 0 || c[len(c)-1].Conv != "" {
		t.Fatalf("SearchMessages calls %v: want every chat (conv \"\")", c)
	}
	h.contains("dave · dave: I was offline, sorry", "yuki 雪 · yuki: offline until friday", "2 found")
	// The words found are marked: bold and underlined.
	line := h.rawLineWith("I was offline")
	if !strings.Contains(line, "\x1b[1;4") && !strings.Contains(line, ";1;4") && !strings.Contains(line, "\x1b[1m\x1b[4m") {
		t.Errorf("the hit is not marked in %q", line)
	}
	if plain := ansi.Strip(line); !strings.Contains(plain, "offline") {
		t.Errorf("the hit line lost its text: %q", plain)
	}
	h.press("down", "enter")
	if h.m.chat.conv() != "d:alice:yuki" {
		t.Fatalf("enter opened %q, want yuki's chat", h.m.chat.conv())
	}
	c := h.m.chat.c
	if c.sel < 0 || c.msgs[c.sel].Body != "offline until friday" || h.m.focusArea() != focusHistory {
		t.Fatalf("after the jump: selection %d, focus %v", c.sel, h.m.focusArea())
	}
	h.checkGeometry()

	// A title filter that finds no chat points at the search of messages.
	h.press("esc", "esc", "/")
	h.typeText("zq")
	h.contains("No chat titled like “zq”.", "ctrl+s searches the messages.")
	h.checkGeometry()
}

// TestHitRanges checks where a search's words are marked: anywhere, in
// any case and script, overlaps merged.
func TestHitRanges(t *testing.T) {
	for _, tc := range []struct {
		text  string
		terms []string
		want  string
	}{
		{"offline msg", []string{"ffline"}, "o[ffline] msg"},
		{"明日京都に行きます", []string{"京都"}, "明日[京都]に行きます"},
		{"Offline OFF", []string{"off"}, "[Off]line [OFF]"},
		{"abcdef", []string{"abc", "cde"}, "[abcde]f"},
		{"nothing", []string{"zz"}, "nothing"},
	} {
		var b strings.Builder
		at := 0
		for _, r := range hitRanges(tc.text, tc.terms) {
			b.WriteString(tc.text[at:r[0]] + "[" + tc.text[r[0]:r[1]] + "]")
			at = r[1]
		}
		b.WriteString(tc.text[at:])
		if b.String() != tc.want {
			t.Errorf("hits of %v in %q = %q, want %q", tc.terms, tc.text, b.String(), tc.want)
		}
	}
}
