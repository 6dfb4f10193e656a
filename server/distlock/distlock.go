// Package distlock holds critical sections that span the engines sharing
// one backend (engine.Locker): Redis for the nodes of a scaled-out
// deployment, memory for several engines in one process (tests).
//
// A Redis lock lasts only as long as Redis keeps its data. When Redis
// loses it (FLUSHALL, a restart without persistence), the keys of locks
// still held are gone, and another node could take a lock whose holder is
// still inside its section: two nodes in one section corrupt what the
// section derives. Two things close that gap. Every holder re-creates its
// own keys, with its own token, when a refresh finds them gone. And a
// gate, a key of the lock space saying from when locks may be granted, is
// lost with the rest: whoever finds it missing sets it a grace period
// ahead, and nobody is granted a lock until the grace has passed, by which
// time every live holder has re-created its keys.
//
// A fresh deployment need not wait the grace, since no lock of its can be
// held: WithFirstUse lets the caller, which records durably that the lock
// space was used, say so. After a flush the record says the space was
// used, and the grace applies.
package distlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
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
//
// Redis losing its data would free the locks of live holders. So a holder
// re-creates its keys when it finds them gone (it refreshes them every
// fifth of their expiry), and a gate (key prefix+"lock/epoch") grants no
// lock for a grace period after Redis lost its data: the time every live
// holder needs to re-create its own. A lock space never used before opens
// at once when the caller says so (WithFirstUse).
type Redis struct {
	rdb      redis.UniversalClient
	client   *redislock.Client
	prefix   string
	ttl      time.Duration
	grace    time.Duration
	firstUse func(ctx context.Context) (bool, error)
	logger   *slog.Logger
	broken   atomic.Int64
	// local queues this process's callers for a key before they ask
	// Redis, in the order they came: only one of them polls Redis, and
	// none is passed over by later ones (redislock's retries alone favour
	// whoever polls last).
	local *Memory
}

// RedisOption configures a Redis locker.
type RedisOption func(*Redis)

// WithGrace sets how long the gate stays closed after Redis lost its data
// (half the expiry by default). It must exceed the refresh interval, a
// fifth of the expiry, by a margin: every live holder re-creates its keys
// before it ends.
func WithGrace(d time.Duration) RedisOption {
	return func(r *Redis) { r.grace = d }
}

// WithFirstUse sets the hook asked when the gate is missing: it reports
// whether this lock space was never used before (a fresh deployment, which
// does not wait the grace), recording durably that it now is. Without it,
// a missing gate always means Redis lost its data. An error of the hook
// is the error of the Lock call that asked.
func WithFirstUse(f func(ctx context.Context) (bool, error)) RedisOption {
	return func(r *Redis) { r.firstUse = f }
}

// WithLogger sets where a lock taken by another while held is reported
// (slog.Default otherwise).
func WithLogger(l *slog.Logger) RedisOption {
	return func(r *Redis) { r.logger = l }
}

// NewRedis returns a Locker on rdb; keys are named prefix+"lock/"+key and
// expire after ttl (DefaultTTL when zero) if not released.
func NewRedis(rdb redis.UniversalClient, prefix string, ttl time.Duration, opts ...RedisOption) *Redis {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	r := &Redis{rdb: rdb, client: redislock.New(rdb), prefix: prefix, ttl: ttl, local: NewMemory()}
	for _, opt := range opts {
		opt(r)
	}
	if r.grace <= 0 {
		r.grace = ttl / 2
	}
	return r
}

// Broken counts the sections whose lock another took while they held it:
// Redis lost it and another holder got it before this one re-created it.
func (r *Redis) Broken() int64 { return r.broken.Load() }

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
	for {
		held, err := r.obtain(ctx, keys)
		if err != nil {
			releaseLocal()
			return nil, err
		}
		// Redis may have lost its data between the gate and the keys:
		// then what was obtained may be a live holder's, not re-created
		// yet.
		wait, err := r.gate(ctx)
		if err == nil && wait == 0 {
			stopRefresh := r.keepAlive(held)
			return func() {
				stopRefresh()
				release(held)
				releaseLocal()
			}, nil
		}
		release(held)
		if err != nil {
			releaseLocal()
			return nil, err
		}
	}
}

