package tui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// Update handles one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(20, msg.Width), max(6, msg.Height)
		m.layout()
	case tea.FocusMsg:
		m.termFocused = true
	case tea.BlurMsg:
		m.termFocused = false
	case eventMsg:
		cmds = append(cmds, m.handleEvent(msg.ev), m.wait())
	case eventsClosedMsg:
		m.conn = client.Conn{State: client.Stopped}
	case sessionsMsg:
		cmds = append(cmds, m.onSessions(msg))
	case messagesMsg:
		cmds = append(cmds, m.onMessages(msg))
	case sentMsg:
		cmds = append(cmds, m.onSent(msg))
	case receiptsMsg:
		m.onReceipts(msg)
	case typingExpiredMsg:
		if m.typing[msg.conv][msg.user].gen == msg.gen {
			m.stopTyping(msg.conv, msg.user)
		}
	case olderTimeoutMsg:
		if c := m.chat; c != nil && c.conv == msg.conv && c.gen == msg.gen && c.awaitServer == msg.before {
			c.awaitServer = 0
			c.rebuildAtTop(m.renderCtx())
		}
	case retryTickMsg:
		if msg.gen == m.retryGen {
			cmds = append(cmds, m.retryTick())
		}
	case noticeExpiredMsg:
		if msg.gen == m.noticeGen {
			m.notice = notice{}
		}
	case tea.KeyPressMsg:
		cmds = append(cmds, m.onKey(msg))
	case tea.MouseWheelMsg:
		cmds = append(cmds, m.onWheel(msg))
	case tea.MouseClickMsg:
		cmds = append(cmds, m.onClick(msg))
	case doneMsg:
	default:
		// Paste and the editor's own messages.
		if m.focus == focusInput && m.dialog == nil {
			cmds = append(cmds, m.updateInput(msg))
		}
	}
	if m.quitting {
		return m, tea.Quit
	}
	cmds = append(cmds, m.maybeMarkRead())
	return m, tea.Batch(cmds...)
}

// onSessions stores a loaded list; a reload requested meanwhile follows.
func (m *Model) onSessions(msg sessionsMsg) tea.Cmd {
	var cmd tea.Cmd
	if m.listLoad[msg.subBiz] == 2 {
		m.listLoad[msg.subBiz] = 1
		cmd = m.loadSessions(msg.subBiz)
	} else {
		delete(m.listLoad, msg.subBiz)
	}
	if msg.err != nil {
		m.list.loadErr = "could not load chats: " + msg.err.Error()
		return cmd
	}
	m.list.loadErr = ""
	m.list.setSessions(msg.subBiz, msg.sessions, msg.total)
	m.stopTypingOnMessages(msg.sessions)
	if m.chat != nil {
		for _, s := range msg.sessions {
			if s.Conv == m.chat.conv {
				m.setChatSession(s)
				break
			}
		}
	}
	return cmd
}

// setChatSession applies a new state of the open chat's session: the
// header (a group's title and members), the ticks, and whether the user
// may still write there.
func (m *Model) setChatSession(s protocol.Session) {
	c := m.chat
	c.sess = s
	c.group = isGroup(&s)
	c.ticks = c.ticks.Merge(s.Ticks)
	if m.readOnly() {
		if m.focus == focusInput {
			m.setFocus(focusHistory)
		}
	} else if c.storeEnd {
		// A member again: the server's history is open once more.
		c.storeEnd = false
	}
	m.layout() // the input area's height may have changed
	c.rebuild(m.renderCtx())
}

// onMessages applies a loaded page of the open chat.
func (m *Model) onMessages(msg messagesMsg) tea.Cmd {
	c := m.chat
	if c == nil || msg.conv != c.conv || msg.gen != c.gen {
		return nil
	}
	rc := m.renderCtx()
	if msg.older {
		c.loadingOlder = false
		if msg.err != nil {
			c.rebuild(rc)
			return m.notify("loading older messages: "+msg.err.Error(), true)
		}
		if len(msg.msgs) == 0 {
			// The local store is exhausted: ask the server.
			return m.askServer(msg.before)
		}
		c.prepend(rc, msg.msgs)
		return m.fillScreen()
	}
	c.reloading = false
	if msg.err != nil {
		c.loaded = true
		c.rebuild(rc)
		return m.notify("loading messages: "+msg.err.Error(), true)
	}
	first := !c.loaded
	prevNewest := c.newestSeq()
	c.loaded = true
	if c.awaitServer != 0 {
		var oldest int64
		for _, x := range msg.msgs {
			if x.Seq > 0 && !x.Outbox {
				oldest = x.Seq
				break
			}
		}
		if oldest > 0 && (c.awaitServer < 0 || oldest < c.awaitServer) {
			c.awaitServer = 0
		}
	}
	c.setMessages(rc, msg.msgs)
	if first {
		if c.divLine >= 0 {
			c.setOffset(c.divLine)
		}
	} else {
		for _, x := range msg.msgs {
			if x.Seq > prevNewest && x.From != rc.me {
				m.stopTyping(c.conv, x.From)
			}
		}
	}
	var cmds []tea.Cmd
	if c.reloadAgain {
		c.reloadAgain = false
		cmds = append(cmds, m.reloadChat())
	}
	if first {
		cmds = append(cmds, m.fillScreen())
	}
	return tea.Batch(cmds...)
}

// fillScreen loads older messages while the loaded ones do not fill the
// screen, so that there is something to scroll.
func (m *Model) fillScreen() tea.Cmd {
	if c := m.chat; c != nil && len(c.lines) < c.height {
		return m.loadOlder()
	}
	return nil
}

// onSent follows a send: the chat reloads to show the message.
func (m *Model) onSent(msg sentMsg) tea.Cmd {
	if msg.err != nil {
		// Give the text back to edit and retry.
		if m.chat != nil && m.chat.conv == msg.conv && m.input.Value() == "" {
			m.input.SetValue(msg.body)
			m.layout()
		}
		return m.notify("send: "+msg.err.Error(), true)
	}
	if m.chat != nil && m.chat.conv == msg.conv {
		m.chat.follow = true
		return m.reloadChat()
	}
	return nil
}

// onReceipts fills the message-info dialog.
func (m *Model) onReceipts(msg receiptsMsg) {
	d, ok := m.dialog.(*infoDialog)
	if !ok || d.id != msg.id {
		return
	}
	if msg.err != nil {
		d.body = append(d.body[:len(d.body)-1], "could not load receipts: "+msg.err.Error())
		return
	}
	d.body = append(d.body[:len(d.body)-1], receiptLines(d.seq, m.b.User(), msg.members)...)
}
