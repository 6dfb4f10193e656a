package dynamostore

import (
	"context"
	"sync"

	"github.com/imcore/im/protocol"
)

// maxRaises coalesces the max-seq raises of a conversation's appends
// (AppendAt). A raise goes up to the highest seq the owner has given, not
// only to its own, and is remembered: the appends whose seqs were given
// by then find them raised and write nothing to the conversation. While
// one raise is written, the appends that arrive wait, and the next raise
// covers the highest seq among them. An append still puts its message only
// after a raise to its seq or above was written, so a crash after the put
// leaves the conversation behind; a seq raised whose message is never
// written is a hole, as one raised beside a write that failed is.
type maxRaises struct {
	mu    sync.Mutex
	convs map[string]*convRaises // only conversations with a raise in flight
	// raised is how far each conversation's max seq is known to be
	// raised (a max seq only rises); forgotten whole past maxRaised
	// conversations, which costs a raise each, not a wrong answer.
	raised map[string]int64
}

// maxRaised bounds the conversations whose raise is remembered.
const maxRaised = 1 << 16

// convRaises is one conversation's raise in flight and the appends
// waiting for the next one.
type convRaises struct {
	kind    protocol.ConvKind
	want    int64 // the highest seq to raise to: given, of those waiting
	waiting []raiseWaiter
}

type raiseWaiter struct {
	seq  int64
	done chan error
}

// raise returns once conv's max seq was raised to seq or above (or was
// found there), or the write failed; a raise it writes goes up to upTo
// (the highest seq the owner has given). ctx bounds the wait, not the
// write: a write under way finishes for the others waiting on it.
func (s *Backend) raise(ctx context.Context, conv string, seq, upTo int64, kind protocol.ConvKind) error {
	done := make(chan error, 1)
	r := &s.raises
	r.mu.Lock()
	if r.raised[conv] >= seq {
		r.mu.Unlock()
		return nil
	}
	if r.convs == nil {
		r.convs = map[string]*convRaises{}
	}
	c, running := r.convs[conv]
	if !running {
		c = &convRaises{kind: kind}
		r.convs[conv] = c
	}
	c.want = max(c.want, seq, upTo)
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
		if err == nil {
			if r.raised == nil || len(r.raised) >= maxRaised {
				r.raised = map[string]int64{}
			}
			r.raised[conv] = max(r.raised[conv], target)
		}
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
