package engine

import (
	"context"
	"errors"
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

// HoldWrite holds the users with an epoch; seal takes one's away.
func (l *leases) HoldWrite(user string) (func(), func() time.Time, bool) {
	_, ok := l.UserFence(user)
	return func() {}, nil, ok
}

func (l *leases) seal(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.epochs, user)
}

// fencedWriter returns an engine of owners with only its writer of
// derived rows, onto be, fencing as a node of a cluster does.
func fencedWriter(owners Owners, be store.Backend) (*Engine, *flusher) {
	e := &Engine{owners: owners, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e.newLife()
	e.flush = newFlusher(be, e.log, 0, e.fenceRows)
	return e, e.flush
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

// A node writes a user's sessions and totals fenced by the epoch it took
// the user's shard at, and drops those of a user whose rows are not its to
// write (a shard handed over and sealed, or never taken): written, they
// would land after the successor read the tables. The drop starts a new
// life of the writer, so the tickets given before it no longer confirm
// and their effects are applied again at the users' owners.
func TestRowsCarryTheirUsersLeaseEpochsAndOthersAreDropped(t *testing.T) {
	owners := &leases{epochs: map[string]int64{"alice": 7, "bob": 9}}
	be := &appliedRows{}
	e, f := fencedWriter(owners, be)
	defer f.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	before := WriteTicket{Boot: e.life()}
	before.Gen = f.put(func(b *batch) {
		for u, epoch := range map[string]int64{"alice": 7, "bob": 9, "carol": 3} { // carol's shard not this node's
			b.sessionAt(session.State{User: u, Conv: "c1", ActiveTS: 100}, epoch)
			b.totalAt(store.TotalRow{User: u, Total: 1, At: 100}, epoch)
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
	for _, st := range d.Sessions {
		if st.User == "carol" {
			t.Errorf("carol's session written by a node that does not own her")
		}
	}
	for _, tr := range d.Totals {
		if tr.User == "carol" {
			t.Errorf("carol's total written by a node that does not own her")
		}
	}
	if len(d.Sessions) != 2 || len(d.Totals) != 2 {
		t.Errorf("wrote %d sessions and %d totals, want alice's and bob's", len(d.Sessions), len(d.Totals))
	}
	if d.Fences["alice"] != 7 || d.Fences["bob"] != 9 || len(d.Fences) != 2 {
		t.Errorf("fences %v, want alice 7 and bob 9", d.Fences)
	}
	if err := e.WaitWritten(ctx, before); !errors.Is(err, errNotThisLife) {
		t.Errorf("a ticket of the rows dropped confirmed: %v, want errNotThisLife", err)
	}

	// Rows put after the drop are confirmed as usual.
	after := WriteTicket{Boot: e.life()}
	after.Gen = f.put(func(b *batch) { b.sessionAt(session.State{User: "alice", Conv: "c1", ActiveTS: 101}, 7) })
	if err := e.WaitWritten(ctx, after); err != nil {
		t.Errorf("a ticket after the drop: %v", err)
	}
}

// Discard takes the rows of the users picked out of the writer unwritten
// and ends the writer's life; the other rows stay.
func TestDiscardDropsOnlyThePickedUsersRows(t *testing.T) {
	owners := &leases{epochs: map[string]int64{"alice": 7, "bob": 9}}
	be := &heldFirstWrite{appliedRows: &appliedRows{}, release: make(chan struct{})}
	e, f := fencedWriter(owners, be)
	defer func() { close(be.release); f.close() }()
	life := e.life()
	// A first write holds the writer, so the next rows wait in the batch.
	f.put(func(b *batch) { b.sessionAt(session.State{User: "alice", Conv: "c0", ActiveTS: 99}, 7) })
	<-be.entered()
	f.put(func(b *batch) {
		b.sessionAt(session.State{User: "alice", Conv: "c1", ActiveTS: 100}, 7)
		b.sessionAt(session.State{User: "bob", Conv: "c1", ActiveTS: 100}, 9)
		b.totalAt(store.TotalRow{User: "bob", Total: 1, At: 100}, 9)
	})
	e.Discard(func(u string) bool { return u == "bob" })
	if e.life() == life {
		t.Errorf("discarding rows kept the writer's life")
	}
	f.mu.Lock()
	left := len(f.cur.sessions) + len(f.cur.totals)
	_, alice := f.cur.sessions[store.MemberKey{User: "alice", Conv: "c1"}]
	f.mu.Unlock()
	if left != 1 || !alice {
		t.Errorf("%d rows left (alice's kept: %v), want alice's only", left, alice)
	}
}

// heldFirstWrite is appliedRows whose first Apply waits for release.
type heldFirstWrite struct {
	*appliedRows
	once    sync.Once
	in      chan struct{}
	inOnce  sync.Once
	release chan struct{}
}

func (g *heldFirstWrite) entered() chan struct{} {
	g.inOnce.Do(func() { g.in = make(chan struct{}) })
	return g.in
}

func (g *heldFirstWrite) Apply(ctx context.Context, d store.Derived) error {
	g.once.Do(func() {
		close(g.entered())
		<-g.release
	})
	return g.appliedRows.Apply(ctx, d)
}

// holdingRows is a Backend whose Apply asks Hold for each user of the
// batch, as a shared backend does right before writing them, after
// before runs (a handover sealing a user between the cut of the batch and
// its write).
type holdingRows struct {
	store.Backend
	before  func()
	written map[string]bool
}

func (h *holdingRows) Apply(_ context.Context, d store.Derived) error {
	if h.before != nil {
		h.before()
		h.before = nil
	}
	for _, st := range d.Sessions {
		release, _, ok := d.Hold(st.User)
		if ok {
			h.written[st.User] = true
			release()
		}
	}
	return nil
}

// A user sealed while the batch holding its rows is being written, or
// whose shard this node took again between the cut of the batch and its
// write: the backend skips the user's rows (Hold), since they are no
// longer this node's to write, or were computed before the taking; and
// the writer's life ends, so that the tickets of those rows no longer
// confirm.
func TestRowsOfAUserSealedOrTakenAgainDuringTheWriteAreSkipped(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(l *leases)
	}{
		{"sealed", func(l *leases) { l.seal("bob") }},
		{"taken again", func(l *leases) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.epochs["bob"] = 10
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			owners := &leases{epochs: map[string]int64{"alice": 7, "bob": 9}}
			be := &holdingRows{written: map[string]bool{}, before: func() { c.change(owners) }}
			e, f := fencedWriter(owners, be)
			defer f.close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			ticket := WriteTicket{Boot: e.life()}
			ticket.Gen = f.put(func(b *batch) {
				b.sessionAt(session.State{User: "alice", Conv: "c1", ActiveTS: 100}, 7)
				b.sessionAt(session.State{User: "bob", Conv: "c1", ActiveTS: 100}, 9)
			})
			if err := e.WaitWritten(ctx, ticket); !errors.Is(err, errNotThisLife) {
				t.Errorf("the ticket of rows skipped confirmed: %v, want errNotThisLife", err)
			}
			if !be.written["alice"] || be.written["bob"] {
				t.Errorf("written %v, want alice's rows only", be.written)
			}
		})
	}
}

// Rows computed from a user's state of an earlier time here (an operation
// of that time put them after the shard was taken again, or a write
// carried them across the taking) are never written under the later
// epoch: the node read the tables again when it took the shard, and a
// row of the earlier time landing after that read would leave its memory
// behind the tables (a total above the sum of the sessions). The rows of
// the current epoch are written; the drop ends the writer's life.
func TestRowsOfAnEarlierTimeHereAreDropped(t *testing.T) {
	owners := &leases{epochs: map[string]int64{"alice": 8}} // taken again: 7, then 8
	be := &appliedRows{}
	e, f := fencedWriter(owners, be)
	defer f.close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	ticket := WriteTicket{Boot: e.life()}
	ticket.Gen = f.put(func(b *batch) {
		b.sessionAt(session.State{User: "alice", Conv: "c1", ActiveTS: 200, UnreadCount: 5}, 7)
		b.totalAt(store.TotalRow{User: "alice", Total: 5, At: 200}, 7)
		b.sessionAt(session.State{User: "alice", Conv: "c2", ActiveTS: 100, UnreadCount: 1}, 8)
	})
	if err := e.WaitWritten(ctx, ticket); !errors.Is(err, errNotThisLife) {
		t.Errorf("the ticket of rows dropped confirmed: %v, want errNotThisLife", err)
	}
	var sessions []session.State
	var totals []store.TotalRow
	for _, d := range be.take() {
		sessions = append(sessions, d.Sessions...)
		totals = append(totals, d.Totals...)
		if len(d.Sessions) > 0 && d.Fences["alice"] != 8 {
			t.Errorf("alice's rows fenced at %d, want 8", d.Fences["alice"])
		}
	}
	if len(sessions) != 1 || sessions[0].Conv != "c2" || len(totals) != 0 {
		t.Errorf("wrote sessions %v and totals %v, want only alice's c2 session of epoch 8", sessions, totals)
	}
}

// Within a batch a row of a later epoch replaces one of an earlier,
// whatever their clocks; one of an earlier epoch never replaces a later.
func TestABatchKeepsTheRowOfTheLaterEpoch(t *testing.T) {
	b := newBatch()
	k := store.MemberKey{User: "alice", Conv: "c1"}
	b.sessionAt(session.State{User: "alice", Conv: "c1", ActiveTS: 300}, 7)
	b.sessionAt(session.State{User: "alice", Conv: "c1", ActiveTS: 100}, 8)
	if b.sessions[k].ActiveTS != 100 || b.sessionEpochs[k] != 8 {
		t.Errorf("after a row of epoch 8: active_ts %d at epoch %d, want 100 at 8", b.sessions[k].ActiveTS, b.sessionEpochs[k])
	}
	b.sessionAt(session.State{User: "alice", Conv: "c1", ActiveTS: 400}, 7)
	if b.sessions[k].ActiveTS != 100 || b.sessionEpochs[k] != 8 {
		t.Errorf("a row of epoch 7 replaced one of 8: active_ts %d at epoch %d", b.sessions[k].ActiveTS, b.sessionEpochs[k])
	}
	older := newBatch()
	older.totalAt(store.TotalRow{User: "alice", Total: 5, At: 300}, 7)
	newer := newBatch()
	newer.totalAt(store.TotalRow{User: "alice", Total: 2, At: 100}, 8)
	older.merge(newer)
	if got := older.totals[[2]string{"alice", ""}]; got.Total != 2 || older.totalEpochs[[2]string{"alice", ""}] != 8 {
		t.Errorf("merged total %d at epoch %d, want 2 at 8", got.Total, older.totalEpochs[[2]string{"alice", ""}])
	}
}
