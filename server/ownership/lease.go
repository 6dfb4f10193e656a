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
	// usedBefore records that the deployment's first use of leases is
	// known to be past (a first-use check answered once: it records the
	// use): the grace after a loss of Redis's data then needs no answer
	// from outside Redis, which may be refusing just then.
	usedBefore atomic.Bool
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

// TrustedUntil is when the holder stops trusting the lease (a time on the
// monotonic clock: a deadline for what the holder writes under it).
func (l *Lease) TrustedUntil() time.Time {
	return processStart.Add(time.Duration(l.validUntil.Load()))
}

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
	epoch, err := raiseEpoch.Run(ctx, l.rdb, []string{l.EpochKey(shard)}, time.Now().UnixMilli()).Int64()
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

// raiseEpoch raises a shard's epoch to above both its stored value and
// ARGV[1] (the taker's clock in milliseconds): epochs keep rising even
// after Redis lost them (a FLUSHALL), as long as the nodes' clocks agree
// to within the time between two takings of a shard.
var raiseEpoch = redis.NewScript(`
local e = tonumber(redis.call('GET', KEYS[1]) or '0') + 1
local t = tonumber(ARGV[1])
if e < t then e = t end
redis.call('SET', KEYS[1], e)
return e`)

// reclaim puts a lease key Redis lost back with its holder's value, while
// the deployment is in its grace after the loss (KEYS[2] exists): no other
// node takes a free shard then, so the holder is still the only one.
var reclaim = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('EXISTS', KEYS[2]) == 1 then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	return 1
end
return 0`)

// Refresh extends lease by the TTL from now; ErrLost when it expired or
// another node holds it (the holder must stop serving the shard at once).
func (l *Leases) Refresh(ctx context.Context, lease *Lease) error {
	asked := time.Now()
	if !lease.Valid(asked) {
		return ErrLost
	}
	err := lease.lock.Refresh(ctx, l.ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		// Redis may have lost the key (FLUSHALL): within the grace that
		// follows, the holder puts it back.
		back, rerr := reclaim.Run(ctx, l.rdb, []string{lease.lock.Key(), l.graceKey()},
			lease.lock.Token()+lease.lock.Metadata(), l.ttl.Milliseconds()).Int64()
		if rerr == nil && back == 1 {
			lease.trustUntil(asked.Add(l.ttl - l.margin))
			return nil
		}
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

// releaseOwn deletes each lease key of KEYS whose holder (the value past
// its ARGV[2]-character token) is ARGV[1], and returns how many it
// deleted.
var releaseOwn = redis.NewScript(`
local n = 0
for _, k in ipairs(KEYS) do
	local v = redis.call('GET', k)
	if v and string.sub(v, tonumber(ARGV[2]) + 1) == ARGV[1] then
		redis.call('DEL', k)
		n = n + 1
	end
end
return n`)

// ReleaseEarlier gives back, at once, every lease held under this node's
// id: a node starting under an id holds none yet, so those are its earlier
// life's (a process killed, or stopped without handing over), and it need
// not wait for them to expire to serve its shards. Its takings raise each
// shard's epoch, which fences what that earlier life may still have in
// flight. Two live processes must never share a node id.
func (l *Leases) ReleaseEarlier(ctx context.Context) (int, error) {
	keys := make([]string, Shards)
	for s := range Shard(Shards) {
		keys[s] = l.leaseKey(s)
	}
	n, err := releaseOwn.Run(ctx, l.rdb, keys, l.node, tokenLen).Int()
	if err != nil {
		return 0, fmt.Errorf("release the leases of node %s's earlier life: %w", l.node, err)
	}
	return n, nil
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

// graceLeft returns the grace left after Redis lost the deployment's
// keys in milliseconds (0: none), or -1 when the sentinel that tells a
// loss is missing.
var graceLeft = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local left = redis.call('PTTL', KEYS[2])
if left < 0 then return 0 end
return left`)

// startGrace puts the sentinel back and, with ARGV[1] = 1, opens a grace
// of ARGV[2] milliseconds during which no node takes a free shard.
var startGrace = redis.NewScript(`
if redis.call('SET', KEYS[1], '1', 'NX') and ARGV[1] == '1' then
	redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
end
local left = redis.call('PTTL', KEYS[2])
if left < 0 then return 0 end
return left`)

// Grace reports how long no free shard may be taken. Redis losing the
// deployment's keys (a FLUSHALL, a restart without persistence) shows as
// its sentinel gone: unless firstUse says the deployment never held a
// lease, a grace of one lease TTL starts then — the holders of the leases
// Redis lost still trust them for up to a TTL, and put them back meanwhile
// (Refresh). firstUse nil counts as a first use. Once firstUse has
// answered it is not asked again (its answer recorded the use): a loss
// while it cannot answer (DynamoDB refusing as Redis is flushed) still
// opens the grace, where every holder would otherwise lose its leases.
func (l *Leases) Grace(ctx context.Context, firstUse func(context.Context) (bool, error)) (time.Duration, error) {
	keys := []string{l.prefix + "owners/sentinel", l.graceKey()}
	ms, err := graceLeft.Run(ctx, l.rdb, keys).Int64()
	if err != nil {
		return 0, fmt.Errorf("the leases' grace: %w", err)
	}
	if ms >= 0 {
		return time.Duration(ms) * time.Millisecond, nil
	}
	first := true
	switch {
	case l.usedBefore.Load():
		first = false
	case firstUse != nil:
		if first, err = firstUse(ctx); err != nil {
			return 0, err
		}
		l.usedBefore.Store(true)
	}
	lost := "1"
	if first {
		lost = "0"
	}
	ms, err = startGrace.Run(ctx, l.rdb, keys, lost, l.ttl.Milliseconds()).Int64()
	if err != nil {
		return 0, fmt.Errorf("the leases' grace: %w", err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (l *Leases) graceKey() string { return graceKey(l.prefix) }

func graceKey(prefix string) string { return prefix + "owners/grace" }

// GraceLeft returns what is left of the grace that Redis losing the
// deployment's keys opened (see Grace), 0 when none. It changes nothing:
// it is for what operators look at.
func GraceLeft(ctx context.Context, rdb redis.UniversalClient, prefix string) (time.Duration, error) {
	left, err := rdb.PTTL(ctx, graceKey(prefix)).Result()
	if err != nil {
		return 0, fmt.Errorf("the leases' grace: %w", err)
	}
	return max(left, 0), nil
}

func (l *Leases) leaseKey(s Shard) string { return l.prefix + "shard/" + strconv.Itoa(int(s)) }

// EpochKey is the Redis key of shard's epoch.
func (l *Leases) EpochKey(s Shard) string { return l.prefix + "shard-epoch/" + strconv.Itoa(int(s)) }
