package sqlitestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// BenchmarkHistoryPage20Relations reads random 20-message pages of two
// conversations of 2,000 messages in one database: one of plain messages,
// one whose messages were each edited twice and reacted to by three users
// (their state decoded with every row; the relation entries themselves
// are stored after them, outside the pages read). Each op reads a page of
// each, one after the other, so that both see the same load: it reports
// the time of each page and their ratio.
func BenchmarkHistoryPage20Relations(b *testing.B) {
	const total = 2000
	const plain, related = "d:u0:u1", "d:u2:u3"
	s := openEngine(b, filepath.Join(b.TempDir(), "bench.db"), nil)
	ctx := context.Background()
	// Written on the backend, many at once (group commit): the setup stays
	// short; the pages are read through the engine. A target's entries
	// may be applied out of seq order: its state is the same whatever the
	// order.
	be := s.Backend()
	writeAll := func(n int, msg func(i int) protocol.Message) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
					if _, err := be.Append(ctx, msg(i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
	}
	for _, conv := range []string{plain, related} {
		writeAll(total, func(i int) protocol.Message {
			return protocol.Message{Conv: conv, MsgID: fmt.Sprintf("m%d", i), From: "u0", Body: benchBody, ClientTS: 1, ServerTS: 1}
		})
	}
	entries := []struct{ from, kind, body string }{
		{"u2", protocol.KindEdit, benchBody + " (edited)"},
		{"u2", protocol.KindEdit, benchBody + " (edited again)"},
		{"u2", protocol.KindReaction, "👍"},
		{"u3", protocol.KindReaction, "🎉"},
		{"u4", protocol.KindReaction, "👍"},
	}
	writeAll(total*len(entries), func(i int) protocol.Message {
		e := entries[i%len(entries)]
		return protocol.Message{Conv: related, MsgID: fmt.Sprintf("r%d", i), From: e.from, Body: e.body,
			ClientTS: 1, ServerTS: int64(2 + i), Kind: e.kind, RefSeq: int64(1 + i/len(entries))}
	})

	rng := rand.New(rand.NewPCG(1, 2))
	var took [2]time.Duration
	for b.Loop() {
		before := 21 + rng.Int64N(total-20+1)
		for i, conv := range []string{plain, related} {
			start := time.Now()
			msgs, _, err := s.History(ctx, conv, store.HistoryQuery{BeforeSeq: before, Limit: 20})
			took[i] += time.Since(start)
			if err != nil || len(msgs) != 20 {
				b.Fatalf("page before %d of %s: %d messages, %v", before, conv, len(msgs), err)
			}
			if rs := msgs[0].ReactionList(); conv == related && (msgs[0].EditedTS == 0 || len(rs) != 2 || len(rs[0].Users)+len(rs[1].Users) != 3) {
				b.Fatalf("page before %d: %+v, want edited and reacted to", before, msgs[0])
			}
		}
	}
	b.ReportMetric(float64(took[0].Nanoseconds())/float64(b.N), "plain-ns/page")
	b.ReportMetric(float64(took[1].Nanoseconds())/float64(b.N), "related-ns/page")
	b.ReportMetric(float64(took[1])/float64(took[0]), "ratio")
}
