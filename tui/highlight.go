package tui

import (
	"strings"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
)

// hitStyle marks the words a search found: bold and underlined, so that
// it shows without colours too.
func (st *styles) hitStyle() lipgloss.Style {
	s := lipgloss.NewStyle().Bold(true).Underline(true)
	if !st.plain {
		s = s.Foreground(st.pal.warn)
	}
	return s
}

// hitRanges returns the byte ranges of text where any of terms occurs,
// without case, in order and merged where they overlap.
func hitRanges(text string, terms []string) [][2]int {
	var out [][2]int
	for i := 0; i < len(text); {
		end := -1
		for _, t := range terms {
			if n := foldPrefix(text[i:], t); n > 0 && i+n > end {
				end = i + n
			}
		}
		if end < 0 {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			continue
		}
		if k := len(out) - 1; k >= 0 && out[k][1] >= i {
			out[k][1] = max(out[k][1], end)
		} else {
			out = append(out, [2]int{i, end})
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
	}
	return out
}

// foldPrefix returns the length in bytes of the prefix of s that equals
// term without case, 0 when s does not start with it.
func foldPrefix(s, term string) int {
	if term == "" {
		return 0
	}
	n := 0
	for _, r := range term {
		if n >= len(s) {
			return 0
		}
		c, size := utf8.DecodeRuneInString(s[n:])
		if !strings.EqualFold(string(c), string(r)) {
			return 0
		}
		n += size
	}
	return n
}

// highlight renders text in base with the places where terms occur in
// hit.
func highlight(text string, terms []string, base, hit lipgloss.Style) string {
	var b strings.Builder
	at := 0
	for _, r := range hitRanges(text, terms) {
		b.WriteString(base.Render(text[at:r[0]]))
		b.WriteString(hit.Inherit(base).Render(text[r[0]:r[1]]))
		at = r[1]
	}
	b.WriteString(base.Render(text[at:]))
	return b.String()
}
