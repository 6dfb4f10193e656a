package server_test

// End-to-end tests of PROTOCOL.md "Sessions (the conversation list)",
// "Sync" and "Session operations" (the source design's session model),
// over real
// WebSockets against the in-process server. Time is a controllable clock
// (server.Config.Now), never a sleep.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
	"github.com/imcore/im/session"
)

const (
	sessAB   = "d:alice:bob"
	sessHour = int64(time.Hour / time.Millisecond)
)

// A. Every row of the session operations table, and the session read: the
// fields each changes, the timestamps it moves, and the nudge to every
// device of the user (the acting one included) and to nobody else.
func TestSessionOpsTable(t *testing.T) {
	clk := servertest.NewClock()
	env := servertest.Start(t, clk.Use)
	aliceLaptop := env.DialOnline(t, "alice", "laptop")
	alicePhone := env.DialOnline(t, "alice", "phone")
	bobLaptop := env.DialOnline(t, "bob", "laptop")
	bobPhone := env.DialOnline(t, "bob", "phone")
	bobs := []*servertest.Client{bobLaptop, bobPhone}
	alices := []*servertest.Client{aliceLaptop, alicePhone}

	var last protocol.Message
	for range 3 {
		last = aliceLaptop.SendMsg(sessAB, "hello", alicePhone, bobLaptop, bobPhone)
	}
	servertest.ExpectNoSessionSync(append(bobs, alices...)...) // messages do not nudge

	before := bobLaptop.SessionOf(sessAB)
	servertest.WantSameSession(t, "bob's session after 3 messages from alice", before, protocol.Session{
		Conv: sessAB, Kind: "direct", Title: "alice", Members: []string{"alice", "bob"},
		UnreadCount: 3, ReadSeq: 0, WriteSeq: 3, LastMsg: &last, Request: true,
	})

	until := clk.Ms() + sessHour
	steps := []struct {
		name   string
		dev    *servertest.Client
		op     string // "" for the session read
		until  int64
		cat    string
		read   int64
		change func(s *protocol.Session)
		write  bool
	}{
		{name: "pin", dev: bobLaptop, op: "pin", change: func(s *protocol.Session) { s.Priority = 1 }, write: true},
		{name: "unpin", dev: bobPhone, op: "unpin", change: func(s *protocol.Session) { s.Priority = 0 }},
		{name: "mute", dev: bobLaptop, op: "mute", change: func(s *protocol.Session) { s.Muted, s.MuteUntil = true, 0 }},
		{name: "unmute", dev: bobPhone, op: "unmute", change: func(s *protocol.Session) { s.Muted = false }},
		{name: "mute until", dev: bobLaptop, op: "mute", until: until, change: func(s *protocol.Session) { s.Muted, s.MuteUntil = true, until }},
		{name: "unmute timed", dev: bobPhone, op: "unmute", change: func(s *protocol.Session) { s.Muted, s.MuteUntil = false, 0 }},
		{name: "mark_unread", dev: bobLaptop, op: "mark_unread", change: func(s *protocol.Session) { s.MarkedUnread = true }, write: true},
		{name: "read", dev: bobPhone, read: 2, change: func(s *protocol.Session) {
			s.ReadSeq, s.UnreadCount, s.MarkedUnread = 2, 1, false
			s.Ticks = protocol.Ticks{DeliveredSeq: 2, ReadSeq: 2} // alice is at 3/3, bob now at 2/2
		}},
		{name: "set_category", dev: bobLaptop, op: "set_category", cat: "work", change: func(s *protocol.Session) { s.Category = "work" }},
		{name: "set_category empty", dev: bobPhone, op: "set_category", cat: "", change: func(s *protocol.Session) { s.Category = "" }},
		{name: "delete", dev: bobLaptop, op: "delete", change: func(s *protocol.Session) {
			// A soft delete clears unread; it is not a read receipt, so
			// the ticks stay.
			s.Deleted, s.ReadSeq, s.UnreadCount = true, 3, 0
		}},
	}
	for _, st := range steps {
		what := fmt.Sprintf("%s by %s/%s", st.name, st.dev.User, st.dev.Device)
		var got protocol.Session
		if st.op != "" {
			got = st.dev.SessionOp(protocol.SessionOp{Conv: sessAB, Op: st.op, Until: st.until, Category: st.cat})
			// The answer is the stored session: a sync sees the same.
			servertest.WantIdenticalSession(t, what+": sync after the op's ok", st.dev.SessionOf(sessAB), got)
		} else {
			st.dev.MarkRead(sessAB, st.read)
			got = st.dev.SessionOf(sessAB)
		}
		want := before
		st.change(&want)
		servertest.WantSameSession(t, what, got, want)
		servertest.WantMoved(t, what, before, got, true, st.write)
		servertest.ExpectSessionSync(got.ActiveTS, bobs...)
		servertest.ExpectNoSessionSync(alices...)
		before = got
	}
}

// A. An operation that changes nothing is answered ok with the session as
// it is, moves no timestamp and nudges nobody.
func TestSessionOpNoChange(t *testing.T) {
	clk := servertest.NewClock()
	env := servertest.Start(t, clk.Use)
	alice := env.DialOnline(t, "alice", "laptop")
	bobLaptop := env.DialOnline(t, "bob", "laptop")
	bobPhone := env.DialOnline(t, "bob", "phone")
	all := []*servertest.Client{alice, bobLaptop, bobPhone}
	alice.SendMsg(sessAB, "hello", bobLaptop, bobPhone)
	alice.SendMsg(sessAB, "hello", bobLaptop, bobPhone)

	// A read that moves nothing (at or below read_seq, nothing marked) is
	// no change either.
	bobLaptop.MarkRead(sessAB, 1)
	read := bobLaptop.SessionOf(sessAB)
	servertest.ExpectSessionSync(read.ActiveTS, bobLaptop, bobPhone)
	for _, seq := range []int64{1, 0} {
		bobPhone.MarkRead(sessAB, seq)
		servertest.ExpectNoSessionSync(all...)
		servertest.WantIdenticalSession(t, fmt.Sprintf("read %d again", seq), bobPhone.SessionOf(sessAB), read)
	}

	until := clk.Ms() + sessHour
	op := func(name string, until int64, cat string) protocol.SessionOp {
		return protocol.SessionOp{Conv: sessAB, Op: name, Until: until, Category: cat}
	}
	steps := []struct {
		first  *protocol.SessionOp // brings the session into the state; nil: it is already
		repeat protocol.SessionOp  // then changes nothing
	}{
		{nil, op("unmute", 0, "")},        // never muted
		{nil, op("unpin", 0, "")},         // never pinned
		{nil, op("mute", clk.Ms()-1, "")}, // a mute that has already ended
		{nil, op("mute", clk.Ms(), "")},   // ends now
		{new(op("pin", 0, "")), op("pin", 0, "")},
		{new(op("mute", 0, "")), op("mute", 0, "")},
		{new(op("unmute", 0, "")), op("unmute", 0, "")},
		{new(op("mute", until, "")), op("mute", until, "")},
		{new(op("mark_unread", 0, "")), op("mark_unread", 0, "")},
		{new(op("set_category", 0, "work")), op("set_category", 0, "work")},
		{new(op("delete", 0, "")), op("delete", 0, "")},
	}
	for _, st := range steps {
		before := bobLaptop.SessionOf(sessAB)
		if st.first != nil {
			before = bobLaptop.SessionOp(*st.first)
			servertest.ExpectSessionSync(before.ActiveTS, bobLaptop, bobPhone)
		}
		what := fmt.Sprintf("%s (until %d, category %q) repeated", st.repeat.Op, st.repeat.Until, st.repeat.Category)
		got := bobPhone.SessionOp(st.repeat)
		servertest.WantIdenticalSession(t, what, got, before)
		servertest.ExpectNoSessionSync(all...)
		if page := bobLaptop.Sync(protocol.Sync{Since: before.ActiveTS}); len(page.Sessions) != 0 {
			t.Fatalf("%s: sync since the session's active_ts returned %s", what, servertest.JSON(page.Sessions))
		}
	}
}

