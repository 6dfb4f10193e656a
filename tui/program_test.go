package tui

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui/tuitest"
)

// The whole-program tests run the model in a real tea.Program through
// teatest, with the fake client's event channel and real command
// goroutines. The clock is fixed, so screens are stable; golden files
// hold the screen without colours (run with -update to regenerate).
// Synchronisation is by condition: the probe publishes every screen the
// program renders and the test waits until the screen it expects is there.

// snapshot is what the probe publishes after each Update.
type snapshot struct {
	screen string
	raw    string
	oldest int64
	loaded bool
	busy   bool // a local page is loading or the server was asked
}

// screens carries snapshots from the program goroutine to the test.
type screens struct {
	mu      sync.Mutex
	last    snapshot
	changed chan struct{}
}

func (s *screens) set(sn snapshot) {
	s.mu.Lock()
	s.last = sn
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// waitFor blocks until cond holds for a published snapshot and returns it.
// The deadline only turns a hang into a failure.
func (s *screens) waitFor(t *testing.T, what string, cond func(snapshot) bool) snapshot {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		cur := s.last
		s.mu.Unlock()
		if cond(cur) {
			return cur
		}
		select {
		case <-s.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; screen:\n%s", what, cur.screen)
		}
	}
}

// probe wraps the model to publish what it renders.
type probe struct {
	m Model
	s *screens
}

func (p probe) Init() tea.Cmd { return p.m.Init() }

func (p probe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	next, cmd := p.m.Update(msg)
	p.m = next.(Model)
	raw := p.m.View().Content
	sn := snapshot{screen: ansi.Strip(raw), raw: raw}
	if c := p.m.chat.c; c != nil {
		sn.oldest, sn.loaded, sn.busy = c.oldestSeq(), c.loaded, c.loadingOlder || c.awaitServer != 0
	}
	p.s.set(sn)
	return p, cmd
}

func (p probe) View() tea.View { return p.m.View() }

// program is a running whole-program test.
type program struct {
	t  *testing.T
	tm *teatest.TestModel
	s  *screens
	f  *tuitest.Fake
}

// colourTerminal is the environment of a true-colour terminal, as the
// program's colour detection reads it (the tests' output is no TTY).
var colourTerminal = []string{"TERM=xterm-256color", "COLORTERM=truecolor", "TTY_FORCE=1"}

func startProgram(t *testing.T, f *tuitest.Fake, w, h int) *program {
	t.Helper()
	return startProgramIn(t, f, w, h, colourTerminal, Options{})
}

// startProgramIn starts the program with the environment env and opts
// (the clock is the tests').
func startProgramIn(t *testing.T, f *tuitest.Fake, w, h int, env []string, opts Options) *program {
	t.Helper()
	f.Now = func() time.Time { return testNow }
	opts.Now, opts.Location = func() time.Time { return testNow }, time.UTC
	m := New(f, opts)
	s := &screens{changed: make(chan struct{}, 1)}
	tm := teatest.NewTestModel(t, probe{m: m, s: s}, teatest.WithInitialTermSize(w, h),
		teatest.WithProgramOptions(tea.WithEnvironment(env)))
	p := &program{t: t, tm: tm, s: s, f: f}
	t.Cleanup(func() { _ = tm.Quit() })
	return p
}

func (p *program) press(keys ...string) {
	for _, k := range keys {
		p.tm.Send(keyPress(k))
	}
}

func (p *program) waitScreen(want ...string) snapshot {
	p.t.Helper()
	return p.s.waitFor(p.t, fmt.Sprintf("%q", want), func(sn snapshot) bool {
		for _, w := range want {
			if !strings.Contains(sn.screen, w) {
				return false
			}
		}
		return true
	})
}

// finish quits the program and returns the final screen; the terminal
// output must show the program ran in the alternate screen.
func (p *program) finish() string {
	p.t.Helper()
	screen, _ := p.finishOutput()
	return screen
}

// finishOutput is finish, also returning everything the program wrote to
// the terminal.
func (p *program) finishOutput() (screen string, out []byte) {
	p.t.Helper()
	if err := p.tm.Quit(); err != nil {
		p.t.Fatal(err)
	}
	fm := p.tm.FinalModel(p.t, teatest.WithFinalTimeout(10*time.Second))
	out, err := io.ReadAll(p.tm.FinalOutput(p.t))
	if err != nil {
		p.t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("\x1b[?1049h")) {
		p.t.Errorf("the program did not switch to the alternate screen")
	}
	return ansi.Strip(fm.(probe).m.View().Content), out
}

func TestProgramSessionList(t *testing.T) {
	p := startProgram(t, newFixture(), 100, 24)
	p.waitScreen("yuki", "11 unread", "● online")
	golden.RequireEqual(t, p.finish())
}

