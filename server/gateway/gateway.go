// Package gateway speaks the protocol over WebSockets: it upgrades
// connections, authenticates the hello, reads and dispatches frames to the
// domain, and writes through one bounded queue per connection. It keeps
// what one client may cost the server bounded: the bytes queued for it,
// the frames it may send (per user, across its connections), the
// connections a user may hold and the connections still starting.
package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/auth"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/clientaddr"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/metrics"
	"github.com/imcore/im/server/presence"
	"github.com/imcore/im/server/ratelimit"
	"github.com/imcore/im/server/store"
)

// Config holds the per-connection limits and timings.
type Config struct {
	MaxFrame      int64 // bytes in one frame; larger closes with 1009
	MaxHelloFrame int64 // bytes in one frame before the hello; larger closes with 1009
	Limits        protocol.Limits
	QueueLen      int           // frames waiting for the writer; a push that finds no room disconnects
	QueueBytes    int           // bytes waiting for the writer, likewise
	HelloTimeout  time.Duration // from the TCP accept (the upgrade included) to a valid hello
	PingInterval  time.Duration // how often the server pings
	PongWait      time.Duration // a connection silent this long is dropped
	WriteTimeout  time.Duration // one batch of writes must finish within this
	RateLimit     rate.Limit    // frames per second one user may send, all its connections together
	RateBurst     int           // frames one user may send at once
	// RateWait is how long a frame over the rate may be held back until the
	// rate allows it; one that would wait longer is answered rate_limited.
	RateWait time.Duration
	// RejectBurst is how many rate_limited answers a connection may get
	// beyond RateLimit per second before it is closed for ignoring them.
	RejectBurst int
	// PreHelloFrames bounds the frames one connection may send before a
	// valid hello; PreHelloRate and PreHelloBurst bound, per IP address,
	// the frames before hello that fail (malformed, or a hello refused).
	PreHelloFrames int
	PreHelloRate   rate.Limit
	PreHelloBurst  int
	// MaxConnsPerUser bounds one user's connections (0: no bound).
	MaxConnsPerUser int
	// MaxHandshakes bounds the connections between their upgrade and
	// their hello (0: no bound), and MaxHandshakesPerIP those of one
	// address; more are answered 503.
	MaxHandshakes      int
	MaxHandshakesPerIP int
	// DevAuth says the server trusts the user a hello names (dev auth): a
	// web page's Origin naming the server's own host is then accepted only
	// for a loopback host, since DNS rebinding can make any site's name
	// point at 127.0.0.1.
	DevAuth bool
	// AllowedOrigins lists the web origins ("https://app.example.com", or
	// "*" for any) allowed to open a WebSocket besides the server's own
	// host; an upgrade without an Origin header is always allowed.
	AllowedOrigins []string
	// Proxies are trusted reverse proxies: the limits per address count
	// the clients they forward for (X-Forwarded-For), not them.
	Proxies clientaddr.Proxies
	// RevokeCheck is how often connected devices' tokens are checked for a
	// revocation (token mode); 0 never.
	RevokeCheck time.Duration
	// Metrics receives the gateway's counters; a fresh set when nil.
	Metrics *metrics.Metrics
	// Presence is told when users come and go and keeps the connections'
	// watch lists; nil: every presence is the stranger's.
	Presence *presence.Tracker
	// MaxPresenceUsers bounds the users of one presence request
	// (protocol.DefaultMaxPresenceUsers when 0).
	MaxPresenceUsers int
}

// DefaultConfig returns the limits of PROTOCOL.md and docs/PROTOCOL.md 12.
func DefaultConfig() Config {
	return Config{
		MaxFrame:           protocol.DefaultMaxFrame,
		MaxHelloFrame:      4 << 10,
		Limits:             protocol.DefaultLimits,
		QueueLen:           1024,
		QueueBytes:         4 << 20,
		HelloTimeout:       10 * time.Second,
		PingInterval:       30 * time.Second,
		PongWait:           60 * time.Second,
		WriteTimeout:       10 * time.Second,
		RateLimit:          200,
		RateBurst:          400,
		RateWait:           250 * time.Millisecond,
		RejectBurst:        100,
		PreHelloFrames:     4,
		PreHelloRate:       20,
		PreHelloBurst:      100,
		MaxConnsPerUser:    64,
		MaxHandshakes:      1024,
		MaxHandshakesPerIP: 64,
		RevokeCheck:        5 * time.Second,
	}
}

// Gateway is the http.Handler of the /ws endpoint.
type Gateway struct {
	cfg      Config
	svc      Service
	hub      Registry
	auth     auth.Authenticator
	log      *slog.Logger
	metrics  *metrics.Metrics
	upgrader websocket.Upgrader

	frames   *ratelimit.Set // per user
	rejects  *ratelimit.Set // refused frames, per user
	preHello *ratelimit.Set // per IP

	mu         sync.Mutex
	draining   bool
	userConns  map[string]int
	handshakes map[string]int // per address
	handshaken int            // in all
	conns      sync.WaitGroup
	stop       chan struct{} // closed by Shutdown
}