// A. Clearing a category that is already empty, or setting the category a
// session already has (filed so by its account), changes nothing a client
// can see: PROTOCOL.md says such an op moves no timestamp.
func TestSessionOpSetSameCategoryChangesNothing(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	if err := env.Server.Store().SetAccount(context.Background(), "news", "promotions", ""); err != nil {
		t.Fatal(err)
	}
	alice := env.DialOnline(t, "alice", "laptop")
	news := env.DialOnline(t, "news", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	alice.SendMsg(sessAB, "hello", bob)
	news.SendMsg("d:bob:news", "hello", bob)

	for _, c := range []struct{ conv, category string }{{sessAB, ""}, {"d:bob:news", "promotions"}} {
		before := bob.SessionOf(c.conv)
		if before.Category != c.category {
			t.Fatalf("%s: category %q, want %q", c.conv, before.Category, c.category)
		}
		what := fmt.Sprintf("set_category %q on %s whose category is already %q", c.category, c.conv, c.category)
		got := bob.SessionOp(protocol.SessionOp{Conv: c.conv, Op: "set_category", Category: c.category})
		if !reflect.DeepEqual(got, before) {
			t.Errorf("%s moved a timestamp:\n got %s\nwant %s", what, servertest.JSON(got), servertest.JSON(before))
		}
		for _, f := range bob.Barrier() {
			if f.FrameType() == "session_sync" {
				t.Errorf("%s: nudged with %s", what, servertest.Describe(f))
			}
		}
		// Doing it again now really changes nothing.
		again := bob.SessionOp(protocol.SessionOp{Conv: c.conv, Op: "set_category", Category: c.category})
		servertest.WantIdenticalSession(t, what+", repeated", again, got)
		servertest.ExpectNoSessionSync(bob)
	}
}

// A. Refused operations: an unknown op or bad arguments are invalid, a
// conversation of others is forbidden, a gateway that does not exist is
// not_found; none of them changes anything or nudges anyone.
func TestSessionOpErrors(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	carol := env.DialOnline(t, "carol", "laptop")
	alice.SendMsg(sessAB, "hello", bob)
	carol.SendMsg("d:carol:dave", "hello")
	_, page := bob.SyncAll("")
	cursor := page.Cursor

	cases := []struct {
		f    protocol.SessionOp
		code protocol.Code
	}{
		{protocol.SessionOp{Conv: sessAB, Op: "archive"}, protocol.CodeInvalid},
		{protocol.SessionOp{Conv: sessAB, Op: ""}, protocol.CodeInvalid},
		{protocol.SessionOp{Conv: sessAB, Op: "PIN"}, protocol.CodeInvalid},
		{protocol.SessionOp{Conv: sessAB, Op: "mute", Until: -1}, protocol.CodeInvalid},
		{protocol.SessionOp{Conv: sessAB, Op: "set_category", Category: "Not Valid"}, protocol.CodeInvalid},
		{protocol.SessionOp{Conv: sessAB, Op: "set_category", Category: strings.Repeat("c", session.MaxCategoryLen+1)}, protocol.CodeInvalid},
		{protocol.SessionOp{Conv: "d:bob:alice", Op: "pin"}, protocol.CodeInvalid},
		{protocol.SessionOp{Conv: "nonsense", Op: "pin"}, protocol.CodeInvalid},
		{protocol.SessionOp{Conv: "d:carol:dave", Op: "pin"}, protocol.CodeForbidden},
		{protocol.SessionOp{Conv: "d:carol:dave", Op: "delete"}, protocol.CodeForbidden},
		{protocol.SessionOp{Conv: "biz:nosuch", Op: "pin"}, protocol.CodeNotFound},
		{protocol.SessionOp{Conv: "biz:nosuch", Op: "mute"}, protocol.CodeNotFound},
	}
	for _, c := range cases {
		bob.RequestError(&c.f, c.code)
	}
	servertest.ExpectNoSessionSync(alice, bob, carol)
	if page := bob.Sync(protocol.Sync{Since: cursor}); len(page.Sessions) != 0 {
		t.Fatalf("refused ops changed bob's sessions: %s", servertest.JSON(page.Sessions))
	}
	if got, _ := bob.SyncAll(""); len(got) != 1 {
		t.Fatalf("bob's sessions after refused ops: %v, want only %s", servertest.Convs(got), sessAB)
	}
	// The refused gateway op created no gateway either (checked above: one
	// session); and carol's session of her chat is untouched.
	if s := carol.SessionOf("d:carol:dave"); s.Priority != 0 || s.Deleted {
		t.Fatalf("carol's session changed by bob's refused ops: %s", servertest.JSON(s))
	}
}

// A. An op on a direct chat with no message yet creates the caller's
// session (and only the caller's).
func TestSessionOpCreatesSession(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	bobLaptop := env.DialOnline(t, "bob", "laptop")
	bobPhone := env.DialOnline(t, "bob", "phone")
	carol := env.DialOnline(t, "carol", "laptop")

	got := bobPhone.SessionOp(protocol.SessionOp{Conv: "d:bob:carol", Op: "pin"})
	servertest.WantSameSession(t, "pin of a chat with no message", got, protocol.Session{
		Conv: "d:bob:carol", Kind: "direct", Title: "carol", Members: []string{"bob", "carol"}, Priority: 1,
	})
	if got.ActiveTS <= 0 || got.WriteTS != got.ActiveTS {
		t.Fatalf("created by pin: active_ts %d, write_ts %d; want both set, equal", got.ActiveTS, got.WriteTS)
	}
	servertest.ExpectSessionSync(got.ActiveTS, bobLaptop, bobPhone)
	servertest.ExpectNoSessionSync(carol)
	servertest.WantIdenticalSession(t, "sync after the creating op", bobLaptop.SessionOf("d:bob:carol"), got)
	if all, _ := carol.SyncAll(""); len(all) != 0 {
		t.Fatalf("carol got sessions from bob's op: %v", servertest.Convs(all))
	}

	// Even an op with nothing to do creates the session.
	got = bobLaptop.SessionOp(protocol.SessionOp{Conv: "d:bob:dave", Op: "unmute"})
	servertest.WantSameSession(t, "unmute of a chat with no message", got, protocol.Session{
		Conv: "d:bob:dave", Kind: "direct", Title: "dave", Members: []string{"bob", "dave"},
	})
	servertest.ExpectSessionSync(got.ActiveTS, bobLaptop, bobPhone)
	servertest.WantIdenticalSession(t, "sync after the creating unmute", bobPhone.SessionOf("d:bob:dave"), got)

	// The first message then fills the created session in.
	before := bobLaptop.SessionOf("d:bob:carol")
	m := carol.SendMsg("d:bob:carol", "hello", bobLaptop, bobPhone)
	after := bobLaptop.SessionOf("d:bob:carol")
	want := before
	want.WriteSeq, want.UnreadCount, want.LastMsg = 1, 1, &m
	want.Request = true // carol wrote first
	servertest.WantSameSession(t, "pinned session after the first message", after, want)
	if after.Priority != 1 {
		t.Fatalf("the first message unpinned the session: %s", servertest.JSON(after))
	}
	servertest.ExpectNoSessionSync(bobLaptop, bobPhone, carol)
}

// B. A new message updates both members' sessions without a nudge: the
// recipient's counters, last message and both timestamps; for the sender
// it is an implicit read that also clears marked_unread.
func TestSessionNewMessage(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	aliceLaptop := env.DialOnline(t, "alice", "laptop")
	alicePhone := env.DialOnline(t, "alice", "phone")
	bobLaptop := env.DialOnline(t, "bob", "laptop")
	bobPhone := env.DialOnline(t, "bob", "phone")
	all := []*servertest.Client{aliceLaptop, alicePhone, bobLaptop, bobPhone}

	m1 := aliceLaptop.SendMsg(sessAB, "hello", alicePhone, bobLaptop, bobPhone)
	servertest.ExpectNoSessionSync(all...)
	bob1 := bobLaptop.SessionOf(sessAB)
	alice1 := alicePhone.SessionOf(sessAB)
	servertest.WantSameSession(t, "bob after the first message", bob1, protocol.Session{
		Conv: sessAB, Kind: "direct", Title: "alice", Members: []string{"alice", "bob"},
		UnreadCount: 1, WriteSeq: 1, LastMsg: &m1, Request: true,
	})
	servertest.WantSameSession(t, "alice after her first message", alice1, protocol.Session{
		Conv: sessAB, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
		ReadSeq: 1, WriteSeq: 1, LastMsg: &m1,
	})
	for _, s := range []protocol.Session{bob1, alice1} {
		if s.ActiveTS == 0 || s.WriteTS != s.ActiveTS {
			t.Fatalf("session created by a message: active_ts %d, write_ts %d; want equal, set", s.ActiveTS, s.WriteTS)
		}
	}

	// Alice marks her session unread, then sends: the send clears it.
	marked := alicePhone.SessionOp(protocol.SessionOp{Conv: sessAB, Op: "mark_unread"})
	servertest.ExpectSessionSync(marked.ActiveTS, aliceLaptop, alicePhone)

	m2 := aliceLaptop.SendMsg(sessAB, "hello", alicePhone, bobLaptop, bobPhone)
	servertest.ExpectNoSessionSync(all...)
	bob2 := bobPhone.SessionOf(sessAB)
	want := bob1
	want.WriteSeq, want.UnreadCount, want.LastMsg = 2, 2, &m2
	servertest.WantSameSession(t, "bob after the second message", bob2, want)
	servertest.WantMoved(t, "bob's session on a new message", bob1, bob2, true, true)

	alice2 := aliceLaptop.SessionOf(sessAB)
	want = marked
	want.ReadSeq, want.WriteSeq, want.UnreadCount, want.MarkedUnread, want.LastMsg = 2, 2, 0, false, &m2
	servertest.WantSameSession(t, "alice after sending (implicit read)", alice2, want)
	servertest.WantMoved(t, "alice's session on her own message", marked, alice2, true, true)

	// Bob replies without reading: his read_seq jumps to his message, and
	// alice has one unread (messages from others only).
	m3 := bobPhone.SendMsg(sessAB, "hello", aliceLaptop, alicePhone, bobLaptop)
	servertest.ExpectNoSessionSync(all...)
	bob3 := bobLaptop.SessionOf(sessAB)
	if bob3.ReadSeq != 3 || bob3.UnreadCount != 0 || bob3.WriteSeq != 3 || *bob3.LastMsg != m3 {
		t.Fatalf("bob after replying: %s; want read_seq 3, unread 0, last_msg seq 3", servertest.JSON(bob3))
	}
	alice3 := aliceLaptop.SessionOf(sessAB)
	if alice3.ReadSeq != 2 || alice3.UnreadCount != 1 || alice3.WriteSeq != 3 || *alice3.LastMsg != m3 {
		t.Fatalf("alice after bob's reply: %s; want read_seq 2, unread 1, last_msg seq 3", servertest.JSON(alice3))
	}
	if alice3.Title != "bob" || bob3.Title != "alice" {
		t.Fatalf("titles: alice's %q, bob's %q; want the peer's id", alice3.Title, bob3.Title)
	}
}

// sessKinds are the JSON kinds of the fields of PROTOCOL.md's session
// example; "message" is an object or null.
var sessKinds = map[string]string{
	"conv": "string", "kind": "string", "title": "string", "members": "array",
	"unread_count": "int", "read_seq": "int", "write_seq": "int",
	"active_ts": "int", "write_ts": "int",
	"muted": "bool", "mute_until": "int", "priority": "int", "deleted": "bool", "marked_unread": "bool",
	"category": "string", "sub_biz": "string",
	"last_msg": "message", "ticks": "object",
}

var sessMsgKinds = map[string]string{
	"conv": "string", "seq": "int", "msg_id": "string", "from": "string", "body": "string", "client_ts": "int", "server_ts": "int",
}

// sessCheckKeys requires every key of kinds in obj, with its JSON kind.
func sessCheckKeys(t *testing.T, where string, obj map[string]any, kinds map[string]string) {
	t.Helper()
	for key, kind := range kinds {
		v, ok := obj[key]
		if !ok {
			t.Fatalf("%s: field %q missing in %v", where, key, obj)
		}
		good := false
		switch kind {
		case "string":
			_, good = v.(string)
		case "bool":
			_, good = v.(bool)
		case "array":
			_, good = v.([]any)
		case "object":
			_, good = v.(map[string]any)
		case "int":
			n, isNum := v.(json.Number)
			_, err := n.Int64()
			good = isNum && err == nil
		case "message":
			if v == nil {
				good = true
			} else if m, isObj := v.(map[string]any); isObj {
				sessCheckKeys(t, where+".last_msg", m, sessMsgKinds)
				good = true
			}
		}
		if !good {
			t.Fatalf("%s: field %q is %#v, want a JSON %s", where, key, v, kind)
		}
	}
}

// B. Every field of the session object is on the wire, zero values
// included, both in an op's answer and in a sync.
func TestSessionJSONHasEveryField(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialJSON(t, "bob", "raw")

	// A session with every value zero but active_ts: created by an unpin.
	ok := bob.Request(map[string]any{"type": "session_op", "conv": "d:bob:carol", "op": "unpin"})
	if ok["type"] != "ok" {
		t.Fatalf("unpin: got %v", ok)
	}
	s, isObj := ok["session"].(map[string]any)
	if !isObj {
		t.Fatalf("ok of a session_op carries no session object: %v", ok)
	}
	sessCheckKeys(t, "ok.session", s, sessKinds)
	zero := map[string]any{
		"conv": "d:bob:carol", "kind": "direct", "title": "carol",
		"unread_count": json.Number("0"), "read_seq": json.Number("0"), "write_seq": json.Number("0"), "write_ts": json.Number("0"),
		"muted": false, "mute_until": json.Number("0"), "priority": json.Number("0"), "deleted": false, "marked_unread": false,
		"category": "", "sub_biz": "", "last_msg": nil,
	}
	for key, want := range zero {
		if s[key] != want {
			t.Fatalf("ok.session.%s = %#v, want %#v", key, s[key], want)
		}
	}
	if !reflect.DeepEqual(s["members"], []any{"bob", "carol"}) {
		t.Fatalf("ok.session.members = %#v", s["members"])
	}
	if !reflect.DeepEqual(s["ticks"], map[string]any{"delivered_seq": json.Number("0"), "read_seq": json.Number("0")}) {
		t.Fatalf("ok.session.ticks = %#v, want both boundaries present at 0", s["ticks"])
	}

	// A session with a message, in a sync answer.
	m := alice.SendMsg(sessAB, "hello")
	page := bob.Request(map[string]any{"type": "sync", "since": 0})
	if page["type"] != "sessions" {
		t.Fatalf("sync: got %v", page)
	}
	sessCheckKeys(t, "sessions", page, map[string]string{"sessions": "array", "cursor": "int", "has_more": "bool", "total_unread": "int"})
	sessions := page["sessions"].([]any)
	if len(sessions) != 2 {
		t.Fatalf("sync: %d sessions, want 2: %v", len(sessions), sessions)
	}
	seen := map[string]bool{}
	for i, raw := range sessions {
		s := raw.(map[string]any)
		sessCheckKeys(t, fmt.Sprintf("sessions[%d]", i), s, sessKinds)
		seen[s["conv"].(string)] = true
		if s["conv"] == sessAB {
			lm, ok := s["last_msg"].(map[string]any)
			if !ok || lm["msg_id"] != m.MsgID || lm["from"] != "alice" || lm["body"] != m.Body {
				t.Fatalf("sync: last_msg of %s = %#v, want %+v", sessAB, s["last_msg"], m)
			}
			if s["title"] != "alice" || s["unread_count"] != json.Number("1") {
				t.Fatalf("sync: %s title %v unread %v, want alice, 1", sessAB, s["title"], s["unread_count"])
			}
		}
	}
	if !seen[sessAB] || !seen["d:bob:carol"] {
		t.Fatalf("sync listed %v", seen)
	}
}

// B. Sync orders by ascending active_ts, includes deleted sessions, pages
// with has_more and cursor, and since returns only later changes.
func TestSessionSyncOrderAndPaging(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	alice := env.DialOnline(t, "alice", "laptop")
	carol := env.DialOnline(t, "carol", "laptop")
	dave := env.DialOnline(t, "dave", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")

	alice.SendMsg(sessAB, "hello", bob)
	carol.SendMsg("d:bob:carol", "hello", bob)
	dave.SendMsg("d:bob:dave", "hello", bob)
	bob.SessionOp(protocol.SessionOp{Conv: "d:bob:erin", Op: "pin"})
	bob.SessionOp(protocol.SessionOp{Conv: "d:bob:dave", Op: "delete"})
	bob.SessionOp(protocol.SessionOp{Conv: sessAB, Op: "pin"})
	carol.SendMsg("d:bob:carol", "hello", bob)

	full := bob.Sync(protocol.Sync{Since: 0})
	var order []string
	for _, s := range full.Sessions {
		order = append(order, s.Conv)
	}
	// The order of the last change of each session.
	if want := []string{"d:bob:erin", "d:bob:dave", sessAB, "d:bob:carol"}; !slices.Equal(order, want) {
		t.Fatalf("sync order %v, want %v (ascending active_ts)", order, want)
	}
	if !full.Sessions[1].Deleted {
		t.Fatalf("the deleted session is listed as %s", servertest.JSON(full.Sessions[1]))
	}
	if full.HasMore || full.TotalUnread != 3 {
		t.Fatalf("full sync: has_more %v total_unread %d, want false, 3", full.HasMore, full.TotalUnread)
	}

	// Paging reproduces the full list, whatever the page size; has_more is
	// false exactly on the last page (also when it is exactly full).
	for limit := 1; limit <= 5; limit++ {
		var got []protocol.Session
		since := int64(0)
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("limit %d: paging does not end", limit)
			}
			p := bob.Sync(protocol.Sync{Since: since, Limit: limit})
			got = append(got, p.Sessions...)
			remaining := len(full.Sessions) - len(got)
			if len(p.Sessions) > limit || (remaining > 0) != p.HasMore || (p.HasMore && len(p.Sessions) != limit) {
				t.Fatalf("limit %d, since %d: %d sessions, has_more %v, %d remaining", limit, since, len(p.Sessions), p.HasMore, remaining)
			}
			if p.TotalUnread != full.TotalUnread {
				t.Fatalf("limit %d: page total_unread %d, want %d", limit, p.TotalUnread, full.TotalUnread)
			}
			since = p.Cursor
			if !p.HasMore {
				break
			}
		}
		if !reflect.DeepEqual(got, full.Sessions) {
			t.Fatalf("limit %d: pages give\n%s\nwant\n%s", limit, servertest.JSON(got), servertest.JSON(full.Sessions))
		}
	}

	// since: only what changed after it.
	mid := full.Sessions[1].ActiveTS
	if p := bob.Sync(protocol.Sync{Since: mid}); !reflect.DeepEqual(p.Sessions, full.Sessions[2:]) {
		t.Fatalf("since %d: %s, want the last two of the full list", mid, servertest.JSON(p.Sessions))
	}
	cursor := full.Cursor
	if p := bob.Sync(protocol.Sync{Since: cursor}); len(p.Sessions) != 0 || p.HasMore || p.Cursor != cursor {
		t.Fatalf("since the cursor with no change: %s cursor %d has_more %v", servertest.JSON(p.Sessions), p.Cursor, p.HasMore)
	}
	muted := bob.SessionOp(protocol.SessionOp{Conv: "d:bob:erin", Op: "mute"})
	p := bob.Sync(protocol.Sync{Since: cursor})
	if len(p.Sessions) != 1 || !reflect.DeepEqual(p.Sessions[0], muted) || p.Cursor != muted.ActiveTS {
		t.Fatalf("since %d after a mute: %s cursor %d, want only %s", cursor, servertest.JSON(p.Sessions), p.Cursor, servertest.JSON(muted))
	}
	cursor = p.Cursor
	m := alice.SendMsg(sessAB, "hello", bob)
	p = bob.Sync(protocol.Sync{Since: cursor})
	if len(p.Sessions) != 1 || p.Sessions[0].Conv != sessAB || *p.Sessions[0].LastMsg != m {
		t.Fatalf("since %d after a message: %s, want only %s", cursor, servertest.JSON(p.Sessions), sessAB)
	}
	// A sync is per user: alice sees only her session.
	if a, _ := alice.SyncAll(""); !slices.Equal(servertest.Convs(a), []string{sessAB}) {
		t.Fatalf("alice's sessions: %v", servertest.Convs(a))
	}
}

