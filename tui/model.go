package tui

import (
	"slices"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// splitWidth is the narrowest terminal that shows list and chat side by side.
const splitWidth = 100

// Model is the root Bubble Tea model of the terminal client. Create it with
// New; it implements tea.Model. It routes each message to the component
// that owns it and owns only the navigation: which pane has the keys, what
// is on screen, the dialog over it.
type Model struct {
	com  *common
	wait func() tea.Cmd

	width, height int
	termFocused   bool
	listFocused   bool // the list has the keys, else the open chat

	list     listPane
	chat     chatPane
	status   statusBar
	dialog   dialog // nil when none is open
	help     helpScreen
	showHelp bool
	quitting bool

	// creating is the group the user asked for, until the server answers.
	creating *pendingGroup
	// draftsAsked says the kept drafts were asked for: after the first
	// list, which they must not delay.
	draftsAsked bool
}

// pendingGroup is a group the user asked for and where the user was then:
// its chat opens when the server answers only if the user is still there,
// with nothing typed since (the answer may come much later, offline).
type pendingGroup struct {
	key, title string
	chatGen    int    // the chat pane's count of opened chats then
	input      string // what the input held then
}

// New returns the UI for backend b.
func New(b Backend, opts Options) Model {
	opts = opts.withDefaults()
	pal := darkPalette
	if opts.Theme == "light" {
		pal = lightPalette
	}
	com := &common{
		b:      b,
		opts:   opts,
		st:     newStyles(pal, false),
		keys:   defaultKeyMap(),
		tick:   tea.Tick,
		live:   newLive(),
		people: newPeople(),
		conn:   b.Conn(),
	}
	m := Model{
		com:         com,
		wait:        func() tea.Cmd { return waitEvent(b.Events()) },
		width:       80,
		height:      24,
		termFocused: !com.opts.Unfocused,
		listFocused: true,
		list:        newListPane(com),
		chat:        newChatPane(com),
		status:      newStatusBar(com),
		help:        newHelpScreen(com),
	}
	m.setFocus(focusList)
	m.layout()
	return m
}

// Init starts reading events, loads the session list (then the drafts),
// and asks the terminal for its size and, unless a theme was chosen, its
// background.
func (m Model) Init() tea.Cmd {
	var askTheme tea.Cmd
	if m.com.opts.Theme == "" {
		askTheme = tea.RequestBackgroundColor
	}
	// Asking for the size again covers a resize between the program's
	// first size query and its resize handler (panes split at start).
	return tea.Batch(m.wait(), m.list.Init(), m.status.Init(), tea.RequestWindowSize, askTheme, readPeople(m.com.b, nil))
}

// Update routes one message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.route(msg)
	if m.quitting {
		// The draft is kept before the program ends.
		if keep := m.chat.keepDraft(); keep != nil {
			return m, tea.Sequence(keep, tea.Quit)
		}
		return m, tea.Quit
	}
	return m, tea.Batch(cmd, m.markRead())
}

