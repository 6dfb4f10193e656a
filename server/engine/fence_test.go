package engine

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// leases is an Owners that holds the users given, each at an epoch.
type leases struct {
	Owners // only UserFence is called
	mu     sync.Mutex
	epochs map[string]int64
}

func (l *leases) UserFence(user string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.epochs[user]
	return e, ok
}

// appliedRows is a Backend that records what Apply is given.
type appliedRows struct {
	store.Backend // only Apply is called
	mu            sync.Mutex
	got           []store.Derived
}

func (a *appliedRows) Apply(_ context.Context, d store.Derived) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, d)
	return nil
}

func (a *appliedRows) take() []store.Derived {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.got
	a.got = nil
	return out
}

// A node writes a user's sessions and totals fenced by the epoch it last
// took the user's shard at, and drops none: a row of a user whose lease
// looks lost is still written, with its epoch, for the tables to refuse
// if a successor wrote.
func TestRowsCarryTheirUsersLeaseEpochs(t *testing.T) {
	owners := &leases{epochs: map[string]int64{"alice": 7, "bob": 9}}
	e := &Engine{owners: owners, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	be := &appliedRows{}
	f := newFlusher(be, e.log, 0, e.fenceRows)
	defer f.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	f.put(func(b *batch) {
		for _, u := range []string{"alice", "bob", "carol"} { // carol's shard never taken here
			b.session(session.State{User: u, Conv: "c1", ActiveTS: 100})
			b.total(store.TotalRow{User: u, Total: 1, At: 100})
		}
	})
	if err := f.barrier(ctx); err != nil {
		t.Fatal(err)
	}
	got := be.take()
	if len(got) != 1 {
		t.Fatalf("%d writes, want 1", len(got))
	}
	d := got[0]
	if len(d.Sessions) != 3 || len(d.Totals) != 3 {
		t.Fatalf("wrote %d sessions and %d totals, want every one of the 3 users' rows", len(d.Sessions), len(d.Totals))
	}
	if d.Fences["alice"] != 7 || d.Fences["bob"] != 9 || len(d.Fences) != 2 {
		t.Fatalf("fences %v, want alice 7 and bob 9 (carol unfenced: epoch 0)", d.Fences)
	}
}
