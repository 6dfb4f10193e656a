package tui

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
)

// common is what every component shares: the client, the options, the
// theme's styles, the key map and the timer source. The root owns it and
// changes it (a new theme); components read it through their pointer.
type common struct {
	b     Backend
	opts  Options
	st    styles
	cells cells // how the renderer measures text
	keys  keyMap
	tick  ticker // tea.Tick; tests fire timers by hand
	live  *live
	// people is what is known of the users shown, and the settings.
	people *people
	conn   client.Conn // the connection's state; the status bar keeps it
	ids    int         // the last id nextID gave
}

// nextID returns a fresh number, to match an answer with its request.
func (c *common) nextID() int {
	c.ids++
	return c.ids
}

// ticker makes timer commands; tests replace it to fire timers by hand.
type ticker func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd

// now is the injected clock in the display time zone.
func (c *common) now() time.Time { return c.opts.Now().In(c.opts.Location) }

// me is the signed-in user.
func (c *common) me() string { return c.b.User() }

// renderCtx is the context for rendering messages.
func (c *common) renderCtx() renderCtx {
	return renderCtx{st: &c.st, cells: c.cells, now: c.now(), me: c.me(), people: c.people}
}

// asks holds what a component asks of the root during one Update:
// navigation, dialogs and notices, which the root handles before the next
// message, so that a key pressed right after finds the screen changed.
type asks struct{ pending []tea.Msg }

// ask queues msg for the root.
func (a *asks) ask(msg tea.Msg) { a.pending = append(a.pending, msg) }

// take returns the queued requests and forgets them.
func (a *asks) take() []tea.Msg {
	p := a.pending
	a.pending = nil
	return p
}

// call runs a fire-and-forget backend request off the UI goroutine.
func call(f func()) tea.Cmd {
	return func() tea.Msg {
		f()
		return doneMsg{}
	}
}
