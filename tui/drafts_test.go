package tui

import (
	"testing"

	"github.com/imcore/im/client"
)

// lastDraftSaved returns the newest SaveDraft of conv ("", false if none).
func lastDraftSaved(h *harness, conv string) (string, bool) {
	var text string
	found := false
	for _, c := range h.f.CallsOf("SaveDraft") {
		if c.Conv == conv {
			text, found = c.Body, true
		}
	}
	return text, found
}

// TestDraftsAreKeptPerChat checks that what is typed and not sent stays
// with its chat: leaving it (esc), switching chats, a refused send and a
// restart keep it, in the input when the chat opens again and in the
// list, marked as a draft.
func TestDraftsAreKeptPerChat(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 80, 24)
	openBob(h)
	h.typeText("half typed draft")
	h.press("esc") // 80 columns: back to the list, the chat closes
	h.contains("draft: half typed draft")
	if text, _ := lastDraftSaved(h, bob); text != "half typed draft" {
		t.Fatalf("saved draft of bob %q", text)
	}

	// Another chat, another draft; back to bob: his draft is in the input.
	h.press("j", "enter") // carol
	if h.m.chat.conv() != "d:alice:carol" {
		t.Fatalf("opened %q, want carol's chat", h.m.chat.conv())
	}
	if v := h.m.chat.input.Value(); v != "" {
		t.Fatalf("carol's input holds %q", v)
	}
	h.typeText("for carol")
	h.press("esc", "k", "enter") // bob
	if v := h.m.chat.input.Value(); v != "half typed draft" {
		t.Fatalf("bob's input holds %q, want his draft", v)
	}
	h.press("esc")
	h.contains("draft: for carol", "draft: half typed draft")

	// Sending clears the draft.
	h.press("enter")
	h.press("enter")
	if s := f.CallsOf("Send"); len(s) != 1 || s[0].Body != "half typed draft" {
		t.Fatalf("sends %v", s)
	}
	if text, ok := lastDraftSaved(h, bob); !ok || text != "" {
		t.Fatalf("bob's draft after the send: %q", text)
	}
	h.press("esc")
	h.lacks("draft: half typed draft")

	// A message the server refuses for good comes back as its chat's
	// draft, while the user is in another chat.
	h.press("j", "enter") // carol
	h.event(client.SendRefused{Conv: bob, Body: "refused text"})
	h.press("esc")
	h.contains("draft: refused text")
	if text, _ := lastDraftSaved(h, bob); text != "refused text" {
		t.Fatalf("saved draft of bob %q, want the refused text", text)
	}

	// A restart: the saved drafts come back.
	f2 := newFixture()
	f2.SetDrafts(map[string]string{"d:alice:carol": "for carol"})
	h2 := newHarness(t, f2, 80, 24)
	h2.contains("draft: for carol")
	h2.press("j", "j", "j", "enter") // carol
	if v := h2.m.chat.input.Value(); v != "for carol" {
		t.Fatalf("after a restart carol's input holds %q", v)
	}
}