// B. limit defaults to 200 and is at most 1000; negative values are
// invalid.
func TestSessionSyncLimits(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	// 1001 sessions, created through the store: over the wire each op would
	// also queue a nudge, and the test is about sync.
	ctx := context.Background()
	const n = 1001
	for i := range n {
		conv := fmt.Sprintf("d:bob:u%04d", i)
		if _, err := env.Server.Store().SessionOp(ctx, "bob", conv, session.OpPin, session.OpArgs{}); err != nil {
			t.Fatal(err)
		}
	}
	bob := env.DialOnline(t, "bob", "laptop")

	check := func(q protocol.Sync, want int, more bool) *protocol.Sessions {
		t.Helper()
		p := bob.Sync(q)
		if len(p.Sessions) != want || p.HasMore != more {
			t.Fatalf("sync since %d limit %d: %d sessions, has_more %v; want %d, %v", q.Since, q.Limit, len(p.Sessions), p.HasMore, want, more)
		}
		return p
	}
	def := check(protocol.Sync{}, 200, true)
	if def.Sessions[0].Conv != "d:bob:u0000" || def.Sessions[199].Conv != "d:bob:u0199" {
		t.Fatalf("default page runs %s..%s", def.Sessions[0].Conv, def.Sessions[199].Conv)
	}
	check(protocol.Sync{Limit: 999}, 999, true)
	check(protocol.Sync{Limit: 1000}, 1000, true)
	check(protocol.Sync{Limit: 1001}, 1000, true)
	big := check(protocol.Sync{Limit: 100000}, 1000, true)
	rest := check(protocol.Sync{Since: big.Cursor, Limit: 100000}, 1, false)
	if rest.Sessions[0].Conv != "d:bob:u1000" {
		t.Fatalf("last page holds %s", rest.Sessions[0].Conv)
	}
	check(protocol.Sync{Since: def.Cursor}, 200, true)

	for _, raw := range []string{
		`{"type":"sync","id":"neg-limit","since":0,"limit":-1}`,
		`{"type":"sync","id":"neg-since","since":-1}`,
		`{"type":"sync","id":"bad-sub-biz","since":0,"sub_biz":"Not Valid"}`,
	} {
		var f struct{ ID string }
		if err := json.Unmarshal([]byte(raw), &f); err != nil {
			t.Fatal(err)
		}
		bob.WriteRaw([]byte(raw))
		answer := bob.Expect("answer to "+f.ID, func(g protocol.Frame) bool { return servertest.RequestID(g) == f.ID })
		if e, ok := answer.(*protocol.ErrorFrame); !ok || e.Code != protocol.CodeInvalid {
			t.Fatalf("%s: want error invalid, got %s", raw, servertest.Describe(answer))
		}
	}
}

