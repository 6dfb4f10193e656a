package tui

import "time"

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
	// Theme is "dark" or "light": the colours for a terminal with a dark or
	// a light background. Empty, the terminal is asked for its background
	// (dark until it answers).
	Theme string
	// NoNotify turns off the bell and the desktop notifications (OSC 9 and
	// OSC 777) for messages that arrive out of sight.
	NoNotify bool
	// OpenURL opens a message's link. Default: the system's opener
	// (xdg-open, open on macOS), not waited for.
	OpenURL func(url string) error
}

// Themes are the names Options.Theme takes.
var Themes = []string{"dark", "light"}

// withDefaults fills the options left zero.
func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.PageSize <= 0 {
		o.PageSize = 50
	}
	if o.TypingTimeout <= 0 {
		o.TypingTimeout = 5 * time.Second
	}
	if o.TypingInterval <= 0 {
		o.TypingInterval = 3 * time.Second
	}
	return o
}
