package servertest

import (
	"sync"
	"testing"
	"time"

	"github.com/imcore/im/server"
)

// Clock is a server clock (server.Config.Now) that moves only when told.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d, back when d is negative.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Ms is the clock's time in Unix milliseconds.
func (c *Clock) Ms() int64 { return c.Now().UnixMilli() }

// StartClocked is Start with the server on a Clock, which it returns; the
// clock starts at a fixed time in November 2025.
func StartClocked(t testing.TB, options ...func(*server.Config)) (*Env, *Clock) {
	t.Helper()
	clk := &Clock{now: time.UnixMilli(1_763_800_000_000)}
	opts := append([]func(*server.Config){func(c *server.Config) { c.Now = clk.Now }}, options...)
	return Start(t, opts...), clk
}
