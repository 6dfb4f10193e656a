package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/engine"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/backendtest"
	"github.com/imcore/im/server/store/storetest"
)

// steppingClock is a clock that moves one millisecond on every reading, so
// that two server timestamps are never equal by accident.
func steppingClock() func() time.Time {
	var n atomic.Int64
	base := time.UnixMilli(1763800000000)
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

// openAt opens the store at path and closes it when the test ends.
func openAt(tb testing.TB, path string, opts Options) *Backend {
	tb.Helper()
	s, err := Open(path, opts)
	if err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// openEngine opens the store at path with the domain engine on it (clock
// now, time.Now when nil), after it repaired what a crash left, closed
// when the test ends.
func openEngine(tb testing.TB, path string, now func() time.Time) *engine.Engine {
	tb.Helper()
	db, err := Open(path, Options{})
	if err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
	e, err := engine.New(context.Background(), db, engine.Options{Now: now})
	if err == nil {
		err = e.Repair(context.Background())
	}
	if err != nil {
		db.Close()
		tb.Fatalf("engine on %s: %v", path, err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Engine {
		return openEngine(t, filepath.Join(t.TempDir(), "im.db"), steppingClock())
	})
}

// TestConformanceDefaults runs the suite with the production options.
func TestConformanceDefaults(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Engine {
		return openEngine(t, filepath.Join(t.TempDir(), "im.db"), nil)
	})
}

// TestBackendConformance runs the storage contract's own suite.
func TestBackendConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, blobs blob.Store) store.Backend {
		return openAt(t, filepath.Join(t.TempDir(), "im.db"), Options{Blobs: blobs})
	})
}

// createTeam creates g:team (members alice, bob and carol) by creator; its
// creation message, seq 1, has id msgID. The team's version is then 0, the
// MembersVersion of every request message builds.
func createTeam(t *testing.T, s chat.Engine, creator, msgID string) store.GroupResult {
	t.Helper()
	res, err := s.ChangeGroup(context.Background(), store.GroupChange{
		Conv:    "g:team",
		Create:  true,
		Creator: creator,
		Title:   "team",
		Add:     []string{"alice", "bob", "carol"},
		Msg:     protocol.Message{MsgID: msgID, From: creator, Body: creator + " created the group", ClientTS: 1763800000000},
	})
	if err != nil {
		t.Fatalf("create g:team: %v", err)
	}
	if res.Msg.Seq != 1 || res.Group.Version != 0 {
		t.Fatalf("create g:team = %+v, want the creation message at seq 1 and version 0", res)
	}
	return res
}

// message builds a request in d:alice:bob or g:team (the team must exist,
// at version 0).
func message(conv, from, msgID string) store.AppendRequest {
	members := []string{"alice", "bob"}
	if conv == "g:team" {
		members = []string{"alice", "bob", "carol"}
	}
	return store.AppendRequest{
		Msg:     protocol.Message{Conv: conv, MsgID: msgID, From: from, Body: "body of " + msgID, ClientTS: 1763800000000},
		Members: members,
	}
}

func mustAppend(t *testing.T, s chat.Engine, req store.AppendRequest) store.AppendResult {
	t.Helper()
	res, err := s.Append(context.Background(), req)
	if err != nil {
		t.Fatalf("Append(%s, %s): %v", req.Msg.Conv, req.Msg.MsgID, err)
	}
	return res
}

// logAppend appends to the log alone (the backend, no engine).
func logAppend(s *Backend, conv, from, msgID string) (store.AppendResult, error) {
	return s.Append(context.Background(), protocol.Message{Conv: conv, MsgID: msgID, From: from, Body: "body of " + msgID, ServerTS: 1})
}

// snapshot is everything the store tells about the test's conversations.
type snapshot struct {
	team     store.GroupState
	history  map[string][]protocol.Message
	receipts map[string][]protocol.MemberReceipt
	pending  map[string][]store.PendingDelivery
}

