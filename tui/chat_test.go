package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui/tuitest"
)

const bob = "d:alice:bob"

// openBob opens bob's chat from the fixture's list (third row).
func openBob(h *harness) {
	h.t.Helper()
	h.press("j", "j", "enter")
	h.contains("are you coming tonight?")
}

// tickFixture is bob's chat with one own message in each tick state.
func tickFixture() *tuitest.Fake {
	f := newFixture()
	f.AddMessages(bob,
		msg(bob, 13, "alice", "read one", ms(-4*time.Minute)),
		msg(bob, 14, "alice", "delivered one", ms(-3*time.Minute)),
		msg(bob, 15, "alice", "sent one", ms(-2*time.Minute)),
		client.Message{Message: protocol.Message{Conv: bob, MsgID: "out-x", From: "alice", Body: "pending one",
			ClientTS: ms(-time.Minute)}, Outbox: true},
	)
	f.SetTicks(bob, protocol.Ticks{DeliveredSeq: 14, ReadSeq: 13})
	return f
}

const blue = "38;2;83;189;235" // colRead as a truecolor foreground

func TestTickStates(t *testing.T) {
	h := newHarness(t, tickFixture(), 100, 40)
	openBob(h)
	h.checkGeometry()
	for body, glyph := range map[string]string{
		"read one": glyphRead, "delivered one": glyphDelivered, "sent one": glyphSent, "pending one": glyphPending,
	} {
		l := h.lineWith(body)
		if !strings.HasSuffix(strings.TrimRight(l, " "), glyph) {
			t.Errorf("%q should end in %q: %q", body, glyph, l)
		}
	}
	if l := h.lineWith("sent one"); strings.Contains(l, glyphDelivered) {
		t.Errorf("sent shows two ticks: %q", l)
	}
	// Read is blue, delivered grey.
	if !strings.Contains(h.rawLineWith("read one"), blue) {
		t.Errorf("read ticks not blue: %q", h.rawLineWith("read one"))
	}
	if strings.Contains(h.rawLineWith("delivered one"), blue) {
		t.Errorf("delivered ticks blue: %q", h.rawLineWith("delivered one"))
	}
	// Messages from bob carry no tick.
	if l := h.lineWith("saturday then"); strings.Contains(l, glyphSent) {
		t.Errorf("bob's message has a tick: %q", l)
	}

	// The ticks rise live: everything delivered, then read.
	h.event(client.TicksChanged{Conv: bob, Ticks: protocol.Ticks{DeliveredSeq: 15, ReadSeq: 13}})
	if l := h.lineWith("sent one"); !strings.HasSuffix(strings.TrimRight(l, " "), glyphDelivered) {
		t.Errorf("sent one should be delivered now: %q", l)
	}
	h.event(client.TicksChanged{Conv: bob, Ticks: protocol.Ticks{DeliveredSeq: 15, ReadSeq: 15}})
	if !strings.Contains(h.rawLineWith("sent one"), blue) {
		t.Errorf("sent one should be read now: %q", h.rawLineWith("sent one"))
	}
	// A lower status never lowers a tick.
	h.event(client.TicksChanged{Conv: bob, Ticks: protocol.Ticks{DeliveredSeq: 14, ReadSeq: 13}})
	if !strings.Contains(h.rawLineWith("sent one"), blue) {
		t.Errorf("ticks went back: %q", h.rawLineWith("sent one"))
	}
	// Another conversation's ticks change nothing here.
	h.event(client.TicksChanged{Conv: "d:alice:carol", Ticks: protocol.Ticks{DeliveredSeq: 99, ReadSeq: 99}})

	// The outbox message is stored: pending becomes sent.
	h.f.Store(bob, "out-x", 16)
	h.event(client.MessagesChanged{Conv: bob})
	if l := h.lineWith("pending one"); !strings.HasSuffix(strings.TrimRight(l, " "), glyphSent) {
		t.Errorf("stored outbox message should show one tick: %q", l)
	}
}

