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

// notice is a transient line in the status bar.
type notice struct {
	text string
	err  bool
	gen  int
}

// notify shows text in the status bar for a few seconds.
func (m *Model) notify(text string, isErr bool) tea.Cmd {
	m.noticeGen++
	m.notice = notice{text: text, err: isErr, gen: m.noticeGen}
	gen := m.noticeGen
	return m.tick(noticeTTL, func(time.Time) tea.Msg { return noticeExpiredMsg{gen: gen} })
}

// startRetryCountdown starts the once-a-second redraw of "retrying in Ns"
// while the connection is offline with a retry scheduled.
func (m *Model) startRetryCountdown() tea.Cmd {
	m.retryGen++
	if m.conn.State != client.Offline || m.conn.RetryAt.IsZero() {
		return nil
	}
	return m.retryTick()
}

func (m *Model) retryTick() tea.Cmd {
	gen := m.retryGen
	left := m.conn.RetryAt.Sub(m.now())
	if left <= 0 {
		return nil
	}
	// Wake at the next whole second of the countdown.
	d := left - left.Truncate(time.Second)
	if d <= 0 {
		d = time.Second
	}
	return m.tick(d, func(time.Time) tea.Msg { return retryTickMsg{gen: gen} })
}

// connText describes the connection for the status bar: its state and,
// when offline, why.
func (m *Model) connText() (state, detail string) {
	c := m.conn
	switch c.State {
	case client.Online:
		return "● online", ""
	case client.Connecting:
		return "◌ connecting…", ""
	case client.Offline:
		state = "○ offline"
		if !c.RetryAt.IsZero() {
			left := c.RetryAt.Sub(m.now())
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

// statusView renders the status bar, one line of w cells. When it is too
// narrow, parts give way in this order: the help hint, the error detail,
// the server, the identity.
func (m *Model) statusView(w int) string {
	st := &m.st
	state, detail := m.connText()
	connStyle := st.online
	switch m.conn.State {
	case client.Offline, client.Stopped:
		connStyle = st.offline
	case client.Connecting:
		connStyle = st.connecting
	}
	right, rightStyle := "? help", st.headerDim
	if m.notice.text != "" {
		right, rightStyle = m.notice.text, st.statusBar
		if m.notice.err {
			rightStyle = st.errText
		}
	}
	rest := w
	take := func(s string, keep int) string {
		if rest-width(s) < keep {
			s = truncate(s, max(0, rest-keep))
		}
		rest -= width(s)
		return s
	}
	// Claimed in order of importance, shown in order of reading.
	statePart := take(" "+state+" ", 0)
	identPart := take("│ "+m.b.User()+"@"+m.b.Device()+" ", 0)
	notice := ""
	if m.notice.text != "" {
		notice = take(" "+right+" ", 0)
	}
	serverPart := take("· "+m.b.Server()+" ", 0)
	keep := 0 // room left for the help hint
	if m.notice.text == "" {
		keep = width(right) + 3
	}
	detailPart := ""
	if detail != "" && rest-keep > 8 {
		detailPart = take(truncate(detail, rest-keep-1)+" ", 0)
	}
	if m.notice.text == "" && rest >= width(right)+3 {
		notice = take(" "+right+" ", 0)
	}
	return connStyle.Render(statePart+detailPart) + st.statusBar.Render(identPart+serverPart+spaces(rest)) + rightStyle.Render(notice)
}
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