func takeSnapshot(t *testing.T, s chat.Engine) snapshot {
	t.Helper()
	ctx := context.Background()
	snap := snapshot{
		history:  map[string][]protocol.Message{},
		receipts: map[string][]protocol.MemberReceipt{},
		pending:  map[string][]store.PendingDelivery{},
	}
	var err error
	if snap.team, err = s.Group(ctx, "g:team"); err != nil {
		t.Fatalf("Group(g:team): %v", err)
	}
	for _, conv := range []string{"d:alice:bob", "g:team"} {
		msgs, more, err := s.History(ctx, conv, store.HistoryQuery{After: true, Limit: 1000})
		if err != nil || more {
			t.Fatalf("History(%s): more %v, err %v", conv, more, err)
		}
		snap.history[conv] = msgs
		rs, err := s.Receipts(ctx, conv)
		if err != nil {
			t.Fatalf("Receipts(%s): %v", conv, err)
		}
		snap.receipts[conv] = rs
	}
	for _, user := range []string{"alice", "bob", "carol"} {
		ps, err := s.Pending(ctx, user)
		if err != nil {
			t.Fatalf("Pending(%s): %v", user, err)
		}
		snap.pending[user] = ps
	}
	return snap
}

func (a snapshot) check(t *testing.T, b snapshot) {
	t.Helper()
	if !reflect.DeepEqual(a.team, b.team) {
		t.Errorf("Group(g:team) after reopening = %+v, want %+v", b.team, a.team)
	}
	for conv, msgs := range a.history {
		if !slices.Equal(msgs, b.history[conv]) {
			t.Errorf("History(%s) after reopening =\n%+v\nwant\n%+v", conv, b.history[conv], msgs)
		}
	}
	for conv, rs := range a.receipts {
		if !slices.Equal(rs, b.receipts[conv]) {
			t.Errorf("Receipts(%s) after reopening = %+v, want %+v", conv, b.receipts[conv], rs)
		}
	}
	for user, ps := range a.pending {
		if !slices.Equal(ps, b.pending[user]) {
			t.Errorf("Pending(%s) after reopening = %+v, want %+v", user, b.pending[user], ps)
		}
	}
}

// TestReopen closes the database and opens the same file again: everything
// is still there and sequencing continues where it stopped.
func TestReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "im.db")
	s := openEngine(t, path, steppingClock())
	for i := 1; i <= 5; i++ {
		from := "alice"
		if i == 3 {
			from = "bob"
		}
		mustAppend(t, s, message("d:alice:bob", from, fmt.Sprintf("m%d", i)))
	}
	createTeam(t, s, "alice", "g1") // the team's first message, seq 1
	mustAppend(t, s, message("g:team", "alice", "g2"))
	ctx := context.Background()
	mark := func(user string, kind store.MarkKind, conv string, seq int64) []store.TickChange {
		t.Helper()
		res, err := s.Mark(ctx, user, kind, []protocol.Mark{{Conv: conv, Seq: seq}})
		if err != nil {
			t.Fatalf("Mark(%s, %s, %d): %v", user, conv, seq, err)
		}
		return res.Ticks
	}
	mark("bob", store.MarkDelivered, "d:alice:bob", 4)
	mark("bob", store.MarkRead, "g:team", 1)
	if got, want := mark("carol", store.MarkRead, "g:team", 1), []store.TickChange{{Conv: "g:team", Ticks: protocol.Ticks{DeliveredSeq: 1, ReadSeq: 1}, Members: []string{"alice", "bob", "carol"}}}; !slices.EqualFunc(got, want, sameRise) {
		t.Fatalf("carol's read: changes %+v, want %+v", got, want)
	}
	mustAppend(t, s, message("g:team", "bob", "g3"))
	before := takeSnapshot(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	for round := 1; round <= 2; round++ {
		s = openEngine(t, path, steppingClock())
		before.check(t, takeSnapshot(t, s))
		if err := s.Close(); err != nil {
			t.Fatalf("Close (round %d): %v", round, err)
		}
	}

	s = openEngine(t, path, steppingClock())
	dup := mustAppend(t, s, message("d:alice:bob", "alice", "m2"))
	if want := before.history["d:alice:bob"][1]; !dup.Duplicate || dup.Msg != want {
		t.Errorf("repeating m2 after reopening = %+v, want the original %+v with Duplicate", dup, want)
	}
	if res := mustAppend(t, s, message("d:alice:bob", "alice", "m6")); res.Msg.Seq != 6 || res.Duplicate {
		t.Errorf("first append after reopening: seq %d duplicate %v, want seq 6", res.Msg.Seq, res.Duplicate)
	}
	// The stored tick minimum survived: alice catching up leaves it at
	// carol's 1, which was reported before closing.
	if got := mark("alice", store.MarkRead, "g:team", 3); len(got) != 0 {
		t.Errorf("alice's read after reopening: changes %+v, want none", got)
	}
	res := mustAppend(t, s, message("g:team", "carol", "g4"))
	if res.Msg.Seq != 4 {
		t.Errorf("first group append after reopening: seq %d, want 4", res.Msg.Seq)
	}
	if want := (protocol.Ticks{DeliveredSeq: 3, ReadSeq: 3}); res.Ticks == nil || *res.Ticks != want {
		t.Errorf("carol's reply after reopening: Ticks %v, want %+v", res.Ticks, want)
	}
	if got := mark("bob", store.MarkRead, "g:team", 4); len(got) != 0 {
		t.Errorf("bob's read after reopening: changes %+v, want none", got)
	}
	if got, want := mark("alice", store.MarkRead, "g:team", 4), []store.TickChange{{Conv: "g:team", Ticks: protocol.Ticks{DeliveredSeq: 4, ReadSeq: 4}, Members: []string{"alice", "bob", "carol"}}}; !slices.EqualFunc(got, want, sameRise) {
		t.Errorf("alice's read after reopening: changes %+v, want %+v", got, want)
	}
}

