package tui

import (
	"time"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

// Options configures the UI.
type Options struct {
	// Now is the clock for times shown (today or a date, day separators),
	// the retry countdown and mute durations. Default time.Now. Tests fix
	// it so that screens are stable.
	Now func() time.Time
	// Location is the time zone times are shown in. Default time.Local.
	Location *time.Location
	// PageSize is how many messages a history page holds. Default 50.
	PageSize int
	// TypingTimeout is how long "typing…" shows after the last typing
	// event. Default 5s.
	TypingTimeout time.Duration
	// TypingInterval is the least time between two typing notices sent
	// while the user types. Default 3s.
	TypingInterval time.Duration
	// Unfocused starts as if the terminal did not have focus: no read
	// receipt is sent until a focus report arrives. By default the
	// terminal is assumed focused until it reports otherwise, since not
	// every terminal reports focus.
	Unfocused bool
	// NoMouse leaves the mouse to the terminal (text selection) instead of
	// taking wheel and clicks.
	NoMouse bool
}

// focusArea is what takes the keys.
type focusArea int

const (
	focusList    focusArea = iota // the session list
	focusInput                    // the message editor
	focusHistory                  // the message history (scrolling, selection)
)

// splitWidth is the narrowest terminal that shows list and chat side by side.
const splitWidth = 100

// Model is the root Bubble Tea model of the terminal client. Create it with
// New; it implements tea.Model.
type Model struct {
	// creating is the title of the group the user asked to create, whose
	// chat opens when the server answers ("" for none).
	creating string

	b      Backend
	opts   Options
	keys   keyMap
	st     styles
	tick   ticker // tea.Tick; tests fire timers by hand
	wait   func() tea.Cmd
	width  int
	height int

	termFocused bool
	focus       focusArea
	conn        client.Conn
	retryGen    int

	list     listModel
	listLoad map[string]int // sub_biz -> 1 loading, 2 loading and dirty
	chat     *chatModel
	chatGen  int
	input    textarea.Model

	ticks     map[string]protocol.Ticks // from TicksChanged, merged
	typing    map[string]typists        // conv -> who is typing
	typingGen int

	dialog    dialog
	infoGen   int
	showHelp  bool
	helpView  helpScreen
	notice    notice
	noticeGen int
	quitting  bool
}

// New returns the UI for backend b.
func New(b Backend, opts Options) Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 50
	}
	if opts.TypingTimeout <= 0 {
		opts.TypingTimeout = 5 * time.Second
	}
	if opts.TypingInterval <= 0 {
		opts.TypingInterval = 3 * time.Second
	}
	k := defaultKeyMap()
	return Model{
		b:           b,
		opts:        opts,
		keys:        k,
		st:          defaultStyles(),
		tick:        tea.Tick,
		wait:        func() tea.Cmd { return waitEvent(b.Events()) },
		width:       80,
		height:      24,
		termFocused: !opts.Unfocused,
		conn:        b.Conn(),
		list:        newListModel(),
		listLoad:    map[string]int{},
		input:       newInput(k),
		ticks:       map[string]protocol.Ticks{},
		typing:      map[string]typists{},
		helpView:    newHelpScreen(),
	}
}

// now is the injected clock in the display time zone.
func (m *Model) now() time.Time { return m.opts.Now().In(m.opts.Location) }

// renderCtx is the context for rendering messages.
func (m *Model) renderCtx() renderCtx {
	return renderCtx{st: &m.st, now: m.now(), me: m.b.User()}
}

// Init starts reading events and loads the session list.
func (m Model) Init() tea.Cmd {
	m.listLoad[""] = 1
	var countdown tea.Cmd
	if m.conn.State == client.Offline && !m.conn.RetryAt.IsZero() {
		countdown = m.retryTick()
	}
	// Asking for the size again covers a resize between the program's
	// first size query and its resize handler (panes split at start).
	return tea.Batch(m.wait(), m.loadSessions(""), countdown, tea.RequestWindowSize)
}

// split says whether list and chat are shown side by side.
func (m *Model) split() bool { return m.width >= splitWidth }

// listWidth is the list pane's width in split mode.
func (m *Model) listWidth() int { return max(30, min(m.width*36/100, 56)) }

// chatVisible says whether the open chat is on screen.
func (m *Model) chatVisible() bool {
	return m.chat != nil && (m.split() || m.focus != focusList)
}

// call runs a fire-and-forget backend request off the UI goroutine.
func call(f func()) tea.Cmd {
	return func() tea.Msg {
		f()
		return doneMsg{}
	}
}

// loadSessions reads one list from the backend.
func (m *Model) loadSessions(subBiz string) tea.Cmd {
	b := m.b
	return func() tea.Msg {
		s, total, err := b.Sessions(subBiz)
		return sessionsMsg{subBiz: subBiz, sessions: s, total: total, err: err}
	}
}

// reloadSessions reloads the main list and the nested list on screen,
// coalescing bursts: at most one load per list is in flight.
func (m *Model) reloadSessions() tea.Cmd {
	subs := []string{""}
	if sb := m.list.level().subBiz; sb != "" {
		subs = append(subs, sb)
	}
	var cmds []tea.Cmd
	for _, sb := range subs {
		if m.listLoad[sb] > 0 {
			m.listLoad[sb] = 2
			continue
		}
		m.listLoad[sb] = 1
		cmds = append(cmds, m.loadSessions(sb))
	}
	return tea.Batch(cmds...)
}

