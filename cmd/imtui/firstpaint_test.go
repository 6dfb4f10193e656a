package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/imcore/im/client"
	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui"
)

// The first-paint fixture: alice's profile with 1,000 direct chats of 10
// messages each (10,000 messages). The first chat is pinned, the others
// follow newest first; titles are "friend 0000" to "friend 0999" in list
// order. The busiest chat, the pinned one, may hold more.
const (
	fixtureSessions = 1000
	fixturePerChat  = 10
	paintWidth      = 200
	paintHeight     = 50
)

// fixtureBase is the time of the newest message of the fixture.
var fixtureBase = time.Date(2026, 3, 14, 15, 30, 0, 0, time.UTC)

func fixtureTitle(i int) string { return fmt.Sprintf("friend %04d", i) }
func fixtureConv(i int) string  { return fmt.Sprintf("d:alice:u%04d", i) }

// fixtureBody is the text of message seq of chat i.
func fixtureBody(i int, seq int64) string {
	return fmt.Sprintf("message %d of %s, see you at the station 🚉", seq, fixtureTitle(i))
}

// prepareProfile writes the fixture to a new database at path; the
// busiest chat (the first, pinned) holds busy messages. The busiest chat
// is read to its end, so that opening it does not change the store.
func prepareProfile(tb testing.TB, path string, busy int) {
	tb.Helper()
	if err := writeProfile(path, busy); err != nil {
		tb.Fatal(err)
	}
}

// The fixture with fixturePerChat messages in the busiest chat, written
// once per test binary (10,000 messages take minutes to store under the
// race detector) into a directory TestMain removes; storedProfile gives
// each test a copy of its own.
var (
	profileOnce sync.Once
	profileDir  string
	profileErr  error
)

