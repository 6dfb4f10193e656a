package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/metrics"
)

// errClosed is returned by DeliverWait on a connection that is closing.
var errClosed = errors.New("connection closed")

// writeBatch bounds how many queued frames one corked write gathers.
const writeBatch = 64

// closeWait bounds the goodbye: the frames still queued and the close frame.
const closeWait = time.Second

// slowConsumerReason is the close reason of a client cut off for not
// reading (docs/PROTOCOL.md 11.10).
const slowConsumerReason = "slow consumer: send queue full"

// Deliver queues a push without blocking; a full queue (in frames or in
// bytes) means the client is not reading fast enough, and it is
// disconnected (hub.Device).
func (c *conn) Deliver(p hub.Push) bool {
	if c.hold(p) {
		return true
	}
	if c.q.tryPush(p.Frame) {
		return true
	}
	select {
	case <-c.done:
		return false
	default:
	}
	frames, bytes := c.q.len()
	c.g.log.Warn("disconnecting slow client", "user", c.user, "device", c.device, "queued_frames", frames, "queued_bytes", bytes)
	c.cutOff()
	return false
}

// hold keeps p back while the connection replays, or drops a message the
// replay already sent; it reports whether p was taken care of. The hold is
// bounded like the queue, in frames and in bytes; a full hold drops p: a message stays pending in the store and is found by the next
// replay pass; other pushes are hints (typing, or a status that a later
// status or a session sync supersedes).
func (c *conn) hold(p hub.Push) bool {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	if !c.replaying {
		return p.Conv != "" && c.replayed.Has(p.Conv, p.Seq)
	}
	if len(c.held) < maxHeld && c.heldBytes+len(p.Frame) <= c.g.cfg.QueueBytes {
		c.held = append(c.held, p)
		c.heldBytes += len(p.Frame)
	} else if p.Conv != "" {
		c.heldDropped = true
	}
	return true
}

// cutOff disconnects a client that does not read: it stops being reachable
// at once and what was queued for it is dropped (it is still pending in
// the store). The write in progress, if any, is let finish within the
// write timeout, and the close frame follows it, so that a client that
// reads, only too slowly, learns why it was cut off (code 1008) instead of
// seeing the connection drop. It may be called while the hub is locked, so
// it unregisters in the background.
func (c *conn) cutOff() {
	if !c.cut.CompareAndSwap(false, true) {
		return // two pushes found the queue full at once
	}
	c.g.metrics.Disconnect(metrics.SlowConsumer)
	c.close(websocket.ClosePolicyViolation, slowConsumerReason)
	c.q.close(true)
	go c.g.hub.Unregister(c)
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
// While it waits the connection reads no further request, so a client
// that asks without reading holds at most one queue's worth.
func (c *conn) sendWait(ctx context.Context, frame []byte) error {
	return c.q.pushWait(ctx, frame)
}

// The writer runs only while something is due — queued frames, a ping,
// the goodbye — so that an idle connection has no goroutine of its own
// for writing: a frame queued, the ping timer and close wake it
// (wakeWriter), and it returns once nothing is left. writing is set while
// one runs, and for good once it has finished the connection.

// startWriter arms the ping timer; run calls it before anything can be
// queued.
func (c *conn) startWriter() {
	c.pingTimer = time.AfterFunc(c.g.cfg.PingInterval, func() {
		c.pingDue.Store(true)
		c.wakeWriter()
	})
}

// wakeWriter starts the writer unless one runs (or has finished).
func (c *conn) wakeWriter() {
	if c.writing.CompareAndSwap(false, true) {
		go c.writeRun()
	}
}

// writeRun writes what is due until nothing is, then returns; a wake
// between its last look and its return is its own to serve, unless a new
// writer has already started for it.
func (c *conn) writeRun() {
	for {
		if c.writeDue() {
			return // the connection is over; writing stays set
		}
		c.writing.Store(false)
		if !c.due() || !c.writing.CompareAndSwap(false, true) {
			return
		}
	}
}

// due reports whether the writer has something to do.
func (c *conn) due() bool {
	select {
	case <-c.done:
		return true
	default:
	}
	return len(c.q.ready) > 0 || c.pingDue.Load()
}

// writeDue writes the queued frames, gathering those already waiting into
// one corked write, and a due ping, until nothing is due; it reports
// whether the writer has finished for good: the connection closed (it
// said goodbye) or a write failed.
func (c *conn) writeDue() (finished bool) {
	for {
		select {
		case <-c.done:
			c.stopPings()
			c.goodbye()
			close(c.writerDone)
			return true
		default:
		}
		wrote := false
		select {
		case <-c.q.ready:
			if err := c.writeQueued(time.Now().Add(c.g.cfg.WriteTimeout)); err != nil {
				c.writeFailed()
				return true
			}
			wrote = true
		default:
		}
		if c.pingDue.Swap(false) {
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(c.g.cfg.WriteTimeout)); err != nil {
				c.writeFailed()
				return true
			}
			c.pingTimer.Reset(c.g.cfg.PingInterval)
			wrote = true
		}
		if !wrote {
			return false
		}
	}
}

// stopPings stops the ping timer, if it was armed.
func (c *conn) stopPings() {
	if c.pingTimer != nil {
		c.pingTimer.Stop()
	}
}

// writeFailed ends a connection whose socket no longer takes writes.
func (c *conn) writeFailed() {
	c.stopPings()
	c.close(websocket.CloseAbnormalClosure, "")
	c.ws.Close()
	close(c.writerDone)
}

// writeQueued writes up to writeBatch queued frames, with one system call
// when the connection can be corked.
func (c *conn) writeQueued(deadline time.Time) error {
	frames, size := c.q.take(writeBatch)
	if len(frames) == 0 {
		return nil
	}
	defer c.q.release(size)
	cc, corkable := c.ws.NetConn().(*corkConn)
	if corkable {
		cc.cork()
	}
	c.ws.SetWriteDeadline(deadline)
	var err error
	for _, frame := range frames {
		if frame == nil {
			// A barrier: what came before it is written at uncork.
			if corkable {
				if err = cc.uncork(); err != nil {
					break
				}
				cc.cork()
			}
			c.reachedBarrier()
			continue
		}
		if c.cut.Load() {
			break // cut off: what was taken but not written is dropped too
		}
		if err = c.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
			break
		}
		c.g.metrics.FrameOut(frame)
	}
	if corkable {
		if uerr := cc.uncork(); err == nil {
			err = uerr
		}
	}
	return err
}

// goodbye writes what is still queued and the close frame, within
// closeWait (the write timeout for a slow consumer, whose socket buffers
// may be full), then closes the socket.
func (c *conn) goodbye() {
	deadline := time.Now().Add(closeWait)
	if c.cut.Load() {
		deadline = time.Now().Add(c.g.cfg.WriteTimeout)
	}
	for {
		if n, _ := c.q.len(); n == 0 {
			break
		}
		if err := c.writeQueued(deadline); err != nil {
			c.ws.Close()
			return
		}
	}
	msg := websocket.FormatCloseMessage(c.closeCode, c.closeText)
	c.ws.WriteControl(websocket.CloseMessage, msg, deadline)
	c.ws.Close()
}
