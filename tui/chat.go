package tui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/protocol"
)

// focusArea is what takes the keys.
type focusArea int

const (
	focusList    focusArea = iota // the session list
	focusInput                    // the message editor
	focusHistory                  // the message history (scrolling, selection)
)

// chatPane is the open chat: its history (a conversation) and the input
// below it. It loads and pages the history, sends what is typed, marks what
// is seen read and opens message info and the group actions; leaving the
// chat it asks of the root.
type chatPane struct {
	asks
	com       *common
	c         *conversation       // nil while no chat is open
	positions map[string]position // where the user left chats, reading further up
	starts    historyStarts       // where the server said chats start for the user
	gen       int                 // counts the chats opened, to drop stale pages
	draftGen  int                 // counts changes of the input, for the timed draft save
	input     textarea.Model
	compose   compose   // what enter does with the input: a message, a reply, an edit
	mode      focusArea // focusInput or focusHistory
	focused   bool      // the chat has the keys
	split     bool      // the list is on screen beside the chat
	width     int
	height    int
}

func newChatPane(com *common) chatPane {
	return chatPane{com: com, input: newInput(com.keys, &com.st), mode: focusInput, positions: map[string]position{}, width: 80, height: 23}
}

// chatHeaderHeight is the chat header: title and subtitle.
const chatHeaderHeight = 2

// KeyMap returns the chat's bindings: writing and reading the history.
func (p *chatPane) KeyMap() (inputKeys, historyKeys) {
	return p.com.keys.Input, p.com.keys.History
}

// focusMode is what takes the keys when the chat has them: the input or
// the history.
func (p *chatPane) focusMode() focusArea { return p.mode }

// session is the open chat's session; a chat must be open.
func (p *chatPane) session() protocol.Session { return p.c.sess }

// isOpen says whether a chat is open.
func (p *chatPane) isOpen() bool { return p.c != nil }

// conv is the open chat's conversation id, "" when none is open.
func (p *chatPane) conv() string {
	if p.c == nil {
		return ""
	}
	return p.c.conv
}

// open opens conv with its session and returns the command that loads its
// newest messages. The input takes the focus (the history for a group the
// user has left).
func (p *chatPane) open(s protocol.Session) tea.Cmd {
	if p.c != nil && p.c.conv == s.Conv {
		p.setMode(focusInput)
		return nil
	}
	p.endCompose()
	keep := p.keepDraft()
	p.keepPosition()
	p.gen++
	p.c = newConversation(s, p.com.live.ticks[s.Conv], p.gen)
	p.c.startSeq = p.starts[s.Conv]
	p.input.Reset()
	p.input.SetValue(p.com.live.drafts[s.Conv])
	p.mode = focusInput
	p.layout()
	p.setMode(focusInput)
	limit := p.com.opts.PageSize
	if s.UnreadCount > 0 {
		limit = int(min(int64(1000), max(int64(limit), s.UnreadCount+int64(limit)/2)))
	}
	if pos, ok := p.positions[s.Conv]; ok {
		// Back where the user left it: load from there down.
		p.c.restore = &pos
		limit = int(min(maxWindow, max(int64(limit), s.WriteSeq-pos.seq+1+int64(p.com.opts.PageSize))))
	}
	return tea.Batch(keep, p.loadNewest(limit))
}

// close closes the open chat, keeping its draft.
func (p *chatPane) close() tea.Cmd {
	p.endCompose()
	keep := p.keepDraft()
	p.keepPosition()
	p.c = nil
	p.input.Reset()
	p.input.Blur()
	return keep
}

// SetFocus says whether the chat has the keys and, when it has, whether
// the input or the history takes them.
func (p *chatPane) SetFocus(focused bool, mode focusArea) {
	p.focused = focused
	if focused && (mode == focusInput || mode == focusHistory) {
		p.mode = mode
	}
	p.setMode(p.mode)
}

// place says where the user is: the count of chats opened so far and what
// the input holds. A change of either means the user went on.
func (p *chatPane) place() (gen int, typed string) { return p.gen, p.input.Value() }

// setMode gives the keys to the input or the history. A former member's
// group has no input: the history takes its place.
func (p *chatPane) setMode(f focusArea) {
	if f == focusInput && p.readOnly() {
		f = focusHistory
	}
	p.mode = f
	if p.focused && f == focusInput && p.c != nil {
		p.input.Focus()
	} else {
		p.input.Blur()
	}
	if c := p.c; c != nil {
		if p.focused && f == focusHistory {
			if c.sel < 0 {
				c.sel = len(c.msgs) - 1
				c.clampSel()
			}
		} else {
			c.sel = -1
		}
	}
	p.layout()
}

