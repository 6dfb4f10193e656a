package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui/tuitest"
)

// subtitle is the open chat's header line under its title, trimmed.
func (hs *harness) subtitle() string {
	hs.t.Helper()
	lines := strings.Split(hs.screen(), "\n")
	if len(lines) < 2 {
		hs.t.Fatalf("no header:\n%s", hs.screen())
	}
	line := lines[1]
	if hs.m.split() {
		_, line, _ = strings.Cut(line, "│")
	}
	return strings.TrimSpace(line)
}

// presenceOf tells the UI that user's presence is now p, as the client
// does.
func (hs *harness) presenceOf(p protocol.Presence) {
	hs.t.Helper()
	hs.f.SetPresence(p, true)
	hs.event(client.PresenceChanged{Users: []string{p.User}})
}

// A direct chat's header says whether the peer is online, when it was
// last seen (today, yesterday, a date), who is typing, or nothing known.
func TestDirectHeaderShowsPresence(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 80, 24)
	openBob(h)
	if got := h.subtitle(); got != "direct chat" {
		t.Fatalf("nothing known: subtitle %q", got)
	}
	// The open chat's peer is watched first, then the list's peers.
	if got := f.Watched(); len(got) == 0 || got[0] != "bob" || !slices.Contains(got, "dave") || slices.Contains(got, "alice") {
		t.Fatalf("watched %v, want bob first, the list's peers, not alice", got)
	}
	at := func(day, hour, minute int, month time.Month, year int) int64 {
		return time.Date(year, month, day, hour, minute, 0, 0, time.UTC).UnixMilli()
	}
	for _, tc := range []struct {
		p    protocol.Presence
		want string
	}{
		{protocol.Presence{User: "bob", Online: true}, "online"},
		{protocol.Presence{User: "bob", LastSeen: at(14, 14, 2, time.March, 2026)}, "last seen today at 14:02"},
		{protocol.Presence{User: "bob", LastSeen: at(13, 9, 10, time.March, 2026)}, "last seen yesterday at 09:10"},
		{protocol.Presence{User: "bob", LastSeen: at(3, 9, 10, time.March, 2026)}, "last seen 3 Mar at 09:10"},
		{protocol.Presence{User: "bob", LastSeen: at(24, 18, 0, time.December, 2025)}, "last seen 24 Dec 2025"},
		{protocol.Presence{User: "bob"}, "direct chat"}, // hidden, or never seen
	} {
		h.presenceOf(tc.p)
		if got := h.subtitle(); got != tc.want {
			t.Fatalf("presence %+v: subtitle %q, want %q", tc.p, got, tc.want)
		}
	}
	h.presenceOf(protocol.Presence{User: "bob", Online: true})
	h.event(client.TypingEvent{Conv: bob, User: "bob"})
	if got := h.subtitle(); got != "typing…" {
		t.Fatalf("typing: subtitle %q", got)
	}
	h.fireTimers()
	if got := h.subtitle(); got != "online" {
		t.Fatalf("after typing: subtitle %q", got)
	}
	// Without a connection nothing is known live.
	f.SetPresence(protocol.Presence{User: "bob", Online: true}, false)
	h.event(client.PresenceChanged{})
	if got := h.subtitle(); got != "direct chat" {
		t.Fatalf("offline: subtitle %q", got)
	}
	h.checkGeometry()
}

