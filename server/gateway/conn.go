package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/metrics"
	"github.com/imcore/im/server/presence"
)

// conn is one WebSocket connection: after its hello, one device of a user.
type conn struct {
	g  *Gateway
	ws *websocket.Conn
	ip string

	id           auth.Identity // set by hello, then read-only
	user, device string        // likewise

	q          *outQueue
	done       chan struct{} // closed when the connection starts closing
	writerDone chan struct{}
	writing    atomic.Bool // a writer runs, or has finished (writer.go)
	pingDue    atomic.Bool
	pingTimer  *time.Timer
	drained    chan struct{} // the writer reached a drain barrier (see waitDrained)
	cut        atomic.Bool   // cut off as a slow consumer

	// Frames started and waiting to be answered (see inflight.go); the
	// channel is made by the first of them.
	inFlight        chan inFlight
	inFlightRunning atomic.Bool
	inFlightCount   atomic.Int64   // started and not yet answered
	inFlightDone    sync.WaitGroup // and the marks runner

	// Marks without id (see marks.go): held while a batch of them is in
	// flight; marksIdle is set while the marks runner runs, and closed
	// when it ends.
	marksMu   sync.Mutex
	marksHeld heldMarks
	marksDue  []markFinish // applied, to be finished by the runner
	marksIdle chan struct{}

	closeOnce sync.Once
	closeCode int
	closeText string
	readErr   error // why reading ended; the reader's alone

	// While replaying, live pushes are held back here (see replay.go).
	heldMu      sync.Mutex
	replaying   bool
	held        []hub.Push
	heldBytes   int
	heldDropped bool
	replayed    chat.Replayed // set when the replay is over

	// watch is the connection's presence watch list, made by its first
	// presence request; the reader's alone.
	watch *presence.Watch
}

var _ hub.Device = (*conn)(nil)

func newConn(g *Gateway, ws *websocket.Conn, ip string) *conn {
	c := &conn{
		g:          g,
		ws:         ws,
		ip:         ip,
		q:          newOutQueue(g.cfg.QueueLen, g.cfg.QueueBytes, func(d int) { g.metrics.QueueBytes.Add(float64(d)) }),
		done:       make(chan struct{}),
		writerDone: make(chan struct{}),
		drained:    make(chan struct{}, 1),
	}
	c.q.onReady = c.wakeWriter
	return c
}

// User implements hub.Device.
func (c *conn) User() string { return c.user }

// Name implements hub.Device.
func (c *conn) Name() string { return c.device }

// close starts closing the connection with a WebSocket close code; the
// writer writes what is queued and says goodbye. Safe to call from any
// goroutine, any number of times; the first code wins.
func (c *conn) close(code int, text string) {
	c.closeOnce.Do(func() {
		c.closeCode, c.closeText = code, text
		close(c.done)
		c.q.close(false)
		c.wakeWriter() // to say goodbye
	})
}

// run serves the connection until it ends. started is when its TCP
// connection was accepted; handshakeDone is called once the hello is over,
// whatever its outcome.
func (c *conn) run(started time.Time, handshakeDone func()) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.startWriter()
	c.ws.SetReadLimit(c.g.cfg.MaxHelloFrame)
	c.ws.SetPingHandler(c.ping)

	welcome := c.hello(ctx, started.Add(c.g.cfg.HelloTimeout))
	handshakeDone()
	if welcome != nil {
		defer c.g.releaseUser(c.user)
		c.ws.SetReadLimit(c.g.cfg.MaxFrame)
		// Register before answering, holding live pushes back until the
		// replay is done: none is missed, none comes before the welcome.
		c.replaying = true
		c.g.hub.Register(c)
		if !c.stillWelcome(ctx, welcome) {
			c.g.hub.Unregister(c)
			c.close(c.closeCode, c.closeText)
			<-c.writerDone
			return
		}
		c.reply(ctx, welcome)
		replayDone := make(chan struct{})
		go func() {
			defer close(replayDone)
			c.replay(ctx)
		}()
		if t := c.g.cfg.Presence; t != nil {
			t.Connected(c.user)
		}
		c.readLoop(ctx)
		c.inFlightDone.Wait() // the frames started are answered first
		if c.watch != nil {
			c.watch.Close()
		}
		c.close(websocket.CloseNormalClosure, "")
		c.g.hub.Unregister(c)
		// After the registry let go: another node that reads where the
		// user's devices are no longer finds this one.
		if t := c.g.cfg.Presence; t != nil {
			t.Disconnected(c.user)
		}
		cancel()
		<-replayDone
	}
	c.close(websocket.CloseNormalClosure, "")
	<-c.writerDone
	if c.g.log.Enabled(ctx, slog.LevelDebug) {
		by, code, reason := c.closeReason()
		c.g.log.Debug("connection closed", "user", c.user, "device", c.device, "remote", c.ws.RemoteAddr().String(),
			"by", by, "code", code, "reason", reason, "duration", time.Since(started).Round(time.Millisecond))
	}
}

