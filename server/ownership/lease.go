package ownership

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// DefaultLeaseTTL is how long a shard's lease lasts unless refreshed: the
// longest a dead node's shards wait for a new owner.
const DefaultLeaseTTL = 5 * time.Second

// ErrHeld is returned by Take when another node holds the lease.
var ErrHeld = errors.New("ownership: the shard's lease is held by another node")

// ErrLost is returned by Refresh when the lease can no longer be proven:
// it expired, or another node took it.
var ErrLost = errors.New("ownership: the shard's lease is lost")

// Leases takes, refreshes and releases shard leases in Redis through
// bsm/redislock. Each lease is the key prefix+"shard/"+N holding the
// taker's token and node id; each taking raises the shard's epoch
// (prefix+"shard-epoch/"+N), the fencing token of what the holder writes.
type Leases struct {
	rdb    redis.UniversalClient
	locks  *redislock.Client
	prefix string
	node   string
	ttl    time.Duration
	margin time.Duration
}

// NewLeases returns the leases of node on rdb, keys under prefix, each
// lasting ttl (DefaultLeaseTTL when zero).
func NewLeases(rdb redis.UniversalClient, prefix, node string, ttl time.Duration) *Leases {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	return &Leases{rdb: rdb, locks: redislock.New(rdb), prefix: prefix, node: node, ttl: ttl, margin: ttl / 5}
}

// TTL is how long a lease lasts unless refreshed.
func (l *Leases) TTL() time.Duration { return l.ttl }

// Lease is one shard held by this node. Its holder counts it from the
// moment it asked Redis for it, on its own monotonic clock, and stops
// trusting it a margin before that time runs out: it has stopped serving
// the shard before any other node can take it.
type Lease struct {
	Shard Shard
	// Epoch is the shard's epoch this taking raised it to.
	Epoch int64
	lock  *redislock.Lock
	// validUntil is when the holder stops trusting the lease, on the
	// monotonic clock (see monotonic).
	validUntil atomic.Int64
}

// processStart anchors the monotonic readings leases are counted in.
var processStart = time.Now()

// monotonic is t on the monotonic clock, in nanoseconds since the process
// started (t must come from time.Now).
func monotonic(t time.Time) int64 { return int64(t.Sub(processStart)) }

// Valid reports whether the lease may still be trusted at now.
func (l *Lease) Valid(now time.Time) bool { return l != nil && monotonic(now) < l.validUntil.Load() }

func (l *Lease) trustUntil(t time.Time) { l.validUntil.Store(monotonic(t)) }

// Fence is the lease's fencing token.
func (l *Lease) Fence() Fence { return Fence{Shard: l.Shard, Epoch: l.Epoch} }

// Take takes shard's lease if no node holds it, raising its epoch; ErrHeld
// when another node holds it.
func (l *Leases) Take(ctx context.Context, shard Shard) (*Lease, error) {
	asked := time.Now()
	lock, err := l.locks.Obtain(ctx, l.leaseKey(shard), l.ttl, &redislock.Options{Metadata: l.node})
	if errors.Is(err, redislock.ErrNotObtained) {
		return nil, ErrHeld
	}
	if err != nil {
		return nil, fmt.Errorf("take the lease of shard %d: %w", shard, err)
	}
	epoch, err := l.rdb.Incr(ctx, l.EpochKey(shard)).Result()
	if err != nil {
		// Without an epoch the holder cannot fence its writes: give the
		// lease back (or let it expire) rather than serve unfenced.
		_ = lock.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("raise the epoch of shard %d: %w", shard, err)
	}
	lease := &Lease{Shard: shard, Epoch: epoch, lock: lock}
	lease.trustUntil(asked.Add(l.ttl - l.margin))
	return lease, nil
}

// Refresh extends lease by the TTL from now; ErrLost when it expired or
// another node holds it (the holder must stop serving the shard at once).
func (l *Leases) Refresh(ctx context.Context, lease *Lease) error {
	asked := time.Now()
	if !lease.Valid(asked) {
		return ErrLost
	}
	err := lease.lock.Refresh(ctx, l.ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		lease.validUntil.Store(0)
		return ErrLost
	}
	if err != nil {
		return fmt.Errorf("refresh the lease of shard %d: %w", lease.Shard, err)
	}
	lease.trustUntil(asked.Add(l.ttl - l.margin))
	return nil
}

// Release gives lease back at once, so that the next owner need not wait
// for it to expire.
func (l *Leases) Release(ctx context.Context, lease *Lease) error {
	lease.validUntil.Store(0)
	err := lease.lock.Release(ctx)
	if err != nil && !errors.Is(err, redislock.ErrLockNotHeld) {
		return fmt.Errorf("release the lease of shard %d: %w", lease.Shard, err)
	}
	return nil
}

// Holder returns the node holding shard's lease ("" when none) and the
// shard's epoch, as Redis has them now.
func (l *Leases) Holder(ctx context.Context, shard Shard) (node string, epoch int64, err error) {
	cmds, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, l.leaseKey(shard))
		p.Get(ctx, l.EpochKey(shard))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", 0, fmt.Errorf("read the lease of shard %d: %w", shard, err)
	}
	if v, err := cmds[0].(*redis.StringCmd).Result(); err == nil {
		// redislock stores the token (22 characters) then the metadata.
		if len(v) > tokenLen {
			node = v[tokenLen:]
		}
	}
	if v, err := cmds[1].(*redis.StringCmd).Result(); err == nil {
		epoch, _ = strconv.ParseInt(v, 10, 64)
	}
	return node, epoch, nil
}

// tokenLen is the length of the random token redislock puts before a
// lock's metadata (its default).
const tokenLen = 22

func (l *Leases) leaseKey(s Shard) string { return l.prefix + "shard/" + strconv.Itoa(int(s)) }

// EpochKey is the Redis key of shard's epoch.
func (l *Leases) EpochKey(s Shard) string { return l.prefix + "shard-epoch/" + strconv.Itoa(int(s)) }
