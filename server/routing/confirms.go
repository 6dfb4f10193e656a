package routing

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/imcore/im/server/engine"
)

// confirmWait bounds one request for another node's rows: a node that
// cannot write for that long (its backend down) is asked again, and the
// effects it holds are applied again meanwhile (idempotent).
const confirmWait = 30 * time.Second

// confirms coalesces the waits for other nodes' rows (Owners.Confirm):
// however many operations wait on one node, one request is in flight to
// it at a time, for the newest generation asked by then. A message's
// derivation on a busy node thus costs no request of its own.
type confirms struct {
	mu    sync.Mutex
	lives map[nodeLife]*lifeConfirms
}

// nodeLife is one life of one node: its address and its engine's boot.
type nodeLife struct{ addr, boot string }

// lifeConfirms is what is confirmed of one node life, and the request in
// flight to it.
type lifeConfirms struct {
	written uint64 // every generation up to it is written
	want    uint64 // the newest generation asked
	call    *confirmCall
}

// confirmCall is one request in flight: it confirms gen, or fails.
type confirmCall struct {
	gen  uint64
	err  error
	done chan struct{}
}

// wait returns once the node of ticket wrote its generation, or a
// request for it (or a later one) failed.
func (c *confirms) wait(ctx context.Context, r *Router, t engine.WriteTicket) error {
	if t.Node == "" || t.Node == r.selfAddr() {
		return r.eng.WaitWritten(ctx, t)
	}
	key := nodeLife{t.Node, t.Boot}
	for {
		c.mu.Lock()
		if c.lives == nil {
			c.lives = map[nodeLife]*lifeConfirms{}
		}
		l := c.lives[key]
		if l == nil {
			l = &lifeConfirms{}
			c.lives[key] = l
		}
		if l.written >= t.Gen {
			c.mu.Unlock()
			return nil
		}
		l.want = max(l.want, t.Gen)
		call := l.call
		if call == nil {
			call = &confirmCall{gen: l.want, done: make(chan struct{})}
			l.call = call
			go c.ask(r, key, l, call)
		}
		c.mu.Unlock()
		select {
		case <-call.done:
			if call.err != nil && call.gen >= t.Gen {
				return call.err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ask requests call's generation of the node life key.
func (c *confirms) ask(r *Router, key nodeLife, l *lifeConfirms, call *confirmCall) {
	ctx, cancel := context.WithTimeout(context.Background(), confirmWait)
	defer cancel()
	req, err := request(barrierStream(), mWritten, engine.WriteTicket{Boot: key.boot, Gen: call.gen})
	if err == nil {
		var raw []byte
		if raw, err = r.pool.Forward(ctx, key.addr, req); err == nil {
			err = decodeAnswer(raw, nil)
		} else {
			err = fmt.Errorf("rows of node %s: %w", key.addr, err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	call.err = err
	l.call = nil
	if err == nil {
		l.written = max(l.written, call.gen)
	} else {
		// The life may be long gone: forget it rather than keep an entry
		// per dead life (a live one is asked again).
		delete(c.lives, key)
	}
	close(call.done)
}
