package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// sessionTests are the promises of the session model (package session,
// after the source design's session model).
var sessionTests = []storeTest{
	{"SessionOpMovesTimestamps", testSessionOpMovesTimestamps},
	{"SessionCreatedOnFirstMessage", testSessionCreatedOnFirstMessage},
	{"SyncPaging", testSyncPaging},
	{"SyncSinceReturnsLaterChanges", testSyncSinceReturnsLaterChanges},
	{"SyncLimitMustBePositive", testSyncLimitMustBePositive},
	{"SessionOps", testSessionOps},
	{"SessionOpCreatesSession", testSessionOpCreatesSession},
	{"SessionOpSetCategoryNoChange", testSessionOpSetCategoryNoChange},
	{"SessionOpUnknownGateway", testSessionOpUnknownGateway},
	{"MarkReadIsSessionRead", testMarkReadIsSessionRead},
	{"MarkDeliveredLeavesMarkerSession", testMarkDeliveredLeavesMarkerSession},
	{"TicksMoveSenderActiveTS", testTicksMoveSenderActiveTS},
	{"DeleteThenMessage", testDeleteThenMessage},
	{"MarkedUnreadCleared", testMarkedUnreadCleared},
	{"TotalUnread", testTotalUnread},
	{"TimestampsStrictlyIncreasing", testTimestampsStrictlyIncreasing},
	{"TimestampsConcurrent", testTimestampsConcurrent},
	{"AccountFiling", testAccountFiling},
	{"SubBizGateway", testSubBizGateway},
	{"SubBizGatewayLastMsgIsNewest", testSubBizGatewayLastMsgIsNewest},
}

// syncAll returns every session of user's list (sub "" = main), paging.
func syncAll(t *testing.T, s Engine, user, sub string) store.SyncPage {
	t.Helper()
	var all store.SyncPage
	since := int64(0)
	for {
		page, err := s.Sync(t.Context(), user, store.SyncQuery{Since: since, Limit: 7, SubBiz: sub})
		if err != nil {
			t.Fatalf("Sync(%s, %d): %v", user, since, err)
		}
		all.Sessions = append(all.Sessions, page.Sessions...)
		all.TotalUnread, all.Cursor = page.TotalUnread, page.Cursor
		if !page.HasMore {
			return all
		}
		since = page.Cursor
	}
}

func sessionOp(t *testing.T, s Engine, user, conv string, op session.Op, args session.OpArgs) store.SessionResult {
	t.Helper()
	res, err := s.SessionOp(t.Context(), user, conv, op, args)
	if err != nil {
		t.Fatalf("SessionOp(%s, %s, %s): %v", user, conv, op, err)
	}
	return res
}

func testSessionOpMovesTimestamps(t *testing.T, s Engine) {
	send(t, s, dAB, alice, "m1")
	before := syncAll(t, s, bob, "").Sessions[0]

	pin := sessionOp(t, s, bob, dAB, session.OpPin, session.OpArgs{})
	if !pin.Changed || pin.Session.Priority != 1 || pin.Session.ActiveTS <= before.ActiveTS || pin.Session.WriteTS <= before.WriteTS {
		t.Fatalf("pin: %+v, before %+v: want priority 1 and both timestamps moved", pin, before)
	}
	again := sessionOp(t, s, bob, dAB, session.OpPin, session.OpArgs{})
	if again.Changed || again.Session.ActiveTS != pin.Session.ActiveTS {
		t.Fatalf("pinning a pinned session changed it: %+v", again)
	}
	mute := sessionOp(t, s, bob, dAB, session.OpMute, session.OpArgs{})
	if !mute.Changed || !mute.Session.Muted || mute.Session.ActiveTS <= pin.Session.ActiveTS || mute.Session.WriteTS != pin.Session.WriteTS {
		t.Fatalf("mute: %+v: want active_ts moved, write_ts kept", mute)
	}
	if got := syncAll(t, s, bob, "").TotalUnread; got != 0 {
		t.Fatalf("total unread with the only session muted = %d, want 0", got)
	}
}

// farFuture is a mute end no test clock reaches (2100-01-01).
const farFuture = 4102444800000

// findSession returns the session of conv in sessions.
func findSession(sessions []protocol.Session, conv string) (protocol.Session, bool) {
	for _, ss := range sessions {
		if ss.Conv == conv {
			return ss, true
		}
	}
	return protocol.Session{}, false
}

// checkList checks a whole list of user (sub "" = main): strictly ascending
// and so distinct active_ts, each conversation once, every session in the
// list asked, write_ts never ahead of active_ts, and total_unread the sum of
// unread_count over the sessions neither muted nor deleted.
func checkList(t *testing.T, user, sub string, page store.SyncPage) {
	t.Helper()
	seen := map[string]bool{}
	var sum int64
	for i, ss := range page.Sessions {
		if i > 0 && ss.ActiveTS <= page.Sessions[i-1].ActiveTS {
			t.Errorf("Sync(%s, %q): active_ts %d of %s after %d of %s: not strictly ascending",
				user, sub, ss.ActiveTS, ss.Conv, page.Sessions[i-1].ActiveTS, page.Sessions[i-1].Conv)
		}
		if seen[ss.Conv] {
			t.Errorf("Sync(%s, %q): %s listed twice", user, sub, ss.Conv)
		}
		seen[ss.Conv] = true
		if ss.SubBiz != sub {
			t.Errorf("Sync(%s, %q): %s has sub_biz %q", user, sub, ss.Conv, ss.SubBiz)
		}
		if ss.WriteTS > ss.ActiveTS {
			t.Errorf("Sync(%s, %q): %s write_ts %d > active_ts %d", user, sub, ss.Conv, ss.WriteTS, ss.ActiveTS)
		}
		if !ss.Muted && !ss.Deleted {
			sum += ss.UnreadCount
		}
	}
	if page.TotalUnread != sum {
		t.Errorf("Sync(%s, %q): total_unread = %d, want %d (the sum over sessions neither muted nor deleted)",
			user, sub, page.TotalUnread, sum)
	}
}

// list syncs the whole of one of user's lists and checks it.
func list(t *testing.T, s Engine, user, sub string) store.SyncPage {
	t.Helper()
	page := syncAll(t, s, user, sub)
	checkList(t, user, sub, page)
	return page
}

// sessionOf returns user's session of conv from list sub; it fails the
// test when there is none.
func sessionOf(t *testing.T, s Engine, user, conv, sub string) protocol.Session {
	t.Helper()
	ss, ok := findSession(list(t, s, user, sub).Sessions, conv)
	if !ok {
		t.Fatalf("Sync(%s, %q): no session %s", user, sub, conv)
	}
	return ss
}

// checkTotal checks user's total unread of list sub.
func checkTotal(t *testing.T, s Engine, user, sub string, want int64) {
	t.Helper()
	if got := list(t, s, user, sub).TotalUnread; got != want {
		t.Errorf("total_unread of %s (%q) = %d, want %d", user, sub, got, want)
	}
}

// newestActive is the highest active_ts of user's main list and the
// nested lists subs.
func newestActive(t *testing.T, s Engine, user string, subs ...string) int64 {
	t.Helper()
	var newest int64
	for _, sub := range append([]string{""}, subs...) {
		for _, ss := range list(t, s, user, sub).Sessions {
			newest = max(newest, ss.ActiveTS)
		}
	}
	return newest
}

