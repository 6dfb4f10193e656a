package rediscache

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/backendtest"
	"github.com/imcore/im/server/store/memstore"
	"github.com/imcore/im/session"
)

var quiet = WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

func applyOK(t *testing.T, b store.Backend, d store.Derived) {
	t.Helper()
	if err := b.Apply(t.Context(), d); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// sessionRows are a session of alice and its total at active_ts ts.
func sessionRows(ts, total int64) store.Derived {
	return store.Derived{
		Sessions: []session.State{sess(alice, dAB, ts, 3, protocol.Ticks{})},
		Totals:   []store.TotalRow{{User: alice, List: "", Total: total, At: ts}},
	}
}

// servesDurable checks that c's reads of alice equal its durable store's.
func servesDurable(t *testing.T, c *Cache) {
	t.Helper()
	ctx := t.Context()
	want, _ := c.inner.User(ctx, alice)
	if got, err := c.User(ctx, alice); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("User = %+v, %v; durable %+v", got, err, want)
	}
	wantS, _ := c.inner.Sessions(ctx, dAB, users)
	if got, err := c.Sessions(ctx, dAB, users); err != nil || !reflect.DeepEqual(got, wantS) {
		t.Fatalf("Sessions = %+v, %v; durable %+v", got, err, wantS)
	}
}

func TestReadsAreServedFromRedis(t *testing.T) {
	c, inner, rdb := newTestCache(t, WithTTL(time.Hour))
	ctx := t.Context()
	applyOK(t, c, sessionRows(10, 1))
	servesDurable(t, c) // hydrates

	// Written behind the cache's back: the cache still serves what it holds.
	applyOK(t, inner, sessionRows(20, 2))
	if rec, _ := c.User(ctx, alice); rec.Clock != 10 || rec.Totals[""] != 1 {
		t.Fatalf("User after a write behind the cache = %+v, want the cached clock 10, total 1", rec)
	}
	if got, _ := c.Sessions(ctx, dAB, users); got[alice].ActiveTS != 10 {
		t.Fatalf("Sessions after a write behind the cache = %+v, want the cached one", got)
	}

	// Written through it: merged.
	applyOK(t, c, sessionRows(30, 3))
	servesDurable(t, c)
	if rec, _ := c.User(ctx, alice); rec.Clock != 30 || rec.Totals[""] != 3 {
		t.Fatalf("User = %+v, want clock 30, total 3", rec)
	}

	// Every entry expires within the TTL.
	k := c.keysOf(alice)
	for _, key := range []string{k.record, k.sessions, k.index, k.gen} {
		ttl, err := rdb.PTTL(ctx, key).Result()
		if err != nil || ttl <= 0 || ttl > time.Hour {
			t.Errorf("PTTL %s = %v, %v; want within (0, 1h]", key, ttl, err)
		}
	}
	if st := c.Stats(); st != (Stats{}) {
		t.Fatalf("Redis failures %+v", st)
	}
}

// TestLostRedisRehydrates deletes every key of the cache mid-run, as a
// FLUSHALL would (the test Redis is shared, so only this test's keys):
// reads hydrate again and equal the durable store, and writes go on.
func TestLostRedisRehydrates(t *testing.T) {
	c, _, rdb := newTestCache(t)
	applyOK(t, c, sessionRows(10, 1))
	servesDurable(t, c)
	applyOK(t, c, sessionRows(20, 2))
	wipe(t, rdb, c.prefix)
	applyOK(t, c, sessionRows(15, 7)) // late: older than what Redis lost
	servesDurable(t, c)
	applyOK(t, c, sessionRows(30, 3))
	servesDurable(t, c)
	if n, _ := rdb.Exists(t.Context(), c.keysOf(alice).record).Result(); n != 1 {
		t.Fatal("the record was not hydrated again")
	}
}

// failingScript fails, while on, every pipeline that runs script.
type failingScript struct {
	script *redis.Script
	on     atomic.Bool
}

func (h *failingScript) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failingScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *failingScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.on.Load() {
			for _, cmd := range cmds {
				if args := cmd.Args(); len(args) > 1 && args[0] == "evalsha" && args[1] == h.script.Hash() {
					err := errors.New("injected failure")
					for _, cmd := range cmds {
						cmd.SetErr(err)
					}
					return err
				}
			}
		}
		return next(ctx, cmds)
	}
}

