package dynamostore

import (
	"context"
	"sync"

	"github.com/imcore/im/protocol"
)

// maxRaises coalesces the max-seq raises of a conversation's appends in
// flight together (AppendAt): while one raise is written, the appends that
// arrive wait, and the next raise covers the highest seq among them. One
// UpdateItem then answers every append of a window, not one each. An
// append still puts its message only after a raise to its seq or above
// was written, so a crash after the put leaves the conversation behind.
type maxRaises struct {
	mu    sync.Mutex
	convs map[string]*convRaises // only conversations with a raise in flight
}

// convRaises is one conversation's raise in flight and the appends
// waiting for the next one.
type convRaises struct {
	kind    protocol.ConvKind
	want    int64 // the highest seq waiting
	waiting []raiseWaiter
}

type raiseWaiter struct {
	seq  int64
	done chan error
}

// raise returns once conv's max seq was raised to seq or above (or was
// found there), or the write failed. ctx bounds the wait, not the write:
// a write under way finishes for the others waiting on it.
func (s *Backend) raise(ctx context.Context, conv string, seq int64, kind protocol.ConvKind) error {
	done := make(chan error, 1)
	r := &s.raises
	r.mu.Lock()
	if r.convs == nil {
		r.convs = map[string]*convRaises{}
	}
	c, running := r.convs[conv]
	if !running {
		c = &convRaises{kind: kind}
		r.convs[conv] = c
	}
	c.want = max(c.want, seq)
	c.waiting = append(c.waiting, raiseWaiter{seq: seq, done: done})
	r.mu.Unlock()
	if !running {
		go s.runRaises(conv, c)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runRaises writes conv's raises until no append waits for one.
func (s *Backend) runRaises(conv string, c *convRaises) {
	r := &s.raises
	for {
		r.mu.Lock()
		target := c.want
		r.mu.Unlock()
		_, err := s.raiseMax(context.Background(), conv, target, c.kind)
		r.mu.Lock()
		left := c.waiting[:0]
		for _, w := range c.waiting {
			if w.seq <= target {
				w.done <- err
			} else {
				left = append(left, w)
			}
		}
		c.waiting = left
		if len(left) == 0 {
			delete(r.convs, conv)
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
}