// A group's header says who of its members is online.
func TestGroupHeaderShowsWhoIsOnline(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 80, 24)
	openTeam(h)
	if got := f.Watched(); len(got) < 2 || got[0] != "bob" || got[1] != "carol" {
		t.Fatalf("watched %v, want the group's members first", got)
	}
	h.presenceOf(protocol.Presence{User: "carol", Online: true})
	if got := h.subtitle(); got != "carol online · 3 members: alice, bob, carol" {
		t.Fatalf("subtitle %q", got)
	}
	h.presenceOf(protocol.Presence{User: "bob", Online: true, Name: "Bob"})
	if got := h.subtitle(); got != "Bob, carol online · 3 members: alice, Bob, carol" {
		t.Fatalf("subtitle %q", got)
	}
	// The user's own presence does not count.
	f.SetSessions("", []protocol.Session{{Conv: team, Kind: "group", Title: "team", Members: []string{"alice", "bob", "carol", "dave"}}})
	h.event(client.SessionsChanged{})
	h.presenceOf(protocol.Presence{User: "dave", Online: true})
	if got := h.subtitle(); !strings.HasPrefix(got, "3 online · 4 members") {
		t.Fatalf("subtitle %q, want 3 online", got)
	}
}

// Names show wherever a user is: the list's titles and group previews,
// the chat header, senders in a group, message info; two users of one
// name, or a name that is another's id, show their ids beside it.
func TestNamesEverywhere(t *testing.T) {
	f := newFixture()
	f.AddMessages(team,
		msg(team, 8, "bob", "the deploy is green", ms(-27*time.Hour)),
		msg(team, 9, "carol", "ship it", ms(-26*time.Hour-time.Minute)),
		msg(team, 10, "carol", "standup moved to 10:30", ms(-26*time.Hour)))
	f.SetNames(map[string]string{"bob": "Bob Builder", "carol": "Carol"})
	h := newHarness(t, f, 100, 30)
	h.contains("👤 Bob Builder", "👤 Carol", "Carol: standup moved")
	h.lacks("👤 bob ", "👤 carol")

	openTeam2 := func() {
		h.press("esc", "g", "enter")
	}
	h.press("enter") // team
	h.contains("3 members: alice, Bob Builder, Carol", "Bob Builder", "Carol")
	// The sender's name is above bob's message in the group.
	if !strings.Contains(h.screen(), "Bob Builder") || strings.Contains(h.screen(), " bob\n") {
		t.Fatalf("group senders:\n%s", h.screen())
	}
	h.press("tab", "i") // the history, the newest message: carol's
	h.contains("from Carol")
	h.press("esc")

	// dave takes bob's name, erin calls herself bob: ids show.
	h.presenceOf(protocol.Presence{User: "dave", Name: "Bob Builder"})
	h.presenceOf(protocol.Presence{User: "erin", Name: "bob"})
	openTeam2()
	h.contains("Bob Builder (bob)", "3 members: alice, Bob Builder (bob), Carol")
	h.press("esc")
	h.contains("👤 Bob Builder (bob)", "👤 Bob Builder (dave)", "👤 Carol ")
	for _, l := range strings.Split(h.screen(), "\n") {
		if strings.Contains(l, "Bob Builder") && !strings.Contains(l, "Bob Builder (") {
			t.Fatalf("a colliding name without its id: %q", l)
		}
	}
	if got := h.m.com.people.label("erin"); got != "bob (erin)" {
		t.Fatalf("erin named bob is labelled %q", got)
	}
	// Searching the list finds a chat by its name.
	h.press("/")
	h.typeText("builder")
	h.contains("Bob Builder (bob)", "Bob Builder (dave)")
	h.lacks("👥 team")
	h.checkGeometry()
}