// changedSince returns the conversations of user's list sub changed after
// since, in the order Sync returns them.
func changedSince(t *testing.T, s Engine, user, sub string, since int64) []string {
	t.Helper()
	page, err := s.Sync(t.Context(), user, store.SyncQuery{Since: since, Limit: 1000, SubBiz: sub})
	if err != nil {
		t.Fatalf("Sync(%s, %d): %v", user, since, err)
	}
	convs := []string{}
	for _, ss := range page.Sessions {
		convs = append(convs, ss.Conv)
	}
	return convs
}

// appendTo sends a new message in conv with the given members.
func appendTo(t *testing.T, s Engine, conv, from, msgID string, members ...string) store.AppendResult {
	t.Helper()
	req := request(conv, from, msgID)
	req.Members = members
	res := appendOK(t, s, req)
	if res.Duplicate {
		t.Fatalf("Append(%s, %s): Duplicate = true for a new message", conv, msgID)
	}
	return res
}

// markRes marks and returns the whole result; it fails the test on error.
func markRes(t *testing.T, s Engine, user string, kind store.MarkKind, marks ...protocol.Mark) store.MarkResult {
	t.Helper()
	res, err := s.Mark(t.Context(), user, kind, marks)
	if err == nil {
		err = res.Written(t.Context())
	}
	if err != nil {
		t.Fatalf("Mark(%s, %v, %+v): %v", user, kind, marks, err)
	}
	return res
}

// checkSame fails when a session changed.
func checkSame(t *testing.T, what string, got, want protocol.Session) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s changed the session:\n got %+v\nwant %+v", what, got, want)
	}
}

func testSessionCreatedOnFirstMessage(t *testing.T, s Engine) {
	// A group's first message is its creation's, here by alice.
	first := createGroup(t, s, gTeam, alice, membersOf[gTeam]...)
	if first.Msg.Seq != 1 || first.Msg.From != alice || first.Msg.Kind != protocol.KindSystem {
		t.Fatalf("creation message = %+v, want a system message from alice at seq 1", first.Msg)
	}
	for _, user := range []string{alice, bob, carol} {
		ss := sessionOf(t, s, user, gTeam, "")
		// The creation is a system message: an event, not unread
		// (PROTOCOL.md, Sessions).
		wantRead, wantUnread := int64(0), int64(0)
		if user == alice {
			wantRead = 1
		}
		if ss.Kind != "group" || ss.WriteSeq != 1 || ss.ReadSeq != wantRead || ss.UnreadCount != wantUnread {
			t.Errorf("%s's session after the first message = %+v, want kind group, write_seq 1, read_seq %d, unread %d",
				user, ss, wantRead, wantUnread)
		}
		if ss.LastMsg == nil || *ss.LastMsg != first.Msg {
			t.Errorf("%s's last_msg = %+v, want %+v", user, ss.LastMsg, first.Msg)
		}
		if ss.ActiveTS <= 0 || ss.WriteTS <= 0 {
			t.Errorf("%s's session: active_ts %d, write_ts %d, want both set", user, ss.ActiveTS, ss.WriteTS)
		}
		if ss.Deleted || ss.Muted || ss.MarkedUnread || ss.Priority != 0 {
			t.Errorf("%s's new session = %+v, want no flags", user, ss)
		}
	}

	// Unread counts up for the others (the creation not among them); each
	// sender is read up to its own message.
	send(t, s, gTeam, bob, "g2")
	last := send(t, s, gTeam, alice, "g3")
	for _, c := range []struct {
		user         string
		read, unread int64
	}{{alice, 3, 0}, {bob, 2, 1}, {carol, 0, 2}} {
		ss := sessionOf(t, s, c.user, gTeam, "")
		if ss.WriteSeq != 3 || ss.ReadSeq != c.read || ss.UnreadCount != c.unread {
			t.Errorf("%s: write_seq %d, read_seq %d, unread %d, want 3, %d, %d",
				c.user, ss.WriteSeq, ss.ReadSeq, ss.UnreadCount, c.read, c.unread)
		}
		if ss.LastMsg == nil || *ss.LastMsg != last.Msg {
			t.Errorf("%s's last_msg = %+v, want %+v", c.user, ss.LastMsg, last.Msg)
		}
	}
	checkTotal(t, s, carol, "", 2)
	checkTotal(t, s, bob, "", 1)
	checkTotal(t, s, alice, "", 0)

	// A direct chat: both members, titled with the peer.
	send(t, s, dAB, bob, "d1")
	for _, user := range []string{alice, bob} {
		ss := sessionOf(t, s, user, dAB, "")
		peer := alice
		if user == alice {
			peer = bob
		}
		if ss.Kind != "direct" || ss.Title != peer || !slices.Equal(ss.Members, []string{alice, bob}) {
			t.Errorf("%s's direct session = %+v, want kind direct, title %s, members [alice bob]", user, ss, peer)
		}
	}
	checkTotal(t, s, alice, "", 1)
	// Nobody else got a session.
	if page := list(t, s, carol, ""); len(page.Sessions) != 1 {
		t.Errorf("carol's sessions = %+v, want only %s", page.Sessions, gTeam)
	}
}

