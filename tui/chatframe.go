package tui

import (
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// View renders the chat pane: header, history, the key legend and the
// input; exactly its size.
func (p *chatPane) View() string {
	c, st, w, cw := p.c, &p.com.st, p.width, p.com.cells
	var b strings.Builder

	// Header: title and marks, then who is typing or what the chat is.
	marks := ""
	if c.sess.Muted {
		marks += " " + markMute
	}
	if c.sess.Priority > 0 {
		marks += " " + markPin
	}
	// Narrow, the chat has the screen: an arrow says esc goes back. The
	// line below lines up with the title.
	back, indent := " ← ", "   "
	if p.split {
		back, indent = " ", " "
	}
	b.WriteString(st.header.Render(cw.spread(back+p.com.chatTitle(&c.sess), marks+" ", w)))
	b.WriteByte('\n')
	sub, subStyle := indent+p.subtitle(), st.headerDim
	if users := p.com.live.typing[c.conv]; len(users) > 0 {
		sub, subStyle = indent+typingText(users, c.group), st.typing.Inherit(st.headerDim)
	}
	if news := p.com.live.elsewhereText(); news != "" && !p.split {
		// The list is not on screen: say where new messages came.
		news = cw.truncate("✉ "+news, max(0, w/2)) + " "
		b.WriteString(subStyle.Render(cw.fit(sub, w-cw.width(news))) + st.news.Render(news))
	} else {
		b.WriteString(subStyle.Render(cw.fit(sub, w)))
	}
	b.WriteByte('\n')

	b.WriteString(c.view(st, cw, p.focused && p.mode == focusHistory))
	b.WriteByte('\n')

	// The rule above the input carries a hint for the focused area.
	hint := legend(cw, p.hint(), w-1)
	rule := strings.Repeat("─", max(0, w-cw.width(hint)-1))
	b.WriteString(st.inputBorder.Render(cw.truncate(rule+hint+"─", w)))
	b.WriteByte('\n')
	if p.readOnly() {
		// A former member: the stored messages stay, the input goes.
		b.WriteString(st.system.Render(cw.fit(" "+notMemberText, w)))
		return b.String()
	}
	if bar := p.requestBar(); bar != "" {
		b.WriteString(st.accent.Render(cw.fit(" "+bar, w)))
		b.WriteByte('\n')
	}
	if bar := p.composeBar(); bar != "" {
		tail := " · esc cancels"
		b.WriteString(st.accent.Render(cw.fit(" "+cw.truncate(bar, max(1, w-1-cw.width(tail)))+tail, w)))
		b.WriteByte('\n')
	}
	for i, l := range strings.Split(p.input.View(), "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(cw.fit(" "+l, w))
	}
	return b.String()
}

// cursor is where the terminal's cursor goes in the pane while typing,
// nil when it is hidden.
func (p *chatPane) cursor() *tea.Cursor {
	if p.c == nil || !p.focused || p.mode != focusInput {
		return nil
	}
	cur := p.input.Cursor()
	if cur == nil {
		return nil
	}
	cur.X++
	cur.Y += chatHeaderHeight + p.c.height + 1
	if p.compose.kind != composeMessage {
		cur.Y++ // below the bar that says which message
	}
	if p.requestBar() != "" {
		cur.Y++ // below the request's bar
	}
	return cur
}

// hintPart is one entry of a key legend; when the legend does not fit,
// the lowest rank gives way first.
type hintPart struct {
	text string
	rank int
}

// hint is the key legend of the focused chat pane.
func (p *chatPane) hint() []hintPart {
	var parts []hintPart
	switch {
	case !p.focused:
		return nil
	case p.mode == focusInput:
		parts = []hintPart{{"enter send", 5}, {"alt+enter new line", 3}, {"esc back", 2}, {"f1 help", 1}}
	case p.mode == focusHistory && p.readOnly():
		return []hintPart{{"↑↓ select", 2}, {"esc back", 1}}
	case p.mode == focusHistory:
		parts = []hintPart{{"↑↓ select", 5}, {"i info", 3}, {"enter write", 2}, {"esc back", 1}}
	default:
		return nil
	}
	if p.c.group && !p.readOnly() {
		// Before "esc back".
		i := slices.IndexFunc(parts, func(h hintPart) bool { return h.text == "esc back" })
		parts = slices.Insert(parts, i, hintPart{p.com.keys.Global.GroupMenu.Help().Key + " group", 4})
	}
	return parts
}

// legend joins the parts of a key legend that fit in w cells, as
// " a · b · c ", "" for none.
func legend(cw cells, parts []hintPart, w int) string {
	for len(parts) > 0 {
		texts := make([]string, len(parts))
		low := 0
		for i, p := range parts {
			texts[i] = p.text
			if p.rank < parts[low].rank {
				low = i
			}
		}
		s := " " + strings.Join(texts, " · ") + " "
		if cw.width(s) <= w || len(parts) == 1 {
			return s
		}
		parts = slices.Delete(slices.Clone(parts), low, low+1)
	}
	return ""
}

// emptyChatView is the chat pane before a chat is opened, w x h.
func emptyChatView(cw cells, st *styles, w, h int) string {
	lines := make([]string, h)
	blank := strings.Repeat(" ", w)
	for i := range lines {
		lines[i] = blank
	}
	mid := h / 2
	if mid-1 >= 0 {
		lines[mid-1] = cw.center(st.title.Render("imtui"), w)
	}
	if mid < h {
		lines[mid] = cw.center(st.dim.Render("Pick a chat with enter, or press n for a new one."), w)
	}
	if mid+1 < h {
		lines[mid+1] = cw.center(st.dim.Render("? shows every key."), w)
	}
	return strings.Join(lines, "\n")
}

// isGroup says s is a group chat.
func isGroup(s *protocol.Session) bool {
	return s.Kind == "group" || strings.HasPrefix(s.Conv, "g:")
}
