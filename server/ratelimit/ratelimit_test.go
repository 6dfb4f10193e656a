package ratelimit

import (
	"fmt"
	"hash/maphash"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestSet(limit rate.Limit, burst int) (*Set, *fakeClock) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	s := NewSet(limit, burst)
	s.now = clock.now
	return s, clock
}

func TestBurstThenRate(t *testing.T) {
	s, clock := newTestSet(10, 5) // 10/s, burst 5
	for i := range 5 {
		if !s.Allow("alice") {
			t.Fatalf("token %d of the burst refused", i+1)
		}
	}
	ok, wait, _ := s.Take("alice", 1)
	if ok || wait != 100*time.Millisecond {
		t.Fatalf("past the burst: ok %v, retry after %v; want refused, 100ms", ok, wait)
	}
	// Another key has its own bucket.
	if !s.Allow("bob") {
		t.Fatal("bob refused because of alice")
	}
	clock.t = clock.t.Add(100 * time.Millisecond)
	if !s.Allow("alice") {
		t.Fatal("refused after the refill time")
	}
	if s.Allow("alice") {
		t.Fatal("allowed twice after one refill")
	}
}

func TestTakeMoreThanBurst(t *testing.T) {
	s, _ := newTestSet(PerWindow(60, time.Hour), 20)
	ok, wait, _ := s.Take("alice", 21)
	if ok || wait != 20*time.Minute {
		t.Fatalf("21 of a burst of 20: ok %v, wait %v; want refused, the 20 min to fill the bucket", ok, wait)
	}
	if ok, _, _ := s.Take("alice", 20); !ok {
		t.Fatal("the whole burst refused after a refused oversize take")
	}
}

func TestUndoGivesTokensBack(t *testing.T) {
	s, clock := newTestSet(1, 3)
	ok, _, undo := s.Take("alice", 3)
	if !ok {
		t.Fatal("burst refused")
	}
	if s.Allow("alice") {
		t.Fatal("allowed with an empty bucket")
	}
	clock.t = clock.t.Add(100 * time.Millisecond) // the undo comes later, as it does for real
	undo()
	if ok, _, _ := s.Take("alice", 3); !ok {
		t.Fatal("tokens not given back by undo")
	}
	// Given back, never above the burst.
	_, _, undo = s.Take("bob", 1)
	clock.t = clock.t.Add(time.Hour)
	undo()
	if ok, _, _ := s.Take("bob", 4); ok {
		t.Fatal("undo on a full bucket raised it above its burst")
	}
}

func TestFullBucketsAreForgotten(t *testing.T) {
	s, clock := newTestSet(1, 1) // refills a token a second
	for i := range 100 {
		s.Allow(fmt.Sprint("user", i)) // drained; full again after a second
	}
	s.with("hog", func(b *bucket) bool { b.tokens = -100; return true }) // deep in debt: not full for long
	if n := s.Len(); n != 101 {
		t.Fatalf("%d buckets before the sweep, want 101", n)
	}
	clock.t = clock.t.Add(sweepInterval)
	// Look once into every shard: each sweeps its full buckets.
	probes := map[uint64]string{}
	for i := 0; len(probes) < shards; i++ {
		key := fmt.Sprint("probe", i)
		if _, seen := probes[maphash.String(s.seed, key)%shards]; !seen {
			probes[maphash.String(s.seed, key)%shards] = key
		}
	}
	for _, key := range probes {
		s.Empty(key)
	}
	if n := s.Len(); n != shards+1 {
		t.Fatalf("%d buckets after the sweep, want the %d probes and the bucket in debt", n, shards)
	}
	if !s.Empty("hog") {
		t.Fatal("the bucket in debt was forgotten and came back full")
	}
}

func TestInfiniteRateAllowsEverything(t *testing.T) {
	s := NewSet(rate.Inf, 0)
	for range 1000 {
		if ok, _, undo := s.Take("alice", 1000); !ok || undo == nil {
			t.Fatal("refused under rate.Inf")
		}
	}
	if s.Len() != 0 {
		t.Fatal("buckets kept under rate.Inf")
	}
}

func TestAdmitWaitsWithinBound(t *testing.T) {
	s, _ := newTestSet(10, 2) // a token every 100ms
	for i := range 2 {
		if wait, ok := s.Admit("alice", 0); !ok || wait != 0 {
			t.Fatalf("token %d of the burst: wait %v, ok %v", i+1, wait, ok)
		}
	}
	// Empty: the next token is 100ms off, within a bound of 250ms.
	if wait, ok := s.Admit("alice", 250*time.Millisecond); !ok || wait != 100*time.Millisecond {
		t.Fatalf("within the bound: wait %v, ok %v; want 100ms, true", wait, ok)
	}
	// That one is spoken for: the next is 200ms off.
	if wait, ok := s.Admit("alice", 250*time.Millisecond); !ok || wait != 200*time.Millisecond {
		t.Fatalf("second wait: %v, %v; want 200ms, true", wait, ok)
	}
	// 300ms is beyond the bound: refused, nothing taken.
	if wait, ok := s.Admit("alice", 250*time.Millisecond); ok || wait != 300*time.Millisecond {
		t.Fatalf("beyond the bound: wait %v, ok %v; want 300ms, false", wait, ok)
	}
	if wait, ok := s.Admit("alice", 250*time.Millisecond); ok || wait != 300*time.Millisecond {
		t.Fatalf("a refusal took a token: wait %v, ok %v", wait, ok)
	}
}

func TestEmpty(t *testing.T) {
	s, clock := newTestSet(10, 2)
	if s.Empty("alice") {
		t.Fatal("a new bucket is empty")
	}
	s.Allow("alice")
	s.Allow("alice")
	if !s.Empty("alice") {
		t.Fatal("a drained bucket is not empty")
	}
	if !s.Empty("alice") || s.Allow("alice") {
		t.Fatal("Empty took a token or the bucket refilled at once")
	}
	clock.t = clock.t.Add(100 * time.Millisecond)
	if s.Empty("alice") {
		t.Fatal("empty after the refill time")
	}
}
