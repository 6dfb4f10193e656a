package tui

import (
	"errors"
	"reflect"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui/tuitest"
)

func TestHelpScreenListsEveryBinding(t *testing.T) {
	h := newHarness(t, newFixture(), 160, 60)
	h.press("?")
	h.contains("Keys", "Chats", "Chat actions", "Writing", "Reading history", "Everywhere", "Dialogs")
	for _, s := range h.m.com.keys.helpSections() {
		for _, b := range s.keys {
			h.contains(b.Help().Key, b.Help().Desc)
		}
	}
	h.checkGeometry()
	h.press("esc")
	h.lacks("Reading history")
	// f1 opens it even while typing; ? is text there.
	openBob(h)
	h.press("f1")
	h.contains("Reading history")
	h.press("q")
	h.lacks("Reading history")
	h.contains("are you coming tonight?")
}

func TestHelpScreenScrollsWhenShort(t *testing.T) {
	h := newHarness(t, newFixture(), 50, 12)
	h.press("?")
	h.checkGeometry()
	h.lacks("Dialogs")
	for i := 0; i < 60; i++ {
		h.press("j")
	}
	h.contains("Dialogs")
}

func TestStatusBarOfflineCountsDown(t *testing.T) {
	f := newFixture()
	f.SetConn(client.Conn{State: client.Offline, RetryAt: testNow.Add(5 * time.Second), Err: errors.New("connection refused")})
	h := newHarness(t, f, 100, 20)
	h.contains("○ offline — retrying in 5s (connection refused)", "alice@laptop · localhost", "ctrl+l now", "? help")
	if len(h.timers) == 0 {
		t.Fatal("no countdown timer")
	}
	h.clock.advance(2 * time.Second)
	h.fireTimers()
	h.contains("retrying in 3s")
	h.clock.advance(3 * time.Second)
	h.fireTimers()
	h.contains("offline — retrying…")
	if len(h.timers) != 0 {
		t.Fatal("the countdown should stop at zero")
	}

	h.event(client.ConnChanged{Conn: client.Conn{State: client.Connecting}})
	h.contains("◌ connecting…")
	h.event(client.ConnChanged{Conn: client.Conn{State: client.Online}})
	h.contains("● online")
	h.lacks("offline")
	h.fireTimers() // stale countdown ticks are ignored
	h.contains("● online")

	// A new outage starts a new countdown.
	h.event(client.ConnChanged{Conn: client.Conn{State: client.Offline, RetryAt: h.clock.now().Add(30 * time.Second)}})
	h.contains("retrying in 30s")
	h.checkGeometry()
}

func TestStatusBarShowsErrors(t *testing.T) {
	h := newHarness(t, newFixture(), 100, 20)
	h.event(client.ErrorEvent{Op: "send", Err: errors.New("forbidden: not a member")})
	h.contains("send: forbidden: not a member")
	h.fireTimers()
	h.lacks("forbidden")
	h.contains("? help")
}