// closeReason says, once the connection is over, who ended it (client or
// server), with which WebSocket close code and why: the server's own
// reason when it closed first (shutdown, a slow consumer, a policy), else
// what ended the client's side (its close frame, a timeout, a lost
// connection).
func (c *conn) closeReason() (by string, code int, reason string) {
	switch {
	case c.closeCode == websocket.CloseAbnormalClosure && c.closeText == "":
		return "client", c.closeCode, "connection lost: a write failed"
	case c.closeCode != websocket.CloseNormalClosure || c.closeText != "":
		return "server", c.closeCode, c.closeText
	}
	var ce *websocket.CloseError
	var ne net.Error
	switch err := c.readErr; {
	case errors.As(err, &ce) && ce.Code == websocket.CloseAbnormalClosure:
		// No close frame: the library's code for a connection that
		// just ended.
		return "client", ce.Code, "connection lost: " + ce.Text
	case errors.As(err, &ce):
		reason = "client closed"
		if ce.Text != "" {
			reason += ": " + ce.Text
		}
		return "client", ce.Code, reason
	case errors.As(err, &ne) && ne.Timeout():
		if c.user == "" {
			return "server", websocket.CloseNormalClosure, "no hello in time"
		}
		return "server", websocket.CloseNormalClosure, "no pong in time"
	case err != nil:
		return "client", websocket.CloseAbnormalClosure, "connection lost: " + err.Error()
	}
	return "server", c.closeCode, "closed"
}

// ping answers a client's ping with a pong, as the WebSocket library would,
// when its user's frame rate allows: pings are frames too. Before the
// hello there is no user, and no pong.
func (c *conn) ping(data string) error {
	if c.user == "" || !c.g.frames.Allow(c.user) {
		return nil
	}
	err := c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(c.g.cfg.WriteTimeout))
	if err == websocket.ErrCloseSent {
		return nil
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return nil
	}
	return err
}

// stillWelcome checks, once the device is registered, what may have
// changed since its hello was accepted: the server started shutting down
// (Shutdown closes only the devices it finds registered), or the user's
// tokens were revoked (the revocation watcher closes only registered
// devices). Either way the connection is closed, and false returned.
func (c *conn) stillWelcome(ctx context.Context, welcome *protocol.Welcome) bool {
	if c.g.Draining() {
		c.close(websocket.CloseGoingAway, "server shutting down")
		return false
	}
	if r, ok := c.g.auth.(auth.Revocations); ok {
		if perr := r.Revalidate(ctx, c.id); perr != nil {
			c.refuse(ctx, perr.Frame(welcome.ID))
			return false
		}
	}
	return true
}

// hello reads frames until a valid hello, returning the welcome to send, or
// until the connection must close (nil): at the deadline, after too many
// frames, or when frames that fail come too fast from the client's address.
func (c *conn) hello(ctx context.Context, deadline time.Time) *protocol.Welcome {
	c.ws.SetReadDeadline(deadline)
	for n := 1; ; n++ {
		frame, id, perr, err := c.readFrame()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				// A connection that never says hello failed too: charge
				// its address, or holding upgrades open would be free.
				c.g.preHello.Take(c.ip, 1)
			}
			return nil
		}
		if n > c.g.cfg.PreHelloFrames {
			c.g.metrics.Disconnect(metrics.PreHello)
			c.refuse(ctx, protocol.Errorf(protocol.CodeUnauthorized, "%d frames without a valid hello", n).Frame(id))
			return nil
		}
		if perr != nil {
			if c.failedBeforeHello(ctx, id) {
				return nil
			}
			c.reply(ctx, perr.Frame(id))
			continue
		}
		h, ok := frame.(*protocol.Hello)
		if !ok {
			c.failedBeforeHello(ctx, id)
			c.refuse(ctx, protocol.Errorf(protocol.CodeUnauthorized, "the first frame must be hello").Frame(id))
			return nil
		}
		if h.Protocol != protocol.Version {
			c.failedBeforeHello(ctx, h.ID)
			c.refuse(ctx, protocol.Errorf(protocol.CodeInvalid, "protocol %d is not supported; this server speaks %d", h.Protocol, protocol.Version).Frame(h.ID))
			return nil
		}
		if perr := h.Validate(); perr != nil {
			if c.failedBeforeHello(ctx, h.ID) {
				return nil
			}
			c.reply(ctx, perr.Frame(h.ID)) // the client may correct its hello
			continue
		}
		ident, perr := c.g.auth.Authenticate(ctx, h)
		if perr != nil {
			if perr.Code != protocol.CodeInternal { // the server's failure is not the client's
				c.failedBeforeHello(ctx, h.ID)
			}
			c.refuse(ctx, perr.Frame(h.ID))
			return nil
		}
		if perr := c.g.admitUser(ident.User); perr != nil {
			c.refuse(ctx, perr.Frame(h.ID))
			return nil
		}
		c.id, c.user, c.device = ident, ident.User, h.Device
		c.g.log.Info("hello", "user", c.user, "device", h.Device, "remote", c.ws.RemoteAddr().String())
		return &protocol.Welcome{Ref: h.Ref, User: c.user, Device: h.Device, ServerTime: time.Now().UnixMilli()}
	}
}