// SetSize sets the pane's size: header, history, legend and input.
func (p *chatPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.layout()
}

// layout sizes the history and the input for the pane and the input's
// height.
func (p *chatPane) layout() {
	p.input.SetWidth(max(4, p.width-3))
	c := p.c
	if c == nil {
		return
	}
	h := max(1, p.height-chatHeaderHeight-1-p.inputHeight())
	if c.width != p.width || c.height != h {
		c.width, c.height = p.width, h
		c.rebuild(p.com.renderCtx())
	}
}

// inputHeight is the height of the input area: the editor, or the line
// that tells a former member why there is none.
func (p *chatPane) inputHeight() int {
	if p.readOnly() {
		return 1
	}
	h := p.input.Height()
	if p.compose.kind != composeMessage {
		h++ // the bar that says which message
	}
	if p.requestBar() != "" {
		h++ // the request's bar
	}
	return h
}

// readOnly says the open chat is a group the user has left: its stored
// messages show, but nothing is sent, typed or marked read there.
func (p *chatPane) readOnly() bool {
	return p.c != nil && leftGroup(&p.c.sess, p.com.me())
}

// setSession applies a new state of the open chat's session: the header
// (a group's title and members), the ticks, and whether the user may still
// write there.
func (p *chatPane) setSession(s protocol.Session) {
	c := p.c
	c.sess = s
	c.group = isGroup(&s)
	c.ticks = c.ticks.Merge(s.Ticks)
	if p.readOnly() {
		if p.mode == focusInput {
			p.setMode(focusHistory)
		}
	} else if c.storeEnd {
		// A member again: the server's history is open once more.
		c.storeEnd = false
	}
	p.layout() // the input area's height may have changed
	c.rebuild(p.com.renderCtx())
}

// restyle renders the open chat again after a change of the theme or of
// how text is measured.
func (p *chatPane) restyle() {
	p.com.st.styleInput(&p.input)
	if c := p.c; c != nil {
		clear(c.cache)
		c.rebuild(p.com.renderCtx())
	}
}

// setTicks raises the open chat's ticks.
func (p *chatPane) setTicks(t protocol.Ticks) {
	p.c.ticks = p.c.ticks.Merge(t)
	p.c.rebuild(p.com.renderCtx())
}

// Update handles the chat's messages: pages, send answers, timeouts and,
// while it has the focus, keys and the editor's own messages.
func (p *chatPane) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case messagesMsg:
		return p.onMessages(msg)
	case sentMsg:
		return p.onSent(msg)
	case relatedMsg:
		return p.onRelated(msg)
	case draftSaveMsg:
		if msg.gen == p.draftGen && msg.conv == p.conv() {
			return p.saveDraft(msg.conv, p.input.Value())
		}
	case splitSendMsg:
		if p.conv() != msg.conv || inputBody(p.input.Value()) != msg.body {
			return notice("not sent: the text changed", true)
		}
		return p.sendParts(msg.conv, msg.parts)
	case olderTimeoutMsg:
		if c := p.c; c != nil && c.conv == msg.conv && c.gen == msg.gen && c.awaitServer == msg.before {
			c.awaitServer = 0
			c.rebuildAtTop(p.com.renderCtx())
		}
	case tea.KeyPressMsg:
		if p.c == nil {
			return nil
		}
		if p.mode == focusHistory {
			return p.historyKey(msg)
		}
		return p.inputKey(msg)
	default:
		// A paste and the editor's own messages.
		if p.c != nil && p.mode == focusInput {
			return p.updateInput(msg)
		}
	}
	return nil
}

// inputKey handles a key while typing.
func (p *chatPane) inputKey(msg tea.KeyPressMsg) tea.Cmd {
	k, c := p.com.keys.Input, p.c
	switch {
	case key.Matches(msg, k.Send):
		return p.send()
	case key.Matches(msg, k.Back):
		if p.compose.kind != composeMessage {
			p.endCompose()
			return nil
		}
		p.ask(leaveChatMsg{})
		return nil
	case key.Matches(msg, k.PageUp):
		return p.scroll(-max(1, c.height-1))
	case key.Matches(msg, k.PageDown):
		return p.scroll(max(1, c.height-1))
	case key.Matches(msg, k.EditLast) && p.input.Value() == "" && p.newestEditable() >= 0:
		return p.startEdit(c.msgs[p.newestEditable()])
	case key.Matches(msg, k.ScrollUp) && p.input.Value() == "":
		return p.scroll(-1)
	case key.Matches(msg, k.ScrollDown) && p.input.Value() == "":
		return p.scroll(1)
	case key.Matches(msg, k.Info):
		return p.openInfo(c.lastOwn(p.com.me()))
	}
	return p.updateInput(msg)
}