func TestFailedMergeDropsEntries(t *testing.T) {
	c, _, rdb := newTestCache(t, quiet)
	applyOK(t, c, sessionRows(10, 1))
	servesDurable(t, c)

	hook := &failingScript{script: applyScript}
	rdb.AddHook(hook)
	hook.on.Store(true)
	applyOK(t, c, sessionRows(20, 2)) // durable; the merge fails
	hook.on.Store(false)

	if st := c.Stats(); st.WriteFailures != 1 || st.Dropped != 1 || st.DropFailures != 0 {
		t.Fatalf("Stats = %+v, want one failure, one drop", st)
	}
	servesDurable(t, c) // not the entries of before the write
}

func TestFailedDurableWriteDropsEntries(t *testing.T) {
	c, inner, rdb := newTestCache(t)
	applyOK(t, c, sessionRows(10, 1))
	servesDurable(t, c)
	inner.Close()
	if err := c.Apply(t.Context(), sessionRows(20, 2)); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Apply on a closed durable store: %v", err)
	}
	k := c.keysOf(alice)
	if n, _ := rdb.Exists(t.Context(), k.record, k.sessions, k.index, k.writing).Result(); n != 0 {
		t.Fatalf("%d of alice's keys left after a failed durable write", n)
	}
}

// TestFailedBeginStillWrites fails the round that sets the writing flags:
// the durable write is made all the same, and the merge, finding no flag
// of its own, drops the entries rather than merge into them.
func TestFailedBeginStillWrites(t *testing.T) {
	c, inner, rdb := newTestCache(t, quiet)
	ctx := t.Context()
	applyOK(t, c, sessionRows(10, 1))
	servesDurable(t, c)

	hook := &failingScript{script: beginScript}
	rdb.AddHook(hook)
	hook.on.Store(true)
	applyOK(t, c, sessionRows(20, 2))
	hook.on.Store(false)

	if rec, _ := inner.User(ctx, alice); rec.Clock != 20 {
		t.Fatalf("durable User = %+v: the write was not made", rec)
	}
	if st := c.Stats(); st.WriteFailures != 1 || st.Dropped != 0 || st.DropFailures != 0 {
		t.Fatalf("Stats = %+v, want one write failure", st)
	}
	k := c.keysOf(alice)
	if n, _ := rdb.Exists(ctx, k.record, k.sessions, k.index, k.writing).Result(); n != 0 {
		t.Fatalf("%d of alice's keys left after a merge without its flag", n)
	}
	servesDurable(t, c)
}

// downRedis is a client of an address where nothing listens.
func downRedis(t *testing.T) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, DialerRetries: 1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestRedisDownServesFromDurableStore(t *testing.T) {
	c := New(memstore.New(), downRedis(t), "down-", quiet)
	defer c.Close()
	applyOK(t, c, sessionRows(10, 1))
	servesDurable(t, c)
	if rec, _ := c.User(t.Context(), alice); rec.Clock != 10 || rec.Totals[""] != 1 {
		t.Fatalf("User = %+v", rec)
	}
	st := c.Stats()
	if st.ReadFallbacks == 0 || st.WriteFailures == 0 || st.DropFailures == 0 {
		t.Fatalf("Stats = %+v: failures not counted", st)
	}
}

func TestBackendConformanceRedisDown(t *testing.T) {
	backendtest.Run(t, func(t *testing.T, _ blob.Store) store.Backend {
		c := New(memstore.New(), downRedis(t), "down-", quiet)
		t.Cleanup(func() { c.Close() })
		return c
	})
}

// TestScriptsLoadWhenMissing runs, pipelined, a script Redis has never
// seen (as after a restart): it is loaded and run.
func TestScriptsLoadWhenMissing(t *testing.T) {
	c, _, _ := newTestCache(t)
	fresh := redis.NewScript("-- " + c.prefix + "\nreturn ARGV[1]")
	cmds := c.runPipelined(t.Context(), []scriptCall{{fresh, nil, []any{"a"}}, {fresh, nil, []any{"b"}}})
	for i, want := range []string{"a", "b"} {
		if got, err := cmds[i].Text(); err != nil || got != want {
			t.Fatalf("call %d = %q, %v", i, got, err)
		}
	}
}
