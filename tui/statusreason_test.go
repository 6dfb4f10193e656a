package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/client"
)

// A reason too long for a narrow status bar is not lost: the bar says
// which key shows it, and that key shows it whole, wrapped; an error
// notice too, after it has left the bar.
func TestCutReasonIsShownWholeOnAKey(t *testing.T) {
	f := statusFake()
	reason := errors.New("websocket: close 1001 (going away): the node is shutting down for maintenance")
	f.SetConn(client.Conn{State: client.Offline, RetryAt: testNow.Add(12 * time.Second), Err: reason})
	h := newHarness(t, f, 78, 24)
	bar := h.lineWith("offline")
	if !strings.Contains(bar, "ctrl+x") {
		t.Fatalf("the cut reason does not say which key shows it: %q", bar)
	}
	h.showsWhole("going away", "shutting down for maintenance")
	h.checkGeometry()
	h.press("esc")
	h.lacks("shutting down for maintenance")

	// An error notice, cut, then gone from the bar: ctrl+x still shows it.
	h.event(client.ConnChanged{Conn: client.Conn{State: client.Online}})
	long := "message to g:team refused: forbidden: you are no longer a member of this group and cannot write in it"
	h.event(client.ErrorEvent{Op: "send", Err: errors.New(long)})
	if bar := h.lineWith("● online"); !strings.Contains(bar, "ctrl+x") {
		t.Fatalf("the cut notice does not say which key shows it: %q", bar)
	}
	h.fireTimers()
	h.showsWhole("cannot write in it")
	h.checkGeometry()
}

// boxText is screen's words in reading order, without the boxes' borders:
// text wrapped in a dialog reads as one line.
func boxText(screen string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(screen, "│", " ")), " ")
}

// showsWhole presses ctrl+x and fails unless the box it opens shows each
// of wants (across the box's line breaks).
func (hs *harness) showsWhole(wants ...string) {
	hs.t.Helper()
	hs.press("ctrl+x")
	whole := boxText(hs.screen())
	for _, want := range wants {
		if !strings.Contains(whole, want) {
			hs.t.Fatalf("ctrl+x does not show %q:\n%s", want, hs.screen())
		}
	}
}
