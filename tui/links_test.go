package tui

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// longURL is wider than a bubble at 80 columns.
const longURL = "https://example.com/a/very/long/path/that/does/not/fit/on/one/line/of/the/bubble?q=1&r=(2)"

// TestLinksAreWholeHyperlinks checks that a web address in a message is
// an OSC 8 hyperlink to the whole address on every line the wrapping
// puts a piece of it on, and that o opens the selected message's link.
func TestLinksAreWholeHyperlinks(t *testing.T) {
	f := newFixture()
	bob := "d:alice:bob"
	f.AddMessages(bob, msg(bob, 13, "bob", "look at "+longURL+". nice", ms(-time.Minute)))
	var opened []string
	h := newHarnessOpts(t, f, 80, 24, Options{OpenURL: func(u string) error { opened = append(opened, u); return nil }})
	openBob(h)
	h.contains("look at", "https://example.com/a/very")
	var pieces []string
	for _, l := range strings.Split(h.raw(), "\n") {
		if strings.Contains(l, "\x1b]8;;"+longURL+"\x07") {
			pieces = append(pieces, l)
			if !strings.Contains(l, ansi.ResetHyperlink()) {
				t.Errorf("a piece of the link is not closed: %q", l)
			}
		}
	}
	if len(pieces) < 2 {
		t.Fatalf("the address, wrapped, is a whole hyperlink on %d lines, want 2 or more:\n%s", len(pieces), h.raw())
	}
	// The text of the pieces is the address, nothing of it lost.
	var text string
	for _, l := range pieces {
		text += ansi.Strip(l)
	}
	if !strings.Contains(strings.Join(strings.Fields(text), ""), strings.TrimPrefix(longURL, "https://")) {
		t.Errorf("the pieces do not spell the address: %q", text)
	}
	h.press("tab", "o")
	if len(opened) != 1 || opened[0] != longURL {
		t.Fatalf("o opened %q, want %q", opened, longURL)
	}
	h.contains("opened https://example.com")
	// A message without a link says so.
	h.press("k", "o")
	if len(opened) != 1 {
		t.Fatalf("o on a message without a link opened %q", opened)
	}
	h.contains("no link in this message")
	h.checkGeometry()
}

// TestLinkSpans checks what counts as a link's address.
func TestLinkSpans(t *testing.T) {
	for text, want := range map[string][]string{
		"see https://a.example/x.":                   {"https://a.example/x"},
		"(https://a.example/wiki/Go_(language))":     {"https://a.example/wiki/Go_(language)"},
		"two: http://a.example, https://b.example/?": {"http://a.example", "https://b.example/"},
		"no https:// here, nor ftp://x.example":      nil,
		"京都 https://例え.jp/京都 です":                     {"https://例え.jp/京都"},
	} {
		if got := linksOf(text); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("links of %q = %q, want %q", text, got, want)
		}
	}
}

// TestCopySelectedMessage checks that y copies the selected message's
// text to the terminal's clipboard with OSC 52.
func TestCopySelectedMessage(t *testing.T) {
	h := newHarness(t, newFixture(), 80, 24)
	openBob(h)
	h.press("tab", "y")
	want := "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte("are you coming tonight? 🎉")) + "\a"
	if len(h.raws) == 0 || h.raws[len(h.raws)-1] != want {
		t.Fatalf("printed %q, want %q", h.raws, want)
	}
	h.contains("copied: are you coming tonight?")
}

// TestJumpToFirstUnreadAndNewest checks that n shows the first message
// that was unread when the chat opened, after scrolling away, and G the
// newest again.
func TestJumpToFirstUnreadAndNewest(t *testing.T) {
	f := newFixture()
	bob := "d:alice:bob"
	for s := int64(13); s <= 60; s++ {
		f.AddMessages(bob, msg(bob, s, "alice", "later "+itoa(s), ms(time.Duration(s-70)*time.Second)))
	}
	h := newHarness(t, f, 80, 24)
	openBob(h)
	h.press("tab", "G")
	h.contains("later 60")
	h.lacks("the party is at 8")
	h.press("n")
	c := h.m.chat.c
	if c.sel < 0 || c.msgs[c.sel].Seq != 11 {
		t.Fatalf("n selected %d, want the first unread (seq 11)", c.sel)
	}
	h.contains("2 unread messages", "the party is at 8")
	h.press("G")
	h.contains("later 60")
	if !c.follow {
		t.Error("G does not follow the newest again")
	}
	// A chat with nothing unread says so.
	h = newHarness(t, newFixture(), 80, 24)
	openBob(h)
	h.press("esc", "j", "enter", "tab", "n") // carol's chat: no unread message stored
	h.contains("no unread messages here")
	h.checkGeometry()
}
