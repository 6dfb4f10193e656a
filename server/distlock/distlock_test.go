package distlock

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/internal/testengines"
)

// locker is what the engine asks of a lock.
type locker interface {
	Lock(ctx context.Context, keys []string) (func(), error)
}

// lockers returns the lockers to test: memory, and Redis when there is one.
func lockers(t *testing.T) map[string]func() locker {
	out := map[string]func() locker{
		"memory": func() locker { return NewMemory() },
	}
	if url := testengines.Redis(t); url != "" {
		opts, err := redis.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		rdb := redis.NewClient(opts)
		t.Cleanup(func() { rdb.Close() })
		prefix := testengines.Prefix(t)
		out["redis"] = func() locker { return NewRedis(rdb, prefix, 0, WithFirstUse(fresh)) }
	}
	return out
}

func TestLockExcludesAndReleases(t *testing.T) {
	for name, newLocker := range lockers(t) {
		t.Run(name, func(t *testing.T) {
			l := newLocker()
			ctx := context.Background()
			release, err := l.Lock(ctx, []string{"a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			if _, err := l.Lock(short, []string{"b"}); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("b while held: %v, want a deadline error", err)
			}
			other, err := l.Lock(ctx, []string{"c"})
			if err != nil {
				t.Fatalf("c is free: %v", err)
			}
			other()
			release()
			again, err := l.Lock(ctx, []string{"b", "a"})
			if err != nil {
				t.Fatalf("after release: %v", err)
			}
			again()
		})
	}
}

// TestManyWaitersAllGetTheLock: callers of one process contending for one
// key all get it, one at a time, none starved.
func TestManyWaitersAllGetTheLock(t *testing.T) {
	for name, newLocker := range lockers(t) {
		t.Run(name, func(t *testing.T) {
			l := newLocker()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var mu sync.Mutex
			inside, total := 0, 0
			var wg sync.WaitGroup
			for range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 5 {
						release, err := l.Lock(ctx, []string{"hot"})
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						inside++
						if inside != 1 {
							t.Errorf("%d holders at once", inside)
						}
						total++
						inside--
						mu.Unlock()
						release()
					}
				}()
			}
			wg.Wait()
			if total != 250 {
				t.Fatalf("%d sections, want 250", total)
			}
		})
	}
}