func TestReadReceiptsOnlyWithFocusAndOpenChat(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 80, 24)
	reads := func() []tuitest.Call { return f.CallsOf("MarkRead") }

	// The list alone marks nothing.
	h.send(tea.FocusMsg{})
	if len(reads()) != 0 {
		t.Fatalf("read sent from the list: %v", reads())
	}

	// Without focus, opening the chat marks nothing...
	h.send(tea.BlurMsg{})
	openBob(h)
	if len(reads()) != 0 {
		t.Fatalf("read sent without focus: %v", reads())
	}
	// ...until the terminal gets focus: then the newest message on screen.
	h.send(tea.FocusMsg{})
	if r := reads(); len(r) != 1 || r[0].Conv != bob || r[0].Seq != 12 {
		t.Fatalf("reads = %v, want bob up to 12", r)
	}

	// A new message on screen is read at once, once.
	f.AddMessages(bob, msg(bob, 13, "bob", "you there?", ms(0)))
	h.event(client.MessagesChanged{Conv: bob})
	h.send(tea.FocusMsg{})
	if r := reads(); len(r) != 2 || r[1].Seq != 13 {
		t.Fatalf("reads = %v, want a second up to 13", r)
	}

	// Scrolled up, a new message below the screen is not read.
	for i := 0; i < 20; i++ {
		h.press("pgup")
	}
	f.AddMessages(bob, msg(bob, 14, "bob", "hello??", ms(0)))
	h.event(client.MessagesChanged{Conv: bob})
	if r := reads(); len(r) != 2 {
		t.Fatalf("read a message off screen: %v", r)
	}
	// Scrolling down to it reads it.
	h.press("end")
	h.press("tab", "G")
	if r := reads(); len(r) != 3 || r[2].Seq != 14 {
		t.Fatalf("reads = %v, want a third up to 14", r)
	}

	// Blurred, nothing; closed chat, nothing.
	h.send(tea.BlurMsg{})
	f.AddMessages(bob, msg(bob, 15, "bob", "ping", ms(0)))
	h.event(client.MessagesChanged{Conv: bob})
	h.contains("ping")
	if r := reads(); len(r) != 3 {
		t.Fatalf("read while blurred: %v", r)
	}
	h.press("esc") // back to the list: the chat closes on 80 columns
	h.send(tea.FocusMsg{})
	f.AddMessages(bob, msg(bob, 16, "bob", "pong", ms(0)))
	h.event(client.MessagesChanged{Conv: bob})
	if r := reads(); len(r) != 3 {
		t.Fatalf("read with the chat closed: %v", r)
	}
	// The help screen covers the chat: no reads behind it.
	h.press("enter") // the cursor is still on bob
	h.contains("pong")
	n := len(reads())
	h.press("f1")
	f.AddMessages(bob, msg(bob, 17, "bob", "behind help", ms(0)))
	h.event(client.MessagesChanged{Conv: bob})
	if r := reads(); len(r) != n {
		t.Fatalf("read behind the help screen: %v", r)
	}
}

func TestUnfocusedOptionWaitsForFocus(t *testing.T) {
	f := newFixture()
	m := New(f, Options{Now: func() time.Time { return testNow }, Unfocused: true})
	if m.termFocused {
		t.Fatal("Unfocused should start without focus")
	}
}

func TestSplitPaneKeepsChatOpenOnEsc(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 120, 30)
	openBob(h)
	h.press("esc")
	if h.m.focusArea() != focusList || h.m.chat.c == nil {
		t.Fatal("esc in split view should focus the list and keep the chat")
	}
	// The chat is still on screen, so new messages are read.
	f.AddMessages(bob, msg(bob, 13, "bob", "still here", ms(0)))
	h.event(client.MessagesChanged{Conv: bob})
	if r := f.CallsOf("MarkRead"); r[len(r)-1].Seq != 13 {
		t.Fatalf("reads = %v", r)
	}
	// tab cycles list → input → history → list.
	h.press("tab")
	if h.m.focusArea() != focusInput {
		t.Fatalf("focus %v, want input", h.m.focusArea())
	}
	h.press("tab")
	if h.m.focusArea() != focusHistory {
		t.Fatalf("focus %v, want history", h.m.focusArea())
	}
	h.press("tab")
	if h.m.focusArea() != focusList {
		t.Fatalf("focus %v, want list", h.m.focusArea())
	}
	// A click on a row opens that chat.
	h.send(tea.MouseClickMsg{Button: tea.MouseLeft, X: 5, Y: 1 + 2*3}) // row 3: carol
	if h.m.chat.c == nil || h.m.chat.c.conv != "d:alice:carol" {
		t.Fatalf("click opened %v", h.m.chat.c)
	}
}

