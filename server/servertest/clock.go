package servertest

import (
	"sync"
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

// NewClock returns a clock at a fixed time in November 2025.
func NewClock() *Clock { return &Clock{now: time.UnixMilli(1_763_800_000_000)} }

// Use is an option of Start: the server runs on the clock.
func (c *Clock) Use(cfg *server.Config) { cfg.Now = c.Now }
