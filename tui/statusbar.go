package tui

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

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
	lastErr   string    // the last error notice, whole, for the status dialog
	lastErrAt time.Time // when it came
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

// Init starts the countdown when the client starts offline.
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
	if isErr {
		s.lastErr, s.lastErrAt = text, s.com.now()
	}
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
func (s *statusBar) connText() (state, reason string) {
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
			reason = "(" + oneLine(rootCause(c.Err).Error()) + ")"
		}
		return state, reason
	}
	return "■ stopped", ""
}

// rootCause is the innermost error err wraps: "connection refused" rather
// than the dial and the address around it, which the log keeps.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// barPart is one part of the status bar.
type barPart struct {
	text   string
	style  lipgloss.Style
	shrink bool // may be cut to fit rather than left out
	shown  bool // it claimed its width
}

// View renders the bar, one line of its width. The parts claim the width
// in order of importance: the connection's state, a notice, "? help", the
// key that reconnects now, why it is offline (cut to what is left), who
// the user is, the server; from the first that does not fit on, they give
// way. They are shown in reading order.
func (s *statusBar) View() string {
	st, cw := &s.com.st, s.com.cells
	state, reason := s.connText()
	connStyle := st.online
	switch s.com.conn.State {
	case client.Offline, client.Stopped:
		connStyle = st.offline
	case client.Connecting:
		connStyle = st.connecting
	}
	b, keys := s.com.b, s.com.keys.Global
	statePart := barPart{text: " " + state + " ", style: connStyle, shrink: true}
	var noticePart, helpPart, retryPart, reasonPart barPart
	if s.notice.text != "" {
		style := st.statusBar
		if s.notice.err {
			style = st.errText
		}
		noticePart = barPart{text: " " + s.notice.text + " ", style: style, shrink: true}
	} else {
		helpPart = barPart{text: " " + keys.Help.Keys()[0] + " help ", style: st.headerDim}
	}
	if s.com.conn.State == client.Offline {
		retryPart = barPart{text: " " + keys.Reconnect.Help().Key + " now ", style: st.headerDim}
	}
	if reason != "" {
		reasonPart = barPart{text: reason + " ", style: connStyle, shrink: true}
	}
	identPart := barPart{text: "│ " + b.User() + "@" + shortDevice(b.Device(), s.width >= 120) + " ", style: st.statusBar}
	serverPart := barPart{text: "· " + b.Server() + " ", style: st.statusBar, shrink: true}

	rest := s.width
	statusKey := keys.Status.Help().Key
	for _, p := range []*barPart{&statePart, &noticePart, &helpPart, &retryPart, &reasonPart, &identPart, &serverPart} {
		if p.text == "" {
			continue
		}
		if w := cw.width(p.text); w > rest {
			if !p.shrink || rest < 8 {
				break // this part, and every less important one, gives way
			}
			if (p == &reasonPart || p == &noticePart && s.notice.err) && rest >= 8+len(statusKey) {
				// A cut reason says which key shows it whole.
				p.text = cw.truncate(p.text, rest-2-len(statusKey)) + " " + statusKey + " "
			} else {
				p.text = cw.truncate(p.text, rest-1) + " "
			}
		}
		p.shown = true
		rest -= cw.width(p.text)
	}
	var out strings.Builder
	for _, p := range []*barPart{&statePart, &reasonPart, &identPart, &serverPart} {
		if p.shown {
			out.WriteString(p.style.Render(p.text))
		}
	}
	out.WriteString(st.statusBar.Render(spaces(rest)))
	for _, p := range []*barPart{&retryPart, &noticePart, &helpPart} {
		if p.shown {
			out.WriteString(p.style.Render(p.text))
		}
	}
	return out.String()
}

// shortDevice shortens a generated device id (dev- and 24 hex digits) to
// its first six digits, unless whole is set.
func shortDevice(id string, whole bool) string {
	if rest, ok := strings.CutPrefix(id, "dev-"); ok && !whole && len(rest) > 6 {
		return "dev-" + rest[:6]
	}
	return id
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