func TestResizeReflows(t *testing.T) {
	h := newHarness(t, tickFixture(), 120, 40)
	openBob(h)
	for _, sz := range [][2]int{{120, 40}, {70, 20}, {40, 12}, {101, 30}, {99, 30}, {200, 50}} {
		h.send(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		h.checkGeometry()
		h.contains("pending one")
	}
}

func TestSessionActionsCallBackend(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 100, 30)
	last := func() tuitest.Call {
		t.Helper()
		c := f.Calls()
		if len(c) == 0 {
			t.Fatal("no calls")
		}
		return c[len(c)-1]
	}
	want := func(c tuitest.Call) {
		t.Helper()
		if got := last(); !reflect.DeepEqual(got, c) {
			t.Fatalf("last call %v, want %v", got, c)
		}
	}
	// team, the first row: pinned, unread
	h.press("p")
	want(tuitest.Call{Method: "SessionOp", Conv: "g:team", Op: "unpin"})
	h.contains("unpinned team")
	h.press("j", "j") // bob
	h.press("p")
	want(tuitest.Call{Method: "SessionOp", Conv: bob, Op: "pin"})

	// Mute asks how long.
	h.press("m")
	h.contains("Mute bob for", "8 hours", "1 week", "Always")
	h.press("down", "enter")
	want(tuitest.Call{Method: "SessionOp", Conv: bob, Op: "mute", Until: testNow.Add(7 * 24 * time.Hour).UnixMilli()})
	h.press("m", "1")
	want(tuitest.Call{Method: "SessionOp", Conv: bob, Op: "mute", Until: testNow.Add(8 * time.Hour).UnixMilli()})
	h.press("m", "3")
	want(tuitest.Call{Method: "SessionOp", Conv: bob, Op: "mute"})
	n := len(f.Calls())
	h.press("m", "esc")
	if len(f.Calls()) != n {
		t.Fatal("cancelled mute called the backend")
	}
	h.press("j") // carol: muted → unmute
	h.press("m")
	want(tuitest.Call{Method: "SessionOp", Conv: "d:alice:carol", Op: "unmute"})

	// Mark unread on a read chat; mark read on an unread one.
	h.press("j", "j") // dave (marked unread) — mark read
	h.press("u")
	want(tuitest.Call{Method: "MarkRead", Conv: "d:alice:dave", Seq: 4})
	f.SetSessions("", []protocol.Session{{Conv: "d:alice:dave", Title: "dave", ReadSeq: 4, WriteSeq: 4}})
	h.event(client.SessionsChanged{})
	h.press("u")
	want(tuitest.Call{Method: "SessionOp", Conv: "d:alice:dave", Op: "mark_unread"})

	// Category: a prompt.
	h.press("c")
	h.contains("Move dave to a category")
	h.typeText("friends")
	h.press("enter")
	want(tuitest.Call{Method: "SessionOp", Conv: "d:alice:dave", Op: "set_category", Category: "friends"})

	// Delete asks first.
	n = len(f.Calls())
	h.press("d")
	h.contains("Delete dave?")
	h.press("n")
	if len(f.Calls()) != n {
		t.Fatal("declined delete called the backend")
	}
	// y is no answer (a word holds it): the button is chosen, then enter.
	h.press("d", "y", "enter")
	if len(f.Calls()) != n {
		t.Fatal("d y enter deleted")
	}
	h.press("d", "right", "enter")
	want(tuitest.Call{Method: "SessionOp", Conv: "d:alice:dave", Op: "delete"})
	h.checkGeometry()
}

func TestNewChatAndGroup(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 100, 30)
	h.press("n")
	h.contains("New chat", "User id")
	h.typeText("Not Valid!")
	h.press("enter")
	h.contains("is not a valid user id")
	for range "Not Valid!" {
		h.press("backspace")
	}
	h.typeText("alice")
	h.press("enter")
	h.contains("that is you")
	for range "alice" {
		h.press("backspace")
	}
	h.typeText("zed")
	h.press("enter")
	if h.m.chat.c == nil || h.m.chat.c.conv != "d:alice:zed" {
		t.Fatalf("new chat opened %+v", h.m.chat.c)
	}
	h.contains("zed", "No messages yet")
	h.typeText("hi zed")
	h.press("enter")
	if s := f.CallsOf("Send"); len(s) != 1 || s[0].Conv != "d:alice:zed" || s[0].Body != "hi zed" {
		t.Fatalf("sends = %v", s)
	}

	// An existing chat opens with its session (title, unread).
	h.press("esc", "n")
	h.typeText("bob")
	h.press("enter")
	h.contains("are you coming tonight?")

	h.press("esc", "N")
	h.contains("New group", "Title", "Members")
	h.press("enter") // to the members field
	h.press("enter")
	h.contains("the group needs a title")
	h.press("shift+tab")
	h.typeText("party")
	h.press("tab")
	h.typeText("bob, carol alice,@dave,bob")
	h.press("enter")
	c := f.CallsOf("CreateGroup")
	if len(c) != 1 || c[0].Title != "party" || !reflect.DeepEqual(c[0].Members, []string{"bob", "carol", "dave"}) {
		t.Fatalf("CreateGroup calls = %v", c)
	}
	h.contains("creating group party")

	// The server's answer opens the new group's chat.
	h.event(client.GroupChanged{Conv: "g:party1", Key: c[0].Key, Title: "party", Members: []string{"alice", "bob", "carol", "dave"}})
	if h.m.chat.c == nil || h.m.chat.c.conv != "g:party1" {
		t.Fatalf("the created group did not open: %+v", h.m.chat.c)
	}
	h.contains("party")
}