// route hands msg to its owner and then handles, at once, what the
// components asked of the root meanwhile.
func (m *Model) route(msg tea.Msg) tea.Cmd {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(20, msg.Width), max(6, msg.Height)
		m.layout()
	case tea.ModeReportMsg:
		// As the renderer does: a terminal that knows grapheme clustering
		// (mode 2027) gets it, and text is measured by graphemes.
		if msg.Mode == ansi.ModeUnicodeCore && (msg.Value == ansi.ModeReset || msg.Value == ansi.ModeSet || msg.Value == ansi.ModePermanentlySet) {
			m.com.cells = cells{ansi.GraphemeWidth}
			m.chat.restyle()
		}
	case tea.BackgroundColorMsg:
		if m.com.opts.Theme == "" {
			pal := darkPalette
			if !msg.IsDark() {
				pal = lightPalette
			}
			m.setStyles(newStyles(pal, m.com.st.plain))
		}
	case tea.ColorProfileMsg:
		// No colours (NO_COLOR, a dumb terminal): glyphs tell apart what
		// colours would.
		plain := msg.Profile == colorprofile.NoTTY || msg.Profile == colorprofile.ASCII
		if plain != m.com.st.plain {
			m.setStyles(newStyles(m.com.st.pal, plain))
		}
	case tea.FocusMsg:
		m.termFocused = true
	case tea.BlurMsg:
		m.termFocused = false
	case tea.KeyPressMsg:
		cmds = append(cmds, m.onKey(msg))
	case tea.MouseWheelMsg:
		cmds = append(cmds, m.onWheel(msg))
	case tea.MouseClickMsg:
		cmds = append(cmds, m.onClick(msg))
	case eventMsg:
		cmds = append(cmds, m.onEvent(msg.ev), m.wait())
	case eventsClosedMsg, noticeMsg, noticeExpiredMsg, retryTickMsg:
		cmds = append(cmds, m.status.Update(msg))
	case sessionsMsg:
		cmds = append(cmds, m.onSessions(msg), m.followPeople())
	case messagesMsg:
		cmds = append(cmds, m.chat.Update(msg), m.followPeople())
	case sentMsg, relatedMsg, olderTimeoutMsg, splitSendMsg, draftSaveMsg:
		cmds = append(cmds, m.chat.Update(msg))
	case peopleMsg:
		m.onPeople(msg)
	case receiptsMsg, searchResultsMsg:
		if m.dialog != nil {
			cmds = append(cmds, m.updateDialog(msg))
		}
	case jumpToMsg:
		if conv := msg.msg.Conv; conv != "" && conv != m.chat.conv() {
			// A hit of the search of every chat: its chat opens first.
			s, found := m.list.find(conv)
			if !found {
				s = protocol.Session{Conv: conv}
			}
			cmds = append(cmds, m.openChat(s))
		}
		if m.chat.isOpen() {
			m.setFocus(focusHistory)
			cmds = append(cmds, m.chat.jumpTo(msg.msg))
		}
	case typingExpiredMsg:
		m.com.live.expireTyping(msg)
	case draftsMsg:
		if msg.err != nil {
			cmds = append(cmds, m.status.notify("could not load drafts: "+msg.err.Error(), true))
			break
		}
		for conv, text := range msg.drafts {
			if conv != m.chat.conv() {
				m.com.live.drafts[conv] = text
			}
		}

	// What components ask of the root.
	case openChatMsg:
		cmds = append(cmds, m.openChat(msg.sess))
	case openConvMsg:
		s, found := m.list.find(msg.sess.Conv)
		if !found {
			s = msg.sess
		}
		cmds = append(cmds, m.openChat(s))
	case showDialogMsg:
		m.dialog = msg.d
		m.dialog.SetSize(dialogWidth(m.width), m.height)
	case leaveChatMsg:
		cmds = append(cmds, m.leaveChat())
	case quitMsg:
		m.quitting = true
	case convDeletedMsg:
		if m.chat.conv() == msg.conv {
			cmds = append(cmds, m.closeChat())
		}
	case groupCreatingMsg:
		gen, typed := m.chat.place()
		m.creating = &pendingGroup{key: msg.key, title: msg.title, chatGen: gen, input: typed}
	case doneMsg:
	default:
		// A paste and the editor's own messages.
		switch {
		case m.dialog != nil:
			cmds = append(cmds, m.updateDialog(msg))
		case m.listFocused:
			cmds = append(cmds, m.list.Update(msg))
		default:
			cmds = append(cmds, m.chat.Update(msg))
		}
	}
	cmds = append(cmds, m.handleAsks())
	return tea.Batch(cmds...)
}

// handleAsks routes what the components asked for, until nothing more is
// asked.
func (m *Model) handleAsks() tea.Cmd {
	var cmds []tea.Cmd
	for {
		pending := append(m.list.take(), m.chat.take()...)
		if m.dialog != nil {
			pending = append(pending, m.dialog.take()...)
		}
		if len(pending) == 0 {
			return tea.Batch(cmds...)
		}
		for _, msg := range pending {
			cmds = append(cmds, m.route(msg))
		}
	}
}

// updateDialog hands msg to the open dialog and closes it when it is done.
func (m *Model) updateDialog(msg tea.Msg) tea.Cmd {
	d := m.dialog
	done, cmd := d.Update(msg)
	asked := d.take()
	if done && m.dialog == d {
		m.dialog = nil
	}
	for _, a := range asked {
		cmd = tea.Batch(cmd, m.route(a))
	}
	return cmd
}

