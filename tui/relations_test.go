package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui/tuitest"
)

// relFixture is alice's chat with bob: his question, her typo last but
// one, his answer last.
func relFixture() *tuitest.Fake {
	f := tuitest.NewFake("alice", "laptop", "localhost:8080")
	f.SetSessions("", []protocol.Session{{Conv: bob, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
		ReadSeq: 4, WriteSeq: 4, WriteTS: ms(0), LastMsg: last(bob, 4, "bob", "see you there", ms(0))}})
	f.AddMessages(bob,
		msg(bob, 1, "bob", "lunch tomorrow?", ms(-4*time.Minute)),
		msg(bob, 2, "alice", "sure, the usual place", ms(-3*time.Minute)),
		msg(bob, 3, "alice", "helo at noon", ms(-2*time.Minute)),
		msg(bob, 4, "bob", "see you there", ms(-time.Minute)),
	)
	return f
}

// openHistory opens the first chat of the list with the history focused,
// the newest message selected.
func openHistory(h *harness) {
	h.t.Helper()
	h.press("enter", "tab")
	h.contains("↑↓ select")
}

// selected is the message selected in the open chat.
func (hs *harness) selected() client.Message {
	hs.t.Helper()
	c := hs.m.chat.c
	if c == nil || c.sel < 0 || c.sel >= len(c.msgs) {
		hs.t.Fatal("no message selected")
	}
	return c.msgs[c.sel]
}

// lastCall is the last call of method, failing if there is none.
func lastCall(t *testing.T, f *tuitest.Fake, method string) tuitest.Call {
	t.Helper()
	calls := f.CallsOf(method)
	if len(calls) == 0 {
		t.Fatalf("no %s call; calls: %v", method, f.Calls())
	}
	return calls[len(calls)-1]
}

func TestReplyShowsItsQuoteAndJumpsToIt(t *testing.T) {
	f := relFixture()
	h := newHarness(t, f, 100, 30)
	openHistory(h)
	h.press("k", "k", "k") // bob's question
	if s := h.selected(); s.Seq != 1 {
		t.Fatalf("selected %d", s.Seq)
	}
	h.press("R")
	h.contains("↪ Replying to bob: lunch tomorrow?", "esc cancels")
	if h.m.focusArea() != focusInput {
		t.Fatal("R did not give the input the keys")
	}
	h.typeText("yes, at noon")
	h.press("enter")
	call := lastCall(t, f, "Reply")
	if call.Conv != bob || call.Target != bob+"-1" || call.Body != "yes, at noon" {
		t.Fatalf("reply = %v", call)
	}
	h.lacks("Replying to")
	// The reply shows its target quoted above its text.
	quote := h.lineWith("↪ bob: lunch tomorrow?")
	text := h.lineWith("yes, at noon")
	if strings.Index(h.screen(), quote) > strings.Index(h.screen(), text) {
		t.Fatal("the quote is not above the reply")
	}
	h.checkGeometry()

	// t on the reply jumps to the message it quotes.
	h.press("tab") // the history (split: list, input, history)
	h.press("G")
	if s := h.selected(); s.Body != "yes, at noon" {
		t.Fatalf("selected %q, want the reply", s.Body)
	}
	h.press("t")
	if s := h.selected(); s.Seq != 1 {
		t.Fatalf("t selected seq %d, want 1", s.Seq)
	}
	// t on a message that is no reply says so.
	h.press("t")
	h.contains("not a reply")
}

func TestEscStopsAReplyAndKeepsTheDraft(t *testing.T) {
	f := relFixture()
	h := newHarness(t, f, 100, 30)
	h.press("enter")
	h.typeText("half a thought")
	h.press("tab", "k", "R")
	h.contains("↪ Replying to you: helo at noon", "half a thought")
	h.press("esc")
	h.lacks("Replying to")
	h.contains("half a thought")
	if h.m.chat.conv() != bob {
		t.Fatal("esc left the chat instead of stopping the reply")
	}
}

// A reply whose target is not loaded, nor on the device, loads older
// history from the server until the target is in, then selects it.
func TestJumpToQuotedLoadsOlderHistory(t *testing.T) {
	f := tuitest.NewFake("alice", "laptop", "localhost:8080")
	f.SetSessions("", []protocol.Session{{Conv: bob, Kind: "direct", Title: "bob", ReadSeq: 200, WriteSeq: 200,
		WriteTS: ms(0), LastMsg: last(bob, 200, "bob", "as I said", ms(0))}})
	for s := int64(101); s < 200; s++ {
		f.AddMessages(bob, msg(bob, s, "bob", fmt.Sprintf("message %d", s), ms(time.Duration(s-200)*time.Minute)))
	}
	reply := msg(bob, 200, "bob", "as I said", ms(0))
	reply.ReplyTo = 42
	f.AddMessages(bob, reply)
	f.OnLoadOlder = func(conv string, before int64) {
		for s := max(1, before-50); s < before; s++ {
			f.AddMessages(bob, msg(bob, s, "bob", fmt.Sprintf("message %d", s), ms(time.Duration(s-200)*time.Minute)))
		}
	}
	h := newHarness(t, f, 80, 24)
	openHistory(h)
	h.contains("↪ an earlier message")
	h.press("t")
	// The device's pages first, then the server's, each followed by the
	// client's report.
	for i := 0; i < 20 && h.m.chat.c.jumpTo != 0; i++ {
		if n := len(f.CallsOf("LoadOlder")); n > 0 {
			h.event(client.MessagesChanged{Conv: bob})
		}
	}
	if s := h.selected(); s.Seq != 42 {
		t.Fatalf("selected %d after loading, want 42; LoadOlder calls %v", s.Seq, f.CallsOf("LoadOlder"))
	}
	h.contains("message 42")
	h.checkGeometry()
}