func testSyncPaging(t *testing.T, s Engine) {
	const n = 10
	for i := range n {
		// alice creates each group, reading its creation message: bob's
		// message is her one unread there.
		conv := fmt.Sprintf("g:p%d", i)
		createGroup(t, s, conv, alice, bob)
		appendTo(t, s, conv, bob, "m", alice, bob)
	}
	full := list(t, s, alice, "")
	if len(full.Sessions) != n {
		t.Fatalf("alice has %d sessions, want %d", len(full.Sessions), n)
	}
	if full.TotalUnread != n {
		t.Errorf("total_unread = %d, want %d", full.TotalUnread, n)
	}
	for _, limit := range []int{1, 3, 5, 9, 10, 11, 1000} {
		var got []protocol.Session
		since := int64(0)
		for pages := 0; ; pages++ {
			if pages > n+1 {
				t.Fatalf("limit %d: more than %d pages", limit, n+1)
			}
			page, err := s.Sync(t.Context(), alice, store.SyncQuery{Since: since, Limit: limit})
			if err != nil {
				t.Fatalf("Sync(since %d, limit %d): %v", since, limit, err)
			}
			if len(page.Sessions) > limit {
				t.Errorf("limit %d: page of %d sessions", limit, len(page.Sessions))
			}
			wantCursor := since
			if len(page.Sessions) > 0 {
				wantCursor = page.Sessions[len(page.Sessions)-1].ActiveTS
			}
			if page.Cursor != wantCursor {
				t.Errorf("limit %d since %d: cursor = %d, want %d (the highest active_ts returned)", limit, since, page.Cursor, wantCursor)
			}
			if wantMore := len(got)+len(page.Sessions) < n; page.HasMore != wantMore {
				t.Errorf("limit %d since %d: has_more = %v, want %v", limit, since, page.HasMore, wantMore)
			}
			if page.TotalUnread != n {
				t.Errorf("limit %d: total_unread of a page = %d, want the whole list's %d", limit, page.TotalUnread, n)
			}
			for _, ss := range page.Sessions {
				if ss.ActiveTS <= since {
					t.Errorf("limit %d since %d: %s has active_ts %d", limit, since, ss.Conv, ss.ActiveTS)
				}
			}
			got = append(got, page.Sessions...)
			if !page.HasMore {
				break
			}
			if page.Cursor <= since {
				t.Fatalf("limit %d: cursor %d does not advance from %d", limit, page.Cursor, since)
			}
			since = page.Cursor
		}
		if !reflect.DeepEqual(got, full.Sessions) {
			t.Errorf("limit %d: pages joined = %+v\nwant %+v", limit, got, full.Sessions)
		}
	}

	// Past the end: an empty page at the same cursor.
	page, err := s.Sync(t.Context(), alice, store.SyncQuery{Since: full.Cursor, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != 0 || page.HasMore || page.Cursor != full.Cursor {
		t.Errorf("Sync past the end = %+v, want no sessions, no more, cursor %d", page, full.Cursor)
	}
	// From the middle: exactly the sessions after.
	mid := full.Sessions[3].ActiveTS
	page, err = s.Sync(t.Context(), alice, store.SyncQuery{Since: mid, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(page.Sessions, full.Sessions[4:]) {
		t.Errorf("Sync since %d = %+v, want %+v", mid, page.Sessions, full.Sessions[4:])
	}
}

func testSyncSinceReturnsLaterChanges(t *testing.T, s Engine) {
	newTeam(t, s)
	sendN(t, s, dAB, bob, "b", 2)
	send(t, s, dAC, carol, "c1")
	send(t, s, gTeam, carol, "g1")
	cursor := list(t, s, alice, "").Cursor
	bobCursor := list(t, s, bob, "").Cursor
	if got := changedSince(t, s, alice, "", cursor); len(got) != 0 {
		t.Fatalf("changes since the cursor before any = %v", got)
	}

	sessionOp(t, s, alice, dAC, session.OpPin, session.OpArgs{})
	markRes(t, s, alice, store.MarkRead, mk(dAB, 1))
	if got, want := changedSince(t, s, alice, "", cursor), []string{dAC, dAB}; !slices.Equal(got, want) {
		t.Errorf("changes since %d = %v, want %v in this order", cursor, got, want)
	}
	// alice's changes are hers. Her read raised the ticks over bob's
	// message 1, so bob's dAB changed too; nothing else of his did.
	if got, want := changedSince(t, s, bob, "", bobCursor), []string{dAB}; !slices.Equal(got, want) {
		t.Errorf("bob's changes since %d = %v, want %v", bobCursor, got, want)
	}

	// A change of a session listed earlier moves it to the end.
	cursor = list(t, s, alice, "").Cursor
	sessionOp(t, s, alice, dAC, session.OpMute, session.OpArgs{})
	send(t, s, gTeam, bob, "g2")
	sessionOp(t, s, alice, dAC, session.OpUnmute, session.OpArgs{})
	if got, want := changedSince(t, s, alice, "", cursor), []string{gTeam, dAC}; !slices.Equal(got, want) {
		t.Errorf("changes since %d = %v, want %v", cursor, got, want)
	}
	full := list(t, s, alice, "")
	if got := full.Sessions[len(full.Sessions)-1].Conv; got != dAC {
		t.Errorf("last session of the full list = %s, want %s (the last changed)", got, dAC)
	}
}

func testSyncLimitMustBePositive(t *testing.T, s Engine) {
	send(t, s, dAB, alice, "m1")
	for _, limit := range []int{0, -1} {
		for _, sub := range []string{"", "shop"} {
			if page, err := s.Sync(t.Context(), bob, store.SyncQuery{Limit: limit, SubBiz: sub}); err == nil {
				t.Errorf("Sync(limit %d, sub %q) = %+v, want an error", limit, sub, page)
			}
		}
	}
	if page, err := s.Sync(t.Context(), bob, store.SyncQuery{Limit: 1}); err != nil || len(page.Sessions) != 1 {
		t.Errorf("Sync(limit 1) = %+v, %v, want bob's session", page, err)
	}
}

func testSessionOps(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "m", 3)
	aliceBefore := sessionOf(t, s, alice, dAB, "")
	prev := sessionOf(t, s, bob, dAB, "")
	cursor := list(t, s, bob, "").Cursor
	if prev.UnreadCount != 3 {
		t.Fatalf("bob's unread = %d, want 3", prev.UnreadCount)
	}

	steps := []struct {
		op      session.Op
		args    session.OpArgs
		changed bool // active_ts moves
		write   bool // write_ts moves
		want    func(ss *protocol.Session)
		total   int64
	}{
		{session.OpPin, session.OpArgs{}, true, true, func(ss *protocol.Session) { ss.Priority = 1 }, 3},
		{session.OpPin, session.OpArgs{}, false, false, nil, 3},
		{session.OpUnpin, session.OpArgs{}, true, false, func(ss *protocol.Session) { ss.Priority = 0 }, 3},
		{session.OpUnpin, session.OpArgs{}, false, false, nil, 3},
		{session.OpMute, session.OpArgs{}, true, false, func(ss *protocol.Session) { ss.Muted = true }, 0},
		{session.OpMute, session.OpArgs{}, false, false, nil, 0},
		{session.OpMute, session.OpArgs{Until: farFuture}, true, false, func(ss *protocol.Session) { ss.MuteUntil = farFuture }, 0},
		{session.OpMute, session.OpArgs{Until: farFuture}, false, false, nil, 0},
		{session.OpUnmute, session.OpArgs{}, true, false, func(ss *protocol.Session) { ss.Muted, ss.MuteUntil = false, 0 }, 3},
		{session.OpUnmute, session.OpArgs{}, false, false, nil, 3},
		{session.OpMarkUnread, session.OpArgs{}, true, true, func(ss *protocol.Session) { ss.MarkedUnread = true }, 3},
		{session.OpMarkUnread, session.OpArgs{}, false, false, nil, 3},
		{session.OpSetCategory, session.OpArgs{Category: "promotions"}, true, false, func(ss *protocol.Session) { ss.Category = "promotions" }, 3},
		{session.OpSetCategory, session.OpArgs{Category: "promotions"}, false, false, nil, 3},
		{session.OpSetCategory, session.OpArgs{}, true, false, func(ss *protocol.Session) { ss.Category = "" }, 3},
		{session.OpSetCategory, session.OpArgs{}, false, false, nil, 3},
		{session.OpMute, session.OpArgs{}, true, false, func(ss *protocol.Session) { ss.Muted, ss.MarkedUnread = true, false }, 0},
		{session.OpUnmute, session.OpArgs{}, true, false, func(ss *protocol.Session) { ss.Muted = false }, 3},
		{session.OpDelete, session.OpArgs{}, true, false, func(ss *protocol.Session) { ss.Deleted, ss.ReadSeq, ss.UnreadCount = true, 3, 0 }, 0},
		{session.OpDelete, session.OpArgs{}, false, false, nil, 0},
		{session.OpPin, session.OpArgs{}, true, true, func(ss *protocol.Session) { ss.Priority = 1 }, 0},
	}
	for i, st := range steps {
		what := fmt.Sprintf("step %d: %s %+v", i, st.op, st.args)
		res := sessionOp(t, s, bob, dAB, st.op, st.args)
		got := res.Session
		if res.Changed != st.changed {
			t.Errorf("%s: Changed = %v, want %v", what, res.Changed, st.changed)
		}
		want := prev
		if st.want != nil {
			st.want(&want)
		}
		if st.changed {
			if got.ActiveTS <= prev.ActiveTS {
				t.Errorf("%s: active_ts %d -> %d, want it moved", what, prev.ActiveTS, got.ActiveTS)
			}
			want.ActiveTS = got.ActiveTS
		}
		if st.write {
			if got.WriteTS <= prev.WriteTS || got.WriteTS > got.ActiveTS {
				t.Errorf("%s: write_ts %d -> %d (active_ts %d), want it moved", what, prev.WriteTS, got.WriteTS, got.ActiveTS)
			}
			want.WriteTS = got.WriteTS
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: session\n got %+v\nwant %+v", what, got, want)
		}
		if synced := sessionOf(t, s, bob, dAB, ""); !reflect.DeepEqual(synced, got) {
			t.Errorf("%s: Sync shows\n%+v\nthe op returned\n%+v", what, synced, got)
		}
		wantCursor := cursor
		if st.changed {
			wantCursor = got.ActiveTS
		}
		if res.Cursor != wantCursor {
			t.Errorf("%s: Cursor = %d, want %d", what, res.Cursor, wantCursor)
		}
		if newest := newestActive(t, s, bob); res.Cursor != newest {
			t.Errorf("%s: Cursor = %d, want the newest active_ts %d", what, res.Cursor, newest)
		}
		if !st.changed {
			if got := changedSince(t, s, bob, "", cursor); len(got) != 0 {
				t.Errorf("%s: an op that changed nothing left changes since %d: %v", what, cursor, got)
			}
		}
		checkTotal(t, s, bob, "", st.total)
		prev, cursor = got, res.Cursor
	}
	// Ops are the user's own: alice's session did not change.
	checkSame(t, "bob's ops", sessionOf(t, s, alice, dAB, ""), aliceBefore)
}

func testSessionOpCreatesSession(t *testing.T, s Engine) {
	// A direct chat before its first message.
	res := sessionOp(t, s, alice, dAC, session.OpPin, session.OpArgs{})
	ss := res.Session
	if !res.Changed {
		t.Errorf("pin creating the session: Changed = false")
	}
	if ss.Conv != dAC || ss.Kind != "direct" || ss.Title != carol || !slices.Equal(ss.Members, []string{alice, carol}) ||
		ss.Priority != 1 || ss.WriteSeq != 0 || ss.ReadSeq != 0 || ss.UnreadCount != 0 || ss.LastMsg != nil || ss.Deleted {
		t.Errorf("created session = %+v", ss)
	}
	if ss.ActiveTS <= 0 || res.Cursor != ss.ActiveTS {
		t.Errorf("created session: active_ts %d, cursor %d, want equal and set", ss.ActiveTS, res.Cursor)
	}
	checkSame(t, "Sync", sessionOf(t, s, alice, dAC, ""), ss)
	if page := list(t, s, carol, ""); len(page.Sessions) != 0 {
		t.Errorf("carol's sessions = %+v, want none: alice's op is hers", page.Sessions)
	}

	// The first message finds the session and keeps what the op set.
	m := send(t, s, dAC, carol, "c1")
	ss = sessionOf(t, s, alice, dAC, "")
	if ss.Priority != 1 || ss.WriteSeq != 1 || ss.UnreadCount != 1 || ss.LastMsg == nil || *ss.LastMsg != m.Msg {
		t.Errorf("alice's session after the first message = %+v", ss)
	}

	// A group before its first message (its creation's), muted: its unread
	// never counts.
	res = sessionOp(t, s, bob, gTeam, session.OpMute, session.OpArgs{})
	if !res.Changed || !res.Session.Muted || res.Session.Kind != "group" {
		t.Errorf("mute creating the session = %+v", res)
	}
	createGroup(t, s, gTeam, alice, membersOf[gTeam]...)
	sendN(t, s, gTeam, alice, "g", 2)
	ss = sessionOf(t, s, bob, gTeam, "")
	if !ss.Muted || ss.UnreadCount != 2 {
		t.Errorf("bob's muted group after 3 messages (the creation, not unread, and 2) = %+v", ss)
	}
	checkTotal(t, s, bob, "", 0)
}

// testSessionOpSetCategoryNoChange: setting the category a session already
// shows changes nothing, so it moves nothing (PROTOCOL.md: an op that
// changes nothing moves no timestamp).
func testSessionOpSetCategoryNoChange(t *testing.T, s Engine) {
	send(t, s, dAB, alice, "m1")
	before := sessionOf(t, s, bob, dAB, "")
	res := sessionOp(t, s, bob, dAB, session.OpSetCategory, session.OpArgs{})
	if res.Changed || res.Session.ActiveTS != before.ActiveTS {
		t.Errorf("set_category \"\" on a session without a category: Changed %v, active_ts %d -> %d, want nothing moved",
			res.Changed, before.ActiveTS, res.Session.ActiveTS)
	}
}

func testSessionOpUnknownGateway(t *testing.T, s Engine) {
	send(t, s, dAB, alice, "m1")
	cursor := list(t, s, alice, "").Cursor
	ops := []struct {
		op   session.Op
		args session.OpArgs
	}{
		{session.OpPin, session.OpArgs{}}, {session.OpUnpin, session.OpArgs{}},
		{session.OpMute, session.OpArgs{}}, {session.OpUnmute, session.OpArgs{}},
		{session.OpMarkUnread, session.OpArgs{}}, {session.OpDelete, session.OpArgs{}},
		{session.OpSetCategory, session.OpArgs{Category: "x"}},
	}
	for _, o := range ops {
		if res, err := s.SessionOp(t.Context(), alice, "biz:nothing", o.op, o.args); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("SessionOp(%s) on a gateway nobody filed under = %+v, %v, want ErrNotFound", o.op, res, err)
		}
	}
	if got := changedSince(t, s, alice, "", cursor); len(got) != 0 {
		t.Errorf("failed ops left changes: %v", got)
	}
	if got := changedSince(t, s, alice, "nothing", 0); len(got) != 0 {
		t.Errorf("failed ops left sessions in the nested list: %v", got)
	}
}

func testMarkReadIsSessionRead(t *testing.T, s Engine) {
	newTeam(t, s) // bob has read the creation, seq 1
	sendN(t, s, dAB, alice, "m", 4)
	send(t, s, gTeam, alice, "g2")
	send(t, s, gTeam, carol, "g3")
	checkTotal(t, s, bob, "", 6)
	before := sessionOf(t, s, bob, dAB, "")

	res := markRes(t, s, bob, store.MarkRead, mk(dAB, 2))
	after := sessionOf(t, s, bob, dAB, "")
	if !res.SessionsChanged {
		t.Errorf("read: SessionsChanged = false")
	}
	if after.ReadSeq != 2 || after.UnreadCount != 2 || after.WriteSeq != 4 {
		t.Errorf("after reading 2 of 4: %+v", after)
	}
	if after.ActiveTS <= before.ActiveTS || after.WriteTS != before.WriteTS {
		t.Errorf("read: active_ts %d -> %d, write_ts %d -> %d, want active_ts only moved",
			before.ActiveTS, after.ActiveTS, before.WriteTS, after.WriteTS)
	}
	if newest := newestActive(t, s, bob); res.Cursor != newest || res.Cursor != after.ActiveTS {
		t.Errorf("read: Cursor = %d, want the newest active_ts %d (the read session's %d)", res.Cursor, newest, after.ActiveTS)
	}
	checkTotal(t, s, bob, "", 4)

	// A read of nothing new changes nothing.
	if res := markRes(t, s, bob, store.MarkRead, mk(dAB, 1)); res.SessionsChanged {
		t.Errorf("a lower read: SessionsChanged = true")
	}
	if res := markRes(t, s, bob, store.MarkRead, mk(dAB, 2)); res.SessionsChanged {
		t.Errorf("the same read again: SessionsChanged = true")
	}
	checkSame(t, "a read of nothing new", sessionOf(t, s, bob, dAB, ""), after)

	// A read above the newest seq is clamped.
	markRes(t, s, bob, store.MarkRead, mk(dAB, 99))
	if ss := sessionOf(t, s, bob, dAB, ""); ss.ReadSeq != 4 || ss.UnreadCount != 0 {
		t.Errorf("read 99 of 4: read_seq %d, unread %d, want 4, 0", ss.ReadSeq, ss.UnreadCount)
	}

	// Several conversations in one call.
	cursor := list(t, s, bob, "").Cursor
	res = markRes(t, s, bob, store.MarkRead, mk(dAB, 4), mk(gTeam, 2))
	if !res.SessionsChanged {
		t.Errorf("read of %s: SessionsChanged = false", gTeam)
	}
	if got, want := changedSince(t, s, bob, "", cursor), []string{gTeam}; !slices.Equal(got, want) {
		t.Errorf("bob's changes = %v, want %v", got, want)
	}
	if g := sessionOf(t, s, bob, gTeam, ""); g.ReadSeq != 2 || g.UnreadCount != 1 {
		t.Errorf("bob's group after reading 1 of 2 (read_seq 2 of 3) = %+v", g)
	}
	if newest := newestActive(t, s, bob); res.Cursor != newest {
		t.Errorf("Cursor = %d, want %d", res.Cursor, newest)
	}
	checkTotal(t, s, bob, "", 1)
}

func testMarkDeliveredLeavesMarkerSession(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "m", 3)
	before := sessionOf(t, s, bob, dAB, "")
	cursor := list(t, s, bob, "").Cursor
	res := markRes(t, s, bob, store.MarkDelivered, mk(dAB, 3))
	if res.SessionsChanged {
		t.Errorf("delivered: SessionsChanged = true")
	}
	if got := changedSince(t, s, bob, "", cursor); len(got) != 0 {
		t.Errorf("delivered: bob's sessions changed: %v", got)
	}
	after := sessionOf(t, s, bob, dAB, "")
	if after.ActiveTS != before.ActiveTS || after.WriteTS != before.WriteTS || after.ReadSeq != 0 || after.UnreadCount != 3 {
		t.Errorf("delivered changed bob's session: %+v -> %+v", before, after)
	}
	checkTotal(t, s, bob, "", 3)
}

func testTicksMoveSenderActiveTS(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "m", 2)
	a0 := sessionOf(t, s, alice, dAB, "")
	aliceCursor := list(t, s, alice, "").Cursor

	// bob's delivered mark covers alice's message 1.
	mark(t, s, bob, store.MarkDelivered, mk(dAB, 1))
	a1 := sessionOf(t, s, alice, dAB, "")
	if a1.ActiveTS <= a0.ActiveTS || a1.WriteTS != a0.WriteTS {
		t.Errorf("tick rise: alice's active_ts %d -> %d, write_ts %d -> %d, want active_ts only moved",
			a0.ActiveTS, a1.ActiveTS, a0.WriteTS, a1.WriteTS)
	}
	if want := (protocol.Ticks{DeliveredSeq: 1}); a1.Ticks != want {
		t.Errorf("alice's ticks = %+v, want %+v", a1.Ticks, want)
	}
	if a1.UnreadCount != 0 || a1.ReadSeq != 2 {
		t.Errorf("tick rise changed alice's counts: %+v", a1)
	}
	// Her offline devices learn it by sync.
	if got, want := changedSince(t, s, alice, "", aliceCursor), []string{dAB}; !slices.Equal(got, want) {
		t.Errorf("alice's changes since %d = %v, want %v", aliceCursor, got, want)
	}

	// bob's read covers both.
	mark(t, s, bob, store.MarkRead, mk(dAB, 2))
	a2 := sessionOf(t, s, alice, dAB, "")
	if a2.ActiveTS <= a1.ActiveTS || a2.WriteTS != a0.WriteTS || a2.Ticks != (protocol.Ticks{DeliveredSeq: 2, ReadSeq: 2}) {
		t.Errorf("read rise: alice's session %+v -> %+v, want active_ts moved, write_ts kept, ticks 2/2", a1, a2)
	}
	// A mark that raises nothing moves nothing.
	mark(t, s, bob, store.MarkRead, mk(dAB, 2))
	checkSame(t, "a mark raising nothing", sessionOf(t, s, alice, dAB, ""), a2)

	// In a group only the members whose messages the rise covers move.
	newTeam(t, s) // every member at 1
	send(t, s, gTeam, alice, "g2")
	send(t, s, gTeam, bob, "g3")
	mark(t, s, alice, store.MarkDelivered, mk(gTeam, 3))
	ga, gb, gc := sessionOf(t, s, alice, gTeam, ""), sessionOf(t, s, bob, gTeam, ""), sessionOf(t, s, carol, gTeam, "")
	mark(t, s, carol, store.MarkDelivered, mk(gTeam, 2)) // covers alice's g2
	if got := sessionOf(t, s, alice, gTeam, ""); got.ActiveTS <= ga.ActiveTS || got.WriteTS != ga.WriteTS {
		t.Errorf("rise over alice's message: her session %+v -> %+v, want active_ts only moved", ga, got)
	} else {
		ga = got
	}
	if got := sessionOf(t, s, bob, gTeam, ""); got.ActiveTS != gb.ActiveTS {
		t.Errorf("rise over alice's message moved bob's session: %+v -> %+v", gb, got)
	}
	if got := sessionOf(t, s, carol, gTeam, ""); got.ActiveTS != gc.ActiveTS {
		t.Errorf("carol's delivered mark moved her own session: %+v -> %+v", gc, got)
	}
	mark(t, s, carol, store.MarkDelivered, mk(gTeam, 3)) // covers bob's g3
	if got := sessionOf(t, s, bob, gTeam, ""); got.ActiveTS <= gb.ActiveTS || got.WriteTS != gb.WriteTS {
		t.Errorf("rise over bob's message: his session %+v -> %+v, want active_ts only moved", gb, got)
	}
	if got := sessionOf(t, s, alice, gTeam, ""); got.ActiveTS != ga.ActiveTS {
		t.Errorf("rise over bob's message moved alice's session: %+v -> %+v", ga, got)
	}
}

