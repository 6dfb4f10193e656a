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
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui/tuitest"
)

const team = "g:team"

// openTeam opens the fixture's group "team" (the first row: pinned).
func openTeam(h *harness) {
	h.t.Helper()
	h.press("enter")
	h.contains("3 members: alice, bob, carol")
}

// lastGroupOp fails unless the newest GroupOp call is want.
func lastGroupOp(t *testing.T, f *tuitest.Fake, want tuitest.Call) {
	t.Helper()
	want.Method = "GroupOp"
	c := f.CallsOf("GroupOp")
	if len(c) == 0 {
		t.Fatalf("no GroupOp call, want %v", want)
	}
	if got := c[len(c)-1]; !reflect.DeepEqual(got, want) {
		t.Fatalf("last GroupOp %v, want %v", got, want)
	}
}

// noNewCalls fails if the fake got a GroupOp since n were counted.
func noNewGroupOp(t *testing.T, f *tuitest.Fake, n int, what string) {
	t.Helper()
	if c := f.CallsOf("GroupOp"); len(c) != n {
		t.Fatalf("%s called the backend: %v", what, c[n:])
	}
}

// typeOver empties the focused dialog field and types s.
func typeOver(h *harness, s string) {
	h.t.Helper()
	h.press("ctrl+u") // the text input's delete to the start
	h.typeText(s)
}

func TestGroupActionsCallBackend(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 100, 30)
	openTeam(h)
	h.contains("ctrl+r group") // the input's legend

	// ctrl+r opens the menu even while typing.
	h.press("ctrl+r")
	h.contains("Group team", "Rename…", "Add members…", "Remove a member…", "Leave the group…")
	h.press("1")
	h.contains("Rename team", "› team")
	typeOver(h, "")
	h.press("enter")
	h.contains("title is empty")
	h.typeText("core team")
	h.press("enter")
	lastGroupOp(t, f, tuitest.Call{Conv: team, Op: "rename", Title: "core team"})
	h.contains("renaming team to core team…")
	// The same title changes nothing.
	n := len(f.CallsOf("GroupOp"))
	h.press("ctrl+r", "enter", "enter")
	noNewGroupOp(t, f, n, "an unchanged title")
	if h.m.dialog != nil {
		t.Fatal("the rename dialog stayed open")
	}

	// In the history, the letters.
	h.press("tab")
	h.contains("ctrl+r group") // the history's legend
	h.press("+")
	h.contains("Add to team", "Members")
	h.typeText("bob")
	h.press("enter")
	h.contains("already in the group: bob")
	h.typeText(", Dave @erin alice")
	h.press("enter")
	lastGroupOp(t, f, tuitest.Call{Conv: team, Op: "add", Members: []string{"dave", "erin"}})
	h.contains("adding dave, erin to team…")

	// Remove: pick a member...
	h.press("-")
	h.contains("Remove from team", "1  bob", "2  carol", "3  Type user ids…")
	h.lacks("1  alice")
	h.press("down", "enter")
	lastGroupOp(t, f, tuitest.Call{Conv: team, Op: "remove", Members: []string{"carol"}})
	h.contains("removing carol from team…")
	// ...or type ids.
	h.press("-", "3")
	h.contains("Remove from team", "Members")
	h.typeText("zed")
	h.press("enter")
	h.contains("zed is not in the group")
	typeOver(h, "bob")
	h.press("enter")
	lastGroupOp(t, f, tuitest.Call{Conv: team, Op: "remove", Members: []string{"bob"}})
	// esc cancels a prompt.
	n = len(f.CallsOf("GroupOp"))
	h.press("r")
	h.contains("Rename team")
	h.typeText(" 2")
	h.press("esc")
	noNewGroupOp(t, f, n, "a cancelled rename")

	// Leave asks first.
	h.press("L")
	h.contains("Leave group", "Leave team?")
	h.press("n")
	noNewGroupOp(t, f, n, "a declined leave")
	h.press("L", "esc")
	noNewGroupOp(t, f, n, "a cancelled leave")
	h.press("L", "y", "enter")
	noNewGroupOp(t, f, n, "a leave answered with y (a word holds it)")
	h.press("L", "tab", "enter")
	lastGroupOp(t, f, tuitest.Call{Conv: team, Op: "leave"})
	h.contains("leaving team…")
	h.checkGeometry()
	for _, m := range []string{"Send", "SessionOp", "CreateGroup"} {
		if c := f.CallsOf(m); len(c) != 0 {
			t.Fatalf("group actions called %s: %v", m, c)
		}
	}
}