// The settings screen shows the settings; a toggle and enter send the
// key changed, and only it; esc sends nothing; a blocked user is
// unblocked after asking.
func TestSettingsScreen(t *testing.T) {
	f := newFixture()
	f.SetSettings(protocol.UserSettings{LastSeen: protocol.LastSeenEveryone, ReadReceipts: true, Name: "Alice", Blocked: []string{"mallory"}})
	h := newHarness(t, f, 100, 40)
	h.press("S")
	h.contains("Settings", "Name", "Alice", "Last seen", "‹ everyone ›", "Read receipts", "‹ on ›", "Blocked", "mallory")
	h.press("down", "down", "space")
	h.contains("‹ off ›", "ticks stay grey")
	h.press("enter")
	calls := f.CallsOf("ChangeSettings")
	if len(calls) != 1 || tuitest.ChangeString(calls[0].Change) != "read_receipts=false" {
		t.Fatalf("calls %v, want read receipts off alone", calls)
	}
	h.contains("saving settings…")
	if h.m.dialog != nil {
		t.Fatal("the settings screen stayed open after saving")
	}
	h.event(client.SettingsChanged{Settings: f.Settings(), Op: "settings"})
	h.contains("settings saved")

	// The name and last seen together; the screen opens on what was saved.
	h.press("S")
	h.contains("‹ off ›")
	h.press("backspace", "backspace", "backspace", "backspace", "backspace")
	h.typeText("Alice Liddell")
	h.press("down", "right", "enter")
	calls = f.CallsOf("ChangeSettings")
	if got := tuitest.ChangeString(calls[len(calls)-1].Change); got != `name="Alice Liddell" last_seen=nobody` {
		t.Fatalf("second change %s", got)
	}
	// Nothing changed, or esc: nothing sent.
	h.press("S", "enter")
	h.contains("settings unchanged")
	h.press("S", "down", "space", "esc")
	if n := len(f.CallsOf("ChangeSettings")); n != 2 {
		t.Fatalf("%d changes sent, want 2", n)
	}
	// A name with a control character is refused on the screen.
	h.press("S")
	h.send(keyPress("ctrl+a"))
	h.typeText("\x07")
	h.press("enter")
	if n := len(f.CallsOf("ChangeSettings")); n != 2 {
		t.Fatalf("a bad name was sent")
	}

	// Unblocking asks first, and the list follows the client.
	h.press("esc", "S", "up")
	h.contains("▸ mallory", "enter unblocks")
	h.press("enter")
	h.contains("Unblock mallory?")
	h.press("n")
	if c := f.CallsOf("Unblock"); len(c) != 0 {
		t.Fatalf("unblocked without a yes: %v", c)
	}
	h.press("enter", "y")
	if c := f.CallsOf("Unblock"); len(c) != 1 || c[0].User != "mallory" {
		t.Fatalf("unblock calls %v", c)
	}
	h.event(client.SettingsChanged{Settings: f.Settings(), Op: "unblock", User: "mallory"})
	h.contains("unblocked mallory", "nobody")
	h.checkGeometry()
}

// requestFixture is alice's list with a request from mallory on top.
func requestFixture() *tuitest.Fake {
	f := newFixture()
	list, _, _ := f.Sessions("")
	list = append(list, protocol.Session{Conv: "d:alice:mallory", Kind: "direct", Title: "mallory", Members: []string{"alice", "mallory"},
		Request: true, UnreadCount: 1, WriteSeq: 1, WriteTS: ms(-time.Minute), Priority: 2,
		LastMsg: last("d:alice:mallory", 1, "mallory", "cheap watches", ms(-time.Minute))})
	f.SetSessions("", list)
	f.AddMessages("d:alice:mallory", msg("d:alice:mallory", 1, "mallory", "cheap watches", ms(-time.Minute)))
	return f
}

