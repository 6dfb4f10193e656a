package tui

import (
	tea "charm.land/bubbletea/v2"
)

// overList says whether screen column x shows the list.
func (m *Model) overList(x int) bool {
	return !m.chatVisible() || (m.split() && x < m.listWidth())
}

// onWheel scrolls the pane under the pointer.
func (m *Model) onWheel(msg tea.MouseWheelMsg) tea.Cmd {
	if m.showHelp {
		m.help.Update(msg)
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
	if m.overList(msg.X) {
		if up {
			m.list.move(-1)
		} else {
			m.list.move(1)
		}
		return nil
	}
	if up {
		return m.chat.scroll(-3)
	}
	return m.chat.scroll(3)
}

// onClick selects what was clicked: a chat in the list, a message in the
// history, or the input.
func (m *Model) onClick(msg tea.MouseClickMsg) tea.Cmd {
	if m.showHelp || m.dialog != nil || msg.Button != tea.MouseLeft {
		return nil
	}
	if m.overList(msg.X) {
		m.setFocus(focusList)
		return m.list.clickRow(msg.Y)
	}
	m.setFocus(m.chat.focusMode())
	m.chat.click(msg.Y)
	return nil
}