// C. Acceptance 3: a sender that was offline learns its ticks from sync:
// the receipts moved its session's active_ts (not write_ts).
func TestSessionSyncOfflineSenderLearnsTicks(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	alice.SendMsg(sessAB, "hello", bob)
	m2 := alice.SendMsg(sessAB, "hello", bob)
	page := alice.Sync(protocol.Sync{})
	if len(page.Sessions) != 1 {
		t.Fatalf("alice's sessions: %s", servertest.JSON(page.Sessions))
	}
	s0 := page.Sessions[0]
	if s0.Ticks != (protocol.Ticks{}) {
		t.Fatalf("ticks before bob did anything: %+v", s0.Ticks)
	}
	alice.Close()

	learn := func(since int64, before protocol.Session, want protocol.Ticks) protocol.Session {
		t.Helper()
		again := env.DialOnline(t, "alice", "laptop")
		p := again.Sync(protocol.Sync{Since: since})
		if len(p.Sessions) != 1 {
			t.Fatalf("alice's sync since %d after reconnecting: %s, want her session of %s", since, servertest.JSON(p.Sessions), sessAB)
		}
		got := p.Sessions[0]
		w := before
		w.Ticks = want
		servertest.WantSameSession(t, "alice's session after bob's receipts", got, w)
		servertest.WantMoved(t, "alice's session on receipts for her messages", before, got, true, false)
		again.Close()
		return got
	}

	bob.MarkDelivered(sessAB, m2.Seq)
	s1 := learn(page.Cursor, s0, protocol.Ticks{DeliveredSeq: 2})
	if tick := protocol.TickOf(m2.Seq, s1.Ticks); tick != protocol.TickDelivered {
		t.Fatalf("ticks %+v show message %d as %s, want delivered", s1.Ticks, m2.Seq, tick)
	}

	bob.MarkRead(sessAB, m2.Seq)
	s2 := learn(s1.ActiveTS, s1, protocol.Ticks{DeliveredSeq: 2, ReadSeq: 2})
	if tick := protocol.TickOf(m2.Seq, s2.Ticks); tick != protocol.TickRead || s2.WriteTS != s0.WriteTS {
		t.Fatalf("after bob read: %s shows message %d as %s; want read, write_ts %d", servertest.JSON(s2), m2.Seq, tick, s0.WriteTS)
	}
}