// failedBeforeHello charges a failed frame before hello to the client's
// address. When the address has failed too often it refuses the
// connection and returns true.
func (c *conn) failedBeforeHello(ctx context.Context, id string) bool {
	if ok, wait, _ := c.g.preHello.Take(c.ip, 1); !ok {
		c.g.metrics.Limited(metrics.ScopePreHello)
		c.g.metrics.Disconnect(metrics.PreHello)
		c.refuse(ctx, protocol.RateLimited(wait, "too many failed frames before hello from %s; slow down", c.ip).Frame(id))
		return true
	}
	return false
}

// refuse answers a failed hello and closes the connection.
func (c *conn) refuse(ctx context.Context, f *protocol.ErrorFrame) {
	c.reply(ctx, f)
	c.close(websocket.ClosePolicyViolation, string(f.Code))
}

// readLoop reads and dispatches frames until the connection fails or is
// closed for ignoring the rate limit.
func (c *conn) readLoop(ctx context.Context) {
	extend := func() { c.ws.SetReadDeadline(time.Now().Add(c.g.cfg.PongWait)) }
	extend()
	c.ws.SetPongHandler(func(string) error { extend(); return nil })
	for {
		frame, id, perr, err := c.readFrame()
		if err != nil {
			return
		}
		extend()
		if !c.admit(ctx, id) {
			if c.closing() {
				return
			}
			continue
		}
		if perr != nil {
			c.reply(ctx, perr.Frame(id))
			continue
		}
		start := time.Now()
		answer := c.dispatch(ctx, frame)
		if answer != nil {
			if e, ok := answer.(*protocol.ErrorFrame); ok && e.Code == protocol.CodeRateLimited {
				c.g.metrics.Limited(metrics.ScopeQuota)
			}
			c.reply(ctx, answer)
		}
		if _, ok := frame.(*protocol.Send); ok {
			c.g.metrics.SendLatency.Observe(time.Since(start).Seconds())
		}
	}
}

// admit holds a frame back until the user's frame rate allows it, for at
// most RateWait: a burst above the rate is slowed down (the connection
// reads nothing meanwhile), not refused. A frame that would wait longer is
// answered rate_limited with the time to wait, and admit returns false; a
// client that keeps sending such frames is ignoring the answers and is
// disconnected.
func (c *conn) admit(ctx context.Context, id string) bool {
	wait, ok := c.g.frames.Admit(c.user, c.g.cfg.RateWait)
	if ok {
		if wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case <-t.C:
			case <-c.done:
				return false
			}
		}
		return true
	}
	c.g.metrics.Limited(metrics.ScopeFrames)
	c.reply(ctx, protocol.RateLimited(wait, "too many frames from %s; slow down", c.user).Frame(id))
	if !c.g.rejects.Allow(c.user) {
		c.g.metrics.Disconnect(metrics.RateLimit)
		c.g.log.Warn("disconnecting a client that ignores rate_limited", "user", c.user, "device", c.device, "remote", c.ip)
		c.close(websocket.ClosePolicyViolation, "rate limit exceeded")
	}
	return false
}

// closing reports whether the connection has started closing.
func (c *conn) closing() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// readFrame reads one WebSocket message and decodes it. err is set when the
// connection is gone; perr when the message is not a valid frame.
func (c *conn) readFrame() (protocol.Frame, string, *protocol.Error, error) {
	kind, data, err := c.ws.ReadMessage()
	if err != nil {
		if c.readErr == nil {
			c.readErr = err
		}
		return nil, "", nil, err
	}
	if kind != websocket.TextMessage {
		c.g.metrics.FrameIn("bad_frame")
		return nil, "", protocol.Errorf(protocol.CodeBadFrame, "binary messages are not frames; send JSON text"), nil
	}
	frame, id, perr := protocol.DecodeClientFrame(data)
	if perr != nil {
		c.g.metrics.FrameIn("bad_frame")
	} else {
		c.g.metrics.FrameIn(frame.FrameType())
	}
	return frame, id, perr, nil
}

// reply queues an answer to the connection's own request.
func (c *conn) reply(ctx context.Context, f protocol.Frame) {
	c.sendWait(ctx, protocol.MustEncode(f))
}

// caller is the identity requests on this connection act as.
func (c *conn) caller() chat.Caller { return chat.Caller{User: c.user, Device: c} }
