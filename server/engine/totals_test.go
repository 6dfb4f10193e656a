package engine

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
)

// ownerOfAll is a node that serves every conversation and user.
type ownerOfAll struct{ *otherNode }

func (ownerOfAll) HoldUser(string) (func(), bool) { return func() {}, true }

// noTotals is a backend that cannot read a sync page's total (as DynamoDB
// sums it from the list's sessions): asked for one, it counts the request
// and answers a total no list has.
type noTotals struct {
	seqLog
	asked atomic.Int64
}

func (b *noTotals) SessionPage(ctx context.Context, user string, q store.SyncQuery) ([]store.SessionRow, int64, error) {
	rows, _, err := b.seqLog.SessionPage(ctx, user, q)
	if !q.SkipTotal {
		b.asked.Add(1)
	}
	return rows, -1000, err
}

// Close leaves the store open: the test starts a second engine on it.
func (b *noTotals) Close() error { return nil }

// An owner answers a sync page's total from its memory, the truth of the
// users it owns, and never asks the backend for it; the total agrees with
// the page's sessions, loaded from the tables when the user was not in
// memory yet.
func TestOwnersSyncTotalComesFromMemory(t *testing.T) {
	be := &noTotals{seqLog: seqLog{memstore.New()}}
	owners := ownerOfAll{newOtherNode()}
	close(owners.written)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	send := func(e *Engine, from, id string) {
		t.Helper()
		conv, _ := protocol.DirectConv(from, "bob")
		if _, err := e.Append(ctx, store.AppendRequest{Msg: protocol.Message{Conv: conv, MsgID: id, From: from, Body: id}, Members: []string{from, "bob"}}); err != nil {
			t.Fatal(err)
		}
	}
	newEngine := func() *Engine {
		e, err := New(ctx, be, Options{Owners: owners, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	first := newEngine()
	send(first, "alice", "a1")
	send(first, "alice", "a2")
	send(first, "carol", "c1")
	check := func(e *Engine, when string) {
		t.Helper()
		page, err := e.Sync(ctx, "bob", store.SyncQuery{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, s := range page.Sessions {
			sum += s.UnreadCount
		}
		if page.TotalUnread != 3 || sum != 3 {
			t.Errorf("%s: total_unread %d, the sessions' unread counts sum to %d; want 3 and 3", when, page.TotalUnread, sum)
		}
	}
	check(first, "on the owner that applied the messages")
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	// A new owner (the shard taken after the first one stopped) has bob
	// in memory only once the sync loads him.
	second := newEngine()
	t.Cleanup(func() { second.Close() })
	check(second, "on a new owner")
	if n := be.asked.Load(); n != 0 {
		t.Errorf("the backend was asked for a page's total %d times", n)
	}
}
