package tui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// onEvent routes one client event to the components it concerns.
func (m *Model) onEvent(ev client.Event) tea.Cmd {
	var cmds []tea.Cmd
	switch ev := ev.(type) {
	case client.ConnChanged:
		cmds = append(cmds, m.onEventConn(ev))
	case client.SessionsChanged:
		cmds = append(cmds, m.list.reload())
	case client.GroupChanged:
		// The answer to a group change: show it at once. The session
		// follows by sync (SessionsChanged); reloading the list now would
		// read the state from before the change.
		if m.chat.conv() == ev.Conv {
			s := m.chat.session()
			s.Title, s.Members = ev.Title, ev.Members
			m.chat.setSession(s)
		} else if pg := m.creating; pg != nil && ev.Key == pg.key {
			cmds = append(cmds, m.groupCreated(pg, ev))
		}
	case client.MessagesChanged:
		cmds = append(cmds, m.list.reload())
		if m.chat.conv() == ev.Conv {
			cmds = append(cmds, m.chat.reload())
		}
	case client.HistoryStart:
		m.chat.onHistoryStart(ev)
	case client.TicksChanged:
		live := m.com.live
		live.ticks[ev.Conv] = live.ticks[ev.Conv].Merge(ev.Ticks)
		if m.chat.conv() == ev.Conv {
			m.chat.setTicks(ev.Ticks)
		}
	case client.TypingEvent:
		if ev.User == m.com.me() {
			break
		}
		var seq int64
		if s, ok := m.list.find(ev.Conv); ok {
			seq = s.WriteSeq
		}
		cmds = append(cmds, m.com.live.startTyping(m.com.tick, m.com.opts.TypingTimeout, ev, seq))
	case client.Incoming:
		cmds = append(cmds, m.onIncoming(ev))
	case client.SendRefused:
		if !ev.Kept {
			cmds = append(cmds, m.chat.giveBack(ev.Conv, ev.Body))
		}
	case client.PresenceChanged:
		cmds = append(cmds, readPeople(m.com.b, m.com.people.shown))
	case client.SettingsChanged:
		cmds = append(cmds, m.onSettings(ev))
	case client.ErrorEvent:
		text := ev.Op + " failed"
		if ev.Err != nil {
			text = ev.Op + ": " + ev.Err.Error()
		}
		cmds = append(cmds, m.status.notify(text, true))
	}
	return tea.Batch(cmds...)
}

// onSettings takes the user's new settings: the screens show them, and a
// notice says what this device's request did.
func (m *Model) onSettings(ev client.SettingsChanged) tea.Cmd {
	pp := m.com.people
	pp.settings = ev.Settings
	if d, ok := m.dialog.(*settingsDialog); ok {
		d.onSettings(ev.Settings)
	}
	if m.chat.isOpen() {
		m.chat.layout() // a request's bar may say blocked now
	}
	switch ev.Op {
	case "settings":
		return m.status.notify("settings saved", false)
	case "block":
		return tea.Batch(m.status.notify("blocked "+pp.label(ev.User), false), readPeople(m.com.b, pp.shown))
	case "unblock":
		return tea.Batch(m.status.notify("unblocked "+pp.label(ev.User), false), readPeople(m.com.b, pp.shown))
	}
	return nil
}

// groupCreated follows the server's answer to the group the user asked
// for: its chat opens if the user is still where they were when they asked,
// with nothing typed since; otherwise a notice says the group is there.
func (m *Model) groupCreated(pg *pendingGroup, ev client.GroupChanged) tea.Cmd {
	m.creating = nil
	if gen, typed := m.chat.place(); m.dialog != nil || m.showHelp || gen != pg.chatGen || typed != pg.input {
		return m.status.notify("group "+pg.title+" created: it is in the list", false)
	}
	return m.openChat(protocol.Session{Conv: ev.Conv, Kind: "group", Title: ev.Title, Members: ev.Members})
}