func TestProgramTickStates(t *testing.T) {
	p := startProgram(t, tickFixture(), 100, 30)
	p.waitScreen("▌👥 team") // the list is there
	p.press("j", "j", "enter")
	sn := p.waitScreen("pending one", "read one", "◷")
	t.Run("plain", func(t *testing.T) {
		golden.RequireEqual(t, sn.screen)
	})
	t.Run("colors", func(t *testing.T) {
		// Colours tell read (blue) from delivered (grey): keep them here.
		var lines []string
		for _, l := range strings.Split(sn.raw, "\n") {
			if strings.Contains(ansi.Strip(l), " one ") {
				lines = append(lines, l)
			}
		}
		golden.RequireEqual(t, strings.Join(lines, "\n")+"\n")
	})
	// bob reads everything: the client's TicksChanged arrives on the
	// event channel and every tick turns blue.
	p.f.Emit(client.TicksChanged{Conv: bob, Ticks: protocol.Ticks{DeliveredSeq: 15, ReadSeq: 15}})
	p.s.waitFor(t, "sent one read", func(sn snapshot) bool {
		for _, l := range strings.Split(sn.raw, "\n") {
			if strings.Contains(ansi.Strip(l), "sent one") {
				return strings.Contains(l, blue)
			}
		}
		return false
	})
	golden.RequireEqual(t, p.finish())
}

func TestProgramScrollBack(t *testing.T) {
	f := historyFixture()
	// The client: LoadOlder stores the server's page and reports it.
	f.OnLoadOlder = func(conv string, before int64) {
		for s := max(1, before-50); s < before; s++ {
			f.AddMessages(conv, msg(conv, s, "bob", fmt.Sprintf("message %d", s), ms(time.Duration(s-200)*time.Minute)))
		}
		f.Emit(client.MessagesChanged{Conv: conv})
	}
	p := startProgram(t, f, 80, 24)
	p.waitScreen("bob", "● online")
	p.press("enter")
	p.s.waitFor(t, "first page", func(sn snapshot) bool { return sn.loaded && sn.oldest == 151 })
	p.press("tab")
	// Each g jumps to the top of what is loaded and loads the page above:
	// two from the local store, then from the server, down to seq 1.
	for _, want := range []int64{101, 81, 31, 1} {
		p.press("g")
		p.s.waitFor(t, fmt.Sprintf("oldest %d", want), func(sn snapshot) bool { return sn.oldest == want && !sn.busy })
	}
	p.press("g")
	p.waitScreen("start of the conversation", "message 1 ")
	var at []int64
	for _, c := range f.CallsOf("LoadOlder") {
		at = append(at, c.Seq)
	}
	if fmt.Sprint(at) != "[81 31]" {
		t.Errorf("LoadOlder below %v, want [81 31]", at)
	}
	golden.RequireEqual(t, p.finish())
}

func TestProgramHelpScreen(t *testing.T) {
	p := startProgram(t, newFixture(), 120, 36)
	p.waitScreen("yuki")
	p.press("?")
	p.waitScreen("Reading history", "Dialogs")
	golden.RequireEqual(t, p.finish())
}

func TestProgramOfflineStatusBar(t *testing.T) {
	f := newFixture()
	f.SetConn(client.Conn{State: client.Offline, RetryAt: testNow.Add(7 * time.Second), Err: dialRefused})
	p := startProgram(t, f, 100, 24)
	p.waitScreen("yuki", "offline — retrying in 7s")
	// Sent while offline: it waits in the outbox with a clock.
	p.press("j", "j", "enter")
	p.waitScreen("are you coming tonight?")
	p.tm.Type("sent from the train")
	p.press("enter")
	p.waitScreen("sent from the train  15:30 ◷")
	golden.RequireEqual(t, p.finish())
}

// TestProgramNotifies checks what reaches the terminal for a message that
// arrives in a chat out of sight: the bell, and the desktop notifications
// OSC 9 and OSC 777.
func TestProgramNotifies(t *testing.T) {
	f := newFixture()
	p := startProgram(t, f, 80, 24)
	p.waitScreen("yuki", "● online")
	p.press("j", "j", "enter")
	p.waitScreen("are you coming tonight?")
	p.f.Emit(client.Incoming{Conv: "d:alice:dave", Count: 1,
		Last: protocol.Message{Conv: "d:alice:dave", Seq: 5, MsgID: "d5", From: "dave", Body: "call me back", ClientTS: ms(0)}})
	p.waitScreen("new message in dave")
	want := []byte("\a\x1b]9;dave: call me back\a\x1b]777;notify;dave;call me back\a")
	teatest.WaitFor(t, p.tm.Output(), func(out []byte) bool { return bytes.Contains(out, want) },
		teatest.WithDuration(15*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	if err := p.tm.Quit(); err != nil {
		t.Fatal(err)
	}
	p.tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second))
}