// TestServerTimestamp checks that the production clock stamps messages with
// the current time.
func TestServerTimestamp(t *testing.T) {
	s := openEngine(t, filepath.Join(t.TempDir(), "im.db"), nil)
	lo := time.Now().UnixMilli()
	res := mustAppend(t, s, message("d:alice:bob", "alice", "m1"))
	hi := time.Now().UnixMilli()
	if res.Msg.ServerTS < lo || res.Msg.ServerTS > hi {
		t.Errorf("server_ts = %d, want within [%d, %d]", res.Msg.ServerTS, lo, hi)
	}
}

// plugWriter runs a write that blocks the writer, inside its batch, until
// release is called: writes made meanwhile wait in the queue, and the next
// batch takes them all. It makes batching independent of timing.
func plugWriter(t *testing.T, s *Backend) (release func()) {
	t.Helper()
	running := make(chan struct{})
	gate := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.write(context.Background(), func(context.Context, *sql.Tx) error {
			close(running)
			<-gate
			return nil
		})
	}()
	<-running
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(gate)
			if err := <-done; err != nil {
				t.Errorf("plug write: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// waitQueued yields until n writes wait in the writer's queue.
func waitQueued(s *Backend, n int) {
	for len(s.ops) < n {
		runtime.Gosched()
	}
}

// TestGroupCommit checks that concurrent appends share commits: 64 appends
// made while the writer is busy are committed together.
func TestGroupCommit(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "im.db"), Options{})
	if _, err := logAppend(s, "d:alice:bob", "alice", "first"); err != nil { // creates the conversation
		t.Fatal(err)
	}

	release := plugWriter(t, s)
	const n = 64
	var wg sync.WaitGroup
	seqs := make([]int64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := logAppend(s, "d:alice:bob", "bob", fmt.Sprintf("m%d", i))
			seqs[i], errs[i] = res.Msg.Seq, err
		}()
	}
	waitQueued(s, n)
	release()
	wg.Wait()

	for i, err := range errs {
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
	}
	slices.Sort(seqs)
	if !slices.Equal(seqs, seqRange(2, n+1)) {
		t.Fatalf("seqs = %v, want 2..%d", seqs, n+1)
	}
	// Every write since Open is counted: the first, the plug and the n.
	batches, ops := s.BatchStats()
	t.Logf("%d writes in %d commits", ops, batches)
	if ops != 2+n {
		t.Errorf("BatchStats counted %d ops, want %d", ops, 2+n)
	}
	if batches >= ops {
		t.Errorf("%d writes took %d commits, want fewer commits than writes", ops, batches)
	}
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// TestFailedWriteRollsBackAlone fails a write after it stored a message, in
// the middle of a batch: it leaves nothing behind, and the writes before and
// after it in the same commit are stored.
func TestFailedWriteRollsBackAlone(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "im.db"), Options{})
	ctx := context.Background()
	if _, err := logAppend(s, "d:alice:bob", "alice", "first"); err != nil {
		t.Fatal(err)
	}

	release := plugWriter(t, s)
	boom := errors.New("boom")
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i, id := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if id != "b" {
				_, errs[i] = logAppend(s, "d:alice:bob", "alice", id)
				return
			}
			errs[i] = s.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
				if _, err := s.appendTx(ctx, tx, protocol.Message{Conv: "d:alice:bob", MsgID: id, From: "bob", Body: "x", ServerTS: 1}, false); err != nil {
					return err
				}
				return boom
			})
		}()
		waitQueued(s, i+1) // queue them in order: b between a and c
	}
	release()
	wg.Wait()
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("appends around the failed write: %v, %v", errs[0], errs[2])
	}
	if !errors.Is(errs[1], boom) {
		t.Fatalf("failed write returned %v, want boom", errs[1])
	}

	msgs, _, err := s.History(ctx, "d:alice:bob", store.HistoryQuery{After: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, fmt.Sprintf("%d:%s", m.Seq, m.MsgID))
	}
	if want := []string{"1:first", "2:a", "3:c"}; !slices.Equal(got, want) {
		t.Errorf("History = %v, want %v", got, want)
	}
	// Its msg_id is free: it was never stored.
	if res, err := logAppend(s, "d:alice:bob", "bob", "b"); err != nil || res.Duplicate || res.Msg.Seq != 4 {
		t.Errorf("b after its failed write: %+v, %v; want a new message at seq 4", res, err)
	}
}

