package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/server/hub"
)

// errClosed is returned by DeliverWait on a connection that is closing.
var errClosed = errors.New("connection closed")

// writeBatch bounds how many queued frames one corked write gathers.
const writeBatch = 64

// closeWait bounds the goodbye: the frames still queued and the close frame.
const closeWait = time.Second

// Deliver queues a push without blocking; a full queue means the client is
// not reading fast enough, and it is disconnected (hub.Device).
func (c *conn) Deliver(p hub.Push) bool {
	if c.hold(p) {
		return true
	}
	select {
	case c.queue <- p.Frame:
		return true
	case <-c.done:
		return false
	default:
		c.g.log.Warn("disconnecting slow client", "user", c.user, "device", c.device, "queued", len(c.queue))
		c.cutOff()
		return false
	}
}

// hold keeps p back while the connection replays, or drops a message the
// replay already sent; it reports whether p was taken care of. A full hold
// drops p: a message stays pending in the store and is found by the next
// replay pass; other pushes are hints (typing, or a status that a later
// status or a session sync supersedes).
func (c *conn) hold(p hub.Push) bool {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	if !c.replaying {
		return p.Conv != "" && c.replayed.Has(p.Conv, p.Seq)
	}
	if len(c.held) < maxHeld {
		c.held = append(c.held, p)
	} else if p.Conv != "" {
		c.heldDropped = true
	}
	return true
}

// cutOff disconnects a client that does not read: it stops being reachable
// at once, and a write blocked on it fails now instead of at its deadline.
// It may be called while the hub is locked, so it unregisters in the
// background.
func (c *conn) cutOff() {
	c.close(websocket.ClosePolicyViolation, "slow consumer: send queue full")
	go c.g.hub.Unregister(c)
	c.ws.NetConn().SetWriteDeadline(time.Now())
}

// DeliverWait queues a push, waiting for room (chat.ReplayTarget).
func (c *conn) DeliverWait(ctx context.Context, p hub.Push) error {
	return c.sendWait(ctx, p.Frame)
}

// waitDrained returns once the writer has written everything queued before
// the call: it queues a barrier (a nil frame) and waits for the writer to
// reach it.
func (c *conn) waitDrained(ctx context.Context) error {
	if err := c.sendWait(ctx, nil); err != nil {
		return err
	}
	select {
	case <-c.drained:
		return nil
	case <-c.done:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reachedBarrier tells waitDrained that the writer got to its barrier.
func (c *conn) reachedBarrier() {
	select {
	case c.drained <- struct{}{}:
	default:
	}
}

// sendWait queues a frame, waiting for room: used for answers to the
// connection's own requests and for replays, never for pushes from others.
func (c *conn) sendWait(ctx context.Context, frame []byte) error {
	select {
	case c.queue <- frame:
		return nil
	case <-c.done:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeLoop is the connection's only data writer. It drains the queue,
// gathering every frame already waiting into one corked write, and pings.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	ping := time.NewTicker(c.g.cfg.PingInterval)
	defer ping.Stop()
	for {
		select {
		case frame := <-c.queue:
			if frame == nil {
				c.reachedBarrier()
				continue
			}
			if err := c.writeFrames(frame, time.Now().Add(c.g.cfg.WriteTimeout)); err != nil {
				c.close(websocket.CloseAbnormalClosure, "")
				c.ws.Close()
				return
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.g.cfg.WriteTimeout)); err != nil {
				c.close(websocket.CloseAbnormalClosure, "")
				c.ws.Close()
				return
			}
		case <-c.done:
			c.goodbye()
			return
		}
	}
}

// writeFrames writes first and whatever else is queued, up to writeBatch
// frames, with one system call when the connection can be corked.
func (c *conn) writeFrames(first []byte, deadline time.Time) error {
	cc, corkable := c.ws.NetConn().(*corkConn)
	if corkable {
		cc.cork()
	}
	c.ws.SetWriteDeadline(deadline)
	err := c.ws.WriteMessage(websocket.TextMessage, first)
	for n := 1; err == nil && n < writeBatch; n++ {
		select {
		case frame := <-c.queue:
			if frame == nil {
				// A barrier: what came before it is written at uncork.
				if corkable {
					err = cc.uncork()
					cc.cork()
				}
				c.reachedBarrier()
				continue
			}
			err = c.ws.WriteMessage(websocket.TextMessage, frame)
		default:
			n = writeBatch
		}
	}
	if corkable {
		if uerr := cc.uncork(); err == nil {
			err = uerr
		}
	}
	return err
}

// goodbye writes what is still queued and the close frame, within
// closeWait, then closes the socket.
func (c *conn) goodbye() {
	deadline := time.Now().Add(closeWait)
	for {
		select {
		case frame := <-c.queue:
			if frame == nil {
				c.reachedBarrier()
				continue
			}
			if err := c.writeFrames(frame, deadline); err != nil {
				c.ws.Close()
				return
			}
			continue
		default:
		}
		break
	}
	msg := websocket.FormatCloseMessage(c.closeCode, c.closeText)
	c.ws.WriteControl(websocket.CloseMessage, msg, deadline)
	c.ws.Close()
}