func testDeleteThenMessage(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "m", 3)
	markRes(t, s, bob, store.MarkRead, mk(dAB, 1))
	before := sessionOf(t, s, bob, dAB, "")
	cursor := list(t, s, bob, "").Cursor

	del := sessionOp(t, s, bob, dAB, session.OpDelete, session.OpArgs{})
	ss := del.Session
	if !del.Changed || !ss.Deleted || ss.ReadSeq != 3 || ss.UnreadCount != 0 || ss.WriteSeq != 3 {
		t.Errorf("delete = %+v, want deleted, read_seq 3, unread 0", del)
	}
	if ss.ActiveTS <= before.ActiveTS || ss.WriteTS != before.WriteTS {
		t.Errorf("delete: active_ts %d -> %d, write_ts %d -> %d, want active_ts only moved",
			before.ActiveTS, ss.ActiveTS, before.WriteTS, ss.WriteTS)
	}
	// Deleted sessions are synced, so that every device drops them.
	if got, want := changedSince(t, s, bob, "", cursor), []string{dAB}; !slices.Equal(got, want) {
		t.Errorf("changes since the delete = %v, want %v", got, want)
	}
	checkTotal(t, s, bob, "", 0)
	// Deleting is bob's: alice's session is as it was.
	if a := sessionOf(t, s, alice, dAB, ""); a.Deleted {
		t.Errorf("alice's session deleted by bob's delete")
	}

	// A new message brings it back, counting from the delete.
	send(t, s, dAB, alice, "m-4")
	ss = sessionOf(t, s, bob, dAB, "")
	if ss.Deleted || ss.ReadSeq != 3 || ss.UnreadCount != 1 || ss.WriteSeq != 4 || ss.WriteTS <= del.Session.WriteTS {
		t.Errorf("after a new message: %+v, want back with 1 unread and write_ts moved", ss)
	}
	checkTotal(t, s, bob, "", 1)

	// So does the user's own message.
	sessionOp(t, s, bob, dAB, session.OpDelete, session.OpArgs{})
	send(t, s, dAB, bob, "b-5")
	ss = sessionOf(t, s, bob, dAB, "")
	if ss.Deleted || ss.ReadSeq != 5 || ss.UnreadCount != 0 {
		t.Errorf("after bob's own message: %+v, want back, read", ss)
	}

	// In a group the others' sessions stay.
	newTeam(t, s) // nothing unread
	sendN(t, s, gTeam, alice, "g", 2)
	sessionOp(t, s, bob, gTeam, session.OpDelete, session.OpArgs{})
	if c := sessionOf(t, s, carol, gTeam, ""); c.Deleted || c.UnreadCount != 2 {
		t.Errorf("carol's group after bob's delete = %+v", c)
	}
}

