package rediscache

import (
	"strconv"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
	"github.com/imcore/im/session"
)

// pairRows are a message from alice to bob at ts: both their sessions of
// dAB at active_ts ts, and a total of each.
func pairRows(ts, total int64) store.Derived {
	return store.Derived{
		Sessions: []session.State{sess(alice, dAB, ts, ts, protocol.Ticks{}), sess(bob, dAB, ts, ts, protocol.Ticks{})},
		Totals: []store.TotalRow{{User: alice, List: "", Total: total, At: ts},
			{User: bob, List: "shop", Total: total, At: ts}},
	}
}

// TestKilledWriterIsNotServedStale kills a writer (node a) between its
// durable write and its merge: another node (b) serves what the durable
// store holds, not the entries a left behind, and after b's own write
// every read matches the durable store, from Redis.
func TestKilledWriterIsNotServedStale(t *testing.T) {
	rdb, prefix := testRedis(t)
	inner := memstore.New()
	a, b := New(inner, rdb, prefix), New(inner, rdb, prefix)
	ctx := t.Context()
	first := pairRows(10, 1)
	first.Sessions = append(first.Sessions, sess(alice, gTeam, 11, 1, protocol.Ticks{}))
	applyOK(t, a, first)
	servedMatchesInner(t, a, "hydrated")
	before, err := inner.User(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}

	// a sets the flags and makes the durable write, and is killed. The
	// write has rows b's write below does not touch again.
	killed := pairRows(20, 2)
	killed.Sessions = append(killed.Sessions, sess(alice, gTeam, 21, 2, protocol.Ticks{}))
	killed.Totals = append(killed.Totals, store.TotalRow{User: bob, List: "", Total: 5, At: 20})
	a.begin(ctx, usersOf(killed))
	if err := inner.Apply(ctx, killed); err != nil {
		t.Fatal(err)
	}
	if c, _ := rdb.HGet(ctx, a.keysOf(alice).record, "c").Result(); c != strconv.FormatInt(before.Clock, 10) {
		t.Fatalf("cached clock %q, want the stale %d still in Redis", c, before.Clock)
	}

	served := servesInner(t, b, "after the killed write")
	if rec := served["user "+alice].(store.UserRecord); rec.Clock != 21 || rec.Totals[""] != 2 {
		t.Fatalf("User(alice) = %+v, want clock 21, total 2", rec)
	}
	if got := served["sessions "+dAB].(map[string]session.State); got[alice].ActiveTS != 20 || got[bob].ActiveTS != 20 {
		t.Fatalf("Sessions(dAB) = %+v, want both at 20", got)
	}
	for _, u := range users {
		if _, cached, lease, err := b.cachedUser(ctx, b.keysOf(u)); err != nil || cached || lease != "" {
			t.Fatalf("%s: cached %v, lease %q, %v; want the user being written", u, cached, lease, err)
		}
	}

	applyOK(t, b, pairRows(30, 3))
	servedMatchesInner(t, b, "after b's write")
	servedMatchesInner(t, a, "a after b's write")
	for n, c := range []*Cache{a, b} {
		if st := c.Stats(); st != (Stats{}) {
			t.Fatalf("node %d: Redis failures %+v", n, st)
		}
	}
}

// TestReplacedFlagDrops makes two writes of alice, the first merged after
// the second's begin: that merge drops her entries rather than merge into
// them, leaving the second's flag, so that reads match the durable store
// whether the second merges or not.
func TestReplacedFlagDrops(t *testing.T) {
	c, inner, rdb := newTestCache(t)
	ctx := t.Context()
	applyOK(t, c, sessionRows(10, 1))
	servedMatchesInner(t, c, "hydrated")

	first, second := sessionRows(20, 2), sessionRows(30, 3)
	token1 := c.begin(ctx, usersOf(first))
	if err := inner.Apply(ctx, first); err != nil {
		t.Fatal(err)
	}
	token2 := c.begin(ctx, usersOf(second))
	if err := inner.Apply(ctx, second); err != nil {
		t.Fatal(err)
	}
	c.merge(ctx, first, token1)

	k := c.keysOf(alice)
	if n, _ := rdb.Exists(ctx, k.record, k.sessions, k.index).Result(); n != 0 {
		t.Fatalf("%d of alice's entries after a merge whose flag was replaced", n)
	}
	if w, _ := rdb.Get(ctx, k.writing).Result(); w != token2 {
		t.Fatalf("writing flag %q, want the second write's", w)
	}
	servesInner(t, c, "after the first merge")

	c.merge(ctx, second, token2)
	if n, _ := rdb.Exists(ctx, k.writing).Result(); n != 0 {
		t.Fatal("the writing flag is left after its merge")
	}
	servedMatchesInner(t, c, "after the second merge")
	if st := c.Stats(); st != (Stats{}) {
		t.Fatalf("Redis failures %+v", st)
	}
}
