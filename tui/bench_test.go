package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui/tuitest"
)

// longChat is a fake with a 5,000-message chat with bob: mixed lengths,
// wide characters, both senders, several days.
func longChat(n int) *tuitest.Fake {
	f := tuitest.NewFake("alice", "laptop", "localhost:8080")
	f.SetSessions("", []protocol.Session{{Conv: bob, Kind: "direct", Title: "bob", ReadSeq: int64(n), WriteSeq: int64(n), WriteTS: ms(0)}})
	bodies := []string{
		"ok",
		"sounds good, see you there 🎉",
		"こんにちは、元気ですか？今日は一緒に晩ご飯を食べましょう。",
		strings.Repeat("a longer message that wraps over several lines in the bubble ", 4),
	}
	msgs := make([]client.Message, 0, n)
	for i := 1; i <= n; i++ {
		from := "bob"
		if i%3 == 0 {
			from = "alice"
		}
		msgs = append(msgs, msg(bob, int64(i), from, fmt.Sprintf("%d %s", i, bodies[i%len(bodies)]),
			ms(time.Duration(i-n)*7*time.Minute)))
	}
	f.AddMessages(bob, msgs...)
	f.SetTicks(bob, protocol.Ticks{DeliveredSeq: int64(n - 2), ReadSeq: int64(n - 5)})
	return f
}

// BenchmarkViewFullChat renders a 200x50 screen with a long chat open
// (2,000 messages loaded) in the split view.
func BenchmarkViewFullChat(b *testing.B) {
	h := newHarnessOpts(b, longChat(5000), 200, 50, Options{PageSize: 2000})
	h.press("enter")
	if len(h.m.chat.c.msgs) != 2000 {
		b.Fatalf("%d messages loaded", len(h.m.chat.c.msgs))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = h.m.View()
	}
}

// BenchmarkChatLayout re-lays out 2,000 loaded messages after a resize
// (every bubble re-rendered: the cache misses on the new width).
func BenchmarkChatLayout(b *testing.B) {
	h := newHarnessOpts(b, longChat(5000), 200, 50, Options{PageSize: 2000})
	h.press("enter")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		h.send(tea.WindowSizeMsg{Width: 199 + i%2, Height: 50})
	}
}

// BenchmarkChatTicksChanged re-lays out 2,000 loaded messages when a
// status raises the ticks (only the changed bubbles are re-rendered).
func BenchmarkChatTicksChanged(b *testing.B) {
	h := newHarnessOpts(b, longChat(5000), 200, 50, Options{PageSize: 2000})
	h.press("enter")
	rc := h.m.com.renderCtx()
	c := h.m.chat.c
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.ticks.ReadSeq = int64(4995 - i%2)
		c.rebuild(rc)
	}
}

func thousandSessions() []protocol.Session {
	out := make([]protocol.Session, 1000)
	for i := range out {
		s := protocol.Session{
			Conv: fmt.Sprintf("d:alice:user%04d", i), Kind: "direct", Title: fmt.Sprintf("user %d 雪", i),
			UnreadCount: int64(i % 7), WriteTS: ms(-time.Duration(i) * time.Hour), Muted: i%11 == 0,
			Priority: int64(i % 50 / 49), MarkedUnread: i%13 == 0,
			LastMsg: last(fmt.Sprintf("d:alice:user%04d", i), 3, "alice", "see you tomorrow at the station 🚉 ok?", ms(-time.Duration(i)*time.Hour)),
		}
		if i%10 == 0 {
			s.Category = fmt.Sprintf("cat%d", i%30)
		}
		out[i] = s
	}
	return tuitest.SortSessions(out)
}

// BenchmarkListView1000 builds the list of 1,000 sessions (rows, folders)
// and renders it on a 200x50 screen.
func BenchmarkListView1000(b *testing.B) {
	sessions := thousandSessions()
	h := newHarness(b, tuitest.NewFake("alice", "laptop", "localhost:8080"), 200, 50)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h.m.list.setSessions("", sessions, 1234)
		_ = h.m.View()
	}
}
