package tui

import (
	"testing"
)

// The category dialog says what a folder name may hold before it is sent,
// and refuses one the server would refuse, suggesting one it takes: the
// name never reaches the engine.
func TestFolderNameRuleIsToldAndChecked(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 100, 30)
	h.press("c")
	h.contains("Move", "a-z 0-9 _ . -")
	h.typeText("Work Stuff")
	h.press("enter")
	h.contains(`try "work-stuff"`)
	if c := f.CallsOf("SessionOp"); len(c) != 0 {
		t.Fatalf("a name the server refuses was sent: %v", c)
	}
	for range "Work Stuff" {
		h.press("backspace")
	}
	h.typeText("work-stuff")
	h.press("enter")
	if c := f.CallsOf("SessionOp"); len(c) != 1 || c[0].Category != "work-stuff" {
		t.Fatalf("calls %v, want set_category work-stuff", c)
	}
}
