// Package rediscache is the Redis session cache of the scaled-out
// deployment: a store.Backend in front of the durable one that serves a
// user's clock and unread totals (User) and sessions (Sessions) from Redis,
// hydrating a miss from the durable store, and merges every durable Apply's
// sessions, totals and clock into Redis after it. Each user's cached
// sessions are also kept in a sorted set by active_ts (the session index;
// nothing reads it yet).
//
// Every change to Redis is a Lua script over one user's keys that merges
// by the rules of store.Derived, so writers and hydrations on any number
// of nodes converge in any order; a hydration fills only under a lease
// (the user's generation) that a write whose effect it may have missed
// breaks (see scripts.go). The durable store stays the truth: a read Redis
// fails is served from it, and Redis losing everything (FLUSHALL) only
// costs hydrations.
//
// A writer can die (or fail) between its durable write and its merge,
// leaving the entries of the users it wrote behind the durable store; the
// next writer of those users would compute their clocks, totals and
// sessions from them. So Apply sets each user's writing flag before its
// durable write and its merge deletes it; while a user's flag is set, the
// user is read from the durable store (nothing filled), and the user's
// next writer drops the entries a flag was left on (see scripts.go).
//
// When a merge after a durable Apply fails, the user's entries are
// dropped so the next read hydrates; when the drop fails too (Redis
// unreachable from this node only), the entries may be behind the durable
// store until they expire (WithTTL), counted in Stats.DropFailures. They
// are not read while the writing flag is set: only when setting it failed
// as well are they served.
//
// Everything else, SessionPage included, passes through to the durable
// store.
package rediscache

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// DefaultTTL is how long a user's cached entries live after their last
// write when no WithTTL option says otherwise.
const DefaultTTL = 24 * time.Hour

// Cache is a store.Backend that caches sessions, clocks and unread totals
// in Redis in front of another Backend. It is safe for concurrent use.
type Cache struct {
	inner  store.Backend
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
	log    *slog.Logger

	closed   atomic.Bool
	degraded atomic.Bool // the last Redis call failed (logged once per outage)
	stats    counters
}

// Option changes a Cache's defaults.
type Option func(*Cache)

// WithTTL sets how long a user's cached entries live after their last
// write (DefaultTTL otherwise); a TTL below one second is raised to it.
func WithTTL(ttl time.Duration) Option {
	return func(c *Cache) { c.ttl = max(ttl, time.Second) }
}

// WithLogger sets where Redis failures are reported (slog.Default
// otherwise).
func WithLogger(log *slog.Logger) Option {
	return func(c *Cache) {
		if log != nil {
			c.log = log
		}
	}
}

// New returns a Cache over inner keeping its entries in rdb under keys
// that start with prefix. Close closes inner, not rdb.
func New(inner store.Backend, rdb redis.UniversalClient, prefix string, opts ...Option) *Cache {
	c := &Cache{inner: inner, rdb: rdb, prefix: prefix, ttl: DefaultTTL, log: slog.Default()}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Unwrap returns the Backend the cache is in front of (for what the cache
// does not offer, such as store.Archiver).
func (c *Cache) Unwrap() store.Backend { return c.inner }

// Stats counts what went wrong with Redis since the cache was made.
type Stats struct {
	// ReadFallbacks counts reads Redis failed, served from the durable
	// store instead.
	ReadFallbacks int64
	// WriteFailures counts Redis writes that failed: the writing flags set
	// before a durable Apply, merges after it and hydration fills.
	WriteFailures int64
	// Dropped counts users whose entries were dropped after a failed merge
	// (the next read hydrates them).
	Dropped int64
	// DropFailures counts drops that failed too: those users' entries may
	// be behind the durable store until they expire (the TTL), served
	// only when their writing flags were not set either.
	DropFailures int64
}

type counters struct {
	readFallbacks, writeFailures, dropped, dropFailures atomic.Int64
}

// Stats returns the counts so far.
func (c *Cache) Stats() Stats {
	return Stats{
		ReadFallbacks: c.stats.readFallbacks.Load(),
		WriteFailures: c.stats.writeFailures.Load(),
		Dropped:       c.stats.dropped.Load(),
		DropFailures:  c.stats.dropFailures.Load(),
	}
}

// failed notes a Redis failure: the first of an outage is logged.
func (c *Cache) failed(what string, err error) {
	if c.degraded.CompareAndSwap(false, true) {
		c.log.Warn("redis session cache failing; serving from the durable store", "op", what, "err", err)
	}
}

// reached notes a Redis call that succeeded: the end of an outage is logged.
func (c *Cache) reached() {
	if c.degraded.Load() && c.degraded.CompareAndSwap(true, false) {
		c.log.Info("redis session cache reachable again")
	}
}

// ttlArg is the TTL as a script argument (milliseconds).
func (c *Cache) ttlArg() string { return strconv.FormatInt(c.ttl.Milliseconds(), 10) }

// freshGen is a starting generation no lease is likely to hold.
func freshGen() string { return strconv.FormatInt(rand.Int64N(1<<62)+1, 10) }

// isNoScript reports whether err says Redis does not have the script (a
// restarted Redis, or one that never ran it).
func isNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// scriptCall is one script run in a pipeline.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
}

// runPipelined runs calls in one round trip and returns their results in
// order; a call Redis did not have the script of is run again on its own
// (EVAL), which loads it. Each result carries its own error.
func (c *Cache) runPipelined(ctx context.Context, calls []scriptCall) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(calls))
	if len(calls) == 0 {
		return cmds
	}
	pipe := c.rdb.Pipeline()
	for i, call := range calls {
		cmds[i] = call.script.EvalSha(ctx, pipe, call.keys, call.args...)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
	for i, call := range calls {
		if isNoScript(cmds[i].Err()) {
			cmds[i] = call.script.Run(ctx, c.rdb, call.keys, call.args...)
		}
	}
	return cmds
}