func testMarkedUnreadCleared(t *testing.T, s Engine) {
	sendN(t, s, dAB, alice, "m", 2)
	markUnread := func(what string) protocol.Session {
		t.Helper()
		res := sessionOp(t, s, bob, dAB, session.OpMarkUnread, session.OpArgs{})
		if !res.Changed || !res.Session.MarkedUnread {
			t.Fatalf("%s: mark_unread = %+v", what, res)
		}
		return res.Session
	}
	marked := markUnread("first")
	if marked.ReadSeq != 0 || marked.UnreadCount != 2 {
		t.Errorf("mark_unread moved the counts: %+v", marked)
	}
	checkTotal(t, s, bob, "", 2) // a flag for the eyes: totals do not change

	// Another member's message keeps it.
	send(t, s, dAB, alice, "m-3")
	if ss := sessionOf(t, s, bob, dAB, ""); !ss.MarkedUnread || ss.UnreadCount != 3 {
		t.Errorf("after alice's message: %+v, want still marked, 3 unread", ss)
	}

	// A read clears it.
	res := markRes(t, s, bob, store.MarkRead, mk(dAB, 1))
	if ss := sessionOf(t, s, bob, dAB, ""); !res.SessionsChanged || ss.MarkedUnread || ss.ReadSeq != 1 {
		t.Errorf("after a read: %+v (SessionsChanged %v), want not marked, read_seq 1", ss, res.SessionsChanged)
	}

	// Even a read of nothing new.
	marked = markUnread("before a read of nothing new")
	res = markRes(t, s, bob, store.MarkRead, mk(dAB, 1))
	ss := sessionOf(t, s, bob, dAB, "")
	if !res.SessionsChanged || ss.MarkedUnread || ss.ReadSeq != 1 || ss.ActiveTS <= marked.ActiveTS || ss.WriteTS != marked.WriteTS {
		t.Errorf("after a read of nothing new: %+v (SessionsChanged %v), want not marked, active_ts only moved", ss, res.SessionsChanged)
	}

	// A send clears it.
	markUnread("before a send")
	send(t, s, dAB, bob, "b-4")
	if ss := sessionOf(t, s, bob, dAB, ""); ss.MarkedUnread || ss.UnreadCount != 0 {
		t.Errorf("after bob's message: %+v, want not marked", ss)
	}

	// A mute clears it, even of a muted session.
	markUnread("before a mute")
	if m := sessionOp(t, s, bob, dAB, session.OpMute, session.OpArgs{}); !m.Changed || m.Session.MarkedUnread || !m.Session.Muted {
		t.Errorf("mute = %+v, want muted, not marked", m)
	}
	markUnread("on a muted session")
	if m := sessionOp(t, s, bob, dAB, session.OpMute, session.OpArgs{}); !m.Changed || m.Session.MarkedUnread {
		t.Errorf("mute of a muted, marked session = %+v, want changed, not marked", m)
	}
}

