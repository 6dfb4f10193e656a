package tui

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
)

// TestOverlongMessageIsRefusedWhole checks the one behaviour of the body
// limit: a message over 4,096 bytes, whether its characters take
// one byte or two, is kept whole in the input and refused with its size,
// and split into messages within the limit only if the user says so.
func TestOverlongMessageIsRefusedWhole(t *testing.T) {
	for _, tc := range []struct {
		name  string
		text  string
		bytes int
	}{
		{"5,000 one-byte characters", strings.Repeat("abcd ", 1000)[:4999] + "!", 5000},
		{"6,000 bytes of two-byte characters", strings.Repeat("é", 3000), 6000},
		{"one line of 9,000 bytes", strings.Repeat("x", 9000), 9000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			h := newHarness(t, f, 80, 24)
			openBob(h)
			h.send(tea.PasteMsg{Content: tc.text})
			if got := h.m.chat.input.Value(); got != tc.text {
				t.Fatalf("the input holds %d of the %d bytes pasted", len(got), len(tc.text))
			}
			h.press("enter")
			h.contains(fmt.Sprintf("%d of 4096 bytes", tc.bytes))
			if s := f.CallsOf("Send"); len(s) != 0 {
				t.Fatalf("sent before the user answered: %d sends", len(s))
			}
			h.press("n")
			h.lacks("4096 bytes")
			if got := h.m.chat.input.Value(); got != tc.text || len(f.CallsOf("Send")) != 0 {
				t.Fatalf("after no: %d sends, the input holds %d of %d bytes", len(f.CallsOf("Send")), len(got), len(tc.text))
			}

			// Split: every part within the limit, in order, nothing lost
			// but the whitespace where a part ends.
			h.press("enter", "y")
			sends := f.CallsOf("Send")
			want := (tc.bytes + maxBodyBytes - 1) / maxBodyBytes
			if len(sends) < want || len(sends) > want+1 {
				t.Fatalf("split into %d messages, want %d or %d", len(sends), want, want+1)
			}
			var joined strings.Builder
			for i, s := range sends {
				if s.Conv != bob || s.Body == "" || len(s.Body) > maxBodyBytes || !utf8.ValidString(s.Body) {
					t.Fatalf("part %d: %d bytes to %s (valid UTF-8: %v)", i, len(s.Body), s.Conv, utf8.ValidString(s.Body))
				}
				joined.WriteString(s.Body)
			}
			if strip(joined.String()) != strip(tc.text) {
				t.Fatal("the parts do not make up the text")
			}
			if h.m.chat.input.Value() != "" {
				t.Fatal("the input was not emptied by the split send")
			}
		})
	}
}

// strip drops every space.
func strip(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}