// onSessions gives a loaded list to the list pane, and the open chat its
// session's new state.
func (m *Model) onSessions(msg sessionsMsg) tea.Cmd {
	cmd := m.list.Update(msg)
	if !m.draftsAsked {
		m.draftsAsked = true
		cmd = tea.Batch(cmd, loadDrafts(m.com.b))
	}
	if msg.err != nil {
		return cmd
	}
	m.com.live.stopTypingOnMessages(msg.sessions)
	if conv := m.chat.conv(); conv != "" {
		for _, s := range msg.sessions {
			if s.Conv == conv {
				m.chat.setSession(s)
				break
			}
		}
	}
	return cmd
}

// setStyles changes the theme: the components draw with st from now on.
func (m *Model) setStyles(st styles) {
	m.com.st = st
	m.chat.restyle()
	st.styleField(&m.list.filter)
	m.help = newHelpScreen(m.com)
	m.layout()
}

// split says whether list and chat are shown side by side.
func (m *Model) split() bool { return m.width >= splitWidth }

// listWidth is the list pane's width in split mode.
func (m *Model) listWidth() int { return max(30, min(m.width*36/100, 56)) }

// chatWidth is the chat pane's width.
func (m *Model) chatWidth() int {
	if m.split() {
		return max(20, m.width-m.listWidth()-1)
	}
	return m.width
}

// chatVisible says whether the open chat is on screen.
func (m *Model) chatVisible() bool {
	return m.chat.isOpen() && (m.split() || !m.listFocused)
}

// focusArea is what has the keys: the list, or the chat's input or
// history.
func (m *Model) focusArea() focusArea {
	if m.listFocused || !m.chat.isOpen() {
		return focusList
	}
	return m.chat.focusMode()
}

// layout sizes the panes for the window.
func (m *Model) layout() {
	bodyH := max(1, m.height-1) // the status bar
	lw := m.width
	if m.split() {
		lw = m.listWidth()
	}
	m.list.SetSize(lw, bodyH)
	m.chat.split = m.split()
	m.chat.SetSize(m.chatWidth(), bodyH)
	m.status.SetSize(m.width)
	if m.showHelp {
		m.help.SetSize(m.width, bodyH)
	}
	if m.dialog != nil {
		m.dialog.SetSize(dialogWidth(m.width), m.height)
	}
}

// setFocus gives the keys to the list or to the chat's input or history.
func (m *Model) setFocus(f focusArea) {
	if f != focusList && !m.chat.isOpen() {
		f = focusList
	}
	m.listFocused = f == focusList
	m.list.SetFocused(m.listFocused)
	m.chat.SetFocus(!m.listFocused, f)
}

// openChat opens the chat of session s with the input focused.
func (m *Model) openChat(s protocol.Session) tea.Cmd {
	live := m.com.live
	live.elsewhere = slices.DeleteFunc(live.elsewhere, func(e elsewhere) bool { return e.conv == s.Conv })
	cmd := m.chat.open(s)
	focus := focusInput
	if isRequest(&s) {
		// A request is answered from its bar (request.go): nothing typed
		// goes to it by mistake.
		focus = focusHistory
	}
	m.setFocus(focus)
	return tea.Batch(cmd, m.followPeople())
}

// closeChat closes the open chat: the list, on screen, shows what came
// elsewhere.
func (m *Model) closeChat() tea.Cmd {
	m.com.live.elsewhere = nil
	cmd := m.chat.close()
	m.setFocus(focusList)
	return tea.Batch(cmd, m.followPeople())
}

// leaveChat is esc in the chat: back to the list (closing the chat when
// the list and chat do not fit side by side), the chat's draft kept.
func (m *Model) leaveChat() tea.Cmd {
	if m.split() {
		m.setFocus(focusList)
		return m.chat.keepDraft()
	}
	return m.closeChat()
}

// markRead lets the chat send a read receipt for what is on screen.
func (m *Model) markRead() tea.Cmd {
	return m.chat.markRead(m.termFocused && !m.showHelp && m.chatVisible())
}

// onEventConn applies a new connection state.
func (m *Model) onEventConn(ev client.ConnChanged) tea.Cmd {
	cmd := m.status.Update(ev)
	if ev.Conn.State == client.Online {
		// Sessions may have moved while we were away.
		cmd = tea.Batch(cmd, m.list.reload())
	}
	return cmd
}