// TestRedisLockOutlivesItsExpiryWhileHeld: a section longer than the
// lock's expiry keeps it; another caller gets it only once released.
func TestRedisLockOutlivesItsExpiryWhileHeld(t *testing.T) {
	opts, err := redis.ParseURL(testengines.Redis(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	prefix := testengines.Prefix(t)
	const ttl = 300 * time.Millisecond
	holder, other := NewRedis(rdb, prefix, ttl), NewRedis(rdb, prefix, ttl) // two nodes
	release, err := holder.Lock(context.Background(), []string{"slow"})
	if err != nil {
		t.Fatal(err)
	}
	// Three expiries later, the other node still cannot take it.
	short, cancel := context.WithTimeout(context.Background(), 3*ttl)
	defer cancel()
	if _, err := other.Lock(short, []string{"slow"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the other node took a lock held past its expiry: %v", err)
	}
	release()
	got, err := other.Lock(context.Background(), []string{"slow"})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	got()
}

// fresh is a FirstUse hook for a lock space never used before.
func fresh(context.Context) (bool, error) { return true, nil }

// used is a FirstUse hook for a lock space used before.
func used(context.Context) (bool, error) { return false, nil }

// testRedis returns a client of the test Redis and a key prefix of the
// test's own.
func testRedis(t *testing.T) (*redis.Client, string) { return testengines.RedisClient(t) }

// flush deletes every key of prefix, as FLUSHALL would (the test Redis is
// shared, so only this test's keys).
func flush(t *testing.T, rdb *redis.Client, prefix string) {
	t.Helper()
	if err := wipe(rdb, prefix); err != nil {
		t.Fatal(err)
	}
}

// wipe deletes every key of prefix.
func wipe(rdb *redis.Client, prefix string) error {
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		return err
	}
	return rdb.Del(ctx, keys...).Err()
}

// TestFreshLockSpaceDoesNotWaitTheGrace: a lock space the caller says was
// never used opens at once; one used before, or without the caller's
// word, waits the grace, longer here than the caller waits.
func TestFreshLockSpaceDoesNotWaitTheGrace(t *testing.T) {
	cases := []struct {
		name string
		opts []RedisOption
		open bool
	}{
		{"fresh", []RedisOption{WithFirstUse(fresh)}, true},
		{"used", []RedisOption{WithFirstUse(used)}, false},
		{"no hook", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rdb, prefix := testRedis(t)
			l := NewRedis(rdb, prefix, 0, append(c.opts, WithGrace(time.Minute))...)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			release, err := l.Lock(ctx, []string{"k"})
			if !c.open {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Lock = %v, want a deadline error (a minute of grace)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			release()
			if v, err := rdb.Get(ctx, prefix+"lock/epoch").Result(); err != nil || v != "0" {
				t.Fatalf("epoch = %q, %v; want 0", v, err)
			}
		})
	}
}

// TestFirstUseErrorIsTheLockError: a hook that fails fails the Lock call.
func TestFirstUseErrorIsTheLockError(t *testing.T) {
	rdb, prefix := testRedis(t)
	boom := errors.New("boom")
	l := NewRedis(rdb, prefix, 0, WithFirstUse(func(context.Context) (bool, error) { return false, boom }))
	if _, err := l.Lock(context.Background(), []string{"k"}); !errors.Is(err, boom) {
		t.Fatalf("Lock = %v, want the hook's error", err)
	}
}

// TestFlushClosesTheGate: once Redis lost its data, the epoch key with it,
// a new Lock waits the grace, even on a lock space opened at once before
// (the caller's record says it was used); it is granted once the gate is
// open.
func TestFlushClosesTheGate(t *testing.T) {
	rdb, prefix := testRedis(t)
	var usedBefore sync.Mutex
	recorded := false
	firstUse := func(context.Context) (bool, error) { // a durable record of use
		usedBefore.Lock()
		defer usedBefore.Unlock()
		first := !recorded
		recorded = true
		return first, nil
	}
	l := NewRedis(rdb, prefix, 0, WithGrace(time.Minute), WithFirstUse(firstUse))
	release, err := l.Lock(context.Background(), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	release()

	flush(t, rdb, prefix)
	short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := l.Lock(short, []string{"k"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock after the flush = %v, want a deadline error (a minute of grace)", err)
	}
	ctx := context.Background()
	epoch, err := rdb.Get(ctx, prefix+"lock/epoch").Int64()
	if err != nil {
		t.Fatal(err)
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ahead := time.Duration(epoch-now.UnixMilli()) * time.Millisecond; ahead < 30*time.Second {
		t.Fatalf("the gate opens in %v, want about a minute", ahead)
	}
	if n, err := rdb.Exists(ctx, prefix+"lock/k").Result(); err != nil || n != 0 {
		t.Fatalf("lock key while the gate is closed: %d, %v", n, err)
	}

	// The grace over (the gate set to a time past), the lock is granted.
	if err := rdb.Set(ctx, prefix+"lock/epoch", strconv.FormatInt(now.UnixMilli()-1, 10), 0).Err(); err != nil {
		t.Fatal(err)
	}
	release, err = l.Lock(ctx, []string{"k"})
	if err != nil {
		t.Fatalf("Lock once the gate is open: %v", err)
	}
	release()
}

// eventLog is the order in which things happened, across goroutines.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) add(event string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, event)
}

func (e *eventLog) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.events...)
}

// TestFlushWhileHeldKeepsTheSection: Redis loses its data while node A
// holds a lock; node B, asking right after, gets it only once A released
// it, though A held it well past the lock's expiry and the grace.
func TestFlushWhileHeldKeepsTheSection(t *testing.T) {
	rdb, prefix := testRedis(t)
	const ttl, grace = 1500 * time.Millisecond, 750 * time.Millisecond // refreshed every 300ms
	a := NewRedis(rdb, prefix, ttl, WithGrace(grace), WithFirstUse(fresh))
	b := NewRedis(rdb, prefix, ttl, WithGrace(grace), WithFirstUse(used))
	releaseA, err := a.Lock(context.Background(), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}

	flush(t, rdb, prefix)
	var log eventLog
	bDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		release, err := b.Lock(ctx, []string{"k"})
		if err == nil {
			log.add("B obtained")
			release()
		}
		bDone <- err
	}()

	// A's section goes on, well past the expiry and the grace.
	hold := time.NewTimer(3 * time.Second)
	select {
	case <-hold.C:
	case err := <-bDone:
		t.Fatalf("B's Lock ended (%v) while A held the lock", err)
	}
	log.add("A releases")
	releaseA()

	select {
	case err := <-bDone:
		if err != nil {
			t.Fatalf("B after A released: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("B did not obtain the lock after A released it")
	}
	if got := log.get(); len(got) != 2 || got[0] != "A releases" || got[1] != "B obtained" {
		t.Fatalf("events %q, want A releasing before B obtaining", got)
	}
	if a.Broken() != 0 || b.Broken() != 0 {
		t.Fatalf("broken sections: A %d, B %d", a.Broken(), b.Broken())
	}
}

// flushOnOpenGate flushes the prefix's keys right after the first check
// that finds the gate open: between the gate and the keys.
type flushOnOpenGate struct {
	t      *testing.T
	rdb    *redis.Client
	prefix string
	done   bool // only touched by the locking goroutine
}

func (h *flushOnOpenGate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *flushOnOpenGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		if c, ok := cmd.(*redis.Cmd); ok && !h.done && err == nil && len(args) == 4 && args[3] == h.prefix+"lock/epoch" {
			if n, _ := c.Int64(); n == 0 {
				h.done = true
				if err := wipe(h.rdb, h.prefix); err != nil {
					h.t.Error(err)
				}
			}
		}
		return err
	}
}

func (h *flushOnOpenGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestFlushBetweenGateAndKeys: Redis loses its data while node A holds a
// lock, just after node B found the gate open and before B asks for the
// key: B lets go of what it got and waits for the gate, so it gets the
// lock only once A released it.
func TestFlushBetweenGateAndKeys(t *testing.T) {
	rdb, prefix := testRedis(t)
	const ttl, grace = 1500 * time.Millisecond, 750 * time.Millisecond
	a := NewRedis(rdb, prefix, ttl, WithGrace(grace), WithFirstUse(fresh))
	releaseA, err := a.Lock(context.Background(), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	nodeB := redis.NewClient(rdb.Options())
	defer nodeB.Close()
	flusher := &flushOnOpenGate{t: t, rdb: rdb, prefix: prefix}
	nodeB.AddHook(flusher)
	b := NewRedis(nodeB, prefix, ttl, WithGrace(grace), WithFirstUse(used))

	var log eventLog
	bDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		release, err := b.Lock(ctx, []string{"k"})
		if err == nil {
			log.add("B obtained")
			release()
		}
		bDone <- err
	}()

	hold := time.NewTimer(3 * time.Second) // A's section goes on
	select {
	case <-hold.C:
	case err := <-bDone:
		t.Fatalf("B's Lock ended (%v) while A held the lock", err)
	}
	log.add("A releases")
	releaseA()

	select {
	case err := <-bDone:
		if err != nil {
			t.Fatalf("B after A released: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("B did not obtain the lock after A released it")
	}
	if !flusher.done {
		t.Fatal("no flush between the gate and the keys")
	}
	if got := log.get(); len(got) != 2 || got[0] != "A releases" || got[1] != "B obtained" {
		t.Fatalf("events %q, want A releasing before B obtaining", got)
	}
	if a.Broken() != 0 || b.Broken() != 0 {
		t.Fatalf("broken sections: A %d, B %d", a.Broken(), b.Broken())
	}
}

// setSeen signals each SET of key the client completed.
type setSeen struct {
	key string
	ch  chan struct{}
}

func (h *setSeen) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *setSeen) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); err == nil && cmd.Name() == "set" && len(args) > 1 && args[1] == h.key {
			select {
			case h.ch <- struct{}{}:
			default:
			}
		}
		return err
	}
}

func (h *setSeen) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestHolderRecreatesItsLock: a holder whose lock Redis lost re-creates it
// with its token, so that its release frees it.
func TestHolderRecreatesItsLock(t *testing.T) {
	rdb, prefix := testRedis(t)
	key := prefix + "lock/k"
	seen := &setSeen{key: key, ch: make(chan struct{}, 1)}
	node := redis.NewClient(rdb.Options())
	defer node.Close()
	node.AddHook(seen)
	l := NewRedis(node, prefix, 1500*time.Millisecond, WithFirstUse(fresh))
	release, err := l.Lock(context.Background(), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	flush(t, rdb, prefix)
	select {
	case <-seen.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not re-create its lock")
	}
	ctx := context.Background()
	if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("lock key after re-creation: %d, %v", n, err)
	}
	release()
	if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("lock key after release: %d, %v", n, err)
	}
	if l.Broken() != 0 {
		t.Fatalf("%d broken sections", l.Broken())
	}
}

