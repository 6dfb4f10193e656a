package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// Screens users found wrong, each reproduced with the real binaries the
// way a user met it, and kept as a test of what the client now does.

// newChat opens a new direct chat with peer from the list of p.
func (r *rig) newChat(p pane, peer string) {
	r.t.Helper()
	r.tm.keys(p, "n")
	r.tm.waitFor(p, "the new chat dialog", false, containsAll("New chat", "User id"))
	r.tm.text(p, peer)
	r.tm.waitFor(p, peer+" typed in the dialog", false, containsAll("› "+peer))
	r.tm.keys(p, "Enter")
	r.tm.waitFor(p, "the chat with "+peer+" open", false, func(s string) bool {
		return !strings.Contains(s, "New chat") && directChatOpen(peer)(s) && strings.Contains(s, "Type a message")
	})
}

// queueGroup asks, from the list of p while offline, for a group named
// title with member, and waits until the list shows it being created.
func (r *rig) queueGroup(p pane, title, member string) {
	r.t.Helper()
	r.tm.keys(p, "N")
	r.tm.waitFor(p, "the new group dialog", false, containsAll("New group", "Members"))
	r.tm.text(p, title)
	r.tm.keys(p, "Enter")
	r.tm.text(p, member)
	r.tm.keys(p, "Enter")
	r.tm.waitFor(p, "the group being created", false, containsAll("creating group "+title))
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

// TestTmuxGroupCreatedOfflineKeepsFocusAndDraft: a group created offline
// must not take the user away from the chat they went to meanwhile, nor
// wipe what they typed there.
func TestTmuxGroupCreatedOfflineKeepsFocusAndDraft(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	alice := r.client("alice", "alice", 120, 30)
	r.newChat(alice, "bob")
	r.send(alice, "hello bob")
	r.toList(alice) // 120 columns: the list takes the keys, the chat stays

	r.stopServer()
	r.tm.waitFor(alice, "alice offline", false, containsAll("○ offline"))
	r.queueGroup(alice, "queued group", "bob")
	// Meanwhile, bob's chat: the only row of the list.
	r.tm.keys(alice, "Enter")
	r.tm.text(alice, "half typed draft")
	r.tm.waitFor(alice, "the draft in bob's chat", false, allOf(containsAll("half typed draft"), directChatOpen("bob")))

	r.startServer()
	r.tm.waitFor(alice, "the group created once online", false, containsAll("● online", "👥 queued group"))
	screen := r.tm.waitFor(alice, "bob's chat still open with the draft", false, allOf(containsAll("half typed draft"), directChatOpen("bob")))
	if strings.Contains(screen, "2 members: alice, bob") {
		t.Fatalf("the new group's chat took the screen:\n%s", screen)
	}
}

// TestTmuxTicksAfterAZWJEmoji: after an emoji joined with zero-width
// joiners the line is as wide as the terminal draws it, and the ticks stay
// on screen.
func TestTmuxTicksAfterAZWJEmoji(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	alice := r.client("alice", "alice", 100, 30)
	bob := r.client("bob", "bob", 100, 30)
	text := "zwj 👨‍👩‍👧 x"
	r.newChat(alice, "bob")
	r.tm.text(alice, text)
	r.tm.keys(alice, "Enter")

	// bob opens the chat, alice's request, and reads it.
	r.tm.waitFor(bob, "alice's chat in bob's list", false, containsAll("alice", "zwj"))
	r.tm.keys(bob, "Enter")
	r.tm.waitFor(bob, "the message in bob's open chat", false, allOf(containsAll("zwj"), requestOpen("alice")))

	r.tm.waitFor(alice, "two read ticks after the emoji", true, readTicks(regexp.MustCompile(`zwj .* x +\d\d:\d\d`), "x "))
}

// TestTmuxLongPasteIsRefusedWhole: a body over the limit is refused whole,
// with its size, whether its characters are one byte or two; the text
// stays to edit, or is split.
func TestTmuxLongPasteIsRefusedWhole(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	alice := r.client("alice", "alice", 100, 30)
	bob := r.client("bob", "bob", 100, 30)
	r.newChat(alice, "bob")

	// 5,000 one-byte characters: words numbered so that the end shows.
	var b strings.Builder
	for i := 0; b.Len() < 5000; i++ {
		fmt.Fprintf(&b, "w%04d ", i)
	}
	long := b.String()[:4999] + "!"
	r.paste(alice, long)
	r.tm.waitFor(alice, "the end of the paste in the input", false, containsAll(long[len(long)-12:]))
	r.tm.keys(alice, "Enter")
	r.tm.waitFor(alice, "the refusal with the size", false, containsAll("5000 of 4096 bytes"))
	r.tm.keys(alice, "n")
	r.tm.waitFor(alice, "the text kept, nothing sent", false, func(s string) bool {
		return !strings.Contains(s, "4096 bytes") && strings.Contains(s, long[len(long)-12:]) && strings.Contains(s, "No messages yet")
	})

	// The same for 6,000 bytes of two-byte characters.
	r.tm.keys(alice, "C-u") // empties the input's line
	r.tm.waitFor(alice, "the input empty", false, containsAll("Type a message"))
	r.paste(alice, strings.Repeat("é", 3000))
	r.tm.keys(alice, "Enter")
	r.tm.waitFor(alice, "the refusal with the size", false, containsAll("6000 of 4096 bytes"))
	r.tm.keys(alice, "y") // split: two messages
	r.tm.waitFor(alice, "the input emptied by the split send", false, containsAll("Type a message"))
	r.tm.waitFor(bob, "two messages from alice in bob's list", false, func(s string) bool {
		for _, l := range strings.Split(s, "\n") {
			row, _, _ := strings.Cut(l, "│") // the list pane
			if strings.Contains(row, "ééé") && strings.HasSuffix(strings.TrimRight(row, " "), " 2") {
				return true
			}
		}
		return false
	})
}

// TestTmuxOutboxMessageShowsInTheList: a message waiting in the outbox is
// the list row's last message, with its clock, also after a restart.
func TestTmuxOutboxMessageShowsInTheList(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	alice := r.client("alice", "alice", 80, 24) // narrow: esc shows the list alone
	r.newChat(alice, "bob")
	r.send(alice, "first message")

	r.stopServer()
	r.tm.waitFor(alice, "alice offline", false, containsAll("○ offline"))
	r.send(alice, "second offline message")
	r.tm.keys(alice, "Escape")
	rowShowsOutbox := func(s string) bool {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if strings.Contains(l, "👤 bob") && i+1 < len(lines) {
				return strings.Contains(lines[i+1], "◷ second offline message")
			}
		}
		return false
	}
	r.tm.waitFor(alice, "bob's row with the outbox message", false, rowShowsOutbox)

	r.restartClient(alice, "alice")
	r.tm.waitFor(alice, "bob's row with the outbox message after a restart", false, func(s string) bool {
		return strings.Contains(s, "○ offline") && rowShowsOutbox(s)
	})
}
