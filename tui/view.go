package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// View renders the screen. It asks the terminal for the alternate screen,
// focus reports (read receipts wait for focus) and the mouse.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.ReportFocus = true
	if !m.com.opts.NoMouse {
		v.MouseMode = tea.MouseModeCellMotion
	}
	v.WindowTitle = "imtui — " + m.com.me()
	if total := m.list.totals[""]; total > 0 {
		v.WindowTitle = fmt.Sprintf("(%d) %s", total, v.WindowTitle)
	}
	if m.dialog == nil && !m.showHelp && m.chatVisible() {
		if cur := m.chat.cursor(); cur != nil {
			if m.split() {
				cur.X += m.listWidth() + 1
			}
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
		body = m.help.View()
	case m.split():
		left := m.list.View()
		var right string
		if m.chat.isOpen() {
			right = m.chat.View()
		} else {
			right = emptyChatView(m.com.cells, &m.com.st, m.chatWidth(), bodyH)
		}
		body = joinColumns(left, m.com.st.paneBorder.Render("│"), right)
	case m.chatVisible():
		body = m.chat.View()
	default:
		body = m.list.View()
	}
	screen := body + "\n" + m.status.View()
	if m.dialog != nil && !m.showHelp {
		cw := m.com.cells
		box := renderDialog(cw, &m.com.st, m.dialog, m.width)
		bw, bh := cw.width(strings.SplitN(box, "\n", 2)[0]), strings.Count(box, "\n")+1
		screen = overlay(cw, screen, box, max(0, (m.width-bw)/2), max(0, (m.height-bh)/2))
	}
	return screen
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