// A request is marked in the list; opened, its bar offers reply, block
// and delete, and nothing typed goes to it by mistake.
func TestRequestMarkerAndActions(t *testing.T) {
	const dm = "d:alice:mallory"
	f := requestFixture()
	h := newHarness(t, f, 100, 30)
	if line := h.lineWith("cheap watches"); !strings.Contains(line, "request") {
		t.Fatalf("the request's row: %q", line)
	}
	if line := h.lineWith("are you coming"); strings.Contains(line, "request") {
		t.Fatalf("bob's row is marked a request: %q", line)
	}
	h.press("enter")
	bar := "mallory is not in your chats: [r]eply  [b]lock  [d]elete"
	h.contains(bar, "cheap watches")
	h.typeText("bbb") // into no input: b asks to block
	h.contains("Block mallory")
	h.press("n")
	if c := f.CallsOf("Send"); len(c) != 0 {
		t.Fatalf("sent %v", c)
	}
	h.press("b", "y")
	if c := f.CallsOf("Block"); len(c) != 1 || c[0].User != "mallory" {
		t.Fatalf("block calls %v", c)
	}
	h.event(client.SettingsChanged{Settings: f.Settings(), Op: "block", User: "mallory"})
	h.contains("blocked mallory", "mallory is blocked: [b] unblock  [d]elete", "blocked · ctrl+r unblocks")
	h.press("b", "y")
	if c := f.CallsOf("Unblock"); len(c) != 1 {
		t.Fatalf("unblock calls %v", c)
	}
	h.event(client.SettingsChanged{Settings: f.Settings(), Op: "unblock", User: "mallory"})
	h.contains(bar)

	// d deletes, after the button is chosen.
	h.press("d")
	h.contains("Delete chat", "Delete mallory?")
	h.press("right", "enter")
	if c := f.CallsOf("SessionOp"); len(c) != 1 || c[0].Conv != dm || c[0].Op != "delete" {
		t.Fatalf("session ops %v", c)
	}

	// r writes the reply.
	h.press("enter")
	h.contains(bar)
	h.press("r")
	h.typeText("no thanks")
	h.press("enter")
	if c := f.CallsOf("Send"); len(c) != 1 || c[0].Conv != dm || c[0].Body != "no thanks" {
		t.Fatalf("sends %v", c)
	}
	// The reply ends the request: the bar goes.
	list, _, _ := f.Sessions("")
	for i := range list {
		if list[i].Conv == dm {
			list[i].Request = false
		}
	}
	f.SetSessions("", list)
	h.event(client.SessionsChanged{})
	h.lacks(bar, "request")
	h.checkGeometry()
}

// A direct chat's menu blocks and unblocks its peer, asking first.
func TestBlockFromTheChatMenu(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 100, 30)
	openBob(h)
	h.press("ctrl+r")
	h.contains("Block bob…")
	h.press("1")
	h.contains("Block bob?")
	h.press("esc")
	if c := f.CallsOf("Block"); len(c) != 0 {
		t.Fatalf("blocked without a yes: %v", c)
	}
	h.press("ctrl+r", "1", "enter")
	if c := f.CallsOf("Block"); len(c) != 1 || c[0].User != "bob" {
		t.Fatalf("block calls %v", c)
	}
	h.event(client.SettingsChanged{Settings: f.Settings(), Op: "block", User: "bob"})
	if got := h.subtitle(); got != "blocked · ctrl+r unblocks" {
		t.Fatalf("subtitle %q", got)
	}
	h.press("ctrl+r")
	h.contains("Unblock bob…")
	h.press("1", "y")
	if c := f.CallsOf("Unblock"); len(c) != 1 || c[0].User != "bob" {
		t.Fatalf("unblock calls %v", c)
	}
}

// With the user's read receipts off, a direct chat's message info says
// that reads are not shown, where blue ticks would be; a group's does not.
func TestMessageInfoSaysReadReceiptsAreOff(t *testing.T) {
	f := newFixture()
	s := protocol.DefaultSettings()
	s.ReadReceipts = false
	f.SetSettings(s)
	h := newHarness(t, f, 100, 40)
	openBob(h)
	h.press("ctrl+o") // the info of the user's last message
	h.contains("Message info", readReceiptsOffText, "Read by all")
	h.press("esc", "esc", "g", "enter")
	f.AddMessages(team, msg(team, 10, "alice", "mine", ms(-time.Minute)))
	h.event(client.MessagesChanged{Conv: team})
	h.press("ctrl+o")
	h.contains("Message info")
	h.lacks(readReceiptsOffText)
}

// The help screen lists the new keys.
func TestHelpShowsThePeopleKeys(t *testing.T) {
	h := newHarness(t, newFixture(), 120, 60)
	h.press("?")
	h.contains("S", "settings: name, privacy, blocked users", "chat menu: group, block / unblock",
		"A message request (history)", "r/b/d", "a request: reply, block, delete (ask)")
}