func TestGroupActionsFromTheList(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 80, 24)
	// The folder row is not a group.
	h.press("j", "ctrl+r")
	h.contains("no actions for a folder")
	if h.m.dialog != nil {
		t.Fatal("a menu opened on a folder")
	}
	// On team's row: the menu, leave, confirm.
	h.press("k", "ctrl+r")
	h.contains("Group team")
	h.press("4")
	h.contains("Leave team?")
	h.press("tab", "enter")
	lastGroupOp(t, f, tuitest.Call{Conv: team, Op: "leave"})
	if h.m.chat.c != nil {
		t.Fatal("the list's menu opened the chat")
	}
	// Add from the list, through the menu.
	h.press("ctrl+r", "2")
	h.typeText("frank")
	h.press("enter")
	lastGroupOp(t, f, tuitest.Call{Conv: team, Op: "add", Members: []string{"frank"}})

	// A direct chat has no group actions, not from its row, nor inside:
	// its menu blocks the peer.
	n := len(f.CallsOf("GroupOp"))
	h.press("j", "j", "ctrl+r")
	h.contains("Block bob…", "Delete the chat…")
	h.lacks("Group bob")
	h.press("esc", "enter", "ctrl+r")
	h.contains("Block bob…")
	h.lacks("ctrl+r group", "Group bob")
	h.press("esc", "tab", "r", "+", "-", "L")
	h.contains("not a group chat")
	if h.m.dialog != nil {
		t.Fatal("a group dialog opened in a direct chat")
	}
	noNewGroupOp(t, f, n, "a direct chat")
}

func TestGroupHeaderFollowsChanges(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 100, 24)
	openTeam(h)
	// The answer to a change shows at once...
	h.event(client.GroupChanged{Conv: team, Title: "core team", Members: []string{"alice", "bob", "carol", "dave"}})
	h.contains("core team", "4 members: alice, bob, carol, dave")
	// ...another group's answer changes nothing here...
	h.event(client.GroupChanged{Conv: "g:ops", Title: "ops!", Members: []string{"alice"}})
	h.contains("4 members: alice, bob, carol, dave")
	// ...and the synced session has the last word.
	f.SetSessions("", []protocol.Session{{Conv: team, Kind: "group", Title: "core team", Members: []string{"alice", "carol"},
		ReadSeq: 10, WriteSeq: 10, WriteTS: ms(0)}})
	h.event(client.SessionsChanged{})
	h.contains("2 members: alice, carol")
	h.lacks("dave")
	h.checkGeometry()
}

// formerFixture is alice's list with one group she has left: its session
// has no members, and three messages stay stored (seq 5-7).
func formerFixture() *tuitest.Fake {
	f := tuitest.NewFake("alice", "laptop", "localhost:8080")
	old := "g:old"
	f.SetSessions("", []protocol.Session{{Conv: old, Kind: "group", Title: "old crew", Members: []string{},
		ReadSeq: 8, WriteSeq: 8, WriteTS: ms(-time.Hour)}})
	f.AddMessages(old,
		msg(old, 5, "bob", "who is coming?", ms(-3*time.Hour)),
		msg(old, 6, "alice", "not me", ms(-2*time.Hour)),
		client.Message{Message: protocol.Message{Conv: old, Seq: 7, MsgID: "sys-7", From: "alice", Kind: protocol.KindSystem,
			Body: "alice left", ClientTS: ms(-time.Hour)}},
	)
	return f
}

func TestFormerMemberGroupIsReadOnly(t *testing.T) {
	for _, w := range []int{80, 120} { // alone, and beside the list
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			f := formerFixture()
			h := newHarness(t, f, w, 24)
			h.send(tea.FocusMsg{})
			h.press("enter")
			h.contains("old crew", "not a member · read-only", "who is coming?", "not me", "alice left",
				notMemberText, "· no older messages on this device ·")
			h.lacks("Type a message", "ctrl+r group", "enter write", "members:")
			if h.m.focusArea() != focusHistory {
				t.Fatalf("focus %v, want the history", h.m.focusArea())
			}
			h.checkGeometry()

			// No way into an input: enter and a say why, tab skips it,
			// a click on it and a paste do nothing.
			h.press("enter")
			h.contains("you are no longer a member of this group")
			h.press("a", "tab", "tab")
			if h.m.focusArea() == focusInput {
				t.Fatal("the input took the focus")
			}
			// shift+tab does not get stuck on the missing input either.
			h.press("shift+tab")
			if want := map[int]focusArea{80: focusHistory, 120: focusList}[w]; h.m.focusArea() != want {
				t.Fatalf("shift+tab: focus %v, want %v", h.m.focusArea(), want)
			}
			h.press("shift+tab")
			if h.m.focusArea() != focusHistory {
				t.Fatalf("shift+tab again: focus %v, want the history", h.m.focusArea())
			}
			h.send(tea.MouseClickMsg{Button: tea.MouseLeft, X: w - 5, Y: 22})
			h.send(tea.PasteMsg{Content: "pasted"})
			if h.m.focusArea() == focusInput || h.m.chat.input.Value() != "" {
				t.Fatalf("focus %v, input %q", h.m.focusArea(), h.m.chat.input.Value())
			}
			// Even a draft left over cannot be sent.
			h.m.chat.input.SetValue("left over")
			h.run(h.m.chat.send())

			// No group actions, no receipts, no history from the server.
			h.press("ctrl+r")
			h.contains("you are no longer a member of old crew")
			for _, k := range []string{"r", "+", "-", "L"} {
				h.press(k)
				if h.m.dialog != nil {
					t.Fatalf("%s opened a dialog", k)
				}
			}
			h.press("k", "i")
			h.contains("no receipts")
			if h.m.dialog != nil {
				t.Fatal("message info opened")
			}
			h.press("g", "pgup", "g")
			h.fireTimers()

			// New messages on screen are not marked read.
			f.AddMessages("g:old", msg("g:old", 8, "bob", "bye alice", ms(0)))
			h.event(client.MessagesChanged{Conv: "g:old"})
			h.contains("bye alice")
			for _, m := range []string{"Send", "MarkRead", "Typing", "Receipts", "LoadOlder", "GroupOp"} {
				if c := f.CallsOf(m); len(c) != 0 {
					t.Fatalf("a former member's chat called %s: %v", m, c)
				}
			}
		})
	}
}

