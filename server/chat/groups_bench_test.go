package chat_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/sqlitestore"
)

// countingPusher stands in for the hub: every member is online on one
// device, and pushes are counted rather than written to sockets.
type countingPusher struct{ pushes atomic.Int64 }

func (p *countingPusher) Push(string, hub.Push, hub.Device) int {
	p.pushes.Add(1)
	return 1
}

// newGroupService returns a service on a fresh durable store with a group
// of n members, u0000 its creator.
func newGroupService(b *testing.B, n int) (*chat.Service, *countingPusher, string, []chat.Caller) {
	b.Helper()
	db, err := sqlitestore.Open(filepath.Join(b.TempDir(), "im.db"), sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	st, err := engine.New(b.Context(), db, engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	pusher := &countingPusher{}
	limits := protocol.DefaultLimits
	svc := chat.New(st, pusher, limits, nil)
	callers := make([]chat.Caller, n)
	users := make([]string, n)
	for i := range callers {
		users[i] = fmt.Sprintf("u%04d", i)
		callers[i] = chat.Caller{User: users[i]}
	}
	g, perr := svc.CreateGroup(b.Context(), callers[0], &protocol.CreateGroup{Title: "all", Members: users[1:]})
	if perr != nil {
		b.Fatal(perr)
	}
	return svc, pusher, g.Conv, callers
}

// BenchmarkGroupFanOut1000 sends one message to a group of 1,000: one
// durable append that writes 1,000 sessions and the pending rows, then a
// push per member.
func BenchmarkGroupFanOut1000(b *testing.B) {
	svc, pusher, conv, callers := newGroupService(b, 1000)
	pusher.pushes.Store(0)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		send := &protocol.Send{Conv: conv, MsgID: fmt.Sprintf("m%d", i), Body: "hello all", ClientTS: time.Now().UnixMilli()}
		if _, perr := svc.Send(b.Context(), callers[0], send); perr != nil {
			b.Fatal(perr)
		}
	}
	b.ReportMetric(float64(pusher.pushes.Load())/float64(b.N), "pushes/op")
}

// BenchmarkGroupReadReceipts1000 is one message in a group of 1,000 read
// by every other member, each with its own read frame, all at once as from
// 999 connections; one op is all 999 receipts and ns/receipt the cost of
// one. The sequential variant sends them one after another: each then
// pays a commit of its own.
func BenchmarkGroupReadReceipts1000(b *testing.B) {
	b.Run("concurrent", func(b *testing.B) { benchReadReceipts(b, true) })
	b.Run("sequential", func(b *testing.B) { benchReadReceipts(b, false) })
}

func benchReadReceipts(b *testing.B, concurrent bool) {
	svc, pusher, conv, callers := newGroupService(b, 1000)
	var receipts, statusPushes int64
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		sent, perr := svc.Send(b.Context(), callers[0], &protocol.Send{Conv: conv, MsgID: fmt.Sprintf("m%d", i), Body: "read me", ClientTS: 1})
		if perr != nil {
			b.Fatal(perr)
		}
		before := pusher.pushes.Load()
		b.StartTimer()
		read := func(c chat.Caller) {
			if perr := svc.Mark(b.Context(), c, store.MarkRead, []protocol.Mark{{Conv: conv, Seq: sent.Seq}}); perr != nil {
				b.Error(perr)
			}
		}
		var wg sync.WaitGroup
		for _, c := range callers[1:] {
			if concurrent {
				wg.Go(func() { read(c) })
			} else {
				read(c)
			}
		}
		wg.Wait()
		receipts += int64(len(callers) - 1)
		statusPushes += pusher.pushes.Load() - before
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(receipts), "ns/receipt")
	// Pushes per op: one session_sync to each reader's devices, plus the
	// status to every member once per rise of the minimum (one here).
	b.ReportMetric(float64(statusPushes)/float64(b.N), "pushes/op")
}
