package routing

import (
	"context"
	"sync"
)

// gate says whether this node serves one shard, and counts the operations
// on it in flight, so that a shard is handed over only once they are
// done: a shard is served from when it was taken and rebuilt until it is
// handed over or its lease lost.
type gate struct {
	mu      sync.Mutex
	serving bool
	closing bool // close waits for the operations in flight
	// writable says whether this node's writer may write the shard's
	// rows: from when it is taken until it is handed over and its rows
	// put so far are written (seal).
	writable bool
	writes   int // writes of the shard's rows in flight (holdWrite)
	inflight int
	idle     sync.Cond
}

// enter admits an operation on the shard if it is served here; the
// caller calls exit when the operation is done.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.serving {
		return false
	}
	g.inflight++
	return true
}

// enterWithin admits a step of an operation already in flight (a session
// effect it applies to a user of the shard): also while the shard is being
// handed over, since the handover waits for that very operation.
func (g *gate) enterWithin() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.serving && !g.closing {
		return false
	}
	g.inflight++
	return true
}

func (g *gate) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.inflight == 0 && g.idle.L != nil {
		g.idle.Broadcast()
	}
}

// open starts serving the shard.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.serving, g.writable = true, true
}

// sealWithin stops the writing of the shard's rows here and returns once
// the writes of them in flight have landed, or ctx is done (reporting
// whether they had): what an operation cut off by a handover still puts
// is dropped by the writer, and applied again by the operation at the
// shard's new owner. A shard taken again meanwhile (open) stays writable.
func (g *gate) sealWithin(ctx context.Context) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.serving {
		return true
	}
	g.writable = false
	g.waitUntil(ctx, func() bool { return g.writes == 0 })
	return g.writes == 0
}

// stopWriting stops the writing of the shard's rows here at once, without
// waiting for the writes in flight (sealWithin waits for them): for a
// shard whose lease is gone. A shard taken again (open) is writable again.
func (g *gate) stopWriting() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writable = false
}

// holdWrite admits a write of the shard's rows if they are still this
// node's to write; the caller calls releaseWrite once it has landed.
func (g *gate) holdWrite() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.writable {
		return false
	}
	g.writes++
	return true
}

func (g *gate) releaseWrite() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writes--
	if g.writes == 0 && g.idle.L != nil {
		g.idle.Broadcast()
	}
}

// isWritable reports whether the shard's rows may be written here.
func (g *gate) isWritable() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.writable
}

// closeWithin stops admitting operations and returns once those in flight
// are done, or ctx is: a node leaving within a deadline hands its shards
// over at the deadline even with operations still waiting (their rows
// are fenced; their clients retry elsewhere). It reports whether they
// were all done.
func (g *gate) closeWithin(ctx context.Context) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.serving = false
	g.closing = true
	g.waitUntil(ctx, func() bool { return g.inflight == 0 })
	g.closing = false
	return g.inflight == 0
}

// waitUntil waits, with g.mu held, until done holds or ctx is done; the
// counters' decrements wake it.
func (g *gate) waitUntil(ctx context.Context, done func() bool) {
	if g.idle.L == nil {
		g.idle.L = &g.mu
	}
	stop := context.AfterFunc(ctx, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.idle.Broadcast()
	})
	defer stop()
	for !done() && ctx.Err() == nil {
		g.idle.Wait()
	}
}

// isServing reports whether the shard is served here now.
func (g *gate) isServing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.serving
}
