package tui

import (
	"fmt"
	"math"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
)

// noticeTTL is how long a notice stays in the status bar.
const noticeTTL = 5 * time.Second

// statusBar is the bottom line: the connection's state (and, offline, why
// and when the next try is), who and where the user is, and a notice or
// the help hint. It keeps the connection's state (common.conn, which the
// other components read) and owns the retry countdown and the notices'
// timers.
type statusBar struct {
	com       *common
	retryGen  int
	notice    statusNotice
	noticeGen int
	width     int
}

// statusNotice is a transient line in the status bar.
type statusNotice struct {
	text string
	err  bool
	gen  int
}

func newStatusBar(com *common) statusBar {
	return statusBar{com: com, width: 80}
}

// Init starts the countdown when the engine starts offline.
func (s *statusBar) Init() tea.Cmd {
	if s.com.conn.State == client.Offline && !s.com.conn.RetryAt.IsZero() {
		return s.retryTick()
	}
	return nil
}

// SetSize sets the bar's width.
func (s *statusBar) SetSize(w int) { s.width = w }

// Update handles the bar's messages: notices, their expiry, the
// countdown, a new connection state.
func (s *statusBar) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case noticeMsg:
		return s.notify(msg.text, msg.err)
	case noticeExpiredMsg:
		if msg.gen == s.noticeGen {
			s.notice = statusNotice{}
		}
	case retryTickMsg:
		if msg.gen == s.retryGen {
			return s.retryTick()
		}
	case client.ConnChanged:
		s.com.conn = msg.Conn
		return s.startRetryCountdown()
	case eventsClosedMsg:
		s.com.conn = client.Conn{State: client.Stopped}
	}
	return nil
}

// notify shows text for a few seconds.
func (s *statusBar) notify(text string, isErr bool) tea.Cmd {
	s.noticeGen++
	s.notice = statusNotice{text: text, err: isErr, gen: s.noticeGen}
	gen := s.noticeGen
	return s.com.tick(noticeTTL, func(time.Time) tea.Msg { return noticeExpiredMsg{gen: gen} })
}

// startRetryCountdown starts the once-a-second redraw of "retrying in Ns"
// while the connection is offline with a retry scheduled.
func (s *statusBar) startRetryCountdown() tea.Cmd {
	s.retryGen++
	if s.com.conn.State != client.Offline || s.com.conn.RetryAt.IsZero() {
		return nil
	}
	return s.retryTick()
}

func (s *statusBar) retryTick() tea.Cmd {
	gen := s.retryGen
	left := s.com.conn.RetryAt.Sub(s.com.now())
	if left <= 0 {
		return nil
	}
	// Wake at the next whole second of the countdown.
	d := left - left.Truncate(time.Second)
	if d <= 0 {
		d = time.Second
	}
	return s.com.tick(d, func(time.Time) tea.Msg { return retryTickMsg{gen: gen} })
}

// connText describes the connection: its state and, when offline, why.
func (s *statusBar) connText() (state, detail string) {
	c := s.com.conn
	switch c.State {
	case client.Online:
		return "● online", ""
	case client.Connecting:
		return "◌ connecting…", ""
	case client.Offline:
		state = "○ offline"
		if !c.RetryAt.IsZero() {
			left := c.RetryAt.Sub(s.com.now())
			if left > 0 {
				state += fmt.Sprintf(" — retrying in %ds", int(math.Ceil(left.Seconds())))
			} else {
				state += " — retrying…"
			}
		}
		if c.Err != nil {
			detail = "(" + oneLine(c.Err.Error()) + ")"
		}
		return state, detail
	}
	return "■ stopped", ""
}

// View renders the bar, one line of its width. When it is too narrow,
// parts give way in this order: the help hint, the error detail, the
// server, the identity.
func (s *statusBar) View() string {
	st, w, cw := &s.com.st, s.width, s.com.cells
	state, detail := s.connText()
	connStyle := st.online
	switch s.com.conn.State {
	case client.Offline, client.Stopped:
		connStyle = st.offline
	case client.Connecting:
		connStyle = st.connecting
	}
	right, rightStyle := "? help", st.headerDim
	if s.notice.text != "" {
		right, rightStyle = s.notice.text, st.statusBar
		if s.notice.err {
			rightStyle = st.errText
		}
	}
	rest := w
	take := func(s string, keep int) string {
		if rest-cw.width(s) < keep {
			s = cw.truncate(s, max(0, rest-keep))
		}
		rest -= cw.width(s)
		return s
	}
	b := s.com.b
	// Claimed in order of importance, shown in order of reading.
	statePart := take(" "+state+" ", 0)
	identPart := take("│ "+b.User()+"@"+b.Device()+" ", 0)
	noticePart := ""
	if s.notice.text != "" {
		noticePart = take(" "+right+" ", 0)
	}
	serverPart := take("· "+b.Server()+" ", 0)
	keep := 0 // room left for the help hint
	if s.notice.text == "" {
		keep = cw.width(right) + 3
	}
	detailPart := ""
	if detail != "" && rest-keep > 8 {
		detailPart = take(cw.truncate(detail, rest-keep-1)+" ", 0)
	}
	if s.notice.text == "" && rest >= cw.width(right)+3 {
		noticePart = take(" "+right+" ", 0)
	}
	return connStyle.Render(statePart+detailPart) + st.statusBar.Render(identPart+serverPart+spaces(rest)) + rightStyle.Render(noticePart)
}

// spaces returns n spaces ("" for n <= 0).
func spaces(n int) string {
	if n <= 0 {
		return ""
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = ' '
	}
	return string(b)
}
