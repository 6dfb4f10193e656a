package localstore

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
)

// testSession builds a session of the main list.
func testSession(conv string, activeTS, writeTS, priority int64) protocol.Session {
	return protocol.Session{Conv: conv, Kind: "direct", Title: conv, Members: []string{"alice", "x"}, ActiveTS: activeTS, WriteTS: writeTS, Priority: priority}
}

func convsOf(list []protocol.Session) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.Conv
	}
	return out
}

func mustPutSessions(t *testing.T, s *Store, list ...protocol.Session) {
	t.Helper()
	if err := s.PutSessions(list); err != nil {
		t.Fatal(err)
	}
}

func mustSession(t *testing.T, s *Store, conv string) protocol.Session {
	t.Helper()
	sess, ok, err := s.Session(conv)
	if err != nil || !ok {
		t.Fatalf("session %s: ok %v, %v", conv, ok, err)
	}
	return sess
}

func TestSessionKeepsEveryField(t *testing.T) {
	s, _ := openTemp(t)
	last := msg(conv, 44, "bob")
	in := protocol.Session{
		Conv: conv, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
		UnreadCount: 2, ReadSeq: 42, WriteSeq: 44, ActiveTS: 1763800000123, WriteTS: 1763800000100,
		Muted: true, MuteUntil: 1763900000000, Priority: 1, MarkedUnread: true,
		Category: "friends", LastMsg: &last, Ticks: protocol.Ticks{DeliveredSeq: 44, ReadSeq: 42},
	}
	mustPutSessions(t, s, in)
	if got := mustSession(t, s, conv); !reflect.DeepEqual(got, in) {
		t.Fatalf("stored session\n %+v\nwant\n %+v", got, in)
	}
	if ticks, _ := s.Ticks(conv); ticks != in.Ticks {
		t.Fatalf("the session's ticks were not kept as the conversation's: %+v", ticks)
	}
}

func TestSessionsOrderAndDeleted(t *testing.T) {
	s, _ := openTemp(t)
	gone := testSession("d:alice:gone", 9, 900, 0)
	gone.Deleted = true
	nested := testSession("d:alice:shop", 10, 1000, 0)
	nested.SubBiz = "shop"
	mustPutSessions(t, s,
		testSession("d:alice:b", 1, 100, 0),
		testSession("d:alice:c", 2, 300, 0),
		testSession("d:alice:a", 3, 100, 0), // ties with b on write_ts: conv decides
		testSession("d:alice:pinned", 4, 50, 1),
		gone, nested,
	)
	got, err := s.Sessions("")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"d:alice:pinned", "d:alice:c", "d:alice:a", "d:alice:b"}
	if !slices.Equal(convsOf(got), want) {
		t.Fatalf("main list = %v, want %v", convsOf(got), want)
	}
	if shop, _ := s.Sessions("shop"); !slices.Equal(convsOf(shop), []string{"d:alice:shop"}) {
		t.Fatalf("shop list = %v", convsOf(shop))
	}
}

func TestOlderSessionNeverReplacesNewer(t *testing.T) {
	s, _ := openTemp(t)
	newer := testSession(conv, 20, 20, 1)
	mustPutSessions(t, s, newer)
	older := testSession(conv, 10, 10, 0)
	older.Ticks = protocol.Ticks{DeliveredSeq: 3}
	mustPutSessions(t, s, older)
	got := mustSession(t, s, conv)
	if got.Priority != 1 || got.ActiveTS != 20 {
		t.Fatalf("an older session replaced a newer one: %+v", got)
	}
	if got.Ticks.DeliveredSeq != 3 {
		t.Fatalf("the older session's higher ticks were lost: %+v", got.Ticks)
	}
}

func TestTotalUnread(t *testing.T) {
	s, _ := openTemp(t)
	plain := testSession("d:alice:a", 1, 1, 0)
	plain.UnreadCount = 2
	muted := testSession("d:alice:b", 2, 2, 0)
	muted.UnreadCount, muted.Muted = 3, true
	expired := testSession("d:alice:c", 3, 3, 0)
	expired.UnreadCount, expired.Muted, expired.MuteUntil = 5, true, time.Now().Add(-time.Minute).UnixMilli()
	deleted := testSession("d:alice:d", 4, 4, 0)
	deleted.UnreadCount, deleted.Deleted = 7, true
	nested := testSession("d:alice:e", 5, 5, 0)
	nested.UnreadCount, nested.SubBiz = 11, "shop"
	mustPutSessions(t, s, plain, muted, expired, deleted, nested)
	if n, err := s.TotalUnread(""); err != nil || n != 7 {
		t.Fatalf("total unread = %d, %v; want 2+5", n, err)
	}
	if n, _ := s.TotalUnread("shop"); n != 11 {
		t.Fatalf("shop total unread = %d", n)
	}
}