func TestTickOf(t *testing.T) {
	c := &conversation{ticks: protocol.Ticks{DeliveredSeq: 5, ReadSeq: 3}}
	cases := []struct {
		m    client.Message
		want protocol.Tick
	}{
		{client.Message{Outbox: true}, protocol.TickPending},
		{client.Message{Message: protocol.Message{Seq: 0}}, protocol.TickPending},
		{client.Message{Message: protocol.Message{Seq: 3}}, protocol.TickRead},
		{client.Message{Message: protocol.Message{Seq: 5}}, protocol.TickDelivered},
		{client.Message{Message: protocol.Message{Seq: 6}}, protocol.TickSent},
	}
	for _, tc := range cases {
		if got := c.tickOf(&tc.m); got != tc.want {
			t.Errorf("tickOf(%+v) = %v, want %v", tc.m, got, tc.want)
		}
	}
}

// historyFixture gives bob's chat 120 local messages (seq 81-200); the
// server holds 1-80.
func historyFixture() *tuitest.Fake {
	f := tuitest.NewFake("alice", "laptop", "localhost:8080")
	f.SetSessions("", []protocol.Session{{Conv: bob, Kind: "direct", Title: "bob", ReadSeq: 200, WriteSeq: 200,
		WriteTS: ms(0), LastMsg: last(bob, 200, "bob", "message 200", ms(0))}})
	for s := int64(81); s <= 200; s++ {
		from := "bob"
		if s%3 == 0 {
			from = "alice"
		}
		f.AddMessages(bob, msg(bob, s, from, fmt.Sprintf("message %d", s), ms(time.Duration(s-200)*time.Minute)))
	}
	return f
}

func TestScrollBackThroughHistory(t *testing.T) {
	f := historyFixture()
	h := newHarness(t, f, 80, 24)
	h.press("enter")
	h.contains("message 200")
	h.lacks("message 150 ", "loading")
	if got := len(h.m.chat.c.msgs); got != 50 {
		t.Fatalf("first page holds %d messages, want 50", got)
	}

	// Page up to the top of the first page: the next page comes from the
	// local store.
	for i := 0; i < 40 && h.m.chat.c.oldestSeq() == 151; i++ {
		h.press("pgup")
	}
	if o := h.m.chat.c.oldestSeq(); o != 101 {
		t.Fatalf("after scrolling to the top the oldest loaded is %d, want 101", o)
	}
	if n := len(f.CallsOf("LoadOlder")); n != 0 {
		t.Fatalf("LoadOlder called while the store had messages: %v", f.Calls())
	}
	// What was on screen stays on screen when the page is added above.
	h.contains("message 151")

	// Scrolling on: the store's last page (81-100), then nothing, then
	// the server.
	for i := 0; i < 200 && len(f.CallsOf("LoadOlder")) == 0; i++ {
		h.press("pgup")
	}
	calls := f.CallsOf("LoadOlder")
	if len(calls) != 1 || calls[0].Conv != bob || calls[0].Seq != 81 {
		t.Fatalf("LoadOlder calls = %v, want one below seq 81", calls)
	}
	h.contains("loading older messages…", "message 81")

	// More scrolling while waiting asks nothing more.
	h.press("pgup", "pgup")
	if n := len(f.CallsOf("LoadOlder")); n != 1 {
		t.Fatalf("LoadOlder called %d times", n)
	}

	// The client stores the server's page and says so.
	for s := int64(31); s <= 80; s++ {
		f.AddMessages(bob, msg(bob, s, "bob", fmt.Sprintf("message %d", s), ms(time.Duration(s-200)*time.Minute)))
	}
	h.event(client.MessagesChanged{Conv: bob})
	h.lacks("loading older")
	h.contains("message 81")
	if o := h.m.chat.c.oldestSeq(); o != 31 {
		t.Fatalf("oldest loaded %d after the server page, want 31", o)
	}
	h.press("pgup")
	h.contains("message 7") // 7x from the server page

	// End goes back to the newest message.
	h.press("tab", "G")
	h.contains("message 200")
	h.checkGeometry()
}