func testTotalUnread(t *testing.T, s Engine) {
	op := func(conv string, o session.Op, args session.OpArgs) { sessionOp(t, s, alice, conv, o, args) }
	newTeam(t, s) // nothing unread
	sendN(t, s, dAB, bob, "b", 3)
	sendN(t, s, dAC, carol, "c", 2)
	send(t, s, gTeam, bob, "g1")
	sendN(t, s, gTeam, carol, "gc", 2)
	checkTotal(t, s, alice, "", 8)

	op(dAC, session.OpMute, session.OpArgs{})
	checkTotal(t, s, alice, "", 6)
	op(gTeam, session.OpDelete, session.OpArgs{})
	checkTotal(t, s, alice, "", 3)
	send(t, s, gTeam, carol, "gc-3") // back, with 1 unread
	checkTotal(t, s, alice, "", 4)
	markRes(t, s, alice, store.MarkRead, mk(dAB, 1))
	checkTotal(t, s, alice, "", 3)
	op(dAC, session.OpUnmute, session.OpArgs{})
	checkTotal(t, s, alice, "", 5)
	op(dAB, session.OpMarkUnread, session.OpArgs{})
	op(dAB, session.OpPin, session.OpArgs{})
	op(dAB, session.OpSetCategory, session.OpArgs{Category: "work"})
	checkTotal(t, s, alice, "", 5)

	// A mute whose end has passed counts as no mute.
	op(gTeam, session.OpMute, session.OpArgs{Until: 1})
	if ss := sessionOf(t, s, alice, gTeam, ""); ss.Muted {
		t.Errorf("a mute until 1 (long past): %+v, want not muted", ss)
	}
	checkTotal(t, s, alice, "", 5)
	// One that has not passed counts.
	op(gTeam, session.OpMute, session.OpArgs{Until: farFuture})
	if ss := sessionOf(t, s, alice, gTeam, ""); !ss.Muted || ss.MuteUntil != farFuture {
		t.Errorf("a mute until %d: %+v, want muted until then", int64(farFuture), ss)
	}
	checkTotal(t, s, alice, "", 4)

	send(t, s, dAC, alice, "a1") // alice reads dAC by sending
	checkTotal(t, s, alice, "", 2)
	send(t, s, gTeam, bob, "g-2") // muted: counts nowhere
	checkTotal(t, s, alice, "", 2)
	op(gTeam, session.OpUnmute, session.OpArgs{}) // gTeam: gc-3 and g-2
	checkTotal(t, s, alice, "", 4)
	op(dAB, session.OpDelete, session.OpArgs{})
	checkTotal(t, s, alice, "", 2)
	op(dAB, session.OpUnpin, session.OpArgs{}) // still deleted
	checkTotal(t, s, alice, "", 2)
	markRes(t, s, alice, store.MarkRead, mk(gTeam, 99))
	checkTotal(t, s, alice, "", 0)

	// The others' totals are theirs: bob read everything by sending last
	// in both of his conversations; carol has alice's a1 and bob's g-2.
	checkTotal(t, s, bob, "", 0)
	checkTotal(t, s, carol, "", 2)
}