func TestApplyMessagesMovesTheSession(t *testing.T) {
	s, _ := openTemp(t)
	base := testSession(conv, 10, 10, 0)
	base.WriteSeq, base.ReadSeq, base.Deleted = 4, 4, true
	mustPutSessions(t, s, base)

	m5 := msg(conv, 5, "bob")
	zed := msg("d:alice:zed", 1, "zed")
	if unknown, err := s.ApplyMessages([]protocol.Message{zed, m5, zed}, "alice"); err != nil || !slices.Equal(unknown, []string{zed.Conv}) {
		t.Fatalf("ApplyMessages: unknown %v, %v", unknown, err)
	}
	got := mustSession(t, s, conv)
	if got.WriteSeq != 5 || got.UnreadCount != 1 || got.Deleted || got.LastMsg == nil || got.LastMsg.MsgID != m5.MsgID || got.WriteTS != m5.ServerTS {
		t.Fatalf("after bob's message: %+v", got)
	}
	// m5 twice and an older message change nothing.
	s.ApplyMessages([]protocol.Message{m5, msg(conv, 6, "bob"), msg(conv, 3, "bob")}, "alice")
	if got := mustSession(t, s, conv); got.UnreadCount != 2 || got.WriteSeq != 6 {
		t.Fatalf("after 6: %+v", got)
	}
	s.ApplyMessages([]protocol.Message{msg(conv, 7, "alice")}, "alice") // from another device of alice
	if got := mustSession(t, s, conv); got.UnreadCount != 0 || got.ReadSeq != 7 {
		t.Fatalf("after alice's own message: %+v", got)
	}

	// A sync page from before these messages keeps what was seen live.
	stale := base
	stale.ActiveTS, stale.Priority, stale.Deleted = 11, 1, false
	mustPutSessions(t, s, stale)
	if got := mustSession(t, s, conv); got.WriteSeq != 7 || got.ReadSeq != 7 || got.Priority != 1 || got.LastMsg.Seq != 7 {
		t.Fatalf("after a stale page: %+v", got)
	}
}

func TestApplyMessagesMovesTheGateway(t *testing.T) {
	s, _ := openTemp(t)
	gw := protocol.Session{Conv: "biz:shop", Kind: "biz", Title: "shop", ActiveTS: 1, WriteTS: 1, UnreadCount: 1}
	nested := testSession("d:alice:seller", 2, 2, 0)
	nested.SubBiz, nested.WriteSeq, nested.UnreadCount = "shop", 1, 1
	mustPutSessions(t, s, gw, nested)
	if lists, _ := s.SubBizLists(); !slices.Equal(lists, []string{"shop"}) {
		t.Fatalf("lists = %v", lists)
	}
	s.ApplyMessages([]protocol.Message{msg("d:alice:seller", 2, "seller")}, "alice")
	if got := mustSession(t, s, "biz:shop"); got.UnreadCount != 2 || got.LastMsg == nil || got.LastMsg.Seq != 2 {
		t.Fatalf("gateway after a nested message: %+v", got)
	}
	s.ApplyRead("d:alice:seller", 2)
	if got := mustSession(t, s, "biz:shop"); got.UnreadCount != 0 {
		t.Fatalf("gateway after a nested read: %+v", got)
	}
}

func TestApplyRead(t *testing.T) {
	s, _ := openTemp(t)
	base := testSession(conv, 10, 10, 0)
	base.WriteSeq, base.ReadSeq, base.UnreadCount, base.MarkedUnread = 9, 2, 7, true
	mustPutSessions(t, s, base)
	if changed, err := s.ApplyRead(conv, 5); err != nil || !changed {
		t.Fatalf("ApplyRead: %v, %v", changed, err)
	}
	got := mustSession(t, s, conv)
	if got.ReadSeq != 5 || got.UnreadCount != 4 || got.MarkedUnread {
		t.Fatalf("after read 5: %+v", got)
	}
	if changed, _ := s.ApplyRead(conv, 3); changed {
		t.Fatal("a lower read changed the session")
	}
	s.ApplyRead(conv, 100)
	if got := mustSession(t, s, conv); got.ReadSeq != 9 || got.UnreadCount != 0 {
		t.Fatalf("a read past write_seq: %+v", got)
	}
}

// TestGatewayCountsAsTheServerDoes checks the gateway's unread count is the
// nested list's total by the session rules: a muted nested chat's messages
// do not count, as on the server.
func TestGatewayCountsAsTheServerDoes(t *testing.T) {
	s, _ := openTemp(t)
	gw := protocol.Session{Conv: "biz:shop", Kind: "biz", Title: "shop", ActiveTS: 1, WriteTS: 1}
	loud := testSession("d:alice:seller", 2, 2, 0)
	loud.SubBiz = "shop"
	quiet := testSession("d:alice:support", 3, 3, 0)
	quiet.SubBiz, quiet.Muted = "shop", true
	mustPutSessions(t, s, gw, loud, quiet)
	s.ApplyMessages([]protocol.Message{msg(quiet.Conv, 1, "support"), msg(quiet.Conv, 2, "support")}, "alice")
	if got := mustSession(t, s, "biz:shop"); got.UnreadCount != 0 || got.LastMsg == nil || got.LastMsg.Conv != quiet.Conv {
		t.Fatalf("gateway after a muted chat's messages: unread %d, last %+v; want 0 and the message", got.UnreadCount, got.LastMsg)
	}
	s.ApplyMessages([]protocol.Message{msg(loud.Conv, 1, "seller")}, "alice")
	if got := mustSession(t, s, "biz:shop"); got.UnreadCount != 1 {
		t.Fatalf("gateway after a message in an unmuted chat: unread %d, want 1", got.UnreadCount)
	}
	if n, _ := s.TotalUnread("shop"); n != 1 {
		t.Fatalf("the nested list's total = %d, want 1", n)
	}
}
