package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// The second pass's bugs 1-4, each reproduced with the real binaries the
// way a user met it.

// newChat opens a new direct chat with peer from the list of p.
func (r *rig) newChat(p pane, peer string) {
	r.t.Helper()
	r.tm.keys(p, "n")
	r.tm.waitFor(p, "the new chat dialog", false, containsAll("New chat", "User id"))
	r.tm.text(p, peer)
	r.tm.waitFor(p, peer+" typed in the dialog", false, containsAll("› "+peer))
	r.tm.keys(p, "Enter")
	r.tm.waitFor(p, "the chat with "+peer+" open", false, func(s string) bool {
		return !strings.Contains(s, "New chat") && strings.Contains(s, "direct chat") && strings.Contains(s, "Type a message")
	})
}

// send types text into the open chat of p, sends it and waits for its
// bubble.
func (r *rig) send(p pane, text string) {
	r.t.Helper()
	r.tm.text(p, text)
	r.tm.keys(p, "Enter")
	bubble := regexp.MustCompile(regexp.QuoteMeta(text) + ` +\d\d:\d\d [◷✓]`)
	r.tm.waitFor(p, "the bubble of "+text, false, bubble.MatchString)
}

// Bug 3: after an emoji joined with zero-width joiners the line is as wide
// as the terminal draws it, and the ticks stay on screen.
func TestTmuxTicksAfterAZWJEmoji(t *testing.T) {
	r := newRig(t)
	alice := r.client("alice", "alice", 100, 30)
	bob := r.client("bob", "bob", 100, 30)
	text := "zwj 👨‍👩‍👧 x"
	r.newChat(alice, "bob")
	r.tm.text(alice, text)
	r.tm.keys(alice, "Enter")

	// bob opens the chat and reads it.
	r.tm.waitFor(bob, "alice's chat in bob's list", false, containsAll("alice", "zwj"))
	r.tm.keys(bob, "Enter")
	r.tm.waitFor(bob, "the message in bob's open chat", false, containsAll("direct chat", "zwj"))

	readSGR := sgrForms(tickReadColour)
	bubble := regexp.MustCompile(`zwj .* x +\d\d:\d\d`)
	r.tm.waitFor(alice, "two read ticks after the emoji", true, func(s string) bool {
		for _, line := range strings.Split(s, "\n") {
			if bubble.MatchString(ansi.Strip(line)) {
				glyphs, fg, _ := ticksAfter(line, "x ")
				return glyphs == "✓✓" && readSGR[fg]
			}
		}
		return false
	})
}