// records passes each log record to a channel.
type records chan slog.Record

func (r records) Enabled(context.Context, slog.Level) bool { return true }
func (r records) Handle(_ context.Context, rec slog.Record) error {
	select {
	case r <- rec:
	default:
	}
	return nil
}
func (r records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r records) WithGroup(string) slog.Handler      { return r }

// TestTakenWhileHeldIsCounted: a lock Redis lost that another took before
// its holder re-created it is logged and counted, and the holder's release
// leaves the other's lock alone.
func TestTakenWhileHeldIsCounted(t *testing.T) {
	rdb, prefix := testRedis(t)
	logged := make(records, 1)
	l := NewRedis(rdb, prefix, 1500*time.Millisecond, WithFirstUse(fresh), WithLogger(slog.New(logged)))
	release, err := l.Lock(context.Background(), []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	flush(t, rdb, prefix)
	key := prefix + "lock/k"
	if err := rdb.Set(ctx, key, "another holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-logged:
	case <-time.After(10 * time.Second):
		t.Fatal("the lock taken by another was not logged")
	}
	if n := l.Broken(); n != 1 {
		t.Fatalf("Broken() = %d, want 1", n)
	}
	release()
	if v, err := rdb.Get(ctx, key).Result(); err != nil || v != "another holder" {
		t.Fatalf("the other's lock after release: %q, %v", v, err)
	}
}