// Service answers a connection's frames: chat.Service where the frame's
// conversation or user is served, and routing.Router, which runs each
// frame on the node that owns what it touches (this one alone, in one
// process). Its methods are chat.Service's.
type Service interface {
	StartSend(ctx context.Context, c chat.Caller, f *protocol.Send) (finish func() (*protocol.Sent, *protocol.Error))
	StartMark(ctx context.Context, c chat.Caller, kind store.MarkKind, marks []protocol.Mark) (finish func(context.Context) *protocol.Error, perr *protocol.Error)
	CheckMarks(ctx context.Context, c chat.Caller, marks []protocol.Mark) *protocol.Error
	History(ctx context.Context, c chat.Caller, f *protocol.History) (*protocol.Messages, *protocol.Error)
	Receipts(ctx context.Context, c chat.Caller, f *protocol.ReceiptsRequest) (*protocol.ReceiptsReply, *protocol.Error)
	Typing(ctx context.Context, c chat.Caller, f *protocol.Typing) *protocol.Error
	Sync(ctx context.Context, c chat.Caller, f *protocol.Sync) (*protocol.Sessions, *protocol.Error)
	SessionOp(ctx context.Context, c chat.Caller, f *protocol.SessionOp) (*protocol.OK, *protocol.Error)
	CreateGroup(ctx context.Context, c chat.Caller, f *protocol.CreateGroup) (*protocol.Group, *protocol.Error)
	GroupOp(ctx context.Context, c chat.Caller, f *protocol.GroupOp) (*protocol.Group, *protocol.Error)
	Settings(ctx context.Context, c chat.Caller, f *protocol.SettingsRequest) (*protocol.SettingsReply, *protocol.Error)
	Block(ctx context.Context, c chat.Caller, f *protocol.Block) (*protocol.OK, *protocol.Error)
	Unblock(ctx context.Context, c chat.Caller, f *protocol.Unblock) (*protocol.OK, *protocol.Error)
	Replay(ctx context.Context, user string, to chat.ReplayTarget, done chat.Replayed) error
}

var _ Service = (*chat.Service)(nil)

// Registry is where the gateway registers its connected devices and finds
// them again. *hub.Hub is the in-process registry; a registry shared
// between nodes (package relay) also makes them reachable from other
// nodes. Devices and DevicesOf list only this process's devices.
type Registry interface {
	// Register makes d reachable by pushes to its user.
	Register(d hub.Device)
	// Unregister removes d; once it returns, no push reaches d any more.
	Unregister(d hub.Device)
	// Devices returns every device registered in this process.
	Devices() []hub.Device
	// DevicesOf returns user's devices registered in this process.
	DevicesOf(user string) []hub.Device
}

var _ Registry = (*hub.Hub)(nil)

// New returns a Gateway dispatching to svc and registering devices in r.
func New(cfg Config, svc Service, r Registry, a auth.Authenticator, log *slog.Logger) *Gateway {
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	g := &Gateway{
		cfg:        cfg,
		svc:        svc,
		hub:        r,
		auth:       a,
		log:        log,
		metrics:    cfg.Metrics,
		frames:     ratelimit.NewSet(cfg.RateLimit, cfg.RateBurst),
		rejects:    ratelimit.NewSet(cfg.RateLimit, max(1, cfg.RejectBurst)),
		preHello:   ratelimit.NewSet(cfg.PreHelloRate, cfg.PreHelloBurst),
		userConns:  make(map[string]int),
		handshakes: make(map[string]int),
		stop:       make(chan struct{}),
	}
	g.upgrader = websocket.Upgrader{
		// An idle connection should cost little: it reads through the
		// HTTP server's own buffer (a read buffer size of 0 reuses it),
		// and holds a write buffer only while it writes.
		WriteBufferPool:  &sync.Pool{},
		HandshakeTimeout: cfg.WriteTimeout,
		CheckOrigin:      g.checkOrigin,
	}
	if r, ok := a.(auth.Revocations); ok && cfg.RevokeCheck > 0 {
		go g.watchRevocations(r)
	}
	return g
}

// acceptedKey is the context key of a connection's accept time.
type acceptedKey struct{}

// ConnContext is the http.Server hook that records when a connection was
// accepted, so that the hello timeout counts from there: a client slow to
// send its upgrade request has less time left for its hello.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, acceptedKey{}, time.Now())
}

// acceptedAt returns when r's connection was accepted (now when unknown).
func acceptedAt(r *http.Request) time.Time {
	if t, ok := r.Context().Value(acceptedKey{}).(time.Time); ok {
		return t
	}
	return time.Now()
}

