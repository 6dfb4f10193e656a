package tui

import (
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/x/ansi"
)

// sanitize makes text from the network safe to print: escape sequences and
// control characters are dropped (a peer must not drive the terminal), tabs
// become spaces. Newlines are kept.
func sanitize(s string) string {
	clean := true
	for _, r := range s {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == unicode.ReplacementChar {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	if strings.ContainsAny(s, "\x1b\u009b\u009d\u0090") {
		// Drop whole escape sequences, parameters included.
		s = ansi.Strip(s)
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteString("    ")
		case r == '\n':
			b.WriteByte('\n')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		case r == unicode.ReplacementChar:
			b.WriteRune('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// oneLine returns s sanitized on one line: newlines and runs of spaces
// become one space.
func oneLine(s string) string {
	return strings.Join(strings.Fields(sanitize(s)), " ")
}

// cells measures and cuts text in terminal cells the way the renderer will
// draw it. Bubble Tea's renderer counts code points (wcwidth: an emoji of
// three people joined by zero-width joiners is six cells) unless the
// terminal reports that it clusters graphemes (mode 2027: two cells); a
// layout measured otherwise overflows its line, and the renderer cuts the
// end. The zero value counts code points.
type cells struct{ method ansi.Method }

// width is the number of terminal cells s takes (wide characters and emoji
// count two, escape sequences none).
func (c cells) width(s string) int {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b >= 0x80 || b < 0x20 {
			return c.method.StringWidth(s)
		}
	}
	return len(s) // printable ASCII: one cell a byte
}

// truncate cuts s to at most w cells, ending in "…" when cut.
func (c cells) truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if c.width(s) <= w {
		return s
	}
	return c.method.Truncate(s, w, "…")
}

// fit truncates or pads s to exactly w cells.
func (c cells) fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	s = c.truncate(s, w)
	if n := c.width(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// spread puts left and right at both ends of a w-cell line, truncating left
// first when both do not fit.
func (c cells) spread(left, right string, w int) string {
	rw := c.width(right)
	if rw >= w {
		return c.fit(right, w)
	}
	return c.fit(left, w-rw) + right
}

// center places s in the middle of a w-cell line.
func (c cells) center(s string, w int) string {
	s = c.truncate(s, w)
	pad := w - c.width(s)
	if pad <= 0 {
		return s
	}
	return strings.Repeat(" ", pad/2) + s + strings.Repeat(" ", pad-pad/2)
}

// msTime converts Unix milliseconds to a time in loc.
func msTime(ms int64, loc *time.Location) time.Time {
	return time.UnixMilli(ms).In(loc)
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd
}

// listTime formats a session's time: HH:MM today, "Yesterday", the weekday
// within a week, else the date.
func listTime(ms int64, now time.Time) string {
	if ms <= 0 {
		return ""
	}
	t := msTime(ms, now.Location())
	switch {
	case sameDay(t, now):
		return t.Format("15:04")
	case sameDay(t, now.AddDate(0, 0, -1)):
		return "Yesterday"
	case t.Before(now) && now.Sub(t) < 6*24*time.Hour:
		return t.Format("Monday")
	case t.Year() == now.Year():
		return t.Format("Jan 2")
	}
	return t.Format("2006-01-02")
}

// dayLabel names the day of t for a day separator in a chat.
func dayLabel(t, now time.Time) string {
	switch {
	case sameDay(t, now):
		return "Today"
	case sameDay(t, now.AddDate(0, 0, -1)):
		return "Yesterday"
	case t.Year() == now.Year():
		return t.Format("Monday, 2 January")
	}
	return t.Format("Monday, 2 January 2006")
}

// wrap wraps s (already sanitized) to lines of at most w cells, breaking
// words longer than a line.
func (c cells) wrap(s string, w int) []string {
	if w < 1 {
		w = 1
	}
	var out []string
	for _, para := range strings.Split(s, "\n") {
		if c.width(para) <= w {
			out = append(out, para)
			continue
		}
		wrapped := c.method.Wrap(para, w, "")
		for _, l := range strings.Split(wrapped, "\n") {
			out = append(out, strings.TrimRight(l, " "))
		}
	}
	return out
}