func TestScrollKeysAndWheel(t *testing.T) {
	h := newHarness(t, historyFixture(), 80, 24)
	h.press("enter")
	c := h.m.chat.c
	bottom := c.offset
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelUp, X: 40, Y: 10})
	if c = h.m.chat.c; c.offset != bottom-3 || c.follow {
		t.Fatalf("wheel up: offset %d (bottom %d), follow %v", c.offset, bottom, c.follow)
	}
	h.send(tea.MouseWheelMsg{Button: tea.MouseWheelDown, X: 40, Y: 10})
	if c = h.m.chat.c; c.offset != bottom || !c.follow {
		t.Fatalf("wheel down: offset %d, want %d and following", c.offset, bottom)
	}
	// Arrows scroll while the input is empty.
	h.press("up", "up")
	if c = h.m.chat.c; c.offset != bottom-2 {
		t.Fatalf("up twice: offset %d, want %d", c.offset, bottom-2)
	}
	h.press("down", "down")
	// In the history, k/j move the selection, which the view follows.
	h.press("esc")          // 80 columns: esc closes the chat
	h.press("enter", "tab") // reopen, focus the history
	h.contains("↑↓ select") // the hint of the history
	sel := h.m.chat.c.sel
	h.press("k", "k", "k")
	if got := h.m.chat.c.sel; got != sel-3 {
		t.Fatalf("k×3 moved the selection from %d to %d", sel, got)
	}
	h.press("j")
	if got := h.m.chat.c.sel; got != sel-2 {
		t.Fatalf("j moved the selection to %d, want %d", got, sel-2)
	}
	for i := 0; i < 30; i++ {
		h.press("k")
	}
	if !h.m.chat.c.visible(h.m.chat.c.msgLine[h.m.chat.c.sel]) {
		t.Fatal("the selected message scrolled off screen")
	}
	h.press("ctrl+d", "u", "b", "f", "space", "d")
	h.press("end")
	if !h.m.chat.c.follow {
		t.Fatal("end should follow the newest message")
	}
}

func TestTypingIndicatorExpires(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 80, 24)
	openBob(h)
	h.event(client.TypingEvent{Conv: bob, User: "bob"})
	h.contains("typing…")
	// A renewal keeps it past the first timer.
	first := h.timers
	h.timers = nil
	h.event(client.TypingEvent{Conv: bob, User: "bob"})
	for _, tm := range first {
		h.send(tm.fn(h.clock.now()))
	}
	h.contains("typing…")
	if h.timers[0].d != 5*time.Second {
		t.Fatalf("typing shows for %v, want 5s", h.timers[0].d)
	}
	h.fireTimers()
	h.lacks("typing…")
	h.contains("direct chat")

	// Our own typing echo is ignored; another chat's typing is not shown here.
	h.event(client.TypingEvent{Conv: bob, User: "alice"})
	h.event(client.TypingEvent{Conv: "d:alice:carol", User: "carol"})
	h.lacks("typing…")

	// A message from the typist ends the indicator at once.
	h.event(client.TypingEvent{Conv: bob, User: "bob"})
	f.AddMessages(bob, msg(bob, 13, "bob", "ok here I am", ms(0)))
	h.event(client.MessagesChanged{Conv: bob})
	h.lacks("typing…")
	h.contains("ok here I am")
}