func TestRemovedWhileTypingTurnsReadOnly(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 100, 24)
	openTeam(h)
	h.typeText("half a thought")
	reads, typing := len(f.CallsOf("MarkRead")), len(f.CallsOf("Typing"))

	// Removed by someone else: the sync brings the session with no members.
	removed := protocol.Session{Conv: team, Kind: "group", Title: "team", Members: []string{},
		ReadSeq: 11, WriteSeq: 11, WriteTS: ms(0)}
	f.AddMessages(team, client.Message{Message: protocol.Message{Conv: team, Seq: 11, MsgID: "sys-11", From: "bob",
		Kind: protocol.KindSystem, Body: "bob removed alice", ClientTS: ms(0)}})
	f.SetSessions("", []protocol.Session{removed})
	h.event(client.SessionsChanged{})
	h.event(client.MessagesChanged{Conv: team})
	h.contains(notMemberText, "bob removed alice", "not a member · read-only")
	// The input and its text are gone from the chat; the list still shows
	// the text as the group's draft.
	if scr := h.screen(); strings.Count(scr, "half a thought") != 1 || !strings.Contains(scr, "draft: half a thought") {
		t.Fatalf("the text typed should show only as the list's draft:\n%s", scr)
	}
	if h.m.focusArea() != focusHistory {
		t.Fatalf("focus %v, want the history", h.m.focusArea())
	}
	h.press("enter", "esc", "tab", "enter")
	h.checkGeometry()
	if c := f.CallsOf("Send"); len(c) != 0 {
		t.Fatalf("sent from a group left: %v", c)
	}
	if n := len(f.CallsOf("MarkRead")); n != reads {
		t.Fatalf("marked read in a group left: %v", f.CallsOf("MarkRead")[reads:])
	}
	if n := len(f.CallsOf("Typing")); n != typing {
		t.Fatalf("typing sent in a group left")
	}

	// Added back: the input and the draft return.
	f.SetSessions("", []protocol.Session{{Conv: team, Kind: "group", Title: "team", Members: []string{"alice", "bob"},
		ReadSeq: 11, WriteSeq: 11, WriteTS: ms(0)}})
	h.event(client.SessionsChanged{})
	h.contains("2 members: alice, bob", "half a thought", "ctrl+r group")
	h.lacks(notMemberText)
	h.press("enter") // from the history: write
	if h.m.focusArea() != focusInput {
		t.Fatalf("focus %v, want the input back", h.m.focusArea())
	}

	// Leaving: the answer to this client's leave turns the chat read-only
	// before the sync does.
	h.event(client.GroupChanged{Conv: team, Title: "team", Members: []string{"bob"}})
	h.contains(notMemberText)
	if h.m.focusArea() == focusInput {
		t.Fatal("the input kept the focus")
	}
}

func TestRemovePickerScrollsThroughManyMembers(t *testing.T) {
	f := tuitest.NewFake("alice", "laptop", "localhost:8080")
	members := []string{"alice"}
	for i := 1; i <= 30; i++ {
		members = append(members, fmt.Sprintf("user%02d", i))
	}
	f.SetSessions("", []protocol.Session{{Conv: "g:big", Kind: "group", Title: "big", Members: members, WriteTS: ms(0)}})
	h := newHarness(t, f, 100, 30)
	h.press("enter", "tab", "-")
	h.contains("Remove from big", "1  user01", "9  user09", "   user10", "↓ 21 more", "1-9;")
	h.lacks("user11", "Type user ids…")
	// up wraps to the last option: typing ids.
	h.press("up")
	h.contains("▸    Type user ids…", "↑ 21 more")
	h.lacks("1  user01")
	if n := strings.Count(h.screen(), " more"); n != 1 {
		t.Fatalf("%d \"more\" lines, want only the one above", n)
	}
	for i := 0; i < 13; i++ {
		h.press("down")
	}
	h.contains("▸    user13", "↑ 3 more", "↓ 18 more")
	h.press("enter")
	lastGroupOp(t, f, tuitest.Call{Conv: "g:big", Op: "remove", Members: []string{"user13"}})
	h.checkGeometry()
}

