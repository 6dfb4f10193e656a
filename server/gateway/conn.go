package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/hub"
)

// conn is one WebSocket connection: after its hello, one device of a user.
type conn struct {
	g       *Gateway
	ws      *websocket.Conn
	limiter *rate.Limiter

	user, device string // set by hello, then read-only

	queue      chan []byte
	done       chan struct{} // closed when the connection starts closing
	writerDone chan struct{}
	drained    chan struct{} // the writer reached a drain barrier (see waitDrained)
	closeOnce  sync.Once
	closeCode  int
	closeText  string

	// While replaying, live pushes are held back here (see replay.go).
	heldMu      sync.Mutex
	replaying   bool
	held        []hub.Push
	heldDropped bool
	replayed    chat.Replayed // set when the replay is over
}

var _ hub.Device = (*conn)(nil)

func newConn(g *Gateway, ws *websocket.Conn) *conn {
	return &conn{
		g:          g,
		ws:         ws,
		limiter:    rate.NewLimiter(g.cfg.RateLimit, g.cfg.RateBurst),
		queue:      make(chan []byte, g.cfg.QueueLen),
		done:       make(chan struct{}),
		writerDone: make(chan struct{}),
		drained:    make(chan struct{}, 1),
	}
}

// User implements hub.Device.
func (c *conn) User() string { return c.user }

// close starts closing the connection with a WebSocket close code; the
// writer says goodbye. Safe to call from any goroutine, any number of times.
func (c *conn) close(code int, text string) {
	c.closeOnce.Do(func() {
		c.closeCode, c.closeText = code, text
		close(c.done)
	})
}

// run serves the connection until it ends.
func (c *conn) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.writeLoop()
	c.ws.SetReadLimit(c.g.cfg.MaxFrame)

	if welcome := c.hello(ctx); welcome != nil {
		// Register before answering, holding live pushes back until the
		// replay is done: none is missed, none comes before the welcome.
		c.replaying = true
		c.g.hub.Register(c)
		c.reply(ctx, welcome)
		replayDone := make(chan struct{})
		go func() {
			defer close(replayDone)
			c.replay(ctx)
		}()
		c.readLoop(ctx)
		c.close(websocket.CloseNormalClosure, "")
		c.g.hub.Unregister(c)
		cancel()
		<-replayDone
	}
	c.close(websocket.CloseNormalClosure, "")
	<-c.writerDone
}

// hello reads frames until a valid hello, returning the welcome to send, or
// until the connection must close (nil).
func (c *conn) hello(ctx context.Context) *protocol.Welcome {
	c.ws.SetReadDeadline(time.Now().Add(c.g.cfg.HelloTimeout))
	for {
		frame, id, perr, err := c.readFrame()
		if err != nil {
			return nil
		}
		if perr != nil {
			c.reply(ctx, perr.Frame(id))
			continue
		}
		h, ok := frame.(*protocol.Hello)
		if !ok {
			c.refuse(ctx, protocol.Errorf(protocol.CodeUnauthorized, "the first frame must be hello").Frame(id))
			return nil
		}
		if h.Protocol != protocol.Version {
			c.refuse(ctx, protocol.Errorf(protocol.CodeInvalid, "protocol %d is not supported; this server speaks %d", h.Protocol, protocol.Version).Frame(h.ID))
			return nil
		}
		if perr := h.Validate(); perr != nil {
			c.reply(ctx, perr.Frame(h.ID)) // the client may correct its hello
			continue
		}
		user, perr := c.g.auth.Authenticate(h)
		if perr != nil {
			c.refuse(ctx, perr.Frame(h.ID))
			return nil
		}
		c.user, c.device = user, h.Device
		c.g.log.Info("hello", "user", user, "device", h.Device, "remote", c.ws.RemoteAddr().String())
		return &protocol.Welcome{Ref: h.Ref, User: user, Device: h.Device, ServerTime: time.Now().UnixMilli()}
	}
}

// refuse answers a failed hello and closes the connection.
func (c *conn) refuse(ctx context.Context, f *protocol.ErrorFrame) {
	c.reply(ctx, f)
	c.close(websocket.ClosePolicyViolation, string(f.Code))
}

// readLoop reads and dispatches frames until the connection fails.
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
		if !c.limiter.Allow() {
			c.reply(ctx, protocol.Errorf(protocol.CodeRateLimited, "too many frames; slow down").Frame(id))
			continue
		}
		if perr != nil {
			c.reply(ctx, perr.Frame(id))
			continue
		}
		if answer := c.dispatch(ctx, frame); answer != nil {
			c.reply(ctx, answer)
		}
	}
}

// readFrame reads one WebSocket message and decodes it. err is set when the
// connection is gone; perr when the message is not a valid frame.
func (c *conn) readFrame() (protocol.Frame, string, *protocol.Error, error) {
	kind, data, err := c.ws.ReadMessage()
	if err != nil {
		return nil, "", nil, err
	}
	if kind != websocket.TextMessage {
		return nil, "", protocol.Errorf(protocol.CodeBadFrame, "binary messages are not frames; send JSON text"), nil
	}
	frame, id, perr := protocol.DecodeClientFrame(data)
	return frame, id, perr, nil
}

// reply queues an answer to the connection's own request.
func (c *conn) reply(ctx context.Context, f protocol.Frame) {
	c.sendWait(ctx, protocol.MustEncode(f))
}

// caller is the identity requests on this connection act as.
func (c *conn) caller() chat.Caller { return chat.Caller{User: c.user, Device: c} }
