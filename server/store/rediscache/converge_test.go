package rediscache

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/memstore"
	"github.com/imcore/im/session"
)

const (
	alice = "alice"
	bob   = "bob"
	dAB   = "d:alice:bob"
	gTeam = "g:team"
	big   = int64(1) << 60 // above 2^53: a float would lose the difference
)

var (
	users = []string{alice, bob}
	convs = []string{dAB, gTeam}
)

func sess(user, conv string, active, write int64, ticks protocol.Ticks) session.State {
	return session.State{User: user, Conv: conv, ActiveTS: active, WriteSeq: write, ReadSeq: write - 1,
		UnreadCount: 1, WriteTS: active - 1, LastConv: conv, LastSeq: write, Ticks: ticks}
}

// convergeRows are derived rows as several nodes write them: newer and
// older sessions, tick rises at one active_ts (read above delivered
// among them), totals newer and late.
func convergeRows() []store.Derived {
	tick := func(d, r int64) protocol.Ticks { return protocol.Ticks{DeliveredSeq: d, ReadSeq: r} }
	return []store.Derived{
		{Sessions: []session.State{sess(alice, dAB, big+1, 1, tick(0, 0))},
			Totals: []store.TotalRow{{User: alice, List: "", Total: 1, At: big + 1}}},
		{Sessions: []session.State{sess(alice, gTeam, big+2, 1, tick(0, 0)), sess(bob, dAB, 10, 1, tick(0, 0))},
			Totals: []store.TotalRow{{User: alice, List: "", Total: 2, At: big + 2}, {User: bob, List: "", Total: 1, At: 10}}},
		{Sessions: []session.State{sess(alice, dAB, big+1, 1, tick(1, 1)), sess(bob, dAB, 10, 1, tick(1, 0))}},
		{Sessions: []session.State{sess(alice, dAB, big+3, 2, tick(0, 0))},
			Totals: []store.TotalRow{{User: alice, List: "shop", Total: 4, At: big + 3}, {User: alice, List: "", Total: 0, At: big + 3}}},
		{Sessions: []session.State{sess(alice, dAB, big+3, 2, tick(0, 2))}},
		{Sessions: []session.State{sess(alice, dAB, big+3, 2, tick(1, 1))}},
		{Sessions: []session.State{sess(bob, gTeam, 12, 3, tick(0, 0))},
			Totals: []store.TotalRow{{User: bob, List: "", Total: 3, At: 12}}},
		{Sessions: []session.State{sess(bob, dAB, 9, 1, tick(0, 0))},
			Totals: []store.TotalRow{{User: bob, List: "", Total: 9, At: 9}}},
	}
}

// step is one step of a run: each operation has two, in that order (a
// durable write and its merge; a hydration's read and its fill).
type step struct {
	op, phase int
}

// hydration is a hydration of every user and session, read from the
// durable store at one moment and filled into Redis at a later one.
type hydration struct {
	userLeases map[string]string
	users      map[string]store.UserRecord
	sessLeases map[string]map[string]string // conv → user → lease
	sessions   map[string]map[string]session.State
}

