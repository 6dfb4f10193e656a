package storetest

import (
	"testing"

	"github.com/imcore/im/server/session"
	"github.com/imcore/im/server/store"
)

// sessionTests are the promises of the session model (seed 003).
var sessionTests = []storeTest{
	{"SessionOpMovesTimestamps", testSessionOpMovesTimestamps},
}

// syncAll returns every session of user's list (sub "" = main), paging.
func syncAll(t *testing.T, s store.Store, user, sub string) store.SyncPage {
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

func sessionOp(t *testing.T, s store.Store, user, conv string, op session.Op, args session.OpArgs) store.SessionResult {
	t.Helper()
	res, err := s.SessionOp(t.Context(), user, conv, op, args)
	if err != nil {
		t.Fatalf("SessionOp(%s, %s, %s): %v", user, conv, op, err)
	}
	return res
}

func testSessionOpMovesTimestamps(t *testing.T, s store.Store) {
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
