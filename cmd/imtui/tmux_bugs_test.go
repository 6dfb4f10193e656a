package main

import (
	"regexp"
	"strings"
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
