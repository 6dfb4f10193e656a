// Package gateway speaks the protocol over WebSockets: it upgrades
// connections, authenticates the hello, reads and dispatches frames to the
// domain, and writes through one bounded queue per connection.
package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/hub"
)

// Config holds the per-connection limits and timings.
type Config struct {
	MaxFrame     int64 // bytes in one frame; larger closes with 1009
	Limits       protocol.Limits
	QueueLen     int           // frames waiting for the writer; a full queue disconnects
	HelloTimeout time.Duration // the first frame must be hello within this
	PingInterval time.Duration // how often the server pings
	PongWait     time.Duration // a connection silent this long is dropped
	WriteTimeout time.Duration // one batch of writes must finish within this
	RateLimit    rate.Limit    // frames per second a connection may send
	RateBurst    int           // frames a connection may send at once
}

// DefaultConfig returns the limits of PROTOCOL.md.
func DefaultConfig() Config {
	return Config{
		MaxFrame:     protocol.DefaultMaxFrame,
		Limits:       protocol.DefaultLimits,
		QueueLen:     1024,
		HelloTimeout: 10 * time.Second,
		PingInterval: 30 * time.Second,
		PongWait:     60 * time.Second,
		WriteTimeout: 10 * time.Second,
		RateLimit:    200,
		RateBurst:    400,
	}
}

// Gateway is the http.Handler of the /ws endpoint.
type Gateway struct {
	cfg      Config
	svc      *chat.Service
	hub      *hub.Hub
	auth     auth.Authenticator
	log      *slog.Logger
	upgrader websocket.Upgrader

	mu       sync.Mutex
	draining bool
	conns    sync.WaitGroup
}

// New returns a Gateway dispatching to svc and registering devices in h.
func New(cfg Config, svc *chat.Service, h *hub.Hub, a auth.Authenticator, log *slog.Logger) *Gateway {
	return &Gateway{
		cfg:  cfg,
		svc:  svc,
		hub:  h,
		auth: a,
		log:  log,
		upgrader: websocket.Upgrader{
			ReadBufferSize:  4096,
			WriteBufferSize: 4096,
			// Clients are native programs, not browser pages: no Origin policy.
			CheckOrigin: func(*http.Request) bool { return true },
		},
	}
}

// ServeHTTP upgrades the request and runs the connection until it ends.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	if g.draining {
		g.mu.Unlock()
		http.Error(w, "server is shutting down", http.StatusServiceUnavailable)
		return
	}
	g.conns.Add(1)
	g.mu.Unlock()
	defer g.conns.Done()

	ws, err := g.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered the HTTP error
	}
	c := newConn(g, ws)
	c.run()
}

// Shutdown closes every connection with "going away" and waits until they
// have finished their requests in flight, or until ctx ends.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.draining = true
	g.mu.Unlock()
	for _, d := range g.hub.Devices() {
		if c, ok := d.(*conn); ok {
			c.close(websocket.CloseGoingAway, "server shutting down")
		}
	}
	done := make(chan struct{})
	go func() {
		g.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
