package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// receiptsTimeout bounds a message-info request.
const receiptsTimeout = 10 * time.Second

// maybeMarkRead sends a read receipt for the newest message on screen when
// the chat is open and the terminal has focus, unless the chat is a group
// the user has left (the server refuses the receipt).
func (m *Model) maybeMarkRead() tea.Cmd {
	c := m.chat
	if c == nil || !c.loaded || !m.termFocused || m.showHelp || !m.chatVisible() || m.readOnly() {
		return nil
	}
	seq := c.maxVisibleSeq()
	if seq <= c.readSent {
		return nil
	}
	c.readSent = seq
	b, conv := m.b, c.conv
	return call(func() { b.MarkRead(conv, seq) })
}

// openInfo shows the receipts of message i of the open chat.
func (m *Model) openInfo(i int) tea.Cmd {
	c := m.chat
	if c == nil || i < 0 || i >= len(c.msgs) {
		return m.notify("no message selected", false)
	}
	if m.readOnly() {
		return m.notify("no receipts: you are no longer a member of this group", false)
	}
	msg := c.msgs[i]
	if msg.Seq <= 0 || msg.Outbox {
		return m.notify("not sent yet: waiting for the server", false)
	}
	if msg.Kind == protocol.KindSystem {
		return m.notify("system messages have no receipts", false)
	}
	m.infoGen++
	preview := truncate(oneLine(msg.Body), 40)
	d := &infoDialog{
		title: "Message info",
		id:    m.infoGen,
		seq:   msg.Seq,
		body: []string{
			"“" + preview + "”",
			"from " + msg.From + " · " + msgTime(&msg, m.now()).Format("2 Jan 15:04") + " · seq " + itoa(msg.Seq),
			"",
			"loading receipts…",
		},
	}
	m.dialog = d
	b, conv, id := m.b, c.conv, m.infoGen
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), receiptsTimeout)
		defer cancel()
		rs, err := b.Receipts(ctx, conv)
		return receiptsMsg{id: id, members: rs, err: err}
	}
}
