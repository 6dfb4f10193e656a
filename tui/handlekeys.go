package tui

import (
	"slices"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// onKey routes a key press.
func (m *Model) onKey(msg tea.KeyPressMsg) tea.Cmd {
	g := m.keys.Global
	if key.Matches(msg, g.Quit) {
		m.quitting = true
		return nil
	}
	if m.showHelp {
		switch msg.String() {
		case "esc", "q", "?", "f1":
			m.showHelp = false
		default:
			m.helpView.update(msg)
		}
		return nil
	}
	if d := m.dialog; d != nil {
		done, cmd := d.update(m, msg)
		if done && m.dialog == d {
			m.dialog = nil
		}
		return cmd
	}
	switch {
	case key.Matches(msg, g.Help) && (m.focus != focusInput || msg.Text == ""):
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
	}
	switch m.focus {
	case focusInput:
		return m.inputKey(msg)
	case focusHistory:
		return m.historyKey(msg)
	}
	return m.listKey(msg)
}

// cycleFocus moves the focus through list, input and history.
func (m *Model) cycleFocus(d int) {
	if m.chat == nil {
		return
	}
	order := []focusArea{focusInput, focusHistory}
	if m.split() {
		order = []focusArea{focusList, focusInput, focusHistory}
	}
	if m.readOnly() {
		order = slices.DeleteFunc(order, func(f focusArea) bool { return f == focusInput })
	}
	i := 0
	for j, f := range order {
		if f == m.focus {
			i = j
		}
	}
	m.setFocus(order[(i+d+len(order))%len(order)])
}

// leaveChat is esc in the chat: back to the list (closing the chat when
// the list and chat do not fit side by side).
func (m *Model) leaveChat() {
	if m.split() {
		m.setFocus(focusList)
		return
	}
	m.closeChat()
}

// inputKey handles a key while typing.
func (m *Model) inputKey(msg tea.KeyPressMsg) tea.Cmd {
	k, c := m.keys.Input, m.chat
	switch {
	case key.Matches(msg, k.Send):
		return m.send()
	case key.Matches(msg, k.Back):
		m.leaveChat()
		return nil
	case key.Matches(msg, k.PageUp):
		return m.scrollChat(-max(1, c.height-1))
	case key.Matches(msg, k.PageDown):
		return m.scrollChat(max(1, c.height-1))
	case key.Matches(msg, k.ScrollUp) && m.input.Value() == "":
		return m.scrollChat(-1)
	case key.Matches(msg, k.ScrollDown) && m.input.Value() == "":
		return m.scrollChat(1)
	case key.Matches(msg, k.Info):
		return m.openInfo(c.lastOwn(m.b.User()))
	}
	return m.updateInput(msg)
}

// updateInput passes msg to the editor, relayouts when it grew or shrank
// and tells the others the user is typing.
func (m *Model) updateInput(msg tea.Msg) tea.Cmd {
	before, h := m.input.Value(), m.input.Height()
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	if m.input.Height() != h {
		m.layout()
	}
	after := m.input.Value()
	if after == before || after == "" || m.chat == nil || m.readOnly() {
		return cmd
	}
	now := m.opts.Now()
	if now.Sub(m.chat.lastTyping) < m.opts.TypingInterval {
		return cmd
	}
	m.chat.lastTyping = now
	b, conv := m.b, m.chat.conv
	return tea.Batch(cmd, call(func() { b.Typing(conv) }))
}

// send sends the input's text.
func (m *Model) send() tea.Cmd {
	body := inputBody(m.input.Value())
	if body == "" || m.chat == nil || m.readOnly() {
		return nil
	}
	if n := len(body); n > maxBodyBytes {
		return m.notify("message too long: "+itoa(int64(n))+" of "+itoa(maxBodyBytes)+" bytes", true)
	}
	m.input.Reset()
	m.layout()
	m.chat.gotoBottom()
	m.chat.lastTyping = time.Time{}
	b, conv := m.b, m.chat.conv
	return func() tea.Msg {
		msg, err := b.Send(conv, body)
		return sentMsg{conv: conv, body: body, msg: msg, err: err}
	}
}

// scrollChat scrolls the open chat by n lines; reaching the top loads
// older messages.
func (m *Model) scrollChat(n int) tea.Cmd {
	c := m.chat
	if c == nil {
		return nil
	}
	c.scroll(n)
	if n < 0 && c.atTop() {
		return m.loadOlder()
	}
	return nil
}

// historyKey handles a key while reading the history.
func (m *Model) historyKey(msg tea.KeyPressMsg) tea.Cmd {
	k, c := m.keys.History, m.chat
	switch {
	case key.Matches(msg, k.Up):
		c.moveSel(-1)
		if c.atTop() {
			return m.loadOlder()
		}
	case key.Matches(msg, k.Down):
		c.moveSel(1)
	case key.Matches(msg, k.PageUp):
		return m.scrollChat(-max(1, c.height-1))
	case key.Matches(msg, k.PageDown):
		return m.scrollChat(max(1, c.height-1))
	case key.Matches(msg, k.HalfUp):
		return m.scrollChat(-max(1, c.height/2))
	case key.Matches(msg, k.HalfDown):
		return m.scrollChat(max(1, c.height/2))
	case key.Matches(msg, k.Top):
		c.setOffset(0)
		if len(c.msgs) > 0 {
			c.sel = 0
		}
		return m.loadOlder()
	case key.Matches(msg, k.Bottom):
		c.gotoBottom()
		c.sel = len(c.msgs) - 1
	case key.Matches(msg, k.Info):
		return m.openInfo(c.sel)
	case key.Matches(msg, k.Input):
		if m.readOnly() {
			return m.notify("you are no longer a member of this group", false)
		}
		m.setFocus(focusInput)
	case key.Matches(msg, k.Back):
		m.leaveChat()
	case key.Matches(msg, k.Rename):
		return m.groupAction(c.sess, actRename)
	case key.Matches(msg, k.AddMembers):
		return m.groupAction(c.sess, actAdd)
	case key.Matches(msg, k.RemoveMember):
		return m.groupAction(c.sess, actRemove)
	case key.Matches(msg, k.LeaveGroup):
		return m.groupAction(c.sess, actLeave)
	}
	return nil
}

// listKey handles a key in the session list.
func (m *Model) listKey(msg tea.KeyPressMsg) tea.Cmd {
	k, l := m.keys.List, &m.list
	switch {
	case key.Matches(msg, k.Up):
		l.move(-1)
	case key.Matches(msg, k.Down):
		l.move(1)
	case key.Matches(msg, k.PageUp):
		l.move(-l.visibleRows())
	case key.Matches(msg, k.PageDown):
		l.move(l.visibleRows())
	case key.Matches(msg, k.Top):
		l.moveTo(0)
	case key.Matches(msg, k.Bottom):
		l.moveTo(len(l.rows) - 1)
	case key.Matches(msg, k.Open):
		return m.openRow()
	case key.Matches(msg, k.Back):
		l.pop()
	case key.Matches(msg, k.Quit):
		m.quitting = true
	case key.Matches(msg, k.NewChat):
		m.dialog = m.newChatDialog()
	case key.Matches(msg, k.NewGroup):
		m.dialog = m.newGroupDialog()
	case key.Matches(msg, k.Pin, k.Mute, k.MarkUnread, k.Delete, k.Category):
		return m.sessionAction(msg)
	}
	return nil
}

// openRow opens the selected chat, folder or business list.
func (m *Model) openRow() tea.Cmd {
	r, ok := m.list.selected()
	if !ok {
		return nil
	}
	switch r.kind {
	case rowFolder:
		m.list.push(listLevel{subBiz: m.list.level().subBiz, category: r.folder, title: r.folder})
		return nil
	case rowGateway:
		name, _ := protocol.IsGateway(r.sess.Conv)
		title := oneLine(r.sess.Title)
		if title == "" {
			title = name
		}
		m.list.push(listLevel{subBiz: name, title: title})
		if m.listLoad[name] > 0 {
			return nil
		}
		m.listLoad[name] = 1
		return m.loadSessions(name)
	}
	return m.openChat(*r.sess)
}
