package tui

import (
	tea "charm.land/bubbletea/v2"
)

// onWheel scrolls the pane under the pointer.
func (m *Model) onWheel(msg tea.MouseWheelMsg) tea.Cmd {
	if m.showHelp {
		m.helpView.update(msg)
		return nil
	}
	if m.dialog != nil {
		return nil
	}
	up := msg.Button == tea.MouseWheelUp
	down := msg.Button == tea.MouseWheelDown
	if !up && !down {
		return nil
	}
	overList := !m.chatVisible() || (m.split() && msg.X < m.listWidth())
	if overList {
		if up {
			m.list.move(-1)
		} else {
			m.list.move(1)
		}
		return nil
	}
	if up {
		return m.scrollChat(-3)
	}
	return m.scrollChat(3)
}

// onClick selects what was clicked: a chat in the list, a message in the
// history, or the input.
func (m *Model) onClick(msg tea.MouseClickMsg) tea.Cmd {
	if m.showHelp || m.dialog != nil || msg.Button != tea.MouseLeft {
		return nil
	}
	if !m.chatVisible() || (m.split() && msg.X < m.listWidth()) {
		if i, ok := m.list.rowAt(msg.Y - 1); ok {
			m.list.moveTo(i)
			m.setFocus(focusList)
			return m.openRow()
		}
		return nil
	}
	c := m.chat
	y := msg.Y - chatHeaderHeight
	if y >= c.height {
		m.setFocus(focusInput)
		return nil
	}
	top := max(0, c.height-len(c.lines))
	if l := c.offset + y - top; y >= top && l < len(c.lines) && c.lineMsg[l] >= 0 {
		m.setFocus(focusHistory)
		c.sel = c.lineMsg[l]
	}
	return nil
}
