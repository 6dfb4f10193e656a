package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// toList presses esc in the chat of p, on a screen wide enough for the
// list beside it, and waits for the list to have the keys: a key sent
// right after a lone escape would be read as alt and that key.
func (r *rig) toList(p pane) {
	r.t.Helper()
	r.tm.keys(p, "Escape")
	r.tm.waitFor(p, "the list with the keys", false, func(s string) bool {
		return strings.Contains(s, "▌") && !strings.Contains(s, "enter send")
	})
}

// chatOpen returns a screen condition: the chat with title is open, its
// input has the keys, and shows typed (if not "").
func chatOpen(title, typed string) func(string) bool {
	return func(s string) bool {
		lines := strings.Split(chatSide(s), "\n")
		if len(lines) < 3 || strings.TrimSpace(lines[0]) != title || !strings.Contains(s, "enter send") {
			return false
		}
		return typed == "" || strings.Contains(strings.Join(lines[len(lines)-4:], "\n"), typed)
	}
}

// chatSide is what a split screen shows right of the list: the chat.
func chatSide(screen string) string {
	var b strings.Builder
	for _, l := range strings.Split(screen, "\n") {
		if _, chat, ok := strings.Cut(l, "│"); ok {
			b.WriteString(chat)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// countIn counts the lines of s holding text.
func countIn(s, text string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, text) {
			n++
		}
	}
	return n
}

// readTicksOn returns a screen condition: the user's bubble of text shows
// two ticks in the read colour.
func readTicksOn(text string) func(string) bool {
	return readTicks(regexp.MustCompile(regexp.QuoteMeta(text)+` +\d\d:\d\d`), text)
}

// readTicks returns a screen condition: the first line whose text matches
// bubble shows, after the text after, two ticks in the read colour.
func readTicks(bubble *regexp.Regexp, after string) func(string) bool {
	readSGR := sgrForms(tickReadColour)
	return func(s string) bool {
		for _, line := range strings.Split(s, "\n") {
			if bubble.MatchString(ansi.Strip(line)) {
				glyphs, fg, _ := ticksAfter(line, after)
				return glyphs == "✓✓" && readSGR[fg]
			}
		}
		return false
	}
}

// TestTmuxOutageLosesNothing runs two clients of the real binaries through
// a server that is killed and started again: alice writes offline, asks
// for a group, types drafts in two chats; bob writes offline. Once the
// server is back (ctrl+l: at once), nothing is lost, alice is still where
// she was with her draft, every message shows once, read, with blue ticks.
func TestTmuxOutageLosesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	alice := r.client("alice", "alice", 120, 32)
	bob := r.client("bob", "bob", 120, 32)

	// Online: alice writes to carol (never online) and to bob, who reads.
	r.newChat(alice, "carol")
	r.send(alice, "hi carol")
	r.toList(alice)
	r.newChat(alice, "bob")
	r.send(alice, "before the outage")
	r.tm.waitFor(bob, "alice's chat in bob's list", false, containsAll("alice", "before the outage"))
	r.openRequest(bob, "alice")
	r.tm.waitFor(alice, "blue ticks before the outage", true, readTicksOn("before the outage"))

	r.stopServer()
	r.tm.waitFor(alice, "alice offline", false, containsAll("○ offline"))
	r.tm.waitFor(bob, "bob offline", false, containsAll("○ offline"))

	// alice, offline: a message, a group, a draft in carol's chat, then
	// back to bob's chat and a draft there.
	r.send(alice, "sent offline 1")
	r.toList(alice)
	r.queueGroup(alice, "queued group", "bob")
	r.tm.keys(alice, "Down", "Enter") // carol's row, below bob's
	r.tm.waitFor(alice, "carol's chat", false, chatOpen("carol", ""))
	r.tm.text(alice, "draft for carol")
	r.tm.waitFor(alice, "the draft in carol's chat", false, chatOpen("carol", "draft for carol"))
	r.toList(alice)
	r.tm.keys(alice, "Up", "Enter") // bob's row
	r.tm.waitFor(alice, "bob's chat, carol's draft in the list", false, func(s string) bool {
		return chatOpen("bob", "")(s) && strings.Contains(s, "draft: draft for carol")
	})
	r.tm.text(alice, "draft for bob")
	r.tm.waitFor(alice, "the draft in bob's chat", false, chatOpen("bob", "draft for bob"))

	// bob, offline, in the chat with alice (its input has the keys since
	// he opened it).
	r.send(bob, "bob offline reply")

	r.startServer()
	for _, p := range []pane{alice, bob} {
		r.tm.keys(p, "C-l") // reconnect now, not at the backoff's end
		r.tm.waitFor(p, p.name+" online again", false, containsAll("● online"))
	}

	// alice is where she was: bob's chat, her draft in the input, which
	// still has the keys; the group exists; carol's draft is kept.
	r.tm.waitFor(alice, "the group in alice's list", false, containsAll("👥 queued group"))
	r.tm.text(alice, " still here")
	screen := r.tm.waitFor(alice, "alice still typing in bob's chat", false,
		allOf(containsAll("draft for bob still here", "draft: draft for carol"), directChatOpen("bob")))
	if strings.Contains(screen, "2 members: alice, bob") {
		t.Fatalf("the group's chat took alice's screen:\n%s", screen)
	}

	// Every message once, on both sides, read: blue ticks.
	r.tm.waitFor(bob, "alice's offline message in bob's chat", false, containsAll("sent offline 1"))
	r.tm.waitFor(alice, "bob's offline reply in alice's chat", false, containsAll("bob offline reply"))
	r.tm.waitFor(bob, "the group in bob's list", false, containsAll("👥 queued group"))
	r.tm.waitFor(alice, "blue ticks on the offline message", true, readTicksOn("sent offline 1"))
	r.tm.waitFor(bob, "blue ticks on bob's offline reply", true, readTicksOn("bob offline reply"))
	for _, check := range []struct {
		p     pane
		texts []string
	}{
		{alice, []string{"before the outage", "sent offline 1", "bob offline reply"}},
		{bob, []string{"before the outage", "sent offline 1", "bob offline reply"}},
	} {
		screen, err := r.tm.capture(check.p, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range check.texts {
			if n := countIn(chatSide(screen), text); n != 1 {
				t.Errorf("%s's chat shows %q %d times, want once:\n%s", check.p.name, text, n, screen)
			}
		}
	}
}
