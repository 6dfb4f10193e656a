package tui

import (
	"slices"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// cmdOf is cmd as a list, empty when nil.
func cmdOf(cmd tea.Cmd) []tea.Cmd {
	if cmd == nil {
		return nil
	}
	return []tea.Cmd{cmd}
}

// Messages typed in one burst are queued in the order they were typed,
// however the runtime schedules the commands Update returns: Bubble Tea
// runs them concurrently, so the queueing must not wait for them.
func TestBurstOfSendsKeepsTypingOrder(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 100, 30)
	openBob(h)
	var pending []tea.Cmd
	for _, body := range []string{"b1-1", "b1-2", "b1-3", "b1-4", "b1-5"} {
		for _, r := range body {
			next, cmd := h.m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
			h.m = next.(Model)
			pending = append(pending, cmdOf(cmd)...)
		}
		next, cmd := h.m.Update(keyPress("enter"))
		h.m = next.(Model)
		pending = append(pending, cmdOf(cmd)...)
	}
	// The runtime may finish the last command first.
	slices.Reverse(pending)
	for _, cmd := range pending {
		h.exec(cmd)
	}
	var got []string
	for _, c := range f.CallsOf("Send") {
		got = append(got, c.Body)
	}
	want := []string{"b1-1", "b1-2", "b1-3", "b1-4", "b1-5"}
	if !slices.Equal(got, want) {
		t.Fatalf("sends reached the client as %v, want %v", got, want)
	}
}
