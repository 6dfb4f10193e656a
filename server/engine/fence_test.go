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

func (l *leases) lose(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.epochs, user)
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

// A node writes a user's sessions and totals fenced by the epoch of the
// lease it holds the user's shard under, and nothing of a user whose
// shard it lost: the rows put before the loss are dropped, not written
// over what the successor wrote.
func TestRowsAreFencedByTheUsersLeases(t *testing.T) {
	owners := &leases{epochs: map[string]int64{"alice": 7, "bob": 9}}
	e := &Engine{owners: owners, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	be := &appliedRows{}
	f := newFlusher(be, e.log, 0, e.fenceRows)
	defer f.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	put := func(users ...string) {
		f.put(func(b *batch) {
			for _, u := range users {
				b.session(session.State{User: u, Conv: "c1", ActiveTS: 100})
				b.total(store.TotalRow{User: u, Total: 1, At: 100})
			}
		})
		if err := f.barrier(ctx); err != nil {
			t.Fatal(err)
		}
	}

	put("alice", "bob", "carol") // carol's shard is not held here
	got := be.take()
	if len(got) != 1 {
		t.Fatalf("%d writes, want 1", len(got))
	}
	d := got[0]
	if len(d.Sessions) != 2 || len(d.Totals) != 2 {
		t.Fatalf("wrote %d sessions and %d totals, want alice's and bob's only: %+v", len(d.Sessions), len(d.Totals), d)
	}
	for _, st := range d.Sessions {
		if st.User == "carol" {
			t.Fatalf("wrote a session of a user not held: %+v", st)
		}
	}
	if d.Fences["alice"] != 7 || d.Fences["bob"] != 9 || len(d.Fences) != 2 {
		t.Fatalf("fences %v, want alice 7 and bob 9", d.Fences)
	}

	owners.lose("alice")
	put("alice", "bob")
	bobs := 0
	for _, d := range be.take() {
		bobs += len(d.Sessions)
		for _, st := range d.Sessions {
			if st.User == "alice" {
				t.Fatalf("wrote alice's session after losing her shard: %+v", st)
			}
		}
		for _, r := range d.Totals {
			if r.User == "alice" {
				t.Fatalf("wrote alice's total after losing her shard: %+v", r)
			}
		}
		if _, ok := d.Fences["alice"]; ok {
			t.Fatalf("fences %v name a user not held", d.Fences)
		}
	}
	if bobs != 1 {
		t.Fatalf("wrote %d sessions after alice's loss, want bob's", bobs)
	}
}