// D. Acceptance 4: delete clears unread (not a receipt) and a new message
// brings the session back.
func TestSessionDeletedComesBack(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	carol := env.DialOnline(t, "carol", "laptop")
	alice.SendMsg(sessAB, "hello", bob)
	alice.SendMsg(sessAB, "hello", bob)
	carol.SendMsg("d:bob:carol", "hello", bob)
	bob.WantTotalUnread("", 3)

	before := bob.SessionOf(sessAB)
	del := bob.SessionOp(protocol.SessionOp{Conv: sessAB, Op: "delete"})
	want := before
	want.Deleted, want.ReadSeq, want.UnreadCount = true, 2, 0
	servertest.WantSameSession(t, "deleted session", del, want)
	servertest.WantMoved(t, "delete", before, del, true, false)
	all := bob.WantTotalUnread("", 1)
	if !all[sessAB].Deleted {
		t.Fatalf("sync does not list the deleted session as deleted: %s", servertest.JSON(all[sessAB]))
	}
	// A soft delete is not a read receipt: alice's ticks stay.
	servertest.WantNoStatus(alice)
	alice.WantReceipt(sessAB, "bob", 0, 0)

	m3 := alice.SendMsg(sessAB, "hello", bob)
	back := bob.WantTotalUnread("", 2)[sessAB]
	want = del
	want.Deleted, want.WriteSeq, want.UnreadCount, want.LastMsg = false, 3, 1, &m3
	servertest.WantSameSession(t, "deleted session after a new message", back, want)
	servertest.WantMoved(t, "a message to a deleted session", del, back, true, true)
}

