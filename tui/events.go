package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// eventMsg carries one engine event into Update.
type eventMsg struct{ ev client.Event }

// eventsClosedMsg says the engine closed its event stream.
type eventsClosedMsg struct{}

// sessionsMsg carries a loaded session list.
type sessionsMsg struct {
	subBiz   string
	sessions []protocol.Session
	total    int64
	err      error
}

// messagesMsg carries a loaded page of a conversation. older marks a page
// below the oldest loaded message; otherwise it is the newest window.
type messagesMsg struct {
	conv   string
	gen    int
	older  bool
	before int64
	msgs   []client.Message
	err    error
}

// sentMsg answers Backend.Send.
type sentMsg struct {
	conv string
	body string
	msg  client.Message
	err  error
}

// receiptsMsg answers Backend.Receipts for the message-info dialog.
type receiptsMsg struct {
	id      int
	members []protocol.MemberReceipt
	err     error
}

// typingExpiredMsg ends a typing indicator unless it was renewed.
type typingExpiredMsg struct {
	conv, user string
	gen        int
}

// olderTimeoutMsg gives up waiting for a server page that did not come.
type olderTimeoutMsg struct {
	conv   string
	gen    int
	before int64
}

// retryTickMsg counts down the status bar's "retrying in Ns".
type retryTickMsg struct{ gen int }

// noticeExpiredMsg clears a status-bar notice.
type noticeExpiredMsg struct{ gen int }

// doneMsg is the result of a fire-and-forget backend call.
type doneMsg struct{}

// waitEvent returns a command that waits for the next engine event. Update
// issues it again after each event.
func waitEvent(ch <-chan client.Event) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return eventsClosedMsg{}
		}
		return eventMsg{ev}
	}
}

// ticker makes timer commands; tests replace it to fire timers by hand.
type ticker func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd

// handleEvent applies one engine event.
func (m *Model) handleEvent(ev client.Event) tea.Cmd {
	var cmds []tea.Cmd
	switch ev := ev.(type) {
	case client.ConnChanged:
		m.conn = ev.Conn
		cmds = append(cmds, m.startRetryCountdown())
		if ev.Conn.State == client.Online {
			// Sessions may have moved while we were away.
			cmds = append(cmds, m.reloadSessions())
		}
	case client.SessionsChanged:
		cmds = append(cmds, m.reloadSessions())
	case client.GroupChanged:
		// The answer to a group change: show it at once. The session
		// follows by sync (SessionsChanged); reloading the list now would
		// read the state from before the change.
		if c := m.chat; c != nil && c.conv == ev.Conv {
			s := c.sess
			s.Title, s.Members = ev.Title, ev.Members
			m.setChatSession(s)
		} else if m.creating != "" && ev.Title == m.creating {
			// The group the user just created: open it.
			m.creating = ""
			cmds = append(cmds, m.openChat(protocol.Session{Conv: ev.Conv, Kind: "group", Title: ev.Title, Members: ev.Members}))
		}
	case client.MessagesChanged:
		cmds = append(cmds, m.reloadSessions())
		if m.chat != nil && m.chat.conv == ev.Conv {
			cmds = append(cmds, m.reloadChat())
		}
	case client.TicksChanged:
		m.ticks[ev.Conv] = m.ticks[ev.Conv].Merge(ev.Ticks)
		if m.chat != nil && m.chat.conv == ev.Conv {
			m.chat.ticks = m.chat.ticks.Merge(ev.Ticks)
			m.chat.rebuild(m.renderCtx())
		}
	case client.TypingEvent:
		if ev.User == m.b.User() {
			break
		}
		m.typingGen++
		users := m.typing[ev.Conv]
		if users == nil {
			users = typists{}
			m.typing[ev.Conv] = users
		}
		var seq int64
		if s, ok := m.list.find(ev.Conv); ok {
			seq = s.WriteSeq
		}
		users[ev.User] = typist{gen: m.typingGen, seq: seq}
		conv, user, gen := ev.Conv, ev.User, m.typingGen
		cmds = append(cmds, m.tick(m.opts.TypingTimeout, func(time.Time) tea.Msg {
			return typingExpiredMsg{conv: conv, user: user, gen: gen}
		}))
	case client.ErrorEvent:
		text := ev.Op + " failed"
		if ev.Err != nil {
			text = ev.Op + ": " + ev.Err.Error()
		}
		cmds = append(cmds, m.notify(text, true))
	}
	return tea.Batch(cmds...)
}

// typists are the users typing in one conversation.
type typists map[string]typist

// typist is one typing indicator: gen matches its expiry timer; seq is the
// conversation's newest seq when it started, so that the typist's next
// message (a higher seq from them) ends it.
type typist struct {
	gen int
	seq int64
}

// stopTypingOnMessages ends the indicators of typists whose message has
// arrived, as the sessions show it.
func (m *Model) stopTypingOnMessages(sessions []protocol.Session) {
	for _, s := range sessions {
		users := m.typing[s.Conv]
		if len(users) == 0 || s.LastMsg == nil {
			continue
		}
		if t, ok := users[s.LastMsg.From]; ok && s.WriteSeq > t.seq {
			m.stopTyping(s.Conv, s.LastMsg.From)
		}
	}
}

// stopTyping clears a typing indicator, for an expiry or a message from the
// typist.
func (m *Model) stopTyping(conv, user string) {
	if users := m.typing[conv]; users != nil {
		delete(users, user)
		if len(users) == 0 {
			delete(m.typing, conv)
		}
	}
}