func TestMessageInfo(t *testing.T) {
	f := newFixture()
	team := "g:team"
	f.AddMessages(team, msg(team, 9, "alice", "who brings snacks?", ms(-time.Hour)), msg(team, 10, "carol", "me", ms(-30*time.Minute)))
	f.SetReceipts(team, []protocol.MemberReceipt{
		{User: "alice", DeliveredSeq: 10, ReadSeq: 10},
		{User: "bob", DeliveredSeq: 9, ReadSeq: 9},
		{User: "carol", DeliveredSeq: 10, ReadSeq: 10},
		{User: "dave", DeliveredSeq: 9, ReadSeq: 8},
		{User: "erin", DeliveredSeq: 5, ReadSeq: 5},
		{User: "frank", DeliveredSeq: 9, ReadSeq: 9},
	})
	h := newHarness(t, f, 100, 40)
	h.press("enter") // team
	// ctrl+o while typing: the last own message.
	h.press("ctrl+o")
	if c := f.CallsOf("Receipts"); len(c) != 1 || c[0].Conv != team {
		t.Fatalf("receipts calls %v", c)
	}
	h.contains("Message info", "who brings snacks?", "Read by 3 of 5", "Read (3)", "bob", "frank",
		"Delivered, not read (1)", "dave", "Not delivered yet (1)", "erin")
	h.press("esc")
	h.lacks("Message info")
	// In the history, i shows the selected message: carol's, read by
	// none of the four others (she is its sender, not a reader).
	h.press("tab", "i")
	h.contains("Message info", "“me”", "Read by 0 of 4", "Not delivered yet (4)")
	h.press("esc")
}

func TestQuit(t *testing.T) {
	h := newHarness(t, newFixture(), 80, 24)
	h.press("q")
	if h.quit {
		t.Fatal("q alone quit from the list: it asks")
	}
	h.contains("Quit imtui")
	h.press("enter") // Cancel is chosen
	if h.quit {
		t.Fatal("q enter quit: enter chose Cancel")
	}
	h.lacks("Quit imtui")
	h.press("q", "q")
	if !h.quit {
		t.Fatal("q q should quit from the list")
	}
	h = newHarness(t, newFixture(), 80, 24)
	h.press("q", "right", "enter")
	if !h.quit {
		t.Fatal("q then the Quit button should quit")
	}
	h = newHarness(t, newFixture(), 80, 24)
	openBob(h)
	h.typeText("q")
	if h.quit {
		t.Fatal("q is text while typing")
	}
	h.press("ctrl+c")
	if !h.quit {
		t.Fatal("ctrl+c should quit")
	}
}

func TestEventsCommandRearms(t *testing.T) {
	f := newFixture()
	m := New(f, Options{Now: func() time.Time { return testNow }})
	f.Emit(client.SessionsChanged{})
	msg := waitEvent(f.Events())()
	if _, ok := msg.(eventMsg); !ok {
		t.Fatalf("waitEvent returned %T", msg)
	}
	_, cmd := m.Update(msg)
	if cmd == nil {
		t.Fatal("an event must re-issue the wait")
	}
	// The batch holds a wait that reads the next event.
	f.Emit(client.TypingEvent{Conv: bob, User: "bob"})
	found := false
	for _, c := range flatten(cmd) {
		if em, ok := c().(eventMsg); ok {
			if ev, ok := em.ev.(client.TypingEvent); ok && ev.User == "bob" {
				found = true
				break
			}
		}
	}
	if !found {
		t.Fatal("no command waited for the next event")
	}
}

