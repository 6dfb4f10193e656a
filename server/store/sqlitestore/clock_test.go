package sqlitestore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// The per-user session clock lives in the engine's memory; after a restart
// it continues from the sessions on disk, even when the wall clock is now
// behind the timestamps already given.
func TestSessionClockContinuesAfterReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "im.db")
	ctx := context.Background()
	future := time.UnixMilli(1_900_000_000_000)
	s := openEngine(t, path, func() time.Time { return future })
	mustAppend(t, s, message("d:alice:bob", "alice", "m1"))
	before, err := s.Sync(ctx, "bob", store.SyncQuery{Limit: 10})
	if err != nil || len(before.Sessions) != 1 {
		t.Fatalf("sync before: %+v, %v", before, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	past := time.UnixMilli(1_700_000_000_000) // the clock stepped back
	s = openEngine(t, path, func() time.Time { return past })
	res, err := s.SessionOp(ctx, "bob", "d:alice:bob", session.OpPin, session.OpArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Session.ActiveTS <= before.Sessions[0].ActiveTS || res.Session.WriteTS <= before.Sessions[0].WriteTS {
		t.Fatalf("after reopening with the clock behind: active_ts %d write_ts %d, want above %d",
			res.Session.ActiveTS, res.Session.WriteTS, before.Sessions[0].ActiveTS)
	}
	if res.Cursor != res.Session.ActiveTS {
		t.Fatalf("cursor %d, want the new active_ts %d", res.Cursor, res.Session.ActiveTS)
	}
}