func testTimestampsStrictlyIncreasing(t *testing.T, s Engine) {
	newTeam(t, s)
	send(t, s, dAB, bob, "b0")
	send(t, s, dAC, carol, "c0")
	send(t, s, gTeam, bob, "g0")
	convs := []string{dAB, dAC, gTeam}
	last := list(t, s, alice, "").Cursor
	for i := range 120 {
		conv := convs[i%3]
		op := session.OpPin
		if (i/3)%2 == 1 {
			op = session.OpUnpin
		}
		prevLast := last
		res := sessionOp(t, s, alice, conv, op, session.OpArgs{})
		if !res.Changed {
			t.Fatalf("op %d (%s %s): Changed = false", i, op, conv)
		}
		if res.Session.ActiveTS <= last {
			t.Fatalf("op %d (%s %s): active_ts %d after %d: not strictly increasing", i, op, conv, res.Session.ActiveTS, last)
		}
		if op == session.OpPin && (res.Session.WriteTS <= prevLast || res.Session.WriteTS > res.Session.ActiveTS) {
			t.Fatalf("op %d (pin %s): write_ts %d, want after %d and at most active_ts %d",
				i, conv, res.Session.WriteTS, prevLast, res.Session.ActiveTS)
		}
		if res.Cursor != res.Session.ActiveTS {
			t.Fatalf("op %d: Cursor %d, active_ts %d, want equal", i, res.Cursor, res.Session.ActiveTS)
		}
		last = res.Session.ActiveTS
		if i%10 == 9 {
			// Messages and reads in between take their own timestamps.
			send(t, s, dAB, bob, fmt.Sprintf("b%d", i))
			ss := sessionOf(t, s, alice, dAB, "")
			if ss.ActiveTS <= last || ss.WriteTS <= last {
				t.Fatalf("message after op %d: active_ts %d, write_ts %d, want both after %d", i, ss.ActiveTS, ss.WriteTS, last)
			}
			last = ss.ActiveTS
			res := markRes(t, s, alice, store.MarkRead, mk(dAB, 99))
			if !res.SessionsChanged || res.Cursor <= last {
				t.Fatalf("read after op %d: %+v, want a cursor after %d", i, res, last)
			}
			last = res.Cursor
		}
	}
	page := list(t, s, alice, "")
	if page.Cursor != last {
		t.Errorf("Sync cursor = %d, want the last change's %d", page.Cursor, last)
	}
	checkDistinctWriteTS(t, alice, page)
}

// checkDistinctWriteTS checks that no two of a list's sessions share a
// write_ts: each was set by a different change of the user.
func checkDistinctWriteTS(t *testing.T, user string, page store.SyncPage) {
	t.Helper()
	seen := map[int64]string{}
	for _, ss := range page.Sessions {
		if ss.WriteTS == 0 {
			continue
		}
		if other, ok := seen[ss.WriteTS]; ok {
			t.Errorf("%s: %s and %s share write_ts %d", user, other, ss.Conv, ss.WriteTS)
		}
		seen[ss.WriteTS] = ss.Conv
	}
}

func testTimestampsConcurrent(t *testing.T, s Engine) {
	const n = 40
	// The groups the odd calls append to exist before: bob creates them.
	versions := map[string]int64{}
	for i := 1; i < n; i += 2 {
		conv := fmt.Sprintf("g:c%d", i)
		versions[conv] = createGroup(t, s, conv, bob, alice).Group.Version
	}
	send(t, s, dAB, bob, "b0")
	before := list(t, s, alice, "").Cursor
	results := make([]store.SessionResult, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		if i%2 == 0 {
			// Each category differs from every other: every op changes.
			results[i], errs[i] = s.SessionOp(context.Background(), alice, dAB, session.OpSetCategory, session.OpArgs{Category: fmt.Sprintf("c%d", i)})
			return
		}
		conv := fmt.Sprintf("g:c%d", i)
		req := request(conv, bob, "m")
		req.Members = []string{alice, bob}
		req.MembersVersion = versions[conv]
		_, errs[i] = s.Append(context.Background(), req)
	})
	seen := map[int64]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if i%2 == 1 {
			continue
		}
		ts := results[i].Session.ActiveTS
		if !results[i].Changed || ts <= before || results[i].Cursor < ts {
			t.Errorf("op %d: %+v, want changed, active_ts after %d, cursor at least active_ts", i, results[i], before)
		}
		if j, ok := seen[ts]; ok {
			t.Errorf("ops %d and %d share active_ts %d", j, i, ts)
		}
		seen[ts] = i
	}
	page := list(t, s, alice, "")
	if len(page.Sessions) != 1+n/2 {
		t.Errorf("alice has %d sessions, want %d", len(page.Sessions), 1+n/2)
	}
	checkDistinctWriteTS(t, alice, page)
	var newest int64
	for _, r := range results {
		newest = max(newest, r.Cursor)
	}
	if page.Cursor < newest {
		t.Errorf("Sync cursor %d below a cursor returned before, %d", page.Cursor, newest)
	}
}

// The direct chats with accounts of the filing tests.
const (
	dave = "dave"
	erin = "erin"
	dAD  = "d:alice:dave"
	dAE  = "d:alice:erin"
)

