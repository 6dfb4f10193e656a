package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
)

func TestListSortedWithBadgesAndMarks(t *testing.T) {
	h := newHarness(t, newFixture(), 80, 24)
	h.checkGeometry()
	h.contains("Chats", "11 unread")
	h.lacks("mallory") // deleted

	// The backend's order: pinned, then newest; the folder among them by
	// its newest chat.
	order := []string{"👥 team", "📁 work", "👤 bob", "👤 carol", "🏪 Shop", "👤 dave", "👤 yuki"}
	scr := h.screen()
	pos := -1
	for _, s := range order {
		i := strings.Index(scr, s)
		if i < 0 || i < pos {
			t.Fatalf("%q missing or out of order:\n%s", s, scr)
		}
		pos = i
	}
	// Sessions of a category live in its folder, not in the main list.
	h.lacks("👤 erin", "👥 ops")

	check := func(title string, want ...string) {
		t.Helper()
		// The marks are on the row's second line.
		lines := strings.Split(h.screen(), "\n")
		for i, l := range lines {
			if strings.Contains(l, " "+title) && i+1 < len(lines) && (strings.Contains(l, "👤") || strings.Contains(l, "👥") || strings.Contains(l, "📁") || strings.Contains(l, "🏪")) {
				row := l + "\n" + lines[i+1]
				for _, w := range want {
					if !strings.Contains(row, w) {
						t.Fatalf("row %q lacks %q:\n%s", title, w, row)
					}
				}
				return
			}
		}
		t.Fatalf("no row %q", title)
	}
	check("team", markPin, " 3 ", "Yesterday", "carol: standup")
	check("bob", " 2 ", "15:05", "are you coming tonight? 🎉")
	check("carol", markMute, " 5 ", "14:00")
	check("dave", markUnread, glyphRead+" see you", "Yesterday")
	check("Shop", " 1 ", "Your order has shipped")
	check("work", " 4 ", "ops, erin")
	check("yuki", "Wednesday", "…", " 1 ")

	// The muted badge is grey, the others green.
	if !strings.Contains(h.rawLineWith("lunch?"), "48;2;134;150;160") {
		t.Errorf("muted badge not grey: %q", h.rawLineWith("lunch?"))
	}
	if !strings.Contains(h.rawLineWith("are you coming"), "48;2;0;168;132") {
		t.Errorf("unread badge not green: %q", h.rawLineWith("are you coming"))
	}
}

func TestListWideCharactersKeepAlignment(t *testing.T) {
	for _, w := range []int{40, 57, 80, 99, 100, 131} {
		h := newHarness(t, newFixture(), w, 20)
		h.checkGeometry()
		// Each row's right edge (the time column) ends at the same cell.
		for _, title := range []string{"yuki 雪", "bob", "team"} {
			l := h.lineWith(title)
			if w < splitWidth && !strings.HasSuffix(l, " ") {
				t.Errorf("width %d: row %q does not end in the margin: %q", w, title, l)
			}
		}
	}
}

func TestListNavigationFoldersAndGateway(t *testing.T) {
	h := newHarness(t, newFixture(), 80, 24)
	// The folder is the second row, after pinned team; enter opens it.
	h.press("j", "enter")
	h.contains("Chats › work", "👥 ops", "👤 erin", "deploy done")
	h.lacks("👤 bob")
	h.press("esc")
	h.contains("👤 bob")
	h.lacks("Chats › work")

	// The gateway row opens the nested list, loaded with Sessions("shop").
	h.press("j", "j", "j") // from the folder's row
	h.contains("▌🏪 Shop")
	h.press("enter")
	h.contains("Chats › Shop", "shop-orders", "shop-help", "How can we help?")
	h.press("h")
	h.contains("👤 bob", "🏪 Shop")

	// G and g jump to the ends.
	h.press("G")
	h.contains("▌👤 yuki")
	h.press("g")
	h.contains("▌👥 team")
}

func TestListUpdatesOnSessionsChanged(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 80, 24)
	h.press("j", "j") // bob
	h.contains("▌👤 bob")
	// carol writes: she moves above bob; the cursor stays on bob.
	f.SetSessions("", []protocol.Session{
		{Conv: "d:alice:bob", Title: "bob", WriteTS: ms(-25 * time.Minute)},
		{Conv: "d:alice:carol", Title: "carol", UnreadCount: 1, WriteTS: ms(0),
			LastMsg: last("d:alice:carol", 7, "carol", "new!", ms(0))},
	})
	h.event(client.SessionsChanged{})
	h.contains("▌👤 bob", "new!", "1 unread")
	scr := h.screen()
	if strings.Index(scr, "carol") > strings.Index(scr, "bob") {
		t.Fatalf("carol should be above bob:\n%s", scr)
	}
}

