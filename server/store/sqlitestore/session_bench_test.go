package sqlitestore

// Benchmarks of Sync with the real store: one user with many sessions.
// Sync since a cursor must cost what changed after the cursor, not what the
// user holds: BenchmarkSyncSinceCursor should report about the same time at
// 1,000 and at 10,000 sessions. BenchmarkSyncFull, a full load paged by
// 1,000, grows with the list.
//
//	go test -run='^$' -bench='Sync' -count=5 ./server/store/sqlitestore/

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// sessBenchUser owns the sessions; each peer pNNNNN sent it one message.
const sessBenchUser = "bench"

// sessBenchSizes are the numbers of sessions benchmarked.
var sessBenchSizes = []int{1000, 10000}

// sessBenchChanged is how many sessions change after the cursor.
const sessBenchChanged = 10

// sessBenchBody is the body of every message.
const sessBenchBody = "see you at eight"

func sessBenchConv(i int) string { return fmt.Sprintf("d:%s:p%05d", sessBenchUser, i) }

// sessBenchStore opens a store in which sessBenchUser has n sessions, one per
// direct conversation, each holding one message from the peer. The appends
// run from many goroutines so that group commit batches them.
func sessBenchStore(b *testing.B, n int) chat.Engine {
	b.Helper()
	s := openEngine(b, filepath.Join(b.TempDir(), "sessions.db"), nil)
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 256 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				peer := fmt.Sprintf("p%05d", i)
				_, err := s.Append(ctx, store.AppendRequest{
					Msg: protocol.Message{Conv: sessBenchConv(i), MsgID: "m" + peer, From: peer,
						Body: sessBenchBody, ClientTS: 1763800000000},
					Members: []string{sessBenchUser, peer},
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return s
}

// sessBenchFullSync pages through the whole main list of sessBenchUser by
// 1,000 and returns how many sessions it holds and the final cursor.
func sessBenchFullSync(ctx context.Context, s chat.Engine) (int, int64, error) {
	var since int64
	count := 0
	for {
		page, err := s.Sync(ctx, sessBenchUser, store.SyncQuery{Since: since, Limit: 1000})
		if err != nil {
			return 0, 0, err
		}
		for _, ss := range page.Sessions {
			if ss.ActiveTS <= since {
				return 0, 0, fmt.Errorf("session %s at active_ts %d after cursor %d", ss.Conv, ss.ActiveTS, since)
			}
			since = ss.ActiveTS
		}
		count += len(page.Sessions)
		since = page.Cursor
		if !page.HasMore {
			return count, since, nil
		}
	}
}

// sessBenchSetup builds a store with n sessions, remembers the cursor, then
// pins sessBenchChanged of them spread over the list: a sync since the
// cursor returns exactly those.
func sessBenchSetup(b *testing.B, n int) (chat.Engine, int64) {
	b.Helper()
	s := sessBenchStore(b, n)
	ctx := context.Background()
	count, cursor, err := sessBenchFullSync(ctx, s)
	if err != nil {
		b.Fatal(err)
	}
	if count != n {
		b.Fatalf("full sync found %d sessions, want %d", count, n)
	}
	for k := range sessBenchChanged {
		res, err := s.SessionOp(ctx, sessBenchUser, sessBenchConv(k*n/sessBenchChanged), session.OpPin, session.OpArgs{})
		if err != nil || !res.Changed {
			b.Fatalf("pin: changed %v, err %v", res.Changed, err)
		}
	}
	page, err := s.Sync(ctx, sessBenchUser, store.SyncQuery{Since: cursor, Limit: 200})
	if err != nil || len(page.Sessions) != sessBenchChanged || page.HasMore {
		b.Fatalf("sync since the cursor: %d sessions, has_more %v, err %v; want %d", len(page.Sessions), page.HasMore, err, sessBenchChanged)
	}
	return s, cursor
}

// BenchmarkSyncSinceCursor syncs since a cursor after which exactly 10 of
// the user's sessions changed.
func BenchmarkSyncSinceCursor(b *testing.B) {
	ctx := context.Background()
	for _, n := range sessBenchSizes {
		s, cursor := sessBenchSetup(b, n)
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			q := store.SyncQuery{Since: cursor, Limit: 200}
			for b.Loop() {
				page, err := s.Sync(ctx, sessBenchUser, q)
				if err != nil {
					b.Fatal(err)
				}
				if len(page.Sessions) != sessBenchChanged {
					b.Fatalf("%d sessions since the cursor, want %d", len(page.Sessions), sessBenchChanged)
				}
			}
		})
	}
}

// BenchmarkSyncFull loads the whole list: since 0, pages of 1,000.
func BenchmarkSyncFull(b *testing.B) {
	ctx := context.Background()
	for _, n := range sessBenchSizes {
		s := sessBenchStore(b, n)
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			for b.Loop() {
				count, _, err := sessBenchFullSync(ctx, s)
				if err != nil {
					b.Fatal(err)
				}
				if count != n {
					b.Fatalf("full sync found %d sessions, want %d", count, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/session")
		})
	}
}