func testAccountFiling(t *testing.T, s Engine) {
	ctx := t.Context()
	// carol's chat with alice exists before carol becomes an account.
	send(t, s, dAC, carol, "c1")
	for _, a := range []struct{ user, category, sub string }{
		{carol, "promotions", "shop"},
		{bob, "friends", ""},
		{dave, "promotions", "shop"},
	} {
		if err := s.SetAccount(ctx, a.user, a.category, a.sub); err != nil {
			t.Fatalf("SetAccount(%s): %v", a.user, err)
		}
	}
	send(t, s, dAC, carol, "c2")
	if ss := sessionOf(t, s, alice, dAC, ""); ss.Category != "" || ss.SubBiz != "" {
		t.Errorf("a session created before SetAccount was refiled: %+v", ss)
	}

	// A category alone: the main list, filed.
	send(t, s, dAB, bob, "b1")
	if ss := sessionOf(t, s, alice, dAB, ""); ss.Category != "friends" || ss.SubBiz != "" {
		t.Errorf("alice's chat with bob: category %q, sub_biz %q, want friends, \"\"", ss.Category, ss.SubBiz)
	}
	// For the other member only.
	if ss := sessionOf(t, s, bob, dAB, ""); ss.Category != "" || ss.SubBiz != "" {
		t.Errorf("bob's own session: category %q, sub_biz %q, want unfiled", ss.Category, ss.SubBiz)
	}

	// A sub-business: listed only in its nested list.
	appendTo(t, s, dAD, dave, "d1", alice, dave)
	nested := list(t, s, alice, "shop")
	ss, ok := findSession(nested.Sessions, dAD)
	if !ok || ss.Category != "promotions" || ss.SubBiz != "shop" || ss.UnreadCount != 1 {
		t.Errorf("alice's nested list = %+v, want %s filed under promotions/shop with 1 unread", nested.Sessions, dAD)
	}
	if _, ok := findSession(list(t, s, alice, "").Sessions, dAD); ok {
		t.Errorf("%s listed in the main list", dAD)
	}
	if got := changedSince(t, s, alice, "other", 0); len(got) != 0 {
		t.Errorf("another sub-business lists %v", got)
	}
	if ss := sessionOf(t, s, dave, dAD, ""); ss.Category != "" || ss.SubBiz != "" {
		t.Errorf("dave's own session: category %q, sub_biz %q, want unfiled", ss.Category, ss.SubBiz)
	}
	// The user's own choice of category is kept.
	if res := sessionOp(t, s, alice, dAD, session.OpSetCategory, session.OpArgs{Category: "work"}); !res.Changed || res.Session.Category != "work" || res.Session.SubBiz != "shop" {
		t.Errorf("set_category on a filed session = %+v", res)
	}
}

func testSubBizGateway(t *testing.T, s Engine) {
	ctx := t.Context()
	for _, a := range []string{dave, erin} {
		if err := s.SetAccount(ctx, a, "", "shop"); err != nil {
			t.Fatalf("SetAccount(%s): %v", a, err)
		}
	}
	send(t, s, dAB, bob, "b1")
	appendTo(t, s, dAD, dave, "d1", alice, dave)
	appendTo(t, s, dAD, dave, "d2", alice, dave)
	e1 := appendTo(t, s, dAE, erin, "e1", alice, erin)

	nested := list(t, s, alice, "shop")
	if len(nested.Sessions) != 2 || nested.TotalUnread != 3 {
		t.Errorf("nested list = %+v, want %s and %s with 3 unread", nested, dAD, dAE)
	}
	main := list(t, s, alice, "")
	gw, ok := findSession(main.Sessions, "biz:shop")
	if !ok {
		t.Fatalf("main list %+v has no gateway biz:shop", main.Sessions)
	}
	if gw.Kind != "biz" || gw.UnreadCount != nested.TotalUnread || gw.SubBiz != "" {
		t.Errorf("gateway = %+v, want kind biz, unread %d", gw, nested.TotalUnread)
	}
	if gw.LastMsg == nil || *gw.LastMsg != e1.Msg {
		t.Errorf("gateway last_msg = %+v, want the newest member message %+v", gw.LastMsg, e1.Msg)
	}
	if len(main.Sessions) != 2 || main.TotalUnread != 1+3 {
		t.Errorf("main list = %+v, want %s and the gateway, total 4", main, dAB)
	}

	// A new member message moves the gateway and becomes its last message.
	d3 := appendTo(t, s, dAD, dave, "d3", alice, dave)
	gw2 := sessionOf(t, s, alice, "biz:shop", "")
	if gw2.LastMsg == nil || *gw2.LastMsg != d3.Msg || gw2.UnreadCount != 4 || gw2.WriteTS <= gw.WriteTS || gw2.ActiveTS <= gw.ActiveTS {
		t.Errorf("gateway after a member message = %+v, want last_msg d3, unread 4, both timestamps moved", gw2)
	}

	// A read in the nested list: the gateway's unread follows, the cursor
	// is the newest of all of alice's sessions.
	res := markRes(t, s, alice, store.MarkRead, mk(dAD, 3))
	gw3 := sessionOf(t, s, alice, "biz:shop", "")
	if !res.SessionsChanged || res.Cursor != newestActive(t, s, alice, "shop") {
		t.Errorf("read in the nested list = %+v, want SessionsChanged and the newest cursor %d", res, newestActive(t, s, alice, "shop"))
	}
	if gw3.UnreadCount != 1 || gw3.WriteTS != gw2.WriteTS || gw3.LastMsg == nil || *gw3.LastMsg != d3.Msg {
		t.Errorf("gateway after the read = %+v, want unread 1, write_ts and last_msg kept", gw3)
	}
	checkTotal(t, s, alice, "shop", 1)
	checkTotal(t, s, alice, "", 2)

	// A mute in the nested list drops out of both totals.
	sessionOp(t, s, alice, dAE, session.OpMute, session.OpArgs{})
	checkTotal(t, s, alice, "shop", 0)
	if gw := sessionOf(t, s, alice, "biz:shop", ""); gw.UnreadCount != 0 {
		t.Errorf("gateway unread with its only unread member muted = %d, want 0", gw.UnreadCount)
	}
	sessionOp(t, s, alice, dAE, session.OpUnmute, session.OpArgs{})
	checkTotal(t, s, alice, "", 2)

	// Ops apply to an existing gateway like to any session.
	pin := sessionOp(t, s, alice, "biz:shop", session.OpPin, session.OpArgs{})
	if !pin.Changed || pin.Session.Priority != 1 || pin.Session.Conv != "biz:shop" {
		t.Errorf("pin of the gateway = %+v", pin)
	}
	if m := sessionOp(t, s, alice, "biz:shop", session.OpMute, session.OpArgs{}); !m.Changed || !m.Session.Muted {
		t.Errorf("mute of the gateway = %+v", m)
	}
	checkTotal(t, s, alice, "", 1)
	checkTotal(t, s, alice, "shop", 1)
	// Another gateway is still unknown.
	if _, err := s.SessionOp(ctx, alice, "biz:other", session.OpPin, session.OpArgs{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pin of an unknown gateway: err = %v, want ErrNotFound", err)
	}
	// Nobody else has the gateway.
	if _, ok := findSession(list(t, s, dave, "").Sessions, "biz:shop"); ok {
		t.Errorf("dave has alice's gateway")
	}
}

// testSubBizGatewayLastMsgIsNewest: the gateway's last_msg is the newest
// message of its members, whatever else moves a member in its list.
func testSubBizGatewayLastMsgIsNewest(t *testing.T, s Engine) {
	for _, a := range []string{dave, erin} {
		if err := s.SetAccount(t.Context(), a, "", "shop"); err != nil {
			t.Fatalf("SetAccount(%s): %v", a, err)
		}
	}
	appendTo(t, s, dAD, dave, "d1", alice, dave)
	e1 := appendTo(t, s, dAE, erin, "e1", alice, erin)
	for _, op := range []session.Op{session.OpMarkUnread, session.OpPin} {
		sessionOp(t, s, alice, dAD, op, session.OpArgs{})
		gw := sessionOf(t, s, alice, "biz:shop", "")
		if gw.LastMsg == nil || *gw.LastMsg != e1.Msg {
			t.Errorf("after %s of the older member %s: gateway last_msg = %+v, want the newest member message %+v",
				op, dAD, gw.LastMsg, e1.Msg)
		}
	}
}