func TestListTypingShowsInRow(t *testing.T) {
	h := newHarness(t, newFixture(), 80, 24)
	h.event(client.TypingEvent{Conv: "g:team", User: "bob"})
	h.contains("bob is typing…")
	h.fireTimers()
	h.lacks("typing…")

	// The typist's message ends the indicator before its timer.
	h.event(client.TypingEvent{Conv: "d:alice:bob", User: "bob"})
	h.contains("typing…")
	h.f.SetSessions("", []protocol.Session{{Conv: "d:alice:bob", Title: "bob", UnreadCount: 3, WriteSeq: 13,
		WriteTS: ms(0), LastMsg: last("d:alice:bob", 13, "bob", "here I am", ms(0))}})
	h.event(client.SessionsChanged{})
	h.lacks("typing…")
	h.contains("here I am")
}

func TestListTime(t *testing.T) {
	now := testNow
	cases := []struct {
		at   time.Time
		want string
	}{
		{now.Add(-time.Minute), "15:29"},
		{time.Date(2026, 3, 14, 0, 1, 0, 0, time.UTC), "00:01"},
		{time.Date(2026, 3, 13, 23, 59, 0, 0, time.UTC), "Yesterday"},
		{now.Add(-3 * 24 * time.Hour), "Wednesday"},
		{now.Add(-40 * 24 * time.Hour), "Feb 2"},
		{time.Date(2025, 12, 31, 10, 0, 0, 0, time.UTC), "2025-12-31"},
	}
	for _, c := range cases {
		if got := listTime(c.at.UnixMilli(), now); got != c.want {
			t.Errorf("listTime(%v) = %q, want %q", c.at, got, c.want)
		}
	}
	if listTime(0, now) != "" {
		t.Error("no time should render empty")
	}
}

func TestTruncateWideCharacters(t *testing.T) {
	cases := []struct {
		in   string
		w    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello world", 8, "hello w…"},
		{"こんにちは", 6, "こん…"},
		{"こんにちは", 5, "こん…"},
		{"🎉🎉🎉", 4, "🎉…"},
	}
	for _, c := range cases {
		if got := codePoints.truncate(c.in, c.w); got != c.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.in, c.w, got, c.want)
		}
		if got := codePoints.width(codePoints.fit(c.in, c.w)); got != c.w {
			t.Errorf("fit(%q, %d) is %d wide", c.in, c.w, got)
		}
	}
}

func TestSanitizeDropsEscapes(t *testing.T) {
	in := "hi\x1b[2J\x1b]0;pwned\x07 there\tyou\r\n\u009b31m"
	got := sanitize(in)
	if strings.ContainsAny(got, "\x1b\x07\r\u009b") {
		t.Fatalf("sanitize left control characters: %q", got)
	}
	if !strings.Contains(got, "there    you\n") {
		t.Fatalf("sanitize lost text: %q", got)
	}
}

// TestListLevelsCountTheirOwnUnread checks that inside a folder or a
// sub-business's list the header counts that level's unread messages, not
// the main list's; and a folder takes its place among the chats by its
// newest message, below the pinned ones.
func TestListLevelsCountTheirOwnUnread(t *testing.T) {
	f := newFixture()
	h := newHarness(t, f, 80, 24)
	h.contains("Chats", "11 unread")
	// Pinned team first, then by time: the folder (ops, 10 minutes ago)
	// before bob (25 minutes ago).
	scr := h.screen()
	team, work, bobRow := strings.Index(scr, "👥 team"), strings.Index(scr, "📁 work"), strings.Index(scr, "👤 bob")
	if !(team >= 0 && team < work && work < bobRow) {
		t.Fatalf("want pinned team, then the folder work, then bob:\n%s", scr)
	}
	h.press("j", "enter") // the folder work: ops has 4 unread
	h.contains("Chats › work", " 4 unread")
	h.lacks("11 unread")
	h.press("esc", "j", "j", "j", "enter") // Shop's list: shop-orders has 1
	h.contains("Chats › Shop", " 1 unread")
	h.lacks("11 unread")

	// A mute that has expired counts again, in a folder as in the list.
	f.SetSessions("", []protocol.Session{
		{Conv: "g:ops", Kind: "group", Title: "ops", Category: "work", UnreadCount: 4, WriteTS: ms(-10 * time.Minute),
			Muted: true, MuteUntil: ms(-time.Minute), Members: []string{"alice", "erin"}},
		{Conv: "d:alice:erin", Kind: "direct", Title: "erin", Category: "work", UnreadCount: 2, Muted: true, WriteTS: ms(-time.Hour)},
	})
	h.event(client.SessionsChanged{})
	h.press("esc")
	if l := h.lineWith("📁 work"); !strings.Contains(h.screen(), " 4 ") {
		t.Fatalf("the folder should count the 4 of the chat whose mute expired, not erin's 2:\n%s\n%s", l, h.screen())
	}
	h.press("enter")
	h.contains("Chats › work", " 4 unread")
}