// D. mark_unread never lowers read_seq, changes neither unread_count nor
// total_unread, and is cleared by the next read, send or mute.
func TestSessionMarkUnread(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	for range 3 {
		alice.SendMsg(sessAB, "hello", bob)
	}
	bob.MarkRead(sessAB, 1)
	servertest.ExpectSessionSync(bob.SessionOf(sessAB).ActiveTS, bob)

	markUnread := func() protocol.Session {
		t.Helper()
		all, page := bob.SyncAll("")
		before := all[sessAB]
		got := bob.SessionOp(protocol.SessionOp{Conv: sessAB, Op: "mark_unread"})
		want := before
		want.MarkedUnread = true
		servertest.WantSameSession(t, "mark_unread", got, want)
		servertest.WantMoved(t, "mark_unread", before, got, true, true)
		servertest.ExpectSessionSync(got.ActiveTS, bob)
		bob.WantTotalUnread("", page.TotalUnread)
		return got
	}
	clears := func(what string, before, after protocol.Session, want protocol.Session) {
		t.Helper()
		servertest.WantSameSession(t, what, after, want)
		if after.MarkedUnread {
			t.Fatalf("%s did not clear marked_unread", what)
		}
		if after.ActiveTS <= before.ActiveTS {
			t.Fatalf("%s: active_ts did not move", what)
		}
	}

	// Cleared by a read, even one that moves read_seq nowhere.
	m := markUnread()
	if m.ReadSeq != 1 || m.UnreadCount != 2 {
		t.Fatalf("mark_unread moved read_seq/unread: %s", servertest.JSON(m))
	}
	bob.MarkRead(sessAB, 1)
	after := bob.SessionOf(sessAB)
	want := m
	want.MarkedUnread = false
	clears("a read at the current read_seq", m, after, want)
	servertest.ExpectSessionSync(after.ActiveTS, bob)

	m = markUnread()
	bob.MarkRead(sessAB, 2)
	after = bob.SessionOf(sessAB)
	want.ReadSeq, want.UnreadCount = 2, 1
	want.Ticks = protocol.Ticks{DeliveredSeq: 2, ReadSeq: 2}
	clears("a read", m, after, want)
	servertest.ExpectSessionSync(after.ActiveTS, bob)
	bob.WantTotalUnread("", 1)

	// Cleared by a send.
	m = markUnread()
	sent := bob.SendMsg(sessAB, "hello", alice)
	after = bob.SessionOf(sessAB)
	want.ReadSeq, want.WriteSeq, want.UnreadCount, want.LastMsg = 4, 4, 0, &sent
	want.Request = false                                     // bob's first send answers alice's request
	want.Ticks = protocol.Ticks{DeliveredSeq: 3, ReadSeq: 3} // alice is at 3, bob at 4
	clears("a send", m, after, want)
	bob.WantTotalUnread("", 0)

	// Cleared by a mute; on a fully read session it leaves read_seq alone.
	m = markUnread()
	if m.ReadSeq != 4 || m.UnreadCount != 0 {
		t.Fatalf("mark_unread of a read session: %s", servertest.JSON(m))
	}
	after = bob.SessionOp(protocol.SessionOp{Conv: sessAB, Op: "mute"})
	want.Muted = true
	clears("a mute", m, after, want)
	servertest.ExpectSessionSync(after.ActiveTS, bob)
}