func (h *hydration) read(t *testing.T, c *Cache) {
	ctx := t.Context()
	h.userLeases, h.users = map[string]string{}, map[string]store.UserRecord{}
	h.sessLeases, h.sessions = map[string]map[string]string{}, map[string]map[string]session.State{}
	for _, u := range users {
		_, _, lease, err := c.cachedUser(ctx, c.keysOf(u))
		if err != nil {
			t.Fatal(err)
		}
		if lease != "" {
			h.userLeases[u] = lease
			if h.users[u], err = c.inner.User(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, conv := range convs {
		_, leases, err := c.cachedSessions(ctx, conv, users)
		if err != nil {
			t.Fatal(err)
		}
		h.sessLeases[conv] = leases
		if h.sessions[conv], err = c.inner.Sessions(ctx, conv, slices.Collect(maps.Keys(leases))); err != nil {
			t.Fatal(err)
		}
	}
}

func (h *hydration) fill(c *Cache) {
	ctx := context.Background()
	for u, lease := range h.userLeases {
		c.fillUser(ctx, c.keysOf(u), lease, h.users[u])
	}
	for conv, leases := range h.sessLeases {
		c.fillSessions(ctx, conv, leases, h.sessions[conv])
	}
}

// wipe deletes every key of the cache, as FLUSHALL would.
func wipe(t *testing.T, rdb *redis.Client, prefix string) {
	ctx := t.Context()
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		if err := rdb.Del(ctx, keys...).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMergesConvergeInAnyOrder runs the same derived rows, each a durable
// write followed later by its merge into Redis, in many orders
// interleaved with hydrations that read the durable store at one moment
// and fill Redis at a later one, and with Redis losing everything: every
// order ends with Redis serving what the durable store holds. Each run is
// made twice: with each row's begin (its writing flags) just before its
// merge, so that the merges meet in any order, and with the begin a step
// of its own before the durable write, as Apply makes it, so that the
// writers overlap (a merge whose flag was replaced or lost drops).
func TestMergesConvergeInAnyOrder(t *testing.T) {
	rows := convergeRows()
	const hydrations, wipes, runs = 4, 1, 60
	var first map[string]any
	for run := range 2 * runs {
		apart := run >= runs // the begin a step of its own
		rng := rand.New(rand.NewPCG(uint64(run%runs), 11))
		rdb, prefix := testRedis(t)
		inner := memstore.New()
		c := New(inner, rdb, prefix)
		hs := make([]hydration, hydrations)
		tokens := make([]string, len(rows))

		// Operations: rows (begin, durable write, merge; or durable write,
		// begin and merge), hydrations (two steps), wipes (one).
		phases := make([]int, len(rows)+hydrations+wipes)
		steps := map[int]int{}
		for i := range phases {
			switch {
			case i < len(rows) && apart:
				steps[i] = 3
			case i < len(rows)+hydrations:
				steps[i] = 2
			default:
				steps[i] = 1
			}
		}
		var order []step
		for {
			var ready []int
			for i := range phases {
				if phases[i] < steps[i] {
					ready = append(ready, i)
				}
			}
			if len(ready) == 0 {
				break
			}
			op := ready[rng.IntN(len(ready))]
			order = append(order, step{op, phases[op]})
			phases[op]++
		}
		for _, s := range order {
			switch {
			case s.op < len(rows):
				phase := s.phase
				if !apart {
					phase++ // no begin step: 1 the durable write, 2 the begin and merge
				}
				switch phase {
				case 0:
					tokens[s.op] = c.begin(t.Context(), usersOf(rows[s.op]))
				case 1:
					if err := inner.Apply(t.Context(), rows[s.op]); err != nil {
						t.Fatal(err)
					}
				case 2:
					if !apart {
						tokens[s.op] = c.begin(t.Context(), usersOf(rows[s.op]))
					}
					c.merge(t.Context(), rows[s.op], tokens[s.op])
				}
			case s.op < len(rows)+hydrations && s.phase == 0:
				hs[s.op-len(rows)].read(t, c)
			case s.op < len(rows)+hydrations:
				hs[s.op-len(rows)].fill(c)
			default:
				wipe(t, rdb, prefix)
			}
		}
		if st := c.Stats(); st != (Stats{}) {
			t.Fatalf("run %d: Redis failures %+v", run, st)
		}
		got := servedMatchesInner(t, c, fmt.Sprintf("run %d (%v)", run, order))
		if first == nil {
			first = got
		} else if !reflect.DeepEqual(got, first) {
			t.Fatalf("run %d ends in\n%v\nrun 0 in\n%v", run, got, first)
		}
		c.Close()
	}
}

// servesInner checks that c serves what its durable store holds, every
// user's record and every session, and returns what was served.
func servesInner(t *testing.T, c *Cache, run string) map[string]any {
	t.Helper()
	ctx := t.Context()
	served := map[string]any{}
	for _, u := range users {
		want, err := c.inner.User(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.User(ctx, u)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: User(%s) = %+v, %v; durable %+v", run, u, got, err, want)
		}
		served["user "+u] = want
	}
	for _, conv := range convs {
		want, err := c.inner.Sessions(ctx, conv, users)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Sessions(ctx, conv, users)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: Sessions(%s) =\n%+v, %v; durable\n%+v", run, conv, got, err, want)
		}
		served["sessions "+conv] = want
	}
	return served
}

// servedMatchesInner checks that c serves what its durable store holds,
// then from Redis alone (hits), and that each user's index has each
// cached session at its active_ts. It returns what was served.
func servedMatchesInner(t *testing.T, c *Cache, run string) map[string]any {
	t.Helper()
	ctx := t.Context()
	served := servesInner(t, c, run)
	for _, u := range users {
		want := served["user "+u]
		hit, cached, lease, err := c.cachedUser(ctx, c.keysOf(u))
		if err != nil || !cached || !reflect.DeepEqual(hit, want) {
			t.Fatalf("%s: cached User(%s) = %+v (cached %v, lease %q), %v; durable %+v", run, u, hit, cached, lease, err, want)
		}
	}
	for _, conv := range convs {
		want := served["sessions "+conv]
		hit, leases, err := c.cachedSessions(ctx, conv, users)
		if err != nil || len(leases) > 0 || !reflect.DeepEqual(hit, want) {
			t.Fatalf("%s: cached Sessions(%s) = %+v (leases %v), %v; durable %+v", run, conv, hit, leases, err, want)
		}
	}
	for _, u := range users {
		index, err := c.rdb.ZRangeWithScores(ctx, c.keysOf(u).index, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, z := range index {
			states, err := c.inner.Sessions(ctx, z.Member.(string), []string{u})
			if err != nil {
				t.Fatal(err)
			}
			if st, ok := states[u]; !ok || z.Score != float64(st.ActiveTS) {
				t.Fatalf("%s: index of %s has %s at %v; durable %+v", run, u, z.Member, z.Score, states)
			}
		}
	}
	return served
}