func TestEditTheSelectedOwnMessage(t *testing.T) {
	f := relFixture()
	f.SetDrafts(map[string]string{bob: "a draft"})
	h := newHarness(t, f, 100, 30)
	h.press("enter")
	h.contains("a draft")
	h.press("tab", "k") // alice's typo
	if s := h.selected(); s.Body != "helo at noon" {
		t.Fatalf("selected %q", s.Body)
	}
	h.press("e")
	h.contains("✎ Editing: helo at noon")
	if got := h.m.chat.input.Value(); got != "helo at noon" {
		t.Fatalf("input %q, want the message's text", got)
	}
	for range len("o at noon") {
		h.press("left")
	}
	h.typeText("l")
	h.press("enter")
	call := lastCall(t, f, "Edit")
	if call.Target != bob+"-3" || call.Body != "hello at noon" {
		t.Fatalf("edit = %v", call)
	}
	h.contains("hello at noon  edited 15:28 ✓", "a draft")
	h.lacks("Editing")
	for _, c := range f.CallsOf("SaveDraft") {
		if strings.Contains(c.Body, "hel") {
			t.Fatalf("the edit's text was kept as a draft: %v", c)
		}
	}
	// Someone else's message cannot be edited.
	h.press("tab", "G", "e")
	h.contains("only your own messages can be changed")
	h.lacks("Editing")
}

// ↑ in an empty input edits the user's message when it is the newest,
// as in Slack and Telegram; otherwise it scrolls as it always did.
func TestUpInAnEmptyInputEditsTheNewestOwnMessage(t *testing.T) {
	f := relFixture()
	f.AddMessages(bob, msg(bob, 5, "alice", "ok!", ms(0)))
	h := newHarness(t, f, 100, 30)
	h.press("enter", "up")
	h.contains("✎ Editing: ok!")
	h.press("esc")
	h.lacks("Editing")
	if h.m.chat.conv() != bob || h.m.chat.input.Value() != "" {
		t.Fatalf("esc: chat %q, input %q", h.m.chat.conv(), h.m.chat.input.Value())
	}
	// Unchanged, enter edits nothing.
	h.press("up", "enter")
	if calls := f.CallsOf("Edit"); len(calls) != 0 {
		t.Fatalf("an unchanged edit was sent: %v", calls)
	}

	g := relFixture() // bob's message is the newest
	h2 := newHarness(t, g, 100, 30)
	h2.press("enter", "up")
	h2.lacks("Editing")
}

func TestDeleteForEveryoneAsksWithCancelChosen(t *testing.T) {
	f := relFixture()
	h := newHarness(t, f, 100, 30)
	openHistory(h)
	h.press("x") // bob's message
	h.contains("only your own messages can be changed")
	h.lacks("Delete for everyone")

	h.press("k", "x")
	h.contains("Delete for everyone", "helo at noon", "▸[ Cancel ]")
	h.press("y", "d", "enter") // no letter answers it; enter on Cancel
	h.lacks("Delete for everyone")
	if calls := f.CallsOf("DeleteForEveryone"); len(calls) != 0 {
		t.Fatalf("deleted without a deliberate choice: %v", calls)
	}
	h.press("delete", "right", "enter")
	if call := lastCall(t, f, "DeleteForEveryone"); call.Target != bob+"-3" {
		t.Fatalf("delete = %v", call)
	}
	h.lacks("helo at noon")
	h.contains(deletedText)
	h.checkGeometry()
	// A deleted message cannot be deleted, edited or reacted to again, and
	// holds nothing to copy.
	h.press("x")
	h.contains("the message was deleted")
	h.press("y")
	h.contains("nothing to copy")
}

