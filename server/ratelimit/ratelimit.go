// Package ratelimit keeps one token bucket per key (a user, an IP, a user
// and conversation), created on first use and forgotten once full again:
// a full bucket is what a new one would be, so forgetting it loses
// nothing and memory follows the keys in use, not every key ever seen.
package ratelimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// sweepEvery is how many lookups pass between sweeps of full buckets.
const sweepEvery = 1024

// Set is a token bucket per key, all with the same rate and burst. It is
// safe for concurrent use.
type Set struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	lookups int
}

// NewSet returns a Set of buckets refilling at limit per second up to
// burst. A limit of rate.Inf allows everything.
func NewSet(limit rate.Limit, burst int) *Set {
	return &Set{limit: limit, burst: burst, now: time.Now, buckets: make(map[string]*rate.Limiter)}
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
	now := s.now()
	r := s.bucket(key, now).ReserveN(now, n)
	if !r.OK() {
		return false, s.fillTime(), nil
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d, nil
	}
	return true, 0, func() { r.CancelAt(s.now()) }
}

// Admit takes a token from key's bucket now or, when it is empty, the next
// one to come if that is within maxWait: it returns how long the caller
// must wait before acting (0 for at once). When the next token is further
// off it takes nothing and returns ok false with the time until then.
func (s *Set) Admit(key string, maxWait time.Duration) (wait time.Duration, ok bool) {
	if s.limit == rate.Inf {
		return 0, true
	}
	now := s.now()
	r := s.bucket(key, now).ReserveN(now, 1)
	if !r.OK() {
		return s.fillTime(), false
	}
	d := r.DelayFrom(now)
	if d > maxWait {
		r.CancelAt(now)
		return d, false
	}
	return d, true
}

// Empty reports whether key's bucket holds less than one token, taking
// nothing.
func (s *Set) Empty(key string) bool {
	if s.limit == rate.Inf {
		return false
	}
	now := s.now()
	return s.bucket(key, now).TokensAt(now) < 1
}

func (s *Set) fillTime() time.Duration {
	if s.limit <= 0 {
		return time.Hour
	}
	return time.Duration(float64(s.burst) / float64(s.limit) * float64(time.Second))
}

// bucket returns key's bucket, creating it; every sweepEvery lookups it
// forgets the buckets that are full again.
func (s *Set) bucket(key string, now time.Time) *rate.Limiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups++
	if s.lookups%sweepEvery == 0 {
		for k, l := range s.buckets {
			if l.TokensAt(now) >= float64(s.burst) {
				delete(s.buckets, k)
			}
		}
	}
	l := s.buckets[key]
	if l == nil {
		l = rate.NewLimiter(s.limit, s.burst)
		s.buckets[key] = l
	}
	return l
}

// Len returns how many buckets are kept (for tests).
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buckets)
}
