package main

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
)

// Replies, edits, deletions for everyone and reactions, made with imtui's
// own keys in alice's pane and seen live in bob's.

// chipOwnColour is the colour of a reaction the user gave (tui
// darkPalette.accent); others' are drawn in its dim colour, the colour of
// delivered ticks.
var chipOwnColour = lipgloss.Color("#00A884")

// sentBubble returns a screen condition: the user's bubble of text shows
// the server holds it (a tick, not the outbox's clock), edited or not.
func sentBubble(text string) func(string) bool {
	re := regexp.MustCompile(regexp.QuoteMeta(text) + ` +(edited )?\d\d:\d\d ✓`)
	return func(s string) bool { return re.MatchString(chatSide(s)) }
}

// selectedLines is what the chat's selection gutter (▌, its first
// column, while the history has the keys) marks: the selected message.
func selectedLines(screen string) string {
	var sel []string
	for _, l := range strings.Split(chatSide(screen), "\n") {
		if rest, ok := strings.CutPrefix(l, "▌"); ok {
			sel = append(sel, strings.TrimSpace(rest))
		}
	}
	return strings.Join(sel, "\n")
}

// toHistory gives the history of p's open chat the keys (tab from the
// input), its newest message selected.
func (r *rig) toHistory(p pane) {
	r.t.Helper()
	screen, err := r.tm.capture(p, false)
	if err != nil {
		r.t.Fatal(err)
	}
	if strings.Contains(screen, "enter send") {
		r.tm.keys(p, "Tab")
	}
	r.tm.waitFor(p, "the history with the keys", false, func(s string) bool {
		return strings.Contains(s, "↑↓ select") && selectedLines(s) != ""
	})
}

// selectMessage moves the selection of p's history up (k), one message at
// a time, until it is on the message whose text is text (followed by its
// time: a reply quoting it is not it).
func (r *rig) selectMessage(p pane, text string) {
	r.t.Helper()
	bubble := regexp.MustCompile(regexp.QuoteMeta(text) + ` +(edited )?\d\d:\d\d`)
	for range 12 {
		screen, err := r.tm.capture(p, false)
		if err != nil {
			r.t.Fatal(err)
		}
		sel := selectedLines(screen)
		if bubble.MatchString(sel) {
			return
		}
		r.tm.keys(p, "k")
		r.tm.waitFor(p, "the selection moved up from "+strings.ReplaceAll(sel, "\n", " / "), false, func(s string) bool {
			return selectedLines(s) != sel
		})
	}
	r.t.Fatalf("%s: no message showing %q selected after 12 presses of k\n%s", p.name, text, r.tm.dump())
}

// linesInOrder returns a screen condition: the chat shows each of the
// patterns on lines in this order (each on a line below the one before).
func linesInOrder(patterns ...string) func(string) bool {
	res := make([]*regexp.Regexp, len(patterns))
	for i, p := range patterns {
		res[i] = regexp.MustCompile(p)
	}
	return func(s string) bool {
		lines := strings.Split(chatSide(s), "\n")
		i := 0
		for _, l := range lines {
			if i < len(res) && res[i].MatchString(l) {
				i++
			}
		}
		return i == len(res)
	}
}

// fgOf returns the foreground the first character of text is drawn in on
// a captured line with its escape sequences, normalised as ticksAfter
// does; ok is false when the line does not show text.
func fgOf(line, text string) (fg string, ok bool) {
	runes, fgs := styledRunes(line)
	plain := string(runes)
	at := strings.Index(plain, text)
	if at < 0 {
		return "", false
	}
	return fgs[utf8.RuneCountInString(plain[:at])], true
}

// chipIn returns a screen condition, of a capture with escapes: the
// reaction chip text shows in one of the colours.
func chipIn(text string, colour map[string]bool) func(string) bool {
	return func(s string) bool {
		for _, line := range strings.Split(s, "\n") {
			if fg, ok := fgOf(line, text); ok {
				return colour[fg]
			}
		}
		return false
	}
}

