package tui

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/imcore/im/client"
	"github.com/imcore/im/tui/tuitest"
)

// testNow is the fixed clock of the tests: Saturday 14 March 2026, 15:30 UTC.
var testNow = time.Date(2026, 3, 14, 15, 30, 0, 0, time.UTC)

// codePoints measures text as the renderer does by default, by code point.
var codePoints cells

// clock is a settable clock for tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// timer is a tea.Tick the harness holds until the test fires it.
type timer struct {
	d  time.Duration
	fn func(time.Time) tea.Msg
}

// harness drives a Model synchronously: it runs the commands Update
// returns and feeds their messages back, except event waits and timers,
// which the test controls.
type harness struct {
	t      testing.TB
	f      *tuitest.Fake
	clock  *clock
	m      Model
	timers []timer
	quit   bool
	raws   []string // what the model printed around the renderer (tea.Raw)
}

func newHarness(t testing.TB, f *tuitest.Fake, w, h int) *harness {
	return newHarnessOpts(t, f, w, h, Options{})
}

// newHarnessOpts is newHarness with options (the clock is the harness's).
func newHarnessOpts(t testing.TB, f *tuitest.Fake, w, h int, opts Options) *harness {
	t.Helper()
	hs := &harness{t: t, f: f, clock: &clock{t: testNow}}
	f.Now = hs.clock.now
	opts.Now, opts.Location = hs.clock.now, time.UTC
	m := New(f, opts)
	m.com.tick = func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		hs.timers = append(hs.timers, timer{d, fn})
		return nil
	}
	m.wait = func() tea.Cmd { return nil }
	hs.m = m
	hs.run(m.Init())
	hs.send(tea.WindowSizeMsg{Width: w, Height: h})
	return hs
}

// send delivers msg and everything its commands produce.
func (hs *harness) send(msgs ...tea.Msg) {
	hs.t.Helper()
	queue := append([]tea.Msg(nil), msgs...)
	for len(queue) > 0 && !hs.quit { // a program that quit handles nothing more
		msg := queue[0]
		queue = queue[1:]
		next, cmd := hs.m.Update(msg)
		hs.m = next.(Model)
		queue = append(queue, hs.exec(cmd)...)
	}
}

// run executes cmd and delivers its messages.
func (hs *harness) run(cmd tea.Cmd) { hs.send(hs.exec(cmd)...) }

func (hs *harness) exec(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	switch msg := cmd().(type) {
	case nil:
		return nil
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, hs.exec(c)...)
		}
		return out
	case tea.QuitMsg:
		hs.quit = true
		return nil
	case tea.RawMsg:
		hs.raws = append(hs.raws, fmt.Sprint(msg.Msg))
		return nil
	default:
		// tea.Sequence's message is an unexported slice of commands, run
		// in order.
		if v := reflect.ValueOf(msg); v.Kind() == reflect.Slice && v.Type().Elem() == reflect.TypeOf(tea.Cmd(nil)) {
			var out []tea.Msg
			for i := range v.Len() {
				out = append(out, hs.exec(v.Index(i).Interface().(tea.Cmd))...)
			}
			return out
		}
		return []tea.Msg{msg}
	}
}

// windowSize is a terminal resize to w x h.
func windowSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// event delivers an client event as the event-wait command would.
func (hs *harness) event(ev client.Event) { hs.t.Helper(); hs.send(eventMsg{ev}) }

// fireTimers fires every pending timer (as if their time had come).
func (hs *harness) fireTimers() {
	ts := hs.timers
	hs.timers = nil
	for _, tm := range ts {
		hs.send(tm.fn(hs.clock.now()))
	}
}

// press sends key presses by name: "enter", "up", "ctrl+o", "G", "x"...
func (hs *harness) press(keys ...string) {
	hs.t.Helper()
	for _, k := range keys {
		hs.send(keyPress(k))
	}
}

// typeText types s into whatever has focus.
func (hs *harness) typeText(s string) {
	for _, r := range s {
		hs.send(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

var namedKeys = map[string]rune{
	"enter": tea.KeyEnter, "esc": tea.KeyEscape, "up": tea.KeyUp, "down": tea.KeyDown,
	"left": tea.KeyLeft, "right": tea.KeyRight, "pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown,
	"home": tea.KeyHome, "end": tea.KeyEnd, "tab": tea.KeyTab, "backspace": tea.KeyBackspace,
	"delete": tea.KeyDelete, "f1": tea.KeyF1, "space": tea.KeySpace,
}

func keyPress(s string) tea.KeyPressMsg {
	var mod tea.KeyMod
	name := s
	for {
		switch {
		case strings.HasPrefix(name, "ctrl+") && len(name) > 5:
			mod |= tea.ModCtrl
			name = name[5:]
			continue
		case strings.HasPrefix(name, "alt+") && len(name) > 4:
			mod |= tea.ModAlt
			name = name[4:]
			continue
		case strings.HasPrefix(name, "shift+") && len(name) > 6:
			mod |= tea.ModShift
			name = name[6:]
			continue
		}
		break
	}
	if code, ok := namedKeys[name]; ok {
		return tea.KeyPressMsg{Code: code, Mod: mod}
	}
	r := []rune(name)[0]
	if mod == 0 {
		return tea.KeyPressMsg{Code: r, Text: name}
	}
	return tea.KeyPressMsg{Code: r, Mod: mod}
}

// screen is the current view without colours.
func (hs *harness) screen() string { return ansi.Strip(hs.m.View().Content) }

// raw is the current view with its escape sequences.
func (hs *harness) raw() string { return hs.m.View().Content }

// contains fails unless the screen shows every s.
func (hs *harness) contains(ss ...string) {
	hs.t.Helper()
	scr := hs.screen()
	for _, s := range ss {
		if !strings.Contains(scr, s) {
			hs.t.Fatalf("screen lacks %q:\n%s", s, scr)
		}
	}
}

// lacks fails if the screen shows any s.
func (hs *harness) lacks(ss ...string) {
	hs.t.Helper()
	scr := hs.screen()
	for _, s := range ss {
		if strings.Contains(scr, s) {
			hs.t.Fatalf("screen shows %q:\n%s", s, scr)
		}
	}
}

// checkGeometry fails unless the screen is exactly w x h cells.
func (hs *harness) checkGeometry() {
	hs.t.Helper()
	lines := strings.Split(hs.screen(), "\n")
	if len(lines) != hs.m.height {
		hs.t.Fatalf("screen has %d lines, want %d:\n%s", len(lines), hs.m.height, hs.screen())
	}
	for i, l := range lines {
		if w := hs.m.com.cells.width(l); w != hs.m.width {
			hs.t.Fatalf("line %d is %d cells wide, want %d: %q\n%s", i, w, hs.m.width, l, hs.screen())
		}
	}
}

// lineWith returns the first screen line containing s.
func (hs *harness) lineWith(s string) string {
	hs.t.Helper()
	for _, l := range strings.Split(hs.screen(), "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	hs.t.Fatalf("no line with %q:\n%s", s, hs.screen())
	return ""
}

// rawLineWith returns the first raw (coloured) line whose text contains s.
func (hs *harness) rawLineWith(s string) string {
	hs.t.Helper()
	for _, l := range strings.Split(hs.raw(), "\n") {
		if strings.Contains(ansi.Strip(l), s) {
			return l
		}
	}
	hs.t.Fatalf("no line with %q:\n%s", s, hs.screen())
	return ""
}