// D. A mute with until ends by itself at that time: total_unread leaves
// the session out until then and counts it again after.
func TestSessionMuteUntilExpires(t *testing.T) {
	clk := servertest.NewClock()
	env := servertest.Start(t, clk.Use)
	alice := env.DialOnline(t, "alice", "laptop")
	carol := env.DialOnline(t, "carol", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	alice.SendMsg(sessAB, "hello", bob)
	alice.SendMsg(sessAB, "hello", bob)
	carol.SendMsg("d:bob:carol", "hello", bob)
	bob.WantTotalUnread("", 3)

	until := clk.Ms() + sessHour
	muted := bob.SessionOp(protocol.SessionOp{Conv: sessAB, Op: "mute", Until: until})
	if !muted.Muted || muted.MuteUntil != until {
		t.Fatalf("mute until %d: %s", until, servertest.JSON(muted))
	}
	servertest.ExpectSessionSync(muted.ActiveTS, bob)
	bob.WantTotalUnread("", 1)

	clk.Advance(time.Hour - time.Millisecond) // one ms before the end
	s := bob.WantTotalUnread("", 1)[sessAB]
	servertest.WantIdenticalSession(t, "a mute one ms before its end", s, muted)

	clk.Advance(2 * time.Millisecond) // past the end
	p := bob.Sync(protocol.Sync{Since: muted.ActiveTS})
	if len(p.Sessions) != 1 || p.Sessions[0].Conv != sessAB {
		t.Fatalf("sync after the mute ended: %s, want the session of %s (its mute ended: a change)", servertest.JSON(p.Sessions), sessAB)
	}
	ended := p.Sessions[0]
	want := muted
	want.Muted, want.MuteUntil = false, 0
	servertest.WantSameSession(t, "the session after its mute ended", ended, want)
	servertest.WantMoved(t, "a mute ending", muted, ended, true, false)
	if p.TotalUnread != 3 {
		t.Fatalf("total_unread after the mute ended: %d, want 3", p.TotalUnread)
	}
	bob.WantTotalUnread("", 3)

	// The mute is over for good: a new message counts.
	alice.SendMsg(sessAB, "hello", bob)
	bob.WantTotalUnread("", 4)
}

// E. Acceptance 5: an account filed under a sub-business appears, for the
// other member, in the nested list; the main list holds a gateway session
// that sums its unread and carries its newest message.
func TestSessionSubBizGateway(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	ctx := context.Background()
	if err := env.Server.Store().SetAccount(ctx, "shop", "promotions", "shopbiz"); err != nil {
		t.Fatal(err)
	}
	if err := env.Server.Store().SetAccount(ctx, "shop2", "", "shopbiz"); err != nil {
		t.Fatal(err)
	}
	const gw, shopConv, shop2Conv = "biz:shopbiz", "d:bob:shop", "d:bob:shop2"
	alice := env.DialOnline(t, "alice", "laptop")
	shop := env.DialOnline(t, "shop", "laptop")
	shop2 := env.DialOnline(t, "shop2", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	bobPhone := env.DialOnline(t, "bob", "phone")

	alice.SendMsg(sessAB, "hello", bob, bobPhone)
	shop.SendMsg(shopConv, "hello", bob, bobPhone)
	s2 := shop.SendMsg(shopConv, "hello", bob, bobPhone)
	servertest.ExpectNoSessionSync(bob, bobPhone) // member messages do not nudge either

	gateway := func(wantUnread int64, wantLast protocol.Message, mainTotal int64) protocol.Session {
		t.Helper()
		main := bob.WantTotalUnread("", mainTotal)
		for _, conv := range []string{shopConv, shop2Conv} {
			if s, ok := main[conv]; ok {
				t.Fatalf("the main list holds the sub-business member %s", servertest.JSON(s))
			}
		}
		g, ok := main[gw]
		if !ok {
			t.Fatalf("the main list has no gateway %s: %v", gw, servertest.Convs(main))
		}
		if g.Kind != "biz" || g.SubBiz != "" || g.Deleted || g.UnreadCount != wantUnread || g.LastMsg == nil || *g.LastMsg != wantLast {
			t.Fatalf("gateway %s, want kind biz, unread %d, last_msg %+v", servertest.JSON(g), wantUnread, wantLast)
		}
		nested := bob.WantTotalUnread("shopbiz", wantUnread)
		var sum int64
		for _, s := range nested {
			sum += s.UnreadCount
		}
		if sum != g.UnreadCount {
			t.Fatalf("gateway unread %d, its members' unread sum to %d", g.UnreadCount, sum)
		}
		return g
	}
	g1 := gateway(2, s2, 3)

	// A second member: the gateway sums both and carries the newest.
	t1 := shop2.SendMsg(shop2Conv, "hello", bob, bobPhone)
	g2 := gateway(3, t1, 4)
	servertest.WantMoved(t, "gateway on a new member message", g1, g2, true, true)
	s3 := shop.SendMsg(shopConv, "hello", bob, bobPhone)
	g3 := gateway(4, s3, 5)
	servertest.WantMoved(t, "gateway on a newer member message", g2, g3, true, true)

	// A member that moves in the list (pin) moves the gateway too, but the
	// gateway keeps the newest member message, not the pinned member's.
	pinned := bob.SessionOp(protocol.SessionOp{Conv: shop2Conv, Op: "pin"})
	servertest.ExpectSessionSync(bob.SessionOf(gw).ActiveTS, bob, bobPhone)
	g3p := gateway(4, s3, 5)
	servertest.WantMoved(t, "gateway on a member's pin", g3, g3p, true, true)
	if pinned.Priority != 1 || g3p.Priority != 0 {
		t.Fatalf("pin of a member: member %s, gateway %s", servertest.JSON(pinned), servertest.JSON(g3p))
	}
	g3 = g3p

	// The nested list: the members, filed.
	nested, _ := bob.SyncAll("shopbiz")
	if got := servertest.Convs(nested); !slices.Equal(got, []string{shopConv, shop2Conv}) {
		t.Fatalf("nested list %v", got)
	}
	servertest.WantSameSession(t, "bob's session with shop", nested[shopConv], protocol.Session{
		Conv: shopConv, Kind: "direct", Title: "shop", Members: []string{"bob", "shop"},
		UnreadCount: 3, WriteSeq: 3, Category: "promotions", SubBiz: "shopbiz", LastMsg: &s3, Request: true,
	})
	servertest.WantSameSession(t, "bob's session with shop2", nested[shop2Conv], protocol.Session{
		Conv: shop2Conv, Kind: "direct", Title: "shop2", Members: []string{"bob", "shop2"},
		UnreadCount: 1, WriteSeq: 1, SubBiz: "shopbiz", LastMsg: &t1, Priority: 1, Request: true,
	})

	// Reading a member lowers the gateway's unread (and the totals); the
	// gateway does not move in the list; every device is nudged to the
	// user's newest active_ts.
	bobPhone.MarkRead(shopConv, s3.Seq)
	g4 := gateway(1, s3, 2)
	servertest.WantMoved(t, "gateway on a member read", g3, g4, true, false)
	read := bob.SessionIn("shopbiz", shopConv)
	if read.UnreadCount != 0 || read.ReadSeq != 3 {
		t.Fatalf("member after the read: %s", servertest.JSON(read))
	}
	servertest.ExpectSessionSync(max(g4.ActiveTS, read.ActiveTS), bob, bobPhone)
	servertest.ExpectNoSessionSync(shop, shop2, alice)

	// Session ops apply to the gateway like to any session: muting it
	// takes its unread out of the main total.
	gm := bob.SessionOp(protocol.SessionOp{Conv: gw, Op: "mute"})
	if !gm.Muted || gm.UnreadCount != 1 {
		t.Fatalf("muted gateway: %s", servertest.JSON(gm))
	}
	servertest.ExpectSessionSync(gm.ActiveTS, bob, bobPhone)
	bob.WantTotalUnread("", 1)
	bob.WantTotalUnread("shopbiz", 1)

	// Shop's own session of the chat is not filed: the filing is for the
	// other member.
	shopMain, _ := shop.SyncAll("")
	if got := servertest.Convs(shopMain); !slices.Equal(got, []string{shopConv}) {
		t.Fatalf("shop's main list %v, want only %s", got, shopConv)
	}
	if s := shopMain[shopConv]; s.SubBiz != "" || s.Category != "" || s.Title != "bob" {
		t.Fatalf("shop's own session is filed: %s", servertest.JSON(s))
	}
	if n, _ := shop.SyncAll("shopbiz"); len(n) != 0 {
		t.Fatalf("shop's nested list: %v", servertest.Convs(n))
	}
}

// E. A category-only account files the other member's session under that
// category in the main list; the user's own set_category overrides it.
func TestSessionAccountCategory(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	if err := env.Server.Store().SetAccount(context.Background(), "news", "promotions", ""); err != nil {
		t.Fatal(err)
	}
	news := env.DialOnline(t, "news", "laptop")
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	news.SendMsg("d:bob:news", "hello", bob)
	alice.SendMsg(sessAB, "hello", bob)

	main := bob.WantTotalUnread("", 2)
	if s := main["d:bob:news"]; s.Category != "promotions" || s.SubBiz != "" {
		t.Fatalf("bob's session with news: %s, want category promotions in the main list", servertest.JSON(s))
	}
	if s := main[sessAB]; s.Category != "" {
		t.Fatalf("bob's session with alice is filed: %s", servertest.JSON(s))
	}
	if s := news.SessionOf("d:bob:news"); s.Category != "" {
		t.Fatalf("news's own session is filed: %s", servertest.JSON(s))
	}

	for _, cat := range []string{"", "work"} {
		got := bob.SessionOp(protocol.SessionOp{Conv: "d:bob:news", Op: "set_category", Category: cat})
		if got.Category != cat {
			t.Fatalf("set_category %q: %s", cat, servertest.JSON(got))
		}
		servertest.ExpectSessionSync(got.ActiveTS, bob)
		// The account's category does not come back with new messages.
		news.SendMsg("d:bob:news", "hello", bob)
		if s := bob.SessionOf("d:bob:news"); s.Category != cat {
			t.Fatalf("after set_category %q and a new message: category %q", cat, s.Category)
		}
	}
}

// F. total_unread is the sum of unread_count over the sessions that are
// neither muted nor deleted, through a mix of operations, in the main list
// (with a gateway) and a nested one.
func TestSessionTotalUnread(t *testing.T) {
	clk := servertest.NewClock()
	env := servertest.Start(t, clk.Use)
	if err := env.Server.Store().SetAccount(context.Background(), "shop", "", "shopbiz"); err != nil {
		t.Fatal(err)
	}
	alice := env.DialOnline(t, "alice", "laptop")
	carol := env.DialOnline(t, "carol", "laptop")
	dave := env.DialOnline(t, "dave", "laptop")
	shop := env.DialOnline(t, "shop", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	const ac, bc, bd, bs, gw = sessAB, "d:bob:carol", "d:bob:dave", "d:bob:shop", "biz:shopbiz"

	send := func(c *servertest.Client, conv string, n int) {
		t.Helper()
		for range n {
			c.SendMsg(conv, "hello", bob)
		}
	}
	op := func(conv, name string, until int64) {
		t.Helper()
		bob.SessionOp(protocol.SessionOp{Conv: conv, Op: name, Until: until})
	}
	check := func(step string, main, nested int64) {
		t.Helper()
		t.Logf("step: %s", step)
		bob.WantTotalUnread("", main)
		bob.WantTotalUnread("shopbiz", nested)
	}

	send(alice, ac, 3)
	send(carol, bc, 2)
	send(dave, bd, 1)
	send(shop, bs, 2)
	check("messages", 8, 2)
	op(bc, "mute", 0)
	check("mute carol", 6, 2)
	op(bd, "delete", 0)
	check("delete dave", 5, 2)
	op(ac, "mark_unread", 0)
	op(ac, "pin", 0)
	check("mark_unread and pin alice", 5, 2)
	bob.MarkRead(ac, 1)
	check("read alice to 1", 4, 2) // alice 2 + gateway 2
	send(carol, bc, 1)
	check("message to muted carol", 4, 2)
	send(dave, bd, 2)
	check("messages bring dave back", 6, 2) // + dave 2
	op(bs, "mute", 0)
	check("mute the shop member", 4, 0)
	op(bs, "unmute", 0)
	check("unmute the shop member", 6, 2)
	op(gw, "mute", clk.Ms()+sessHour)
	check("mute the gateway for an hour", 4, 2)
	send(shop, bs, 1)
	check("message to a muted gateway's member", 4, 3)
	op(bs, "mute", clk.Ms()+sessHour/2)
	check("mute the shop member for half an hour", 4, 0)
	op(bc, "unmute", 0)
	check("unmute carol", 7, 0) // + carol 3
	clk.Advance(time.Hour + time.Millisecond)
	check("both mutes ended", 10, 3)
	op(ac, "delete", 0)
	check("delete alice", 8, 3)
	op(gw, "delete", 0)
	check("delete the gateway (its members stay unread)", 5, 3)
	bob.MarkRead(bs, 1)
	check("read a member of the deleted gateway", 5, 2)
	send(shop, bs, 1)
	check("a member message brings the gateway back", 8, 3) // carol 3 + dave 2 + gateway 3
	bob.MarkRead(bs, 100)
	check("read shop (clamped)", 5, 0)
}

// A. The session read clears marked_unread even in a chat with no message
// yet (the read clamps to 0 but is still the user's read).
func TestSessionReadClearsMarkUnreadWithoutMessages(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	bob := env.DialOnline(t, "bob", "laptop")
	marked := bob.SessionOp(protocol.SessionOp{Conv: "d:bob:carol", Op: "mark_unread"})
	servertest.ExpectSessionSync(marked.ActiveTS, bob)
	bob.MarkRead("d:bob:carol", 0)
	got := bob.SessionOf("d:bob:carol")
	if got.MarkedUnread || got.ActiveTS <= marked.ActiveTS {
		t.Fatalf("read of a marked-unread chat with no message: %s; want marked_unread false, active_ts above %d", servertest.JSON(got), marked.ActiveTS)
	}
	servertest.ExpectSessionSync(got.ActiveTS, bob)
}

// Timestamps are per user strictly increasing, even when the server's
// clock stands still or steps back.
func TestSessionTimestampsNeverGoBack(t *testing.T) {
	clk := servertest.NewClock()
	env := servertest.Start(t, clk.Use)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	alice.SendMsg(sessAB, "hello", bob)
	prev := bob.SessionOf(sessAB)
	if prev.ActiveTS != clk.Ms() {
		t.Fatalf("active_ts %d, want the server clock %d", prev.ActiveTS, clk.Ms())
	}
	for i, step := range []func(){
		func() { bob.SessionOp(protocol.SessionOp{Conv: sessAB, Op: "pin"}) },
		func() { clk.Advance(-time.Hour); bob.SessionOp(protocol.SessionOp{Conv: sessAB, Op: "mark_unread"}) },
		func() { alice.SendMsg(sessAB, "hello", bob) },
		func() { clk.Advance(-time.Hour); alice.SendMsg(sessAB, "hello", bob) },
		func() { bob.SessionOp(protocol.SessionOp{Conv: "d:bob:carol", Op: "pin"}) },
	} {
		step()
		all, _ := bob.SyncAll("") // strictly ascending, so all distinct
		cur := all[sessAB]
		if c, ok := all["d:bob:carol"]; ok {
			cur = c
		}
		if cur.ActiveTS <= prev.ActiveTS || cur.WriteTS <= prev.WriteTS {
			t.Fatalf("step %d (clock %d): active_ts %d write_ts %d, not above the previous %d, %d",
				i, clk.Ms(), cur.ActiveTS, cur.WriteTS, prev.ActiveTS, prev.WriteTS)
		}
		prev = cur
	}
	// Once the clock is ahead again, timestamps follow it.
	clk.Advance(3 * time.Hour)
	got := bob.SessionOp(protocol.SessionOp{Conv: sessAB, Op: "unpin"})
	if got.ActiveTS != clk.Ms() {
		t.Fatalf("active_ts %d after the clock moved ahead, want %d", got.ActiveTS, clk.Ms())
	}
}

// F. Counts never drift when messages, reads and operations on one user's
// sessions run at once from several devices and senders.
func TestSessionConcurrentWritesKeepCounts(t *testing.T) {
	env := servertest.Start(t, servertest.NewClock().Use)
	if err := env.Server.Store().SetAccount(context.Background(), "shop", "", "shopbiz"); err != nil {
		t.Fatal(err)
	}
	async := servertest.Async{TB: t}
	dial := func(user, device string) *servertest.Client { return env.DialOnline(async, user, device) }
	const n = 25
	const ac, bc, bd, bs, gw = sessAB, "d:bob:carol", "d:bob:dave", "d:bob:shop", "biz:shopbiz"
	senders := map[string]*servertest.Client{ac: dial("alice", "x"), bc: dial("carol", "x"), bs: dial("shop", "x")}
	bob1, bob2 := dial("bob", "one"), dial("bob", "two")

	var wg sync.WaitGroup
	run := func(fn func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn()
		}()
	}
	for conv, c := range senders {
		run(func() {
			for i := range n {
				c.RequestOK(&protocol.Send{Conv: conv, MsgID: fmt.Sprintf("c-%d", i), Body: "x"})
			}
		})
	}
	run(func() { // bob replies to dave and reads
		for i := range n {
			bob1.RequestOK(&protocol.Send{Conv: bd, MsgID: fmt.Sprintf("b-%d", i), Body: "x"})
			bob1.RequestOK(&protocol.Read{Marks: []protocol.Mark{{Conv: ac, Seq: int64(i)}, {Conv: bs, Seq: int64(i)}}})
			op := []string{"mute", "unmute", "pin", "unpin", "mark_unread"}[i%5]
			bob1.RequestOK(&protocol.SessionOp{Conv: bc, Op: op})
		}
	})
	run(func() { // bob's other device works on the same sessions
		for i := range n {
			op := []string{"mark_unread", "delete", "mute", "unmute", "set_category"}[i%5]
			conv := []string{ac, bs, bc, gw}[i%4]
			if conv == gw && op == "set_category" {
				op = "pin"
			}
			if f := bob2.Request(&protocol.SessionOp{Conv: conv, Op: op, Category: "c"}); f.FrameType() != "ok" {
				// The gateway exists from shop's first message on.
				if e, isErr := f.(*protocol.ErrorFrame); !isErr || conv != gw || e.Code != protocol.CodeNotFound {
					t.Errorf("%s on %s: %s", op, conv, servertest.Describe(f))
				}
			}
			bob2.RequestOK(&protocol.Read{Marks: []protocol.Mark{{Conv: bc, Seq: int64(i)}}})
		}
	})
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	check := func() map[string]protocol.Session {
		t.Helper()
		main := bob1.WantTotalUnread("", -1)
		nested := bob1.WantTotalUnread("shopbiz", -1)
		for conv, want := range map[string]int64{ac: n, bc: n, bd: n} {
			if s := main[conv]; s.WriteSeq != want {
				t.Fatalf("%s: write_seq %d, want %d", conv, s.WriteSeq, want)
			}
		}
		if s := nested[bs]; s.WriteSeq != n {
			t.Fatalf("%s: write_seq %d, want %d", bs, s.WriteSeq, n)
		}
		_, page := bob1.SyncAll("shopbiz")
		if g := main[gw]; g.UnreadCount != page.TotalUnread {
			t.Fatalf("gateway unread %d, nested total %d", g.UnreadCount, page.TotalUnread)
		}
		return main
	}
	check()
	// Unmute everything and read everything: every count is 0.
	for _, conv := range []string{ac, bc, bd, bs, gw} {
		bob2.SessionOp(protocol.SessionOp{Conv: conv, Op: "unmute"})
	}
	bob2.MarkOK(&protocol.Read{Marks: []protocol.Mark{{Conv: ac, Seq: n}, {Conv: bc, Seq: n}, {Conv: bd, Seq: n}, {Conv: bs, Seq: n}}})
	main := check()
	for conv, s := range main {
		if s.UnreadCount != 0 || s.Muted {
			t.Fatalf("after unmuting and reading all: %s", servertest.JSON(main[conv]))
		}
	}
	bob1.WantTotalUnread("", 0)
	bob1.WantTotalUnread("shopbiz", 0)
}