// obtain waits for the gate to open, then takes keys in order.
func (r *Redis) obtain(ctx context.Context, keys []string) ([]*redislock.Lock, error) {
	if err := r.awaitGate(ctx); err != nil {
		return nil, err
	}
	held := make([]*redislock.Lock, 0, len(keys))
	for _, key := range keys {
		l, err := r.client.Obtain(ctx, r.prefix+"lock/"+key, r.ttl, &redislock.Options{RetryStrategy: retry})
		if err != nil {
			release(held)
			if errors.Is(err, redislock.ErrNotObtained) {
				err = fmt.Errorf("%w (held elsewhere)", context.DeadlineExceeded)
			}
			return nil, fmt.Errorf("lock %s: %w", key, err)
		}
		held = append(held, l)
	}
	return held, nil
}

// release releases held locks, the last first, with a context of its own:
// a caller gone must not leave its locks to expire.
func release(held []*redislock.Lock) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := len(held) - 1; i >= 0; i-- {
		_ = held[i].Release(ctx) // one lost is someone else's now
	}
}

// gateScript reads the gate KEYS[1], a Unix time in milliseconds, against
// Redis's clock: -1 when it is missing, 0 when open, else how many
// milliseconds until it opens.
var gateScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = redis.call('GET', KEYS[1])
if not v then return -1 end
local at = tonumber(v)
if at <= now then return 0 end
return at - now
`)

// closeScript sets the gate KEYS[1], if missing, to open ARGV[1]
// milliseconds from now on Redis's clock.
var closeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[1], string.format('%d', now + tonumber(ARGV[1])), 'NX')
return 1
`)

// epochKey is the gate's key.
func (r *Redis) epochKey() string { return r.prefix + "lock/epoch" }

// gate returns 0 when the gate is open, how long until it opens when it is
// closed, and a negative duration when it is missing.
func (r *Redis) gate(ctx context.Context) (time.Duration, error) {
	ms, err := gateScript.Run(ctx, r.rdb, []string{r.epochKey()}).Int64()
	if err != nil {
		return 0, fmt.Errorf("lock gate: %w", err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// awaitGate returns once the gate is open, setting it when missing.
func (r *Redis) awaitGate(ctx context.Context) error {
	for {
		wait, err := r.gate(ctx)
		if err != nil || wait == 0 {
			return err
		}
		if wait < 0 {
			if err := r.setGate(ctx); err != nil {
				return err
			}
			continue
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return fmt.Errorf("lock gate closed for %v after Redis lost its data: %w", wait, context.DeadlineExceeded)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("lock gate: %w", ctx.Err())
		case <-timer.C:
		}
	}
}

// setGate sets the missing gate: open at once when the lock space was
// never used, else closed for the grace. Whoever sets it first wins.
func (r *Redis) setGate(ctx context.Context) error {
	fresh := false
	if r.firstUse != nil {
		var err error
		if fresh, err = r.firstUse(ctx); err != nil {
			return fmt.Errorf("lock space first use: %w", err)
		}
	}
	var err error
	if fresh {
		err = r.rdb.SetNX(ctx, r.epochKey(), "0", 0).Err()
	} else {
		err = closeScript.Run(ctx, r.rdb, []string{r.epochKey()}, r.grace.Milliseconds()).Err()
	}
	if err != nil {
		return fmt.Errorf("lock gate: %w", err)
	}
	return nil
}

// keepAlive extends held locks every fifth of their expiry until stopped,
// so that a section slowed down (DynamoDB throttled or unreachable, its
// writes retried) keeps its locks for as long as its process lives; only a
// holder that died leaves them to expire. A lock Redis lost is re-created,
// well within the grace.
func (r *Redis) keepAlive(held []*redislock.Lock) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		every := r.ttl / 5
		tick := time.NewTicker(every)
		defer tick.Stop()
		lost := make([]bool, len(held))
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), every)
			for i, l := range held {
				if !lost[i] {
					lost[i] = r.refresh(ctx, l)
				}
			}
			cancel()
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// refresh extends l, or re-creates it with its token when Redis lost it
// (so that its release still works). It reports whether another holder
// took it meanwhile: then it is lost for good.
func (r *Redis) refresh(ctx context.Context, l *redislock.Lock) (lost bool) {
	if err := l.Refresh(ctx, r.ttl, nil); !errors.Is(err, redislock.ErrNotObtained) {
		return false // extended, or Redis unreachable: tried at the next tick
	}
	created, err := r.rdb.SetNX(ctx, l.Key(), l.Token(), r.ttl).Result()
	if err != nil || created {
		return false
	}
	r.broken.Add(1)
	logger := r.logger
	if logger == nil {
		logger = slog.Default()
	}
	logger.Error("lock taken by another while held, after Redis lost it", "key", l.Key())
	return true
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
