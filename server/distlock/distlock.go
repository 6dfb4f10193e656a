// Package distlock holds critical sections that span the engines sharing
// one backend (engine.Locker): Redis for the nodes of a scaled-out
// deployment, memory for several engines in one process (tests).
package distlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// DefaultTTL is how long a Redis lock outlives a holder that died: the
// longest another node waits for a conversation or a user whose holder
// crashed.
const DefaultTTL = 10 * time.Second

// Redis takes locks in Redis, one key per lock, with bsm/redislock: a lock
// is a key set if absent with an expiry and a token, released only by its
// holder.
type Redis struct {
	client *redislock.Client
	prefix string
	ttl    time.Duration
	// local queues this process's callers for a key before they ask
	// Redis, in the order they came: only one of them polls Redis, and
	// none is passed over by later ones (redislock's retries alone favour
	// whoever polls last).
	local *Memory
}

// NewRedis returns a Locker on rdb; keys are named prefix+"lock/"+key and
// expire after ttl (DefaultTTL when zero) if not released.
func NewRedis(rdb redis.UniversalClient, prefix string, ttl time.Duration) *Redis {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Redis{client: redislock.New(rdb), prefix: prefix, ttl: ttl, local: NewMemory()}
}

// retry is how a lock held by another is waited for: soon, then every few
// milliseconds, until the context ends.
var retry = redislock.ExponentialBackoff(time.Millisecond, 20*time.Millisecond)

// Lock implements engine.Locker.
func (r *Redis) Lock(ctx context.Context, keys []string) (func(), error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*r.ttl)
		defer cancel()
	}
	releaseLocal, err := r.local.Lock(ctx, keys)
	if err != nil {
		return nil, err
	}
	held := make([]*redislock.Lock, 0, len(keys))
	stopRefresh := func() {}
	release := func() {
		stopRefresh()
		// Released with a context of its own: a caller gone must not
		// leave its locks to expire.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for i := len(held) - 1; i >= 0; i-- {
			_ = held[i].Release(ctx) // an expired lock is someone else's now
		}
		releaseLocal()
	}
	for _, key := range keys {
		l, err := r.client.Obtain(ctx, r.prefix+"lock/"+key, r.ttl, &redislock.Options{RetryStrategy: retry})
		if err != nil {
			release()
			if errors.Is(err, redislock.ErrNotObtained) {
				err = fmt.Errorf("%w (held elsewhere)", context.DeadlineExceeded)
			}
			return nil, fmt.Errorf("lock %s: %w", key, err)
		}
		held = append(held, l)
	}
	stopRefresh = r.keepAlive(held)
	return release, nil
}

// keepAlive extends held locks every third of their expiry until stopped,
// so that a section slowed down (DynamoDB throttled or unreachable, its
// writes retried) keeps its locks for as long as its process lives; only a
// holder that died leaves them to expire.
func (r *Redis) keepAlive(held []*redislock.Lock) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(r.ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), r.ttl/3)
			for _, l := range held {
				_ = l.Refresh(ctx, r.ttl, nil) // lost (Redis flushed): nothing to extend
			}
			cancel()
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// Memory takes locks in this process (several engines in one process
// sharing a backend, as nodes would), each key's waiters served in the
// order they came.
type Memory struct {
	mu   sync.Mutex
	keys map[string]*memoryKey
}

// memoryKey is one key's lock: a token channel (a waiter blocked on it is
// served first come, first served) and how many hold or wait for it.
type memoryKey struct {
	token chan struct{}
	users int
}

// NewMemory returns an empty Memory locker.
func NewMemory() *Memory { return &Memory{keys: map[string]*memoryKey{}} }

// Lock implements engine.Locker.
func (m *Memory) Lock(ctx context.Context, keys []string) (func(), error) {
	var mine []string
	release := func() {
		for i := len(mine) - 1; i >= 0; i-- {
			m.put(mine[i], true)
		}
		mine = nil
	}
	for _, key := range keys {
		k := m.get(key)
		select {
		case k.token <- struct{}{}:
			mine = append(mine, key)
		case <-ctx.Done():
			m.put(key, false)
			release()
			return nil, fmt.Errorf("lock %s: %w", key, ctx.Err())
		}
	}
	return release, nil
}

// get returns key's lock, counting the caller among its users.
func (m *Memory) get(key string) *memoryKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.keys[key]
	if k == nil {
		k = &memoryKey{token: make(chan struct{}, 1)}
		m.keys[key] = k
	}
	k.users++
	return k
}

// put is the end of a user of key's lock: a holder gives the token back;
// the last user forgets the key.
func (m *Memory) put(key string, held bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.keys[key]
	if held {
		<-k.token
	}
	if k.users--; k.users == 0 {
		delete(m.keys, key)
	}
}
