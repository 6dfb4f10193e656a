package gateway

import (
	"context"
	"errors"

	"github.com/imcore/im/server/chat"
)

// maxHeld bounds the live pushes a connection holds back while it replays.
const maxHeld = 4096

// replay pushes the user's pending messages to this new device. Live pushes
// that arrive meanwhile are held back (see Deliver) and sent afterwards, so
// that each conversation reaches the device oldest first and no message is
// sent twice. A held-back message push that did not fit is still pending in
// the store; another replay pass sends it.
func (c *conn) replay(ctx context.Context) {
	done := make(chat.Replayed)
	for {
		if err := c.g.svc.Replay(ctx, c.user, c, done); err != nil {
			if !errors.Is(err, errClosed) && !errors.Is(err, context.Canceled) {
				c.g.log.Error("replay of pending deliveries failed", "user", c.user, "device", c.device, "err", err)
			}
			// Stop holding live pushes; what is pending waits for the next hello.
			c.flushHeld(ctx, done, true)
			return
		}
		if !c.flushHeld(ctx, done, false) {
			return
		}
	}
}

// flushHeld sends what was held back during the replay, skipping messages
// the replay already sent, until nothing is held; then, once the writer has
// drained the queue (so that the next live push finds room), live pushes
// flow again — still skipping what the replay sent, since a message stored
// before the replay read it may be fanned out after. It returns true when
// a message push had to be dropped meanwhile, so another replay pass must
// run — unless final, when live pushes flow again whatever was dropped.
func (c *conn) flushHeld(ctx context.Context, done chat.Replayed, final bool) (again bool) {
	for {
		c.heldMu.Lock()
		held, dropped := c.held, c.heldDropped
		c.held, c.heldDropped, c.heldBytes = nil, false, 0
		c.heldMu.Unlock()
		for _, p := range held {
			if p.Conv != "" {
				if done.Has(p.Conv, p.Seq) {
					continue
				}
				done.Add(p.Conv, p.Seq)
			}
			if err := c.sendWait(ctx, p.Frame); err != nil {
				return false
			}
		}
		if dropped && !final {
			return true
		}
		if len(held) > 0 || dropped {
			continue
		}
		if err := c.waitDrained(ctx); err != nil {
			return false
		}
		c.heldMu.Lock()
		if len(c.held) == 0 && !c.heldDropped {
			c.replaying = false
			c.replayed = done
			c.heldMu.Unlock()
			return false
		}
		c.heldMu.Unlock()
	}
}