// TestCloseWithWritesInFlight closes the store while writes wait for the
// writer: every write queued before Close is committed and returns nil, every
// later one returns ErrClosed and leaves nothing behind.
func TestCloseWithWritesInFlight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "im.db")
	s := openAt(t, path, Options{})
	if _, err := logAppend(s, "d:alice:bob", "alice", "first"); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"first": 1}

	release := plugWriter(t, s)
	const workers = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []error
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				res, err := logAppend(s, "d:alice:bob", "bob", id)
				mu.Lock()
				if err == nil {
					want[id] = res.Msg.Seq
				} else {
					failures = append(failures, err)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	// Every worker has one write queued behind the plug when Close begins.
	waitQueued(s, workers)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	for !closeStarted(s) {
		runtime.Gosched()
	}
	release()
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()

	if len(want) != 1+workers {
		t.Errorf("%d appends succeeded, want the first and the %d in flight", len(want), workers)
	}
	if len(failures) != workers {
		t.Errorf("%d appends failed, want one per worker (%d)", len(failures), workers)
	}
	for _, err := range failures {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("Append after Close: %v, want ErrClosed", err)
		}
	}

	s = openAt(t, path, Options{})
	msgs, more, err := s.History(context.Background(), "d:alice:bob", store.HistoryQuery{After: true, Limit: 1000})
	if err != nil || more {
		t.Fatalf("History: more %v, err %v", more, err)
	}
	if len(msgs) != len(want) {
		t.Errorf("%d messages stored, %d appends returned nil", len(msgs), len(want))
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Errorf("message %d has seq %d: a gap", i, m.Seq)
		}
		if seq, ok := want[m.MsgID]; !ok {
			t.Errorf("%s stored at seq %d but its Append failed", m.MsgID, m.Seq)
		} else if seq != m.Seq {
			t.Errorf("%s stored at seq %d, Append returned %d", m.MsgID, m.Seq, seq)
		}
	}
}

// closeStarted reports whether Close has begun.
func closeStarted(s *Backend) bool {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	return s.closed
}

func TestCloseTwice(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "im.db"), Options{})
	if err := s.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
}

func TestOpenFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "dir", "im.db")
	if s, err := Open(path, Options{}); err == nil {
		s.Close()
		t.Errorf("Open(%s) in a missing directory: err = nil, want an error", path)
	}
}

// sameRise reports whether two rises of the tick minimum are the same,
// members included.
func sameRise(a, b store.TickChange) bool {
	return a.Conv == b.Conv && a.Ticks == b.Ticks && slices.Equal(a.Members, b.Members)
}