func TestGroupChatShowsSendersAndTyping(t *testing.T) {
	f := newFixture()
	team := "g:team"
	f.AddMessages(team,
		client.Message{Message: protocol.Message{Conv: team, Seq: 1, MsgID: "s1", From: "alice", Kind: protocol.KindSystem,
			Body: "alice created the group “team”", ClientTS: ms(-48 * time.Hour)}},
		msg(team, 2, "bob", "hi all", ms(-27*time.Hour)),
		msg(team, 3, "bob", "who is in?", ms(-27*time.Hour+time.Minute)),
		msg(team, 4, "carol", "me", ms(-27*time.Hour+2*time.Minute)),
		msg(team, 5, "alice", "me too", ms(-27*time.Hour+3*time.Minute)),
	)
	h := newHarness(t, f, 80, 24)
	h.press("enter") // team
	h.contains("3 members: alice, bob, carol", "start of the conversation")
	// The system message is centred, without a bubble or a time.
	l := h.lineWith("created the group")
	if lead := len(l) - len(strings.TrimLeft(l, " ")); lead < 10 || strings.Contains(l, ":") {
		t.Errorf("system message not centred: %q", l)
	}
	if !strings.Contains(h.rawLineWith("created the group"), "\x1b[3;") { // italic
		t.Errorf("system message not styled apart: %q", h.rawLineWith("created the group"))
	}
	// The sender's name heads each run of their messages, not our own.
	scr := h.screen()
	if strings.Count(scr, "bob ") != 1 || !strings.Contains(scr, "carol") {
		t.Errorf("sender names wrong:\n%s", scr)
	}
	h.contains("Yesterday", "Thursday, 12 March")
	h.event(client.TypingEvent{Conv: team, User: "carol"})
	h.event(client.TypingEvent{Conv: team, User: "bob"})
	h.contains("bob and carol are typing…")
}

func TestUnreadDivider(t *testing.T) {
	h := newHarness(t, newFixture(), 80, 24)
	openBob(h)
	scr := h.screen()
	d := strings.Index(scr, "2 unread messages")
	if d < 0 || d > strings.Index(scr, "the party is at 8") || d < strings.Index(scr, "cake") {
		t.Fatalf("divider not right above the first unread message:\n%s", scr)
	}
	// It stays put when new messages arrive while the chat is open.
	h.f.AddMessages(bob, msg(bob, 13, "bob", "hello?", ms(0)))
	h.event(client.MessagesChanged{Conv: bob})
	h.contains("2 unread messages", "hello?")
}

func TestOpenChatScrollsToFirstUnread(t *testing.T) {
	f := historyFixture()
	f.SetSessions("", []protocol.Session{{Conv: bob, Kind: "direct", Title: "bob", ReadSeq: 120, WriteSeq: 200,
		UnreadCount: 80, WriteTS: ms(0)}})
	h := newHarness(t, f, 80, 24)
	h.press("enter")
	h.contains("80 unread messages", "message 121")
	h.lacks("message 200")
}

func TestInputNewlineAndSendOffline(t *testing.T) {
	f := newFixture()
	f.SetConn(client.Conn{State: client.Offline, RetryAt: testNow.Add(9 * time.Second)})
	h := newHarness(t, f, 80, 24)
	openBob(h)
	h.typeText("first line")
	h.press("alt+enter")
	h.typeText("second ")
	h.press("ctrl+j")
	h.typeText("third 🎈")
	if v := h.m.chat.input.Value(); v != "first line\nsecond \nthird 🎈" {
		t.Fatalf("input = %q", v)
	}
	h.contains("first line", "second", "third 🎈")
	if h.m.chat.input.Height() != 3 {
		t.Fatalf("input height %d, want 3", h.m.chat.input.Height())
	}
	h.checkGeometry()
	h.press("enter")
	sends := f.CallsOf("Send")
	if len(sends) != 1 || sends[0].Body != "first line\nsecond \nthird 🎈" || sends[0].Conv != bob {
		t.Fatalf("Send calls = %v", sends)
	}
	if h.m.chat.input.Value() != "" {
		t.Fatal("input not cleared after send")
	}
	// Offline: the message shows with the pending clock.
	l := h.lineWith("third 🎈")
	if !strings.HasSuffix(strings.TrimRight(l, " "), glyphPending) {
		t.Fatalf("offline message should be pending: %q", l)
	}
	h.contains("offline")
	// Blank input sends nothing; a "?" is text while typing.
	h.press("enter")
	h.typeText("?")
	h.lacks("Keys  —")
	if h.m.chat.input.Value() != "?" {
		t.Fatalf("input = %q, want ?", h.m.chat.input.Value())
	}
	if n := len(f.CallsOf("Send")); n != 1 {
		t.Fatalf("%d sends", n)
	}
}