// loadChat reads the newest window of the open chat.
func (m *Model) loadChat(limit int) tea.Cmd {
	b, conv, gen := m.b, m.chat.conv, m.chat.gen
	return func() tea.Msg {
		msgs, err := b.Messages(conv, 0, limit)
		return messagesMsg{conv: conv, gen: gen, msgs: msgs, err: err}
	}
}

// reloadChat re-reads the open chat after a change, coalescing bursts.
func (m *Model) reloadChat() tea.Cmd {
	c := m.chat
	if c.reloading || !c.loaded {
		c.reloadAgain = true
		return nil
	}
	c.reloading = true
	return m.loadChat(min(c.storedCount()+m.opts.PageSize, 20000))
}

// loadOlder asks for the page above the oldest loaded message: from the
// local store first, from the server when the store has none.
func (m *Model) loadOlder() tea.Cmd {
	c := m.chat
	if c == nil || !c.loaded || c.loadingOlder || c.awaitServer != 0 || c.storeEnd || c.atBeginning() {
		return nil
	}
	before := c.oldestSeq()
	if before == 0 {
		// Nothing stored here yet: ask the server for the newest page.
		return m.askServer(0)
	}
	c.loadingOlder = true
	c.rebuildAtTop(m.renderCtx())
	b, conv, gen, n := m.b, c.conv, c.gen, m.opts.PageSize
	return func() tea.Msg {
		msgs, err := b.Messages(conv, before, n)
		return messagesMsg{conv: conv, gen: gen, older: true, before: before, msgs: msgs, err: err}
	}
}

// olderTimeout is how long "loading older messages…" waits for the
// server's page before giving up (scrolling up again asks again).
const olderTimeout = 15 * time.Second

// askServer asks the engine for the server's page below before (0: the
// newest page) when the local store has nothing more.
func (m *Model) askServer(before int64) tea.Cmd {
	c := m.chat
	if m.readOnly() {
		// A former member may not read the group's history: what is
		// stored here is all there is.
		c.storeEnd = true
		c.rebuildAtTop(m.renderCtx())
		return nil
	}
	c.awaitServer = before
	if before == 0 {
		c.awaitServer = -1
	}
	c.rebuildAtTop(m.renderCtx())
	b, conv, gen, mark := m.b, c.conv, c.gen, c.awaitServer
	return tea.Batch(
		call(func() { b.LoadOlder(conv, before) }),
		m.tick(olderTimeout, func(time.Time) tea.Msg { return olderTimeoutMsg{conv: conv, gen: gen, before: mark} }),
	)
}

// openChat opens conv with its session and moves the focus to the input.
func (m *Model) openChat(s protocol.Session) tea.Cmd {
	if m.chat != nil && m.chat.conv == s.Conv {
		m.setFocus(focusInput)
		return nil
	}
	m.chatGen++
	m.chat = newChat(s, m.b.Ticks(s.Conv).Merge(m.ticks[s.Conv]), m.chatGen)
	m.input.Reset()
	m.layout()
	m.setFocus(focusInput)
	limit := m.opts.PageSize
	if s.UnreadCount > 0 {
		limit = int(min(int64(1000), max(int64(limit), s.UnreadCount+int64(limit)/2)))
	}
	return m.loadChat(limit)
}

// closeChat closes the open chat.
func (m *Model) closeChat() {
	m.chat = nil
	m.setFocus(focusList)
}

// setFocus moves the keyboard focus. A former member's group has no
// input: the history takes its place.
func (m *Model) setFocus(f focusArea) {
	if f != focusList && m.chat == nil {
		f = focusList
	}
	if f == focusInput && m.readOnly() {
		f = focusHistory
	}
	m.focus = f
	if f == focusInput {
		m.input.Focus()
	} else {
		m.input.Blur()
	}
	if m.chat != nil {
		if f == focusHistory {
			if m.chat.sel < 0 {
				m.chat.sel = len(m.chat.msgs) - 1
				m.chat.clampSel()
			}
		} else {
			m.chat.sel = -1
		}
	}
	m.layout()
}

// layout sizes the panes for the window and the input's height.
func (m *Model) layout() {
	bodyH := max(1, m.height-1) // the status bar
	lw := m.width
	if m.split() {
		lw = m.listWidth()
	}
	m.list.width = lw
	m.list.height = max(rowHeight, bodyH-1)
	m.list.clamp()
	if m.chat != nil {
		cw := m.chatWidth()
		m.input.SetWidth(max(4, cw-3))
		c := m.chat
		h := max(1, bodyH-chatHeaderHeight-1-m.inputHeight())
		if c.width != cw || c.height != h {
			c.width, c.height = cw, h
			c.rebuild(m.renderCtx())
		}
	}
	if m.showHelp {
		m.helpView.setContent(&m.st, m.keys, m.width, bodyH)
	}
}

// inputHeight is the height of the input area: the editor, or the line
// that tells a former member why there is none.
func (m *Model) inputHeight() int {
	if m.readOnly() {
		return 1
	}
	return m.input.Height()
}

// chatWidth is the chat pane's width.
func (m *Model) chatWidth() int {
	if m.split() {
		return max(20, m.width-m.listWidth()-1)
	}
	return m.width
}

// chatHeaderHeight is the chat header: title and subtitle.
const chatHeaderHeight = 2