// flatten runs batch commands down to their leaves without running the
// leaves.
func flatten(cmd tea.Cmd) []tea.Cmd {
	if cmd == nil {
		return nil
	}
	// Run only batches: a leaf that blocks would hang here, and the only
	// blocking leaf has its event queued.
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Cmd
		for _, c := range b {
			out = append(out, flatten(c)...)
		}
		return out
	}
	return []tea.Cmd{func() tea.Msg { return msg }}
}

func TestEventsClosedStops(t *testing.T) {
	h := newHarness(t, newFixture(), 80, 24)
	h.send(eventsClosedMsg{})
	h.contains("stopped")
}

func TestOpeningMarkedUnreadChatReadsIt(t *testing.T) {
	f := newFixture()
	dave := "d:alice:dave"
	f.AddMessages(dave, msg(dave, 3, "dave", "see you?", ms(-21*time.Hour)), msg(dave, 4, "alice", "see you", ms(-20*time.Hour)))
	h := newHarness(t, f, 80, 24)
	h.press("j", "j", "j", "j", "j", "enter") // dave
	h.contains("see you?")
	if r := f.CallsOf("MarkRead"); len(r) != 1 || r[0].Conv != dave || r[0].Seq != 4 {
		t.Fatalf("reads = %v, want dave up to 4 (clears the mark)", r)
	}
}

func TestReceiptLines(t *testing.T) {
	got := receiptLines(5, "alice", "alice", []protocol.MemberReceipt{
		{User: "alice", ReadSeq: 5, DeliveredSeq: 5}, {User: "bob", ReadSeq: 5, DeliveredSeq: 5}, {User: "carol", DeliveredSeq: 5},
	}, nil)
	want := []string{"Read by 1 of 2", "", glyphRead + " Read (1)", "  bob", "", glyphDelivered + " Delivered, not read (1)", "  carol"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("receiptLines = %q, want %q", got, want)
	}
	if got := receiptLines(5, "alice", "alice", nil, nil); len(got) != 1 || got[0] != "No receipts from the other members yet." {
		t.Fatalf("no receipts: %q", got)
	}
}

// TestMessageInfoLeavesTheSenderOut checks that the info of someone
// else's message counts neither its sender (whose boundaries always cover
// it) nor the user as readers.
func TestMessageInfoLeavesTheSenderOut(t *testing.T) {
	f := newFixture()
	f.SetReceipts(bob, []protocol.MemberReceipt{
		{User: "alice", DeliveredSeq: 12, ReadSeq: 12}, {User: "bob", DeliveredSeq: 12, ReadSeq: 12},
	})
	h := newHarness(t, f, 100, 40)
	openBob(h)
	h.press("tab", "i") // the newest message: bob's
	h.contains("Message info", "from bob")
	h.lacks("Read by 1 of 1", "Read (1)")
	h.contains("No other member to receive it.")

	got := receiptLines(10, "alice", "bob", []protocol.MemberReceipt{
		{User: "alice", ReadSeq: 10, DeliveredSeq: 10}, {User: "bob", ReadSeq: 10, DeliveredSeq: 10},
		{User: "carol", ReadSeq: 9, DeliveredSeq: 10}, {User: "dave", ReadSeq: 10, DeliveredSeq: 10},
	}, nil)
	want := []string{"Read by 1 of 2", "", glyphRead + " Read (1)", "  dave", "", glyphDelivered + " Delivered, not read (1)", "  carol"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("receiptLines of bob's message = %q, want %q", got, want)
	}
}

// TestMessageInfoShowsWhenDeliveredAndRead checks that the info of the
// user's own message says when it was delivered to and read by everyone,
// as this device saw the ticks rise; someone else's message has no such
// lines.
func TestMessageInfoShowsWhenDeliveredAndRead(t *testing.T) {
	f := newFixture()
	f.AddMessages(team, msg(team, 9, "alice", "who brings snacks?", ms(-time.Hour)), msg(team, 10, "carol", "me", ms(-30*time.Minute)))
	f.SetTickTimes(team, 9, testNow.Add(-50*time.Minute), time.Time{})
	h := newHarness(t, f, 100, 40)
	h.press("enter") // team
	h.press("ctrl+o")
	h.contains("Delivered to all: Today 14:40", "Read by all: not yet", "when this device saw the ticks rise")
	h.press("esc", "tab", "i") // carol's message
	h.contains("Message info", "“me”")
	h.lacks("Delivered to all")
}
