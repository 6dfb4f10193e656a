package dynamostore

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/internal/childproc"
	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/session"
)

// fencedWrite is one Apply of alice's session in c1 and her main total,
// under fence: priority marks which write the stored row is, and the
// session's unread count (so the total) is the same mark.
func fencedWrite(fence, clock, priority int64) store.Derived {
	return store.Derived{
		Sessions: []session.State{{User: "alice", Conv: "c1", ActiveTS: clock, Priority: priority, UnreadCount: priority}},
		Totals:   []store.TotalRow{{User: "alice", Total: priority, At: clock}},
		Fences:   map[string]int64{"alice": fence},
	}
}

// storedMark returns the priority of alice's stored session and her main
// total (fencedWrite's mark in both: the total is her session's unread
// count).
func storedMark(t *testing.T, s *Backend) (session, total int64) {
	t.Helper()
	ctx := context.Background()
	got, err := s.Sessions(ctx, "c1", []string{"alice"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.User(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return got["alice"].Priority, rec.Totals[""]
}

// A user's sessions and totals are ordered by lease epoch first, then by
// their clock: a row of an older epoch never wins, whatever its clock.
func TestFencedRowsOrderByEpochThenClock(t *testing.T) {
	s, _ := openFresh(t, nil)
	ctx := context.Background()
	steps := []struct {
		fence, clock, priority int64
		want                   int64 // the priority stored after the step
	}{
		{0, 100, 1, 1},  // unfenced, as written before fences
		{5, 50, 2, 2},   // a fence beats an unfenced row of a later clock
		{4, 900, 3, 2},  // an older epoch loses, even with a later clock
		{5, 40, 4, 2},   // the same epoch: the older clock loses
		{5, 60, 5, 5},   // the same epoch: the newer clock wins
		{6, 10, 6, 6},   // a newer epoch wins with an older clock
		{0, 5000, 7, 6}, // an unfenced write never beats a fenced row
	}
	var rule session.Written // what session.Newest keeps, step by step
	for i, st := range steps {
		if err := s.Apply(ctx, fencedWrite(st.fence, st.clock, st.priority)); err != nil {
			t.Fatal(err)
		}
		rule = session.Newest(rule, session.Written{State: session.State{ActiveTS: st.clock, Priority: st.priority}, Epoch: st.fence})
		sess, total := storedMark(t, s)
		if sess != st.want || total != st.want || rule.State.Priority != st.want {
			t.Fatalf("step %d (fence %d, clock %d): stored session %d, total %d, session.Newest %d; want %d", i, st.fence, st.clock, sess, total, rule.State.Priority, st.want)
		}
	}
}

// TestPausedOwnerWritesNothingItsSuccessorSeesWrong: a node holds alice's
// shard and writes her rows under its lease; it is paused (SIGSTOP) past
// the lease; a successor takes the shard at a higher epoch and writes her
// rows with an older clock than the paused node's; the paused node
// resumes with a write in flight under its old fence. It must find it no
// longer holds the shard, and the tables must keep the successor's rows.
func TestPausedOwnerWritesNothingItsSuccessorSeesWrong(t *testing.T) {
	if os.Getenv("FENCE_PAUSED_CHILD") != "" {
		runPausedOwner()
		return
	}
	s, e := openFresh(t, nil)
	rdb := e.redis
	ctx := context.Background()
	prefix := s.prefix
	ttl := time.Second

	child := childproc.Start(t, "TestPausedOwnerWritesNothingItsSuccessorSeesWrong", "FENCE_PAUSED_CHILD=1",
		"FENCE_PREFIX="+prefix, "FENCE_REDIS="+rdb.Options().Addr, "FENCE_DYNAMODB="+testservices.DynamoDB(t))
	var staleEpoch int64
	fmt.Sscanf(child.Expect("holding "), "holding %d", &staleEpoch)
	if sess, total := storedMark(t, s); sess != 1 || total != 1 {
		t.Fatalf("the owner's write before the pause is missing: session %d, total %d", sess, total)
	}

	child.Pause()
	shard := ownership.ShardOfUser("alice")
	successor, err := ownership.Start(ctx, ownership.Config{
		Redis: rdb, Prefix: prefix, Node: ownership.Node{ID: "successor", Addr: "successor:1"},
		LeaseTTL: ttl, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(successor.Stop)
	fence := awaitHeld(t, successor, shard, 15*time.Second)
	if fence.Epoch <= staleEpoch {
		t.Fatalf("successor took the shard at epoch %d, not above the paused owner's %d", fence.Epoch, staleEpoch)
	}
	// The successor's clock is behind the paused owner's: only the fence
	// can tell which write is newer.
	if err := s.Apply(ctx, fencedWrite(fence.Epoch, 500, 2)); err != nil {
		t.Fatal(err)
	}

	child.Resume()
	resumed := child.Expect("resumed ")
	if !strings.Contains(resumed, "held=false") {
		t.Errorf("the resumed owner still trusts its lease: %s", resumed)
	}
	child.Wait()
	if sess, total := storedMark(t, s); sess != 2 || total != 2 {
		t.Fatalf("after the paused owner resumed: session %d, total %d; want the successor's (2)", sess, total)
	}
}

// awaitHeld waits until m holds shard and returns its fence.
func awaitHeld(t *testing.T, m *ownership.Manager, shard ownership.Shard, within time.Duration) ownership.Fence {
	t.Helper()
	deadline := time.After(within)
	for {
		changed := m.Changed()
		if f, ok := m.Held(shard); ok {
			return f
		}
		select {
		case <-changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s did not take shard %d within %v", m.NodeID(), shard, within)
		}
	}
}

// runPausedOwner is the child of the test: it holds every shard, writes
// alice's rows under its fence (clock 1000), then, once resumed, writes
// them again under the same fence with a later clock — the write it had in
// flight — and reports whether it still holds the shard.
func runPausedOwner() {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(1)
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("FENCE_REDIS")})
	defer rdb.Close()
	prefix := os.Getenv("FENCE_PREFIX")
	db, err := NewClient(ctx, os.Getenv("FENCE_DYNAMODB"), "us-east-1")
	if err != nil {
		fail(err)
	}
	s, err := Open(ctx, Options{DynamoDB: db, Redis: rdb, Prefix: prefix})
	if err != nil {
		fail(err)
	}
	defer s.Close()
	ttl := time.Second
	m, err := ownership.Start(ctx, ownership.Config{
		Redis: rdb, Prefix: prefix, Node: ownership.Node{ID: "paused", Addr: "paused:1"},
		LeaseTTL: ttl, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fail(err)
	}
	defer m.Stop()
	fence, ok := m.Held(ownership.ShardOfUser("alice"))
	if !ok {
		fail(fmt.Errorf("not holding alice's shard"))
	}
	if err := s.Apply(ctx, fencedWrite(fence.Epoch, 1000, 1)); err != nil {
		fail(err)
	}
	fmt.Printf("holding %d\n", fence.Epoch)
	// Woken by the parent after the pause: the write it had in flight,
	// under the fence it had before the pause, goes out now.
	childproc.AwaitResume()
	_, still := m.Held(ownership.ShardOfUser("alice"))
	if err := s.Apply(ctx, fencedWrite(fence.Epoch, 2000, 3)); err != nil {
		fail(err)
	}
	fmt.Printf("resumed held=%v\n", still)
}
