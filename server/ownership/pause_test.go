package ownership

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/internal/childproc"
	"github.com/imcore/im/internal/testservices"
)

// The row both holders write, under the test's prefix, and its shard.
const (
	pausedRow   = "row"
	pausedShard = Shard(3)
)

// TestPausedHolderWritesNothingItsSuccessorSeesWrong: a node holding a
// shard is paused (SIGSTOP) past its lease; another node takes the shard
// at a higher epoch and writes; the paused node resumes with a write in
// flight under its old fence. It must find it no longer holds the shard,
// and its write must be refused: the row keeps the successor's value.
func TestPausedHolderWritesNothingItsSuccessorSeesWrong(t *testing.T) {
	if os.Getenv("OWNERSHIP_PAUSED_CHILD") != "" {
		runPausedHolder()
		return
	}
	rdb, prefix := testservices.RedisClient(t)
	ctx := context.Background()
	ttl := time.Second

	child := childproc.Start(t, "TestPausedHolderWritesNothingItsSuccessorSeesWrong",
		"OWNERSHIP_PAUSED_CHILD=1", "OWNERSHIP_PREFIX="+prefix, "OWNERSHIP_REDIS="+rdb.Options().Addr)
	held := child.Expect("holding ")
	var staleEpoch int64
	fmt.Sscanf(held, "holding %d", &staleEpoch)
	if v := rdb.Get(ctx, prefix+pausedRow).Val(); v != "stale" {
		t.Fatalf("the holder's write before the pause is missing: row = %q", v)
	}

	child.Pause()
	successor := startNode(t, rdb, prefix, "successor", ttl, Hooks{})
	settled(t, 10*time.Second, successor)
	f, ok := successor.Held(pausedShard)
	if !ok || f.Epoch <= staleEpoch {
		t.Fatalf("successor holds shard %d: %v at epoch %d (the paused holder had %d)", pausedShard, ok, f.Epoch, staleEpoch)
	}
	if err := successor.Leases().SetFenced(ctx, f, prefix+pausedRow, "successor"); err != nil {
		t.Fatal(err)
	}

	child.Resume()
	resumed := child.Expect("resumed ")
	if !strings.Contains(resumed, "held=false") {
		t.Errorf("the resumed holder still trusts its lease: %s", resumed)
	}
	if !strings.Contains(resumed, "write=fenced") {
		t.Errorf("the resumed holder's write in flight was not refused: %s", resumed)
	}
	child.Wait()
	if v := rdb.Get(ctx, prefix+pausedRow).Val(); v != "successor" {
		t.Fatalf("row = %q after the paused holder resumed, want the successor's", v)
	}
}

// runPausedHolder is the child of the test: it holds every shard, writes
// the row under its fence, and once resumed reports whether it still
// trusts its lease and what became of the write it had in flight.
func runPausedHolder() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("OWNERSHIP_REDIS")})
	defer rdb.Close()
	prefix := os.Getenv("OWNERSHIP_PREFIX")
	ttl := time.Second
	m, err := Start(ctx, Config{
		Redis: rdb, Prefix: prefix, Node: Node{ID: "paused", Addr: "paused:1"},
		LeaseTTL: ttl, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	defer m.Stop()
	fence, ok := m.Held(pausedShard)
	if !ok {
		fmt.Println("error: not holding the shard")
		os.Exit(1)
	}
	if err := m.Leases().SetFenced(ctx, fence, prefix+pausedRow, "stale"); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Printf("holding %d\n", fence.Epoch)
	// Woken by the parent after the pause: the write it had in flight,
	// under the fence it had before the pause, goes out now.
	childproc.AwaitResume()
	_, still := m.Held(pausedShard)
	err = m.Leases().SetFenced(ctx, fence, prefix+pausedRow, "stale")
	outcome := "applied"
	if errors.Is(err, ErrFenced) {
		outcome = "fenced"
	} else if err != nil {
		outcome = err.Error()
	}
	fmt.Printf("resumed held=%v write=%s\n", still, outcome)
}