// storedProfile returns the path of a new database in a directory of the
// test's own holding the fixture (fixturePerChat messages in the busiest
// chat), as prepareProfile writes it.
func storedProfile(t *testing.T) string {
	t.Helper()
	profileOnce.Do(func() {
		if profileDir, profileErr = os.MkdirTemp("", "imtui-test-profile"); profileErr == nil {
			profileErr = writeProfile(filepath.Join(profileDir, "im.db"), fixturePerChat)
		}
	})
	if profileErr != nil {
		t.Fatalf("the stored profile: %v", profileErr)
	}
	dst := filepath.Join(t.TempDir(), "im.db")
	// The store is closed: its log is checkpointed into the database,
	// but a log left beside it is copied with it.
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(filepath.Join(profileDir, "im.db"+suffix))
		if errors.Is(err, fs.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// writeProfile writes the fixture to a new database at path, busy
// messages in the busiest chat.
func writeProfile(path string, busy int) (err error) {
	st, err := localstore.Open(path)
	if err != nil {
		return err
	}
	defer func() {
		// Closed before the copies are made: the close checkpoints the log.
		err = errors.Join(err, st.Close())
	}()
	sessions := make([]protocol.Session, 0, fixtureSessions)
	msgs := make([]protocol.Message, 0, fixtureSessions*fixturePerChat+busy)
	for i := range fixtureSessions {
		conv, peer := fixtureConv(i), fmt.Sprintf("u%04d", i)
		n := int64(fixturePerChat)
		if i == 0 {
			n = int64(busy)
		}
		newest := fixtureBase.Add(-time.Duration(i) * time.Minute)
		for seq := int64(1); seq <= n; seq++ {
			from := peer
			if seq%3 == 0 {
				from = "alice"
			}
			ts := newest.Add(-time.Duration(n-seq) * 30 * time.Second).UnixMilli()
			msgs = append(msgs, protocol.Message{
				Conv: conv, Seq: seq, MsgID: fmt.Sprintf("%s-%d", conv, seq), From: from,
				Body: fixtureBody(i, seq), ClientTS: ts, ServerTS: ts,
			})
		}
		last := msgs[len(msgs)-1]
		unread := int64(i % 3)
		if i == 0 {
			unread = 0
		}
		s := protocol.Session{
			Conv: conv, Kind: "direct", Title: fixtureTitle(i), Members: []string{"alice", peer},
			WriteSeq: n, ReadSeq: n - unread, UnreadCount: unread,
			ActiveTS: last.ServerTS, WriteTS: last.ServerTS, LastMsg: &last,
			Ticks: protocol.Ticks{DeliveredSeq: n, ReadSeq: n - 1},
		}
		if i == 0 {
			s.Priority = 1
		}
		sessions = append(sessions, s)
	}
	if err := st.PutSessions(sessions); err != nil {
		return err
	}
	_, err = st.PutMessages(msgs)
	return err
}

// deadURL returns the WebSocket URL of a loopback port nobody listens on.
func deadURL(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "ws://" + addr + "/ws"
}

// quietBackend is imtui's backend with an event stream of its own that
// the benchmark closes: a client that is not Run emits no events, and
// Client.Close does not close its Events channel, so the model's event
// wait would otherwise outlive every iteration.
type quietBackend struct {
	backend
	events chan client.Event
}

func (b quietBackend) Events() <-chan client.Event { return b.events }

// driver runs a model as tea.Program does: commands run on goroutines,
// their messages come back to Update one at a time on the caller's
// goroutine. There is no renderer: the caller calls View.
type driver struct {
	m    tea.Model
	msgs chan tea.Msg
	wg   sync.WaitGroup
}

// windowSizeRequest is the type of tea.RequestWindowSize's message, which
// the program answers with a WindowSizeMsg of the terminal's size.
var windowSizeRequest = reflect.TypeOf(tea.RequestWindowSize())

func startDriver(m tea.Model) *driver {
	d := &driver{m: m, msgs: make(chan tea.Msg, 64)}
	d.spawn(m.Init())
	return d
}

// spawn runs cmd on its own goroutine, and a batch's commands each on
// theirs.
func (d *driver) spawn(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		switch msg := cmd().(type) {
		case nil:
		case tea.BatchMsg:
			for _, c := range msg {
				d.spawn(c)
			}
		default:
			d.msgs <- msg
		}
	}()
}

// send delivers msg to Update and starts the commands it returns.
func (d *driver) send(msg tea.Msg) {
	next, cmd := d.m.Update(msg)
	d.m = next
	d.spawn(cmd)
}

// until delivers the commands' messages, rendering the view after each,
// until done holds of a view; it returns the view and every view before
// it. Size requests are answered with the paint size, unrendered.
func (d *driver) until(timeout time.Duration, done func(view string) bool) (string, []string, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var before []string
	for {
		select {
		case msg := <-d.msgs:
			if reflect.TypeOf(msg) == windowSizeRequest {
				d.send(tea.WindowSizeMsg{Width: paintWidth, Height: paintHeight})
				continue
			}
			d.send(msg)
			v := d.m.View().Content
			if done(v) {
				return v, before, nil
			}
			before = append(before, v)
		case <-timer.C:
			return "", before, fmt.Errorf("no such view within %v", timeout)
		}
	}
}

// firstPaint is one start of imtui on the profile at path, up to its
// first screen with the session list.
type firstPaint struct {
	st     *localstore.Store
	c      *client.Client
	events chan client.Event
	d      *driver
}

// paintList opens the profile, builds the client (not running: the first
// paint must not wait for the network) and the UI, sizes the window and
// runs the UI until the list shows; it returns the screen.
func paintList(tb testing.TB, path, url string) (*firstPaint, string) {
	st, err := localstore.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := client.New(client.Config{URL: url, User: "alice", Store: st})
	if err != nil {
		tb.Fatal(err)
	}
	p := &firstPaint{st: st, c: c, events: make(chan client.Event)}
	m := tui.New(quietBackend{backend: backend{Client: c, server: url}, events: p.events}, tui.Options{})
	p.d = startDriver(m)
	p.d.send(tea.WindowSizeMsg{Width: paintWidth, Height: paintHeight})
	top := fixtureTitle(0)
	view, _, err := p.d.until(10*time.Second, func(v string) bool { return strings.Contains(v, top) })
	if err != nil {
		tb.Fatalf("the list did not show: %v", err)
	}
	return p, view
}

// close stops everything the start left running and closes the store.
func (p *firstPaint) close() {
	close(p.events)
	p.d.wg.Wait()
	p.c.Close()
	p.st.Close()
}

// TestFirstPaintOfflineShowsStoredList restarts imtui on a stored profile
// of 1,000 chats with the server down (the client running, failing to
// connect): the first screen after the loading one shows the stored list,
// newest first, with the connection shown as not online; the whole list is
// there (the last chat is one key away).
func TestFirstPaintOfflineShowsStoredList(t *testing.T) {
	t.Parallel()
	d := startOfflineUI(t)
	if v := ansi.Strip(d.m.View().Content); !strings.Contains(v, "Loading…") {
		t.Fatalf("before the list is read, the screen should say it is loading:\n%s", v)
	}
	view, before, err := d.until(10*time.Second, func(v string) bool { return !strings.Contains(ansi.Strip(v), "Loading…") })
	if err != nil {
		t.Fatalf("the list did not load: %v", err)
	}
	screen := ansi.Strip(view)
	t.Logf("first screen after %d loading screen(s):\n%s", len(before), screen)

	// The list pane is 48 lines of two-line rows below its header: 24 rows.
	lines := strings.Split(screen, "\n")
	if len(lines) != paintHeight {
		t.Fatalf("the screen has %d lines, want %d", len(lines), paintHeight)
	}
	last := -1
	for i := range 24 {
		title := fixtureTitle(i)
		at := -1
		for n, l := range lines {
			if strings.Contains(l, title) {
				at = n
				break
			}
		}
		if at < 0 {
			t.Fatalf("the first screen lacks %q:\n%s", title, screen)
		}
		if at <= last {
			t.Fatalf("%q is out of order (line %d, after line %d):\n%s", title, at, last, screen)
		}
		last = at
	}
	if preview := fmt.Sprintf("message %d of %s", fixturePerChat, fixtureTitle(1)); !strings.Contains(screen, preview) {
		t.Fatalf("the first screen lacks the previews:\n%s", screen)
	}
	status := lines[len(lines)-1]
	if strings.Contains(status, "online") || !strings.Contains(status, "alice@") {
		t.Fatalf("the status bar should show alice not online: %q", status)
	}

	// The whole stored list is loaded: the last chat is one key away.
	d.send(tea.KeyPressMsg{Code: 'G', Text: "G"})
	if v := ansi.Strip(d.m.View().Content); !strings.Contains(v, fixtureTitle(fixtureSessions-1)) {
		t.Fatalf("G should show the last of the %d stored chats:\n%s", fixtureSessions, v)
	}
}

// BenchmarkFirstPaint measures a start of imtui up to its first screen
// with the list, on a stored profile of 1,000 chats and 10,000 messages:
// open the database, build the client (not run) and the UI, size the
// window (200x50), read the list, render.
func BenchmarkFirstPaint(b *testing.B) {
	path := filepath.Join(b.TempDir(), "im.db")
	prepareProfile(b, path, fixturePerChat)
	url := deadURL(b)
	b.ReportAllocs()
	for b.Loop() {
		p, _ := paintList(b, path, url)
		b.StopTimer()
		p.close()
		b.StartTimer()
	}
}

// BenchmarkFirstPaintOpenChat is BenchmarkFirstPaint followed by opening
// the busiest chat, the pinned one at the top with 10,000 messages, up to
// the screen with its newest page. open-ns/op is the opening alone (enter
// to the chat's screen).
func BenchmarkFirstPaintOpenChat(b *testing.B) {
	const busy = 10000
	path := filepath.Join(b.TempDir(), "im.db")
	prepareProfile(b, path, busy)
	url := deadURL(b)
	// A message of the newest page that only the chat shows (the list's
	// preview is the newest one).
	want := fixtureBody(0, busy-3)
	var open time.Duration
	b.ReportAllocs()
	for b.Loop() {
		p, _ := paintList(b, path, url)
		start := time.Now()
		p.d.send(tea.KeyPressMsg{Code: tea.KeyEnter})
		if _, _, err := p.d.until(10*time.Second, func(v string) bool { return strings.Contains(v, want) }); err != nil {
			b.Fatalf("the chat did not show: %v", err)
		}
		open += time.Since(start)
		b.StopTimer()
		p.close()
		b.StartTimer()
	}
	b.ReportMetric(float64(open.Nanoseconds())/float64(b.N), "open-ns/op")
}