func TestTypingNoticeThrottled(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 80, 24)
	openBob(h)
	h.typeText("hello")
	if n := len(f.CallsOf("Typing")); n != 1 {
		t.Fatalf("Typing sent %d times for one burst", n)
	}
	h.clock.advance(4 * time.Second)
	h.typeText("!")
	if n := len(f.CallsOf("Typing")); n != 2 {
		t.Fatalf("Typing sent %d times, want 2 after the interval", n)
	}
}

func TestMessageBodiesAreSanitized(t *testing.T) {
	f := newFixture()
	f.AddMessages(bob, msg(bob, 13, "bob", "evil\x1b[2J\x1b]52;c;ZXZpbA==\x07 text", ms(0)))
	h := newHarness(t, f, 80, 24)
	openBob(h)
	raw := h.raw()
	if strings.Contains(raw, "\x1b[2J") || strings.Contains(raw, "\x1b]52") {
		t.Fatal("a peer's escape sequence reached the terminal")
	}
	h.contains("evil text")
}

func TestLongMessageWraps(t *testing.T) {
	f := newFixture()
	long := strings.Repeat("lorem ipsum 漢字 ", 12)
	f.AddMessages(bob, msg(bob, 13, "bob", long, ms(0)))
	h := newHarness(t, f, 60, 30)
	openBob(h)
	h.checkGeometry()
	h.contains("lorem ipsum 漢字 lorem")
}

func TestServerPageThatNeverComesIsAskedAgain(t *testing.T) {
	f := historyFixture()
	h := newHarness(t, f, 80, 24)
	h.press("enter", "tab")
	for i := 0; i < 10 && len(f.CallsOf("LoadOlder")) == 0; i++ {
		h.press("g")
	}
	if n := len(f.CallsOf("LoadOlder")); n != 1 {
		t.Fatalf("LoadOlder called %d times", n)
	}
	h.contains("loading older messages…")
	h.fireTimers() // the server never answered
	h.lacks("loading older")
	h.press("g")
	if c := f.CallsOf("LoadOlder"); len(c) != 2 || c[1].Seq != 81 {
		t.Fatalf("LoadOlder calls %v, want a second below 81", c)
	}
}

func TestFailedSendGivesTheTextBack(t *testing.T) {
	f := newFixture()
	f.SendErr = errors.New("too_large: body over 4096 bytes")
	h := newHarness(t, f, 80, 24)
	openBob(h)
	h.typeText("will this go?")
	h.press("enter")
	h.contains("send: too_large")
	if v := h.m.chat.input.Value(); v != "will this go?" {
		t.Fatalf("input = %q, want the text back", v)
	}
}

// TestNarrowHeaderHasOneBackArrow checks that in the narrow layout the
// back arrow heads the title only; the line under it (what the chat is,
// who is typing) lines up with the title, without an arrow.
func TestNarrowHeaderHasOneBackArrow(t *testing.T) {
	h := newHarness(t, newFixture(), 80, 24)
	openBob(h)
	lines := strings.Split(h.screen(), "\n")
	if !strings.HasPrefix(lines[0], " ← bob") {
		t.Fatalf("title line %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "   direct chat") {
		t.Fatalf("subtitle line %q, want it under the title without an arrow", lines[1])
	}
	h.event(client.TypingEvent{Conv: bob, User: "bob"})
	if l := strings.Split(h.screen(), "\n")[1]; !strings.HasPrefix(l, "   typing…") {
		t.Fatalf("typing line %q, want it under the title without an arrow", l)
	}
}
