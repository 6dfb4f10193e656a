package tui

import (
	"fmt"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// View renders the screen. It asks the terminal for the alternate screen,
// focus reports (read receipts wait for focus) and the mouse.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.ReportFocus = true
	if !m.opts.NoMouse {
		v.MouseMode = tea.MouseModeCellMotion
	}
	v.WindowTitle = "imtui — " + m.b.User()
	if m.list.total > 0 {
		v.WindowTitle = fmt.Sprintf("(%d) %s", m.list.total, v.WindowTitle)
	}
	if m.focus == focusInput && m.chat != nil && m.dialog == nil && !m.showHelp {
		if cur := m.input.Cursor(); cur != nil {
			x := 1
			if m.split() {
				x += m.listWidth() + 1
			}
			cur.X += x
			cur.Y += chatHeaderHeight + m.chat.height + 1
			v.Cursor = cur
		}
	}
	return v
}

// render draws the whole screen as text.
func (m *Model) render() string {
	bodyH := max(1, m.height-1)
	var body string
	switch {
	case m.showHelp:
		body = m.helpView.view()
	case m.split():
		lw := m.listWidth()
		left := m.list.view(m.listCtx(), lw, bodyH)
		var right string
		if m.chat != nil {
			right = m.chatView(m.chatWidth(), bodyH)
		} else {
			right = m.emptyChatView(m.chatWidth(), bodyH)
		}
		body = joinColumns(left, m.st.paneBorder.Render("│"), right)
	case m.chatVisible():
		body = m.chatView(m.width, bodyH)
	default:
		body = m.list.view(m.listCtx(), m.width, bodyH)
	}
	screen := body + "\n" + m.statusView(m.width)
	if m.dialog != nil && !m.showHelp {
		box := renderDialog(&m.st, m.dialog, m.width)
		bw, bh := width(strings.SplitN(box, "\n", 2)[0]), strings.Count(box, "\n")+1
		screen = overlay(screen, box, max(0, (m.width-bw)/2), max(0, (m.height-bh)/2))
	}
	return screen
}

// listCtx is the context for rendering list rows.
func (m *Model) listCtx() listCtx {
	return listCtx{st: &m.st, now: m.now(), me: m.b.User(), typing: m.typing, ticks: m.ticks, focused: m.focus == focusList}
}

// joinColumns puts two blocks of equal height side by side with sep
// between them on every line.
func joinColumns(left, sep, right string) string {
	ll := strings.Split(left, "\n")
	rl := strings.Split(right, "\n")
	var b strings.Builder
	for i := range max(len(ll), len(rl)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		if i < len(ll) {
			b.WriteString(ll[i])
		}
		b.WriteString(sep)
		if i < len(rl) {
			b.WriteString(rl[i])
		}
	}
	return b.String()
}

// chatView renders the chat pane: header, messages, input; w x h.
func (m *Model) chatView(w, h int) string {
	c, st := m.chat, &m.st
	var b strings.Builder

	// Header: title and marks, then who is typing or what the chat is.
	marks := ""
	if c.sess.Muted {
		marks += " " + markMute
	}
	if c.sess.Priority > 0 {
		marks += " " + markPin
	}
	back := " ← "
	if m.split() {
		back = " "
	}
	b.WriteString(st.header.Render(spread(back+c.title(), marks+" ", w)))
	b.WriteByte('\n')
	if users := m.typing[c.conv]; len(users) > 0 {
		b.WriteString(st.typing.Inherit(st.headerDim).Render(fit(back+typingText(users, c.group), w)))
	} else {
		b.WriteString(st.headerDim.Render(fit(back+c.subtitle(m.b.User()), w)))
	}
	b.WriteByte('\n')

	b.WriteString(c.view(st, m.focus == focusHistory))
	b.WriteByte('\n')

	// The rule above the input carries a hint for the focused area.
	hint := legend(m.chatHint(), w-1)
	rule := strings.Repeat("─", max(0, w-width(hint)-1))
	b.WriteString(st.inputBorder.Render(truncate(rule+hint+"─", w)))
	b.WriteByte('\n')
	if m.readOnly() {
		// A former member: the stored messages stay, the input goes.
		b.WriteString(st.system.Render(fit(" "+notMemberText, w)))
		return b.String()
	}
	for i, l := range strings.Split(m.input.View(), "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(fit(" "+l, w))
	}
	return b.String()
}

// hintPart is one entry of a key legend; when the legend does not fit,
// the lowest rank gives way first.
type hintPart struct {
	text string
	rank int
}

// chatHint is the key legend of the focused chat pane.
func (m *Model) chatHint() []hintPart {
	var parts []hintPart
	switch {
	case m.focus == focusInput:
		parts = []hintPart{{"enter send", 5}, {"alt+enter new line", 3}, {"esc back", 2}, {"f1 help", 1}}
	case m.focus == focusHistory && m.readOnly():
		return []hintPart{{"↑↓ select", 2}, {"esc back", 1}}
	case m.focus == focusHistory:
		parts = []hintPart{{"↑↓ select", 5}, {"i info", 3}, {"enter write", 2}, {"esc back", 1}}
	default:
		return nil
	}
	if m.chat.group && !m.readOnly() {
		// Before "esc back".
		i := slices.IndexFunc(parts, func(p hintPart) bool { return p.text == "esc back" })
		parts = slices.Insert(parts, i, hintPart{m.keys.Global.GroupMenu.Help().Key + " group", 4})
	}
	return parts
}

// legend joins the parts of a key legend that fit in w cells, as
// " a · b · c ", "" for none.
func legend(parts []hintPart, w int) string {
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
		if width(s) <= w || len(parts) == 1 {
			return s
		}
		parts = slices.Delete(slices.Clone(parts), low, low+1)
	}
	return ""
}

// emptyChatView is the right pane before a chat is opened.
func (m *Model) emptyChatView(w, h int) string {
	lines := make([]string, h)
	blank := strings.Repeat(" ", w)
	for i := range lines {
		lines[i] = blank
	}
	mid := h / 2
	if mid-1 >= 0 {
		lines[mid-1] = center(m.st.title.Render("imtui"), w)
	}
	if mid < h {
		lines[mid] = center(m.st.dim.Render("Pick a chat with enter, or press n for a new one."), w)
	}
	if mid+1 < h {
		lines[mid+1] = center(m.st.dim.Render("? shows every key."), w)
	}
	return strings.Join(lines, "\n")
}
