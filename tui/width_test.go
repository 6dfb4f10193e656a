package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui/tuitest"
)

// zwjFixture is alice's chat with bob whose newest message, her own and
// read, holds an emoji of three people joined by zero-width joiners: one
// grapheme, two cells where the terminal clusters graphemes, six where it
// draws code points.
func zwjFixture() *tuitest.Fake {
	f := tuitest.NewFake("alice", "laptop", "localhost:8080")
	text := "zwj 👨‍👩‍👧 x"
	f.SetSessions("", []protocol.Session{{Conv: bob, Kind: "direct", Title: "bob", ReadSeq: 2, WriteSeq: 2,
		WriteTS: ms(0), LastMsg: last(bob, 2, "alice", text, ms(0)), Ticks: protocol.Ticks{DeliveredSeq: 2, ReadSeq: 2}}})
	f.AddMessages(bob, msg(bob, 1, "bob", "hi", ms(-time.Minute)), msg(bob, 2, "alice", text, ms(0)))
	f.SetTicks(bob, protocol.Ticks{DeliveredSeq: 2, ReadSeq: 2})
	return f
}

// checkDrawnGeometry fails unless every line is the screen's width as a
// renderer measuring with method draws it.
func checkDrawnGeometry(h *harness, method ansi.Method) {
	h.t.Helper()
	for i, l := range strings.Split(h.screen(), "\n") {
		if w := method.StringWidth(l); w != h.m.width {
			h.t.Fatalf("line %d is drawn %d cells wide, want %d: %q\n%s", i, w, h.m.width, l, h.screen())
		}
	}
}

// TestZWJEmojiKeepsTheTicks checks that the layout measures text as the
// renderer draws it: by code point (wcwidth) unless the terminal reports
// grapheme clustering (mode 2027). Measured otherwise, the line with the
// emoji overflows and its end, the ticks, is cut.
func TestZWJEmojiKeepsTheTicks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report tea.Msg
		method ansi.Method
	}{
		{"code points", nil, ansi.WcWidth},
		{"graphemes", tea.ModeReportMsg{Mode: ansi.ModeUnicodeCore, Value: ansi.ModeSet}, ansi.GraphemeWidth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range []int{120, 80} {
				h := newHarness(t, zwjFixture(), w, 24)
				if tc.report != nil {
					h.send(tc.report)
				}
				checkDrawnGeometry(h, tc.method) // the list
				h.press("enter")
				checkDrawnGeometry(h, tc.method)
				line := tc.method.Truncate(h.lineWith("x  15:30"), w, "")
				if !strings.HasSuffix(strings.TrimRight(line, " "), "x  15:30 "+glyphRead) {
					t.Errorf("width %d: the bubble's line as drawn lacks its ticks: %q", w, line)
				}
			}
		})
	}
}