// ServeHTTP upgrades the request and runs the connection until it ends.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	started := acceptedAt(r)
	g.mu.Lock()
	if g.draining {
		g.mu.Unlock()
		http.Error(w, "server is shutting down", http.StatusServiceUnavailable)
		return
	}
	g.conns.Add(1)
	g.mu.Unlock()
	served := false // handed to the connection's goroutine
	defer func() {
		if !served {
			g.conns.Done()
		}
	}()

	ip, proxied := g.cfg.Proxies.OfRequest(r)
	if proxied && g.Penalized(ip) {
		// The listener turns penalized addresses away at accept; one
		// behind a proxy is known only now.
		g.metrics.Refuse(metrics.Penalty)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many failed connections from "+ip+"; slow down", http.StatusTooManyRequests)
		return
	}
	if refusal := g.startHandshake(ip); refusal != "" {
		g.metrics.Refuse(metrics.Handshakes)
		w.Header().Set("Retry-After", "1")
		http.Error(w, refusal, http.StatusServiceUnavailable)
		return
	}
	var handshakeOnce sync.Once
	handshakeDone := func() { handshakeOnce.Do(func() { g.endHandshake(ip) }) }

	ws, err := g.upgrader.Upgrade(w, r, nil)
	if err != nil {
		handshakeDone()
		return // the upgrader has answered the HTTP error
	}
	g.metrics.Connections.Inc()
	g.log.Debug("connection opened", "remote", ws.RemoteAddr().String(), "ip", ip)
	c := newConn(g, ws, ip)
	// The connection runs on a goroutine of its own and this one returns,
	// so that the HTTP server lets go of what it kept for the request (its
	// write buffer, the request, a deep stack): an idle connection keeps
	// only what it uses.
	served = true
	go func() {
		defer g.conns.Done()
		defer g.metrics.Connections.Dec()
		defer handshakeDone()
		c.run(started, handshakeDone)
	}()
}

// Penalized reports whether an address (its clientaddr key) has spent its
// failed frames before hello: until its bucket refills, the listener turns its connections
// away at accept, which keeps reconnecting in a loop cheap for the server.
func (g *Gateway) Penalized(ip string) bool { return g.preHello.Empty(ip) }

// checkOrigin lets an upgrade through when it names no Origin (a native
// client), when its Origin's host is the server's own, or when the origin
// is allowed (PROTOCOL.md, Transport).
func (g *Gateway) checkOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	for _, allowed := range g.cfg.AllowedOrigins {
		if allowed == "*" || strings.EqualFold(allowed, origin) {
			return true
		}
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) &&
		(!g.cfg.DevAuth || isLoopbackHost(u.Hostname())) {
		return true
	}
	g.metrics.Refuse(metrics.Origin)
	g.log.Warn("cross-site upgrade refused", "origin", truncate(origin, 200), "host", truncate(r.Host, 200), "remote", r.RemoteAddr)
	return false
}

// isLoopbackHost reports whether host names this machine: localhost or a
// loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// truncate shortens s to n bytes for a log line.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// startHandshake counts a connection from ip between its upgrade and its
// hello, or says why it is refused.
func (g *Gateway) startHandshake(ip string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.cfg.MaxHandshakesPerIP > 0 && g.handshakes[ip] >= g.cfg.MaxHandshakesPerIP:
		return fmt.Sprintf("too many connections starting at once from %s (%d); try again", ip, g.cfg.MaxHandshakesPerIP)
	case g.cfg.MaxHandshakes > 0 && g.handshaken >= g.cfg.MaxHandshakes:
		return fmt.Sprintf("too many connections starting at once (%d); try again", g.cfg.MaxHandshakes)
	}
	g.handshakes[ip]++
	g.handshaken++
	return ""
}

// endHandshake forgets a connection startHandshake counted.
func (g *Gateway) endHandshake(ip string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.handshaken--
	if g.handshakes[ip]--; g.handshakes[ip] <= 0 {
		delete(g.handshakes, ip)
	}
}

// admitUser counts a new connection of user, or says why it is refused.
func (g *Gateway) admitUser(user string) *protocol.Error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cfg.MaxConnsPerUser > 0 && g.userConns[user] >= g.cfg.MaxConnsPerUser {
		g.metrics.Refuse(metrics.PerUser)
		return protocol.RateLimited(time.Second, "%s already holds %d connections, the most one user may hold; close one first", user, g.cfg.MaxConnsPerUser)
	}
	g.userConns[user]++
	return nil
}

// releaseUser forgets a connection admitUser counted.
func (g *Gateway) releaseUser(user string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.userConns[user]--; g.userConns[user] <= 0 {
		delete(g.userConns, user)
	}
}

// Draining reports whether Shutdown has begun.
func (g *Gateway) Draining() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.draining
}

// Shutdown closes every connection with "going away" and waits until they
// have finished their requests in flight, or until ctx ends.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	if !g.draining {
		g.draining = true
		close(g.stop)
	}
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