// checkOpen returns ErrClosed once Close was called.
func (c *Cache) checkOpen() error {
	if c.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

// Close closes the durable store (not the Redis client).
func (c *Cache) Close() error {
	c.closed.Store(true)
	return c.inner.Close()
}

// The rest passes through to the durable store.

// Append implements store.Backend.
func (c *Cache) Append(ctx context.Context, msg protocol.Message) (store.AppendResult, error) {
	return c.inner.Append(ctx, msg)
}

// QueueAppend implements store.QueuedAppender: the durable store's when it
// queues appends, else an Append made before it returns (queued appends
// then keep their order trivially).
func (c *Cache) QueueAppend(ctx context.Context, msg protocol.Message) (func() (store.AppendResult, error), error) {
	if qa, ok := c.inner.(store.QueuedAppender); ok {
		return qa.QueueAppend(ctx, msg)
	}
	res, err := c.inner.Append(ctx, msg)
	return func() (store.AppendResult, error) { return res, err }, nil
}

// AppendAt implements store.SeqAppender when the durable store does.
func (c *Cache) AppendAt(ctx context.Context, msg protocol.Message) (store.AppendResult, error) {
	sa, ok := c.inner.(store.SeqAppender)
	if !ok {
		return store.AppendResult{}, errors.New("the durable store cannot append at a seq")
	}
	return sa.AppendAt(ctx, msg)
}

// NewestSeq implements store.SeqAppender when the durable store does.
func (c *Cache) NewestSeq(ctx context.Context, conv string) (int64, error) {
	sa, ok := c.inner.(store.SeqAppender)
	if !ok {
		return 0, errors.New("the durable store cannot append at a seq")
	}
	return sa.NewestSeq(ctx, conv)
}

// History implements store.Backend.
func (c *Cache) History(ctx context.Context, conv string, q store.HistoryQuery) ([]protocol.Message, bool, error) {
	return c.inner.History(ctx, conv, q)
}

// Message implements store.Backend.
func (c *Cache) Message(ctx context.Context, conv string, seq int64) (protocol.Message, error) {
	return c.inner.Message(ctx, conv, seq)
}

// Senders implements store.Backend.
func (c *Cache) Senders(ctx context.Context, conv string, after, upTo int64) ([]string, error) {
	return c.inner.Senders(ctx, conv, after, upTo)
}

// Conversation implements store.Backend.
func (c *Cache) Conversation(ctx context.Context, conv string) (store.ConvRecord, error) {
	return c.inner.Conversation(ctx, conv)
}

// ChangeGroup implements store.Backend.
func (c *Cache) ChangeGroup(ctx context.Context, change store.GroupRecordChange) (store.GroupRecordResult, error) {
	return c.inner.ChangeGroup(ctx, change)
}

// GroupChangeAt implements store.Backend.
func (c *Cache) GroupChangeAt(ctx context.Context, conv string, seq int64) (store.GroupRecordChange, error) {
	return c.inner.GroupChangeAt(ctx, conv, seq)
}

// Unrepaired implements store.Backend.
func (c *Cache) Unrepaired(ctx context.Context) ([]string, error) {
	return c.inner.Unrepaired(ctx)
}

// TimedMutes implements store.Backend.
func (c *Cache) TimedMutes(ctx context.Context, user string, now int64) ([]string, error) {
	return c.inner.TimedMutes(ctx, user, now)
}

// SessionPage implements store.Backend. It passes through: a page shows
// each session's last message, title and members, which only the durable
// store holds, from one snapshot of it.
func (c *Cache) SessionPage(ctx context.Context, user string, q store.SyncQuery) ([]store.SessionRow, int64, error) {
	return c.inner.SessionPage(ctx, user, q)
}

// Pending implements store.Backend.
func (c *Cache) Pending(ctx context.Context, user string) ([]store.PendingDelivery, error) {
	return c.inner.Pending(ctx, user)
}

// Account implements store.Backend.
func (c *Cache) Account(ctx context.Context, user string) (string, string, error) {
	return c.inner.Account(ctx, user)
}

// SetAccount implements store.Backend.
func (c *Cache) SetAccount(ctx context.Context, user, category, subBiz string) error {
	return c.inner.SetAccount(ctx, user, category, subBiz)
}

var (
	_ store.Backend        = (*Cache)(nil)
	_ store.QueuedAppender = (*Cache)(nil)
)
