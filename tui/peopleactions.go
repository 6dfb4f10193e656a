package tui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// isRequest says s is a message request: a direct chat whose first
// message came from someone the user never wrote to.
func isRequest(s *protocol.Session) bool { return s.Request && !isGroup(s) }

// offlineNote is what a notice adds when the server will hear of an
// action only once the client is back online.
func offlineNote(com *common) string {
	if com.conn.State != client.Online {
		return " (offline: sent when back online)"
	}
	return ""
}

// blockDialog asks before blocking peer, or unblocking a peer blocked.
func blockDialog(com *common, peer string) dialog {
	label, b := com.people.label(peer), com.b
	if com.people.blocked(peer) {
		return newConfirm(com, "Unblock "+label, "Unblock "+label+"? They can write to you again and see when you are online.",
			func() tea.Cmd {
				return tea.Batch(call(func() { b.Unblock(peer) }), notice("unblocking "+label+"…"+offlineNote(com), false))
			})
	}
	return newConfirm(com, "Block "+label,
		"Block "+label+"? They can no longer write to you here nor see when you are online; the chat stays. The chat menu (ctrl+r) or the settings (S) unblock them.",
		func() tea.Cmd {
			return tea.Batch(call(func() { b.Block(peer) }), notice("blocking "+label+"…"+offlineNote(com), false))
		})
}

// deleteChatDialog asks before deleting chat s from the list.
func deleteChatDialog(com *common, s protocol.Session) dialog {
	title, b, conv := com.chatTitle(&s), com.b, s.Conv
	var d *dangerDialog
	d = newDanger(com, "Delete chat", "Delete "+title+"? Its messages stay on the server; a new message brings it back.", "Delete",
		func() tea.Cmd {
			d.ask(convDeletedMsg{conv})
			what := "deleted " + title
			if com.conn.State != client.Online {
				what += " (offline: sent when back online)"
			}
			return tea.Batch(call(func() { b.SessionOp(conv, "delete", 0, "") }), notice(what, false))
		})
	return d
}

// chatMenu offers what can be done with chat s: a group's actions, or
// blocking (unblocking) a direct chat's peer and deleting the chat.
func chatMenu(com *common, s protocol.Session) (dialog, tea.Cmd) {
	if isGroup(&s) {
		return groupMenu(com, s)
	}
	peer := directPeer(&s, com.me())
	if peer == "" {
		return nil, notice("no actions for "+sessionTitle(&s), false)
	}
	label := com.people.label(peer)
	block := "Block " + label + "…"
	if com.people.blocked(peer) {
		block = "Unblock " + label + "…"
	}
	var d *choiceDialog
	d = newChoice(com, com.chatTitle(&s), []string{block, "Delete the chat…"}, func(i int) tea.Cmd {
		if i == 0 {
			d.ask(showDialogMsg{blockDialog(com, peer)})
		} else {
			d.ask(showDialogMsg{deleteChatDialog(com, s)})
		}
		return nil
	})
	return d, nil
}

// requestBar is the line above a request's input: who wrote and the keys
// that answer them; "" when the open chat is no request.
func (p *chatPane) requestBar() string {
	c := p.c
	if c == nil || !isRequest(&c.sess) || p.readOnly() {
		return ""
	}
	peer := directPeer(&c.sess, p.com.me())
	label := p.com.people.label(peer)
	if p.com.people.blocked(peer) {
		return label + " is blocked: [b] unblock  [d]elete"
	}
	return label + " is not in your chats: [r]eply  [b]lock  [d]elete"
}

// requestKey answers a request from its bar while the history has the
// keys: r writes the reply, b blocks (or unblocks) and d deletes the
// chat, both asking first. ok is false for another key.
func (p *chatPane) requestKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	if p.requestBar() == "" {
		return nil, false
	}
	switch msg.String() {
	case "r":
		if p.com.people.blocked(directPeer(&p.c.sess, p.com.me())) {
			return notice("unblock them first (b)", false), true
		}
		p.setMode(focusInput)
	case "b":
		p.ask(showDialogMsg{blockDialog(p.com, directPeer(&p.c.sess, p.com.me()))})
	case "d":
		p.ask(showDialogMsg{deleteChatDialog(p.com, p.c.sess)})
	default:
		return nil, false
	}
	return nil, true
}
