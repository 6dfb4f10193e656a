package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// Messages from commands and timers.

// eventMsg carries one client event into Update.
type eventMsg struct{ ev client.Event }

// eventsClosedMsg says the client closed its event stream.
type eventsClosedMsg struct{}

// sessionsMsg carries a loaded session list.
type sessionsMsg struct {
	subBiz   string
	sessions []protocol.Session
	total    int64
	err      error
}

// messagesMsg carries a loaded page of a conversation. older marks a page
// below the oldest loaded message; otherwise it is the newest window, with
// the conversation's ticks as stored.
type messagesMsg struct {
	conv   string
	gen    int
	older  bool
	before int64
	msgs   []client.Message
	limit  int // how many were asked for
	ticks  protocol.Ticks
	err    error
	quotes []client.Message // the targets of its replies that it does not hold
}

// sentMsg answers Backend.Send.
type sentMsg struct {
	conv string
	body string
	msg  client.Message
	err  error
}

// receiptsMsg answers Backend.Receipts for the message-info dialog, with
// when the device saw the message delivered and read (own messages).
type receiptsMsg struct {
	id              int
	members         []protocol.MemberReceipt
	delivered, read time.Time
	err             error
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

// Requests of components to the root (see asks).

// openChatMsg asks to open a chat with its session.
type openChatMsg struct{ sess protocol.Session }

// openConvMsg asks to open the chat of conv, with its stored session if
// the list has one, else with sess (a chat that starts now).
type openConvMsg struct{ sess protocol.Session }

// showDialogMsg asks to show a dialog.
type showDialogMsg struct{ d dialog }

// noticeMsg asks the status bar to show a notice for a few seconds.
type noticeMsg struct {
	text string
	err  bool
}

// quitMsg asks the root to end the program: the quit dialog was answered.
type quitMsg struct{}

// convDeletedMsg says the user deleted conv from the list: its chat, if
// open, closes.
type convDeletedMsg struct{ conv string }

// groupCreatingMsg says the user asked for a group titled title, by a
// create_group request named key.
type groupCreatingMsg struct{ key, title string }

// splitSendMsg asks the chat to send body to conv as parts, each within
// the body limit.
type splitSendMsg struct {
	conv  string
	body  string
	parts []string
}

// leaveChatMsg asks to leave the open chat for the list.
type leaveChatMsg struct{}

// waitEvent returns a command that waits for the next client event. Update
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

// olderTimeout is how long "loading older messages…" waits for the
// server's page before giving up (scrolling up again asks again).
const olderTimeout = 15 * time.Second