// historyKey handles a key while reading the history.
func (p *chatPane) historyKey(msg tea.KeyPressMsg) tea.Cmd {
	k, c := p.com.keys.History, p.c
	if cmd, ok := p.requestKey(msg); ok {
		return cmd
	}
	switch {
	case key.Matches(msg, k.Up):
		c.moveSel(-1)
		if c.atTop() {
			return p.loadOlder()
		}
	case key.Matches(msg, k.Down):
		c.moveSel(1)
	case key.Matches(msg, k.PageUp):
		return p.scroll(-max(1, c.height-1))
	case key.Matches(msg, k.PageDown):
		return p.scroll(max(1, c.height-1))
	case key.Matches(msg, k.HalfUp):
		return p.scroll(-max(1, c.height/2))
	case key.Matches(msg, k.HalfDown):
		return p.scroll(max(1, c.height/2))
	case key.Matches(msg, k.Top):
		c.setOffset(0)
		if len(c.msgs) > 0 {
			c.sel = 0
		}
		return p.loadOlder()
	case key.Matches(msg, k.Bottom):
		c.gotoBottom()
		c.sel = len(c.msgs) - 1
	case key.Matches(msg, k.Info):
		return p.openInfo(c.sel)
	case key.Matches(msg, k.Input):
		if p.readOnly() {
			return notice("you are no longer a member of this group", false)
		}
		p.setMode(focusInput)
	case key.Matches(msg, k.Back):
		p.ask(leaveChatMsg{})
	case key.Matches(msg, k.Search):
		p.ask(showDialogMsg{newSearchDialog(p.com, c.conv, p.com.chatTitle(&c.sess))})
	default:
		if cmd, ok := p.moreHistoryKey(msg); ok {
			return cmd
		}
		if cmd, ok := p.messageActionKey(msg); ok {
			return cmd
		}
		if a, ok := groupActionKey(msg); ok {
			d, cmd := startGroupAction(p.com, c.sess, a)
			if d != nil {
				p.ask(showDialogMsg{d})
			}
			return cmd
		}
	}
	return nil
}

// scroll scrolls the history by n lines; reaching the top loads older
// messages.
func (p *chatPane) scroll(n int) tea.Cmd {
	c := p.c
	if c == nil {
		return nil
	}
	c.scroll(n)
	if n < 0 && c.atTop() {
		return p.loadOlder()
	}
	return nil
}

// click selects what was clicked at line y of the pane: a message in the
// history, or the input.
func (p *chatPane) click(y int) {
	c := p.c
	if c == nil {
		return
	}
	y -= chatHeaderHeight
	if y >= c.height {
		p.setMode(focusInput)
		return
	}
	top := max(0, c.height-len(c.lines))
	if l := c.offset + y - top; y >= top && l < len(c.lines) && c.lineMsg[l] >= 0 {
		p.setMode(focusHistory)
		c.sel = c.lineMsg[l]
	}
}

// openInfo shows the receipts of message i of the open chat.
func (p *chatPane) openInfo(i int) tea.Cmd {
	c := p.c
	if c == nil || i < 0 || i >= len(c.msgs) {
		return notice("no message selected", false)
	}
	if p.readOnly() {
		return notice("no receipts: you are no longer a member of this group", false)
	}
	msg := c.msgs[i]
	if msg.Seq == 0 || msg.Outbox {
		return notice("not sent yet: waiting for the server", false)
	}
	if msg.Seq < 0 {
		return notice("no receipts: the server no longer holds this message (its history is behind this device's)", false)
	}
	if msg.Kind == protocol.KindSystem {
		return notice("system messages have no receipts", false)
	}
	d, cmd := newInfoDialog(p.com, c.conv, msg, c.msgs[i+1:])
	p.ask(showDialogMsg{d})
	return cmd
}

// markRead sends a read receipt for the newest message on screen; seen
// says the chat is on screen with the terminal focused. A group the user
// has left is not marked (the server refuses the receipt).
func (p *chatPane) markRead(seen bool) tea.Cmd {
	c := p.c
	if c == nil || !c.loaded || !seen || p.readOnly() {
		return nil
	}
	seq := c.maxVisibleSeq()
	if seq <= c.readSent {
		return nil
	}
	c.readSent = seq
	b, conv := p.com.b, c.conv
	return call(func() { b.MarkRead(conv, seq) })
}
