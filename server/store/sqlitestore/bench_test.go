package sqlitestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// benchBody is a typical chat message body.
var benchBody = strings.Repeat("x", 100)

// benchConvs are the direct chats the append benchmark writes into, with
// their members.
var benchConvs = [][2]string{{"u0", "u1"}, {"u2", "u3"}, {"u4", "u5"}, {"u6", "u7"}}

func benchRequest(i int64) store.AppendRequest {
	pair := benchConvs[i%int64(len(benchConvs))]
	return store.AppendRequest{
		Msg: protocol.Message{
			Conv:     "d:" + pair[0] + ":" + pair[1],
			MsgID:    fmt.Sprintf("msg-%d", i),
			From:     pair[i/int64(len(benchConvs))%2],
			Body:     benchBody,
			ClientTS: 1763800000000 + i,
		},
		Members: pair[:],
	}
}

// BenchmarkAppendDurable measures durable appends (each returns after its
// commit is on disk) from several goroutines into four conversations. It
// reports appends per second and the group-commit factor: appends per
// commit.
func BenchmarkAppendDurable(b *testing.B) {
	for _, writers := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := openEngine(b, filepath.Join(b.TempDir(), "bench.db"), nil)
			ctx := context.Background()
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if _, err := s.Append(ctx, benchRequest(i)); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			if b.Failed() {
				return
			}
			// The store is fresh: its stats count these appends and the
			// writes of their derived state.
			batches, ops := s.Backend().(*Backend).BatchStats()
			b.ReportMetric(float64(ops)/float64(batches), "writes/commit")
		})
	}
}

// BenchmarkHistoryPage20 reads random 20-message pages (BeforeSeq) of a
// conversation holding 10,000 messages, from one goroutine and from many.
func BenchmarkHistoryPage20(b *testing.B) {
	const total = 10000
	const conv = "d:u0:u1"
	s := openEngine(b, filepath.Join(b.TempDir(), "bench.db"), nil)
	ctx := context.Background()

	// Fill concurrently so that group commit keeps the setup short.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > total {
					return
				}
				req := benchRequest(0)
				req.Msg.MsgID = fmt.Sprintf("msg-%d", i)
				if _, err := s.Append(ctx, req); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		return
	}

	page := func(rng *rand.Rand) error {
		before := 21 + rng.Int64N(total-20+1) // 21..total+1: always a full page
		msgs, _, err := s.History(ctx, conv, store.HistoryQuery{BeforeSeq: before, Limit: 20})
		if err != nil {
			return err
		}
		if len(msgs) != 20 || msgs[0].Seq != before-20 || msgs[19].Seq != before-1 {
			return fmt.Errorf("page before %d: got seqs %v", before, msgs)
		}
		return nil
	}
	b.Run("serial", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			if err := page(rng); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var seed atomic.Uint64
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(seed.Add(1), 2))
			for pb.Next() {
				if err := page(rng); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