func TestHelpScreenListsGroupKeys(t *testing.T) {
	h := newHarness(t, newFixture(), 120, 40)
	h.press("?")
	h.contains("ctrl+r", "chat menu: group, block / unblock", "r/+/-/L", "group: rename, add, remove, leave")
	// The summary line names the history's real bindings.
	for i, want := range []string{"r", "+", "-", "L"} {
		if got := groupActions[i].key.Keys()[0]; got != want {
			t.Errorf("%s is bound to %q, help says %q", groupActions[i].label, got, want)
		}
	}
}

func TestLegendDropsLowRanksFirst(t *testing.T) {
	parts := []hintPart{{"enter send", 5}, {"new line", 3}, {"ctrl+r group", 4}, {"esc back", 2}, {"f1 help", 1}}
	for _, tc := range []struct {
		w    int
		want string
	}{
		{80, " enter send · new line · ctrl+r group · esc back · f1 help "},
		{50, " enter send · new line · ctrl+r group · esc back "},
		{40, " enter send · new line · ctrl+r group "},
		{30, " enter send · ctrl+r group "},
		{5, " enter send "},
	} {
		if got := legend(codePoints, parts, tc.w); got != tc.want {
			t.Errorf("legend(%d) = %q, want %q", tc.w, got, tc.want)
		}
		if got := legend(codePoints, parts, tc.w); codePoints.width(got) > tc.w && strings.Count(got, "·") > 0 {
			t.Errorf("legend(%d) is %d wide", tc.w, codePoints.width(got))
		}
	}
	if got := legend(codePoints, nil, 10); got != "" {
		t.Errorf("empty legend = %q", got)
	}
}

// TestGroupCreatedLaterLeavesTheUserWhereTheyAre checks a group asked for
// offline and answered once the connection is back, when by then the user
// has gone to another chat and typed there: the answer must not take them
// away nor wipe what they typed; it says the group is there.
func TestGroupCreatedLaterLeavesTheUserWhereTheyAre(t *testing.T) {
	f := newFixture()
	f.SetConn(client.Conn{State: client.Offline, RetryAt: testNow.Add(30 * time.Second)})
	h := newHarness(t, f, 100, 30)
	h.press("N")
	h.typeText("queued group")
	h.press("tab")
	h.typeText("bob")
	h.press("enter")
	h.contains("creating group queued group")
	c := f.CallsOf("CreateGroup")
	if len(c) != 1 || c[0].Key == "" {
		t.Fatalf("CreateGroup calls %v, want one with a key", c)
	}
	openBob(h)
	h.typeText("half typed draft")

	h.event(client.GroupChanged{Conv: "g:q1", Key: c[0].Key, Title: "queued group", Members: []string{"alice", "bob"}})
	if h.m.chat.conv() != bob || h.m.focusArea() != focusInput {
		t.Fatalf("the answer moved the user to %q (focus %v)", h.m.chat.conv(), h.m.focusArea())
	}
	if v := h.m.chat.input.Value(); v != "half typed draft" {
		t.Fatalf("the input holds %q, want the text typed", v)
	}
	h.contains("group queued group created")
}

// TestGroupActionsTableIsTheRouting checks what the package doc promises:
// a group action's dialog is reached, from the group menu and by its key in
// the history, through its one line in groupActions and nothing else.
func TestGroupActionsTableIsTheRouting(t *testing.T) {
	for i, a := range groupActions {
		h := newHarness(t, newFixture(), 100, 30)
		openTeam(h)
		view := func() string {
			if h.m.dialog == nil {
				return "no dialog"
			}
			h.m.dialog.SetSize(50, 30)
			return ansi.Strip(h.m.dialog.View())
		}
		h.press("ctrl+r", itoa(int64(i+1)))
		byMenu := view()
		h.press("esc", "tab", a.key.Keys()[0])
		byKey := view()
		d, err := a.open(h.m.com, h.m.chat.c.sess)
		if err != nil {
			t.Fatal(err)
		}
		d.SetSize(50, 30)
		if direct := ansi.Strip(d.View()); byMenu != direct || byKey != direct {
			t.Errorf("%s: the menu opened\n%s\nthe key\n%s\nthe table's constructor makes\n%s", a.label, byMenu, byKey, direct)
		}
	}
}
