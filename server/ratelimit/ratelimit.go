// Package ratelimit keeps one token bucket per key (a user, an IP, a user
// and conversation), created on first use and forgotten once full again:
// a full bucket is what a new one would be, so forgetting it loses
// nothing and memory follows the keys in use, not every key ever seen.
//
// The buckets are its own rather than golang.org/x/time/rate's limiters:
// a quota charged for work that then did not happen must be given back
// exactly, which a rate.Reservation cancelled after the fact does not do.
// Only the rate type is shared with x/time/rate (rate.Inf: no bound).
package ratelimit

import (
	"hash/maphash"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// shards spread the keys over locks, so that users do not queue on one.
const shards = 16

// sweepInterval is how often a shard forgets its full buckets.
const sweepInterval = 10 * time.Second

// Set is a token bucket per key, all with the same rate and burst. It is
// safe for concurrent use.
type Set struct {
	limit rate.Limit
	burst float64
	now   func() time.Time
	seed  maphash.Seed

	shards [shards]shard
}

type shard struct {
	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

// bucket holds tokens as of last. Tokens may go below zero: a frame let
// through ahead of its token (Admit) is owed until the refill pays it.
type bucket struct {
	tokens float64
	last   time.Time
}

// NewSet returns a Set of buckets refilling at limit tokens per second up
// to burst. A limit of rate.Inf allows everything.
func NewSet(limit rate.Limit, burst int) *Set {
	s := &Set{limit: limit, burst: float64(burst), now: time.Now, seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].buckets = make(map[string]*bucket)
	}
	return s
}

// PerWindow returns the rate that refills n tokens per window.
func PerWindow(n int, window time.Duration) rate.Limit {
	return rate.Limit(float64(n) / window.Seconds())
}

// Allow takes one token from key's bucket and reports whether there was
// one.
func (s *Set) Allow(key string) bool {
	ok, _, _ := s.Take(key, 1)
	return ok
}

// Take takes n tokens from key's bucket if it holds them, and returns undo,
// which gives them back (for work that then did not happen). When the
// bucket does not hold them, it takes nothing and returns how long until it
// will, for a retry hint; n above the burst can never be taken, and the
// wait returned is then the time to fill the whole bucket.
func (s *Set) Take(key string, n int) (ok bool, retryAfter time.Duration, undo func()) {
	if s.limit == rate.Inf {
		return true, 0, func() {}
	}
	need := float64(n)
	ok = s.with(key, func(b *bucket) bool {
		if b.tokens >= need {
			b.tokens -= need
			return true
		}
		if need > s.burst {
			retryAfter = s.duration(s.burst)
		} else {
			retryAfter = s.duration(need - b.tokens)
		}
		return false
	})
	if !ok {
		return false, retryAfter, nil
	}
	return true, 0, func() {
		s.with(key, func(b *bucket) bool {
			b.tokens = min(s.burst, b.tokens+need)
			return true
		})
	}
}

// Admit takes a token from key's bucket now or, when it is empty, the next
// one to come if that is within maxWait: it returns how long the caller
// must wait before acting (0 for at once). When the next token is further
// off it takes nothing and returns ok false with the time until then.
func (s *Set) Admit(key string, maxWait time.Duration) (wait time.Duration, ok bool) {
	if s.limit == rate.Inf {
		return 0, true
	}
	ok = s.with(key, func(b *bucket) bool {
		if b.tokens >= 1 {
			b.tokens--
			return true
		}
		if wait = s.duration(1 - b.tokens); wait > maxWait || s.burst < 1 {
			return false
		}
		b.tokens--
		return true
	})
	return wait, ok
}

// Empty reports whether key's bucket holds less than one token, taking
// nothing.
func (s *Set) Empty(key string) bool {
	if s.limit == rate.Inf {
		return false
	}
	return s.with(key, func(b *bucket) bool { return b.tokens < 1 })
}

// Len returns how many buckets are kept (for tests).
func (s *Set) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.buckets)
		sh.mu.Unlock()
	}
	return n
}

// with runs fn on key's bucket, refilled up to now, under its shard's lock.
func (s *Set) with(key string, fn func(*bucket) bool) bool {
	now := s.now()
	sh := &s.shards[maphash.String(s.seed, key)%shards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if now.Sub(sh.lastSweep) >= sweepInterval {
		for k, b := range sh.buckets {
			if s.refill(b, now); b.tokens >= s.burst {
				delete(sh.buckets, k)
			}
		}
		sh.lastSweep = now
	}
	b := sh.buckets[key]
	if b == nil {
		b = &bucket{tokens: s.burst, last: now}
		sh.buckets[key] = b
	}
	s.refill(b, now)
	return fn(b)
}

// refill adds the tokens earned since the bucket's last look, up to the
// burst.
func (s *Set) refill(b *bucket, now time.Time) {
	if now.After(b.last) {
		b.tokens = min(s.burst, b.tokens+now.Sub(b.last).Seconds()*float64(s.limit))
		b.last = now
	}
}

// duration is how long the bucket takes to earn tokens.
func (s *Set) duration(tokens float64) time.Duration {
	if s.limit <= 0 {
		return time.Hour
	}
	return time.Duration(tokens / float64(s.limit) * float64(time.Second))
}