// TestTmuxRelationsReachTheOtherScreen runs the real binaries: in alice's
// pane she replies to bob's question (R on it), edits her newest message
// (↑ in the empty input) and an older one (e on it), deletes a message for
// everyone (x, then the Delete button, Cancel being chosen) and reacts to
// bob's question with the picker (:, 1). Bob, whose chat with her is open,
// sees each arrive: the reply with its quote above it, the edited texts
// with "edited", the placeholder in the deleted message's place and its
// text nowhere, the reaction with its count under his question; his
// message info (i) on it lists who reacted.
func TestTmuxRelationsReachTheOtherScreen(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	alice := r.client("alice", "alice", 120, 40)
	bob := r.client("bob", "bob", 120, 40)

	r.newChat(alice, "bob")
	r.send(alice, "helo bob")
	r.tm.waitFor(alice, "helo bob sent", false, sentBubble("helo bob"))
	r.tm.waitFor(bob, "alice's chat in bob's list", false, containsAll("alice", "helo bob"))
	r.openRequest(bob, "alice")
	r.send(bob, "lunch tomorrow?")
	r.tm.waitFor(alice, "bob's question in alice's chat", false, containsAll("lunch tomorrow?"))

	// The reply: R on bob's question, the newest message.
	r.toHistory(alice)
	r.selectMessage(alice, "lunch tomorrow?")
	r.tm.keys(alice, "R")
	r.tm.waitFor(alice, "the reply's bar", false, containsAll("↪ Replying to bob: lunch tomorrow?", "enter send"))
	r.tm.text(alice, "yes, at noon")
	r.tm.keys(alice, "Enter")
	r.tm.waitFor(alice, "the reply sent", false, sentBubble("yes, at noon"))
	r.tm.waitFor(bob, "the reply under its quote", false, linesInOrder(`↪ you: lunch tomorrow\?`, `yes, at noon +\d\d:\d\d`))

	// An edit of her newest message: ↑ in the empty input.
	r.send(alice, "see you ther")
	r.tm.waitFor(alice, "see you ther sent", false, sentBubble("see you ther"))
	r.tm.waitFor(bob, "see you ther at bob", false, containsAll("see you ther"))
	r.tm.keys(alice, "Up")
	r.tm.waitFor(alice, "the edit's bar", false, containsAll("✎ Editing: see you ther"))
	r.tm.text(alice, "e")
	r.tm.keys(alice, "Enter")
	r.tm.waitFor(alice, "the edit shown", false, linesInOrder(`see you there +edited \d\d:\d\d ✓`))
	r.tm.waitFor(bob, "the edited text at bob", false, linesInOrder(`see you there +edited \d\d:\d\d`))

	// An edit of an older message: e on it.
	r.toHistory(alice)
	r.selectMessage(alice, "helo bob")
	r.tm.keys(alice, "e")
	r.tm.waitFor(alice, "the edit's bar", false, containsAll("✎ Editing: helo bob"))
	r.tm.keys(alice, "C-u")
	r.tm.text(alice, "hello bob")
	r.tm.keys(alice, "Enter")
	r.tm.waitFor(alice, "the older edit shown", false, linesInOrder(`hello bob +edited \d\d:\d\d ✓`))
	r.tm.waitFor(bob, "the older edit at bob", false, linesInOrder(`hello bob +edited \d\d:\d\d`, `lunch tomorrow\?`))

	// A deletion for everyone: x, Cancel chosen, → onto Delete, enter.
	r.send(alice, "wrong chat, sorry")
	r.tm.waitFor(alice, "wrong chat sent", false, sentBubble("wrong chat, sorry"))
	r.tm.waitFor(bob, "wrong chat at bob", false, containsAll("wrong chat, sorry"))
	r.toHistory(alice)
	r.selectMessage(alice, "wrong chat, sorry")
	r.tm.keys(alice, "x")
	r.tm.waitFor(alice, "the deletion asked, Cancel chosen", false, containsAll("Delete for everyone", "wrong chat, sorry", "▸[ Cancel ]"))
	r.tm.keys(alice, "Right")
	r.tm.waitFor(alice, "Delete chosen", false, containsAll("▸[ Delete ]"))
	r.tm.keys(alice, "Enter")
	gone := func(s string) bool {
		return strings.Contains(chatSide(s), "message deleted") && !strings.Contains(s, "wrong chat")
	}
	r.tm.waitFor(alice, "the placeholder at alice", false, gone)
	r.tm.waitFor(bob, "the placeholder at bob, the text nowhere", false, gone)

	// A reaction to bob's question, from the picker.
	r.toHistory(alice)
	r.selectMessage(alice, "lunch tomorrow?")
	r.tm.keys(alice, ":")
	r.tm.waitFor(alice, "the picker", false, containsAll("React to “lunch tomorrow?”", "1  👍", "Other…"))
	r.tm.keys(alice, "1")
	r.tm.waitFor(alice, "her reaction under bob's question", false, linesInOrder(`lunch tomorrow\?`, ` 👍 1( |$)`, `yes, at noon`))
	r.tm.waitFor(bob, "the reaction under bob's question at bob", false, linesInOrder(`lunch tomorrow\?`, ` 👍 1( |$)`, `↪ you: lunch tomorrow\?`))

	// Bob's screen holds all of it at once.
	screen := r.tm.waitFor(bob, "everything at bob", false, linesInOrder(
		`hello bob +edited \d\d:\d\d`,
		`lunch tomorrow\? +\d\d:\d\d`,
		` 👍 1( |$)`,
		`↪ you: lunch tomorrow\?`,
		`yes, at noon +\d\d:\d\d`,
		`see you there +edited \d\d:\d\d`,
		`message deleted`,
	))
	if strings.Contains(screen, "wrong chat") || strings.Contains(screen, "helo bob") || strings.Contains(screen, "see you ther ") {
		t.Fatalf("bob's screen still shows a text that was deleted or edited:\n%s", screen)
	}

	// Hers is highlighted on her screen, not on his.
	r.tm.waitFor(alice, "her reaction in the colour of her own", true, chipIn("👍 1", sgrForms(chipOwnColour)))
	r.tm.waitFor(bob, "her reaction in the colour of others' at bob", true, chipIn("👍 1", sgrForms(tickDeliveredColour)))

	// Bob selects the reply, jumps (t) to the message it quotes, his
	// question, and its info (i) lists who reacted.
	r.toHistory(bob)
	r.selectMessage(bob, "yes, at noon")
	r.tm.keys(bob, "t")
	question := regexp.MustCompile(`lunch tomorrow\? +\d\d:\d\d`)
	r.tm.waitFor(bob, "his question selected by the jump", false, func(s string) bool {
		return question.MatchString(selectedLines(s))
	})
	r.tm.keys(bob, "i")
	r.tm.waitFor(bob, "the info listing the reaction", false, containsAll("Message info", "“lunch tomorrow?”", "Reactions", "👍 1: alice"))
}