func TestReactWithThePickerAndShowCounts(t *testing.T) {
	f := relFixture()
	h := newHarness(t, f, 100, 30)
	openHistory(h)
	h.press(":")
	h.contains("React to “see you there”", "1  👍", "Other…")
	h.lacks("Take back")
	h.press("1")
	if call := lastCall(t, f, "React"); call.Target != bob+"-4" || call.Body != "👍" {
		t.Fatalf("react = %v", call)
	}
	h.contains(" 👍 1 ")
	// Her own reaction is highlighted.
	if raw := h.rawLineWith(" 👍 1 "); !strings.Contains(raw, h.m.com.st.chipOwn.Render(" 👍 1 ")) {
		t.Fatalf("her reaction is not highlighted: %q", raw)
	}

	// Any other reaction, typed; one with a space is refused.
	h.press(":", "9")
	h.typeText("thumbs up")
	h.press("enter")
	h.contains("no whitespace")
	for range len("thumbs up") {
		h.press("backspace")
	}
	h.typeText("+1")
	h.press("enter")
	if call := lastCall(t, f, "React"); call.Body != "+1" {
		t.Fatalf("react = %v", call)
	}
	h.contains(" +1 1 ")
	h.lacks(" 👍 1 ")

	// Taking it back.
	h.press(":")
	h.contains("Take back +1")
	h.press("up", "enter")
	if call := lastCall(t, f, "React"); call.Body != "" {
		t.Fatalf("take back = %v", call)
	}
	h.lacks(" +1 1 ")
	h.checkGeometry()
}

func TestReactionsShowCountsAndInfoListsWhoReacted(t *testing.T) {
	f := relFixture()
	m := msg(bob, 5, "bob", "party on saturday", ms(0))
	m.SetReactions([]protocol.Reaction{{Body: "🎉", Users: []string{"bob", "alice", "carol"}}, {Body: "👀", Users: []string{"dave"}}})
	f.AddMessages(bob, m)
	h := newHarness(t, f, 100, 30)
	openHistory(h)
	line := h.lineWith(" 🎉 3 ")
	if !strings.Contains(line, " 👀 1 ") {
		t.Fatalf("the reactions line %q lacks 👀 1", line)
	}
	if raw := h.rawLineWith(" 👀 1 "); strings.Contains(raw, h.m.com.st.chipOwn.Render(" 👀 1 ")) {
		t.Fatal("someone else's reaction is highlighted as hers")
	}
	h.press("i")
	h.contains("Reactions", "🎉 3: bob, alice, carol", "👀 1: dave")
}

func TestEditedAndDeletedMessagesShowAsTheyStand(t *testing.T) {
	f := relFixture()
	edited := msg(bob, 5, "bob", "see you at one", ms(0))
	edited.EditedTS = ms(time.Minute)
	gone := msg(bob, 6, "bob", "", ms(0))
	gone.Deleted = true
	f.AddMessages(bob, edited, gone)
	f.SetSessions("", []protocol.Session{{Conv: bob, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
		ReadSeq: 6, WriteSeq: 6, WriteTS: ms(0), LastMsg: &gone.Message}})
	h := newHarness(t, f, 100, 30)
	h.contains(deletedText) // the list's preview
	h.press("enter")
	h.contains("see you at one", "edited 15:30")
	if n := strings.Count(h.screen(), deletedText); n != 2 {
		t.Fatalf("%q shows %d times, want the list's and the chat's:\n%s", deletedText, n, h.screen())
	}
	h.checkGeometry()
}

func TestReactionToOwnMessageNotifiesUnlessMuted(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 80, 24)
	target := msg("d:alice:dave", 4, "alice", "see you", ms(0)).Message
	reaction := protocol.Message{Conv: "d:alice:dave", Seq: 5, MsgID: "r5", From: "dave", Kind: protocol.KindReaction, RefSeq: 4, Body: "🎉"}
	h.event(client.Incoming{Conv: "d:alice:dave", Count: 1, Last: reaction, ReactedTo: &target})
	out := strings.Join(h.raws, "")
	if !strings.Contains(out, "\x1b]9;dave: dave reacted 🎉 to “see you”\x07") {
		t.Fatalf("the notification reads %q", out)
	}
	h.raws = nil
	muted := msg("d:alice:carol", 1, "alice", "hi", ms(0)).Message
	h.event(client.Incoming{Conv: "d:alice:carol", Count: 1, Last: protocol.Message{Conv: "d:alice:carol", Seq: 7, From: "carol",
		Kind: protocol.KindReaction, RefSeq: 1, Body: "👍"}, ReactedTo: &muted})
	if len(h.raws) != 0 {
		t.Fatalf("a reaction in a muted chat rang: %q", h.raws)
	}
}

func TestRelationEntriesAreNotLines(t *testing.T) {
	f := relFixture()
	f.AddMessages(bob, client.Message{Message: protocol.Message{Conv: bob, Seq: 5, MsgID: "r5", From: "bob",
		Kind: protocol.KindReaction, RefSeq: 3, Body: "🦄"}})
	h := newHarness(t, f, 100, 30)
	h.press("enter")
	h.lacks("🦄")
	if n := len(h.m.chat.c.msgs); n != 4 {
		t.Fatalf("%d messages loaded, want 4", n)
	}
}

func TestHelpListsTheMessageKeys(t *testing.T) {
	h := newHarness(t, newFixture(), 120, 60)
	h.press("?")
	h.contains("The selected message", "reply to the selected message", "edit my selected message",
		"delete my message for everyone (asks)", "react to the selected message", "jump to the message a reply quotes",
		"edit the newest if mine")
}
