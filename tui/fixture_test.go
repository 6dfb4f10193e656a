package tui

import (
	"fmt"
	"time"

	"github.com/imcore/im/client"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/tui/tuitest"
)

// ms is a Unix-millisecond time relative to testNow.
func ms(d time.Duration) int64 { return testNow.Add(d).UnixMilli() }

func msg(conv string, seq int64, from, body string, at int64) client.Message {
	return client.Message{Message: protocol.Message{
		Conv: conv, Seq: seq, MsgID: fmt.Sprintf("%s-%d", conv, seq), From: from, Body: body,
		ClientTS: at, ServerTS: at,
	}}
}

func last(conv string, seq int64, from, body string, at int64) *protocol.Message {
	m := msg(conv, seq, from, body, at).Message
	return &m
}

// statusFake returns alice's empty fake client with a device id and a
// server address as long as real ones, for the status bar's tests.
func statusFake() *tuitest.Fake {
	return tuitest.NewFake("alice", "dev-081d355fd788d23cf3dce226", "ws://127.0.0.1:7070/ws")
}

// newFixture returns alice's fake client with a varied session list:
// pinned, muted, marked unread, wide characters, a folder, a business
// gateway and a deleted chat. The list shows: team (pinned), the folder
// work, bob, carol, Shop, dave, yuki.
func newFixture() *tuitest.Fake {
	f := tuitest.NewFake("alice", "laptop", "localhost:8080")
	f.SetSessions("", []protocol.Session{
		{Conv: "g:team", Kind: "group", Title: "team", Members: []string{"alice", "bob", "carol"},
			Priority: 1, UnreadCount: 3, ReadSeq: 7, WriteSeq: 10, WriteTS: ms(-26 * time.Hour),
			LastMsg: last("g:team", 10, "carol", "standup moved to 10:30", ms(-26*time.Hour))},
		{Conv: "d:alice:bob", Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
			UnreadCount: 2, ReadSeq: 10, WriteSeq: 12, WriteTS: ms(-25 * time.Minute),
			LastMsg: last("d:alice:bob", 12, "bob", "are you coming tonight? 🎉", ms(-25*time.Minute))},
		{Conv: "d:alice:carol", Kind: "direct", Title: "carol", Members: []string{"alice", "carol"},
			Muted: true, UnreadCount: 5, ReadSeq: 1, WriteSeq: 6, WriteTS: ms(-90 * time.Minute),
			LastMsg: last("d:alice:carol", 6, "carol", "lunch?", ms(-90*time.Minute))},
		{Conv: "d:alice:dave", Kind: "direct", Title: "dave", Members: []string{"alice", "dave"},
			MarkedUnread: true, ReadSeq: 4, WriteSeq: 4, WriteTS: ms(-20 * time.Hour),
			Ticks:   protocol.Ticks{DeliveredSeq: 4, ReadSeq: 4},
			LastMsg: last("d:alice:dave", 4, "alice", "see you", ms(-20*time.Hour))},
		{Conv: "d:alice:yuki", Kind: "direct", Title: "yuki 雪",
			Members: []string{"alice", "yuki"}, UnreadCount: 1, ReadSeq: 2, WriteSeq: 3, WriteTS: ms(-72 * time.Hour),
			LastMsg: last("d:alice:yuki", 3, "yuki", "こんにちは、元気ですか？今日は一緒に晩ご飯を食べましょう。駅前の新しいお店はどう？", ms(-72*time.Hour))},
		{Conv: "biz:shop", Kind: "biz", Title: "Shop", UnreadCount: 1, WriteTS: ms(-3 * time.Hour),
			LastMsg: last("biz:shop", 0, "shop", "Your order has shipped", ms(-3*time.Hour))},
		{Conv: "g:ops", Kind: "group", Title: "ops", Category: "work", UnreadCount: 4, WriteTS: ms(-10 * time.Minute),
			Members: []string{"alice", "erin"},
			LastMsg: last("g:ops", 4, "erin", "deploy done", ms(-10*time.Minute))},
		{Conv: "d:alice:erin", Kind: "direct", Title: "erin", Category: "work", WriteTS: ms(-40 * 24 * time.Hour),
			LastMsg: last("d:alice:erin", 2, "alice", "thanks!", ms(-40*24*time.Hour))},
		{Conv: "d:alice:mallory", Kind: "direct", Title: "mallory", Deleted: true, WriteTS: ms(-time.Minute)},
	})
	f.SetSessions("shop", []protocol.Session{
		{Conv: "d:alice:shop-orders", Kind: "direct", Title: "shop-orders", SubBiz: "shop", UnreadCount: 1,
			WriteTS: ms(-3 * time.Hour), LastMsg: last("d:alice:shop-orders", 3, "shop-orders", "Your order has shipped", ms(-3*time.Hour))},
		{Conv: "d:alice:shop-help", Kind: "direct", Title: "shop-help", SubBiz: "shop",
			WriteTS: ms(-50 * time.Hour), LastMsg: last("d:alice:shop-help", 1, "shop-help", "How can we help?", ms(-50*time.Hour))},
	})
	// bob's chat: the last two are unread.
	bob := "d:alice:bob"
	f.AddMessages(bob,
		msg(bob, 1, "bob", "hey alice", ms(-26*time.Hour)),
		msg(bob, 2, "alice", "hi bob! long time no see", ms(-26*time.Hour+time.Minute)),
		msg(bob, 3, "bob", "we should catch up", ms(-26*time.Hour+2*time.Minute)),
		msg(bob, 4, "alice", "yes, let me check my calendar", ms(-60*time.Minute)),
		msg(bob, 5, "alice", "friday works", ms(-59*time.Minute)),
		msg(bob, 6, "alice", "or saturday", ms(-58*time.Minute)),
		msg(bob, 7, "alice", "either is fine 😊", ms(-57*time.Minute)),
		msg(bob, 8, "bob", "saturday then", ms(-50*time.Minute)),
		msg(bob, 9, "alice", "great", ms(-45*time.Minute)),
		msg(bob, 10, "alice", "I'll bring the cake 🎂", ms(-40*time.Minute)),
		msg(bob, 11, "bob", "the party is at 8", ms(-30*time.Minute)),
		msg(bob, 12, "bob", "are you coming tonight? 🎉", ms(-25*time.Minute)),
	)
	f.SetTicks(bob, protocol.Ticks{DeliveredSeq: 10, ReadSeq: 9})
	return f
}
