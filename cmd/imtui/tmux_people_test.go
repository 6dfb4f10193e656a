package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// People, with the real binaries: read receipts turned off through the
// settings screen, names, presence, requests.

// chatHeader returns the open chat's title and the line under it, trimmed
// (the narrow layout's back arrow dropped).
func chatHeader(screen string) (title, sub string) {
	lines := strings.Split(screen, "\n")
	if len(lines) > 0 && strings.Contains(lines[0], "│") {
		lines = strings.Split(chatSide(screen), "\n")
	}
	if len(lines) < 2 {
		return "", ""
	}
	title = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[0]), "←"))
	return title, strings.TrimSpace(lines[1])
}

// directChatOpen returns a screen condition: the direct chat with title
// is open, its header saying what is known of the peer (nothing, online,
// last seen, typing).
func directChatOpen(title string) func(string) bool {
	return func(s string) bool {
		t, sub := chatHeader(s)
		if t != title {
			return false
		}
		switch {
		case sub == "direct chat", sub == "online", sub == "typing…", strings.HasPrefix(sub, "last seen "):
			return true
		}
		// The pin and mute marks end the title's line; the subtitle may
		// share its line with where news came (narrow).
		return strings.HasPrefix(sub, "direct chat ") || strings.HasPrefix(sub, "online ")
	}
}

// requestOpen returns a screen condition: the request from from is open,
// its bar offering reply, block and delete.
func requestOpen(from string) func(string) bool {
	return containsAll(from + " is not in your chats: [r]eply  [b]lock  [d]elete")
}

// allOf returns a screen condition: every cond holds.
func allOf(conds ...func(string) bool) func(string) bool {
	return func(s string) bool {
		for _, c := range conds {
			if !c(s) {
				return false
			}
		}
		return true
	}
}

// openRequest opens the selected chat in p's list, a request from from,
// and answers it with r: the input takes the keys.
func (r *rig) openRequest(p pane, from string) {
	r.t.Helper()
	r.tm.keys(p, "Enter")
	r.tm.waitFor(p, "the request from "+from, false, requestOpen(from))
	r.tm.keys(p, "r")
	r.tm.waitFor(p, from+"'s chat open", false, chatOpen(from, ""))
}

// listSide is what a split screen shows left of the chat: the list.
func listSide(screen string) string {
	var b strings.Builder
	for _, l := range strings.Split(screen, "\n") {
		left, _, _ := strings.Cut(l, "│")
		b.WriteString(left)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestTmuxReadReceiptsOff: bob turns his read receipts off on the
// settings screen; alice writes to him; bob opens her chat and reads it:
// his unread badge clears (on his tablet too, from the server), while
// alice's message stops at two grey ticks, delivered and not read, as her
// message info says.
func TestTmuxReadReceiptsOff(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	alice := r.client("alice", "alice", 120, 32)
	bob := r.client("bob", "bob", 120, 32)
	tablet := r.client("bobtablet", "bob", 120, 32, "-profile", "tablet")

	// bob: S, down twice to read receipts, space turns them off, enter
	// saves; the status bar says when the server has them.
	r.tm.keys(bob, "S")
	r.tm.waitFor(bob, "the settings screen", false, containsAll("Settings · bob", "Read receipts", "‹ on ›"))
	r.tm.keys(bob, "Down", "Down")
	r.tm.waitFor(bob, "read receipts chosen", false, containsAll("▸ Read receipts"))
	r.tm.keys(bob, "Space")
	r.tm.waitFor(bob, "read receipts off", false, containsAll("‹ off ›", "ticks stay grey"))
	r.tm.keys(bob, "Enter")
	r.tm.waitFor(bob, "the settings saved", false, func(s string) bool {
		return strings.Contains(s, "settings saved") && !strings.Contains(s, "Settings · bob")
	})

	// alice writes; bob's devices store it: two grey ticks.
	text := "receipts off? " + time.Now().Format("150405.000")
	r.newChat(alice, "bob")
	r.send(alice, text)
	for _, p := range []pane{bob, tablet} {
		r.tm.waitFor(p, "alice's message unread in "+p.name+"'s list", false, func(s string) bool {
			return strings.Contains(s, text) && strings.Contains(listSide(s), "1 unread")
		})
	}
	bubble := regexp.MustCompile(regexp.QuoteMeta(text) + ` +\d\d:\d\d`)
	deliveredSGR := sgrForms(tickDeliveredColour)
	greyTicks := func(s string) bool {
		for _, line := range strings.Split(s, "\n") {
			if bubble.MatchString(ansi.Strip(line)) {
				glyphs, fg, _ := ticksAfter(line, text)
				return glyphs == "✓✓" && deliveredSGR[fg]
			}
		}
		return false
	}
	r.tm.waitFor(alice, "delivered (grey) ticks", true, greyTicks)

	// bob opens the chat, alice's request, and reads it: his unread count
	// clears, and the server's does (his tablet follows).
	r.tm.keys(bob, "Enter")
	r.tm.waitFor(bob, "alice's message on bob's screen", false, allOf(requestOpen("alice"), containsAll(text)))
	r.tm.waitFor(bob, "bob's unread badge cleared", false, func(s string) bool {
		return !strings.Contains(listSide(s), "unread") && strings.Contains(listSide(s), text)
	})
	r.tm.waitFor(tablet, "the read on bob's tablet", false, func(s string) bool {
		return !strings.Contains(listSide(s), "unread") && strings.Contains(listSide(s), text)
	})

	// The read is the server's: alice's message info asks it, and the
	// server shows no read; her ticks stay grey.
	r.toHistory(alice)
	r.tm.keys(alice, "i")
	r.tm.waitFor(alice, "the message info", false, containsAll("Message info", "Delivered, not read (1)", "bob"))
	screen := r.tm.waitFor(alice, "grey ticks after bob's read", true, greyTicks)
	if strings.Contains(ansi.Strip(screen), "Read by 1") {
		t.Fatalf("alice's info says bob read it:\n%s", ansi.Strip(screen))
	}
	r.tm.keys(alice, "Escape")
	r.tm.waitFor(alice, "grey ticks, the info closed", true, allOf(greyTicks, func(s string) bool {
		return !strings.Contains(s, "Message info")
	}))
}
