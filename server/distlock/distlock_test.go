package distlock

import (
	"context"
	"errors"
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
		out["redis"] = func() locker { return NewRedis(rdb, prefix, 0) }
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
