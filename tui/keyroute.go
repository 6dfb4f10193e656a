package tui

import (
	"slices"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
)

// onKey routes a key press: the keys that work everywhere first, then the
// help screen or the dialog over the screen, then the pane with the focus.
func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	g := m.com.keys.Global
	if key.Matches(msg, g.Quit) {
		m.quitting = true
		return nil
	}
	if m.showHelp {
		switch msg.String() {
		case "esc", "q", "?", "f1":
			m.showHelp = false
		default:
			m.help.Update(msg)
		}
		return nil
	}
	if m.dialog != nil {
		return m.updateDialog(msg)
	}
	focus := m.focusArea()
	typing := focus == focusInput || (focus == focusList && m.list.filtering)
	switch {
	case key.Matches(msg, g.Help) && (!typing || msg.Text == ""):
		// While typing, printable help keys (?) are text; f1 still helps.
		m.showHelp = true
		m.layout()
		return nil
	case key.Matches(msg, g.NextFocus):
		m.cycleFocus(1)
		return nil
	case key.Matches(msg, g.PrevFocus):
		m.cycleFocus(-1)
		return nil
	case key.Matches(msg, g.GroupMenu):
		return m.groupMenuKey()
	case key.Matches(msg, g.Reconnect):
		return m.reconnect()
	case key.Matches(msg, g.SearchAll):
		return m.route(showDialogMsg{newGlobalSearchDialog(m.com, m.chatName)})
	case key.Matches(msg, g.Status):
		return m.route(showDialogMsg{newStatusDialog(m.com, &m.status)})
	}
	if focus == focusList {
		if key.Matches(msg, m.com.keys.List.Quit) && !typing {
			// A q in a word typed on the list ("quick note") must not end
			// the program: q asks, and q again (or ctrl+c) quits.
			return m.route(showDialogMsg{newQuitDialog(m.com, msg.String())})
		}
		return m.list.Update(msg)
	}
	return m.chat.Update(msg)
}

// cycleFocus moves the focus through list, input and history.
func (m *Model) cycleFocus(d int) {
	if !m.chat.isOpen() {
		return
	}
	order := []focusArea{focusInput, focusHistory}
	if m.split() {
		order = []focusArea{focusList, focusInput, focusHistory}
	}
	if m.chat.readOnly() {
		order = slices.DeleteFunc(order, func(f focusArea) bool { return f == focusInput })
	}
	i, cur := 0, m.focusArea()
	for j, f := range order {
		if f == cur {
			i = j
		}
	}
	m.setFocus(order[(i+d+len(order))%len(order)])
}

// groupMenuKey opens the chat menu (a group's actions; blocking a direct
// chat's peer) on what the keys act on: the selected list row, or the
// open chat.
func (m *Model) groupMenuKey() tea.Cmd {
	var d dialog
	var cmd tea.Cmd
	if !m.listFocused && m.chat.isOpen() {
		d, cmd = chatMenu(m.com, m.chat.session())
	} else {
		r, ok := m.list.selected()
		switch {
		case !ok:
			return nil
		case r.kind != rowSession:
			return notice("no actions for a folder or a business's list", false)
		}
		d, cmd = chatMenu(m.com, *r.sess)
	}
	if d != nil {
		return tea.Batch(cmd, m.route(showDialogMsg{d}))
	}
	return cmd
}

// reconnect asks the client to connect now, when it is offline.
func (m *Model) reconnect() tea.Cmd {
	if m.com.conn.State != client.Offline {
		return m.status.notify("already "+m.com.conn.State.String(), false)
	}
	b := m.com.b
	return tea.Batch(call(b.Reconnect), m.status.notify("reconnecting now…", false))
}
