// Package client is the headless client of an imserver client: it keeps a
// connection (reconnecting with backoff), stores what arrives in a
// localstore before acknowledging it, sends from a durable outbox, syncs
// the session list, fills history gaps and batches receipts. A UI (or a
// bot) reads state from the store through the query methods and learns of
// changes from Events; it never waits on the network.
package client

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
)

// Config is what a Client needs. URL and Store are required, and User or
// Token.
type Config struct {
	// URL is the server's WebSocket endpoint, ws://host:port/ws, or
	// several endpoints of one deployment separated by commas: the client
	// connects to the first that answers, and when its connection ends
	// tries the next at once, waiting out the back-off only when each has
	// failed in turn.
	URL string
	// User names the user on a dev-auth server. With Token set it may be
	// empty; if given, the token's user must match.
	User string
	// Token authenticates on a token-auth server.
	Token string
	// Store is the profile's database. The Client does not close it.
	Store *localstore.Store

	// MinBackoff and MaxBackoff bound the jittered exponential wait
	// between connection attempts; 500ms and DefaultMaxBackoff when zero.
	MinBackoff, MaxBackoff time.Duration
	// AckDelay is how long the client waits for a burst of messages to end
	// before acknowledging it with one delivered frame; 30ms when zero.
	// AckMaxDelay bounds the wait under a steady stream; 1s when zero.
	AckDelay, AckMaxDelay time.Duration

	// Dialer opens connections; websocket.DefaultDialer when nil. Tests
	// wrap its NetDialContext to cut connections.
	Dialer *websocket.Dialer
	// Logger receives the client's diagnostics; discarded when nil.
	Logger *slog.Logger
	// Now is the clock for client timestamps; time.Now when nil.
	Now func() time.Time
}

// DefaultMaxBackoff caps the wait between connection attempts: a server
// that restarts is noticed within a few seconds however long it was gone,
// and the jitter (each wait drawn from the upper half of its bound) keeps
// its clients from coming back all at once.
const DefaultMaxBackoff = 5 * time.Second

// ErrOffline is returned by a request that needs the server while there
// is no connection.
var ErrOffline = errors.New("offline")

// ErrStopped is returned by a request whose client stopped (Run returned)
// before the answer came.
var ErrStopped = errors.New("client stopped")

// Client is one profile's engine. Its methods are safe for concurrent use.
type Client struct {
	cfg    Config
	urls   []string // the endpoints of URL, in order
	store  *localstore.Store
	log    *slog.Logger
	now    func() time.Time
	events *eventQueue
	ids    atomic.Int64
	kick   chan struct{} // wakes the client: outbox, requests or reads to send
	retry  chan struct{} // ends the wait before the next connection attempt

	mu      sync.Mutex
	conn    Conn
	user    string
	link    *link      // the welcomed connection, nil when there is none
	queue   []*request // requests waiting for a connection
	reads   map[string]int64
	typedAt map[string]time.Time
	running bool

	// People (people.go): the user's settings, what is known of others'
	// presence and names, and the watch list with its generation, which
	// counts its changes.
	settings protocol.UserSettings
	presence map[string]presenceEntry
	watch    []string
	watchGen int

	// sendMu makes Send one ordered outbox: each message takes a
	// client_ts (and so a msg_id) after the previous one's, and its row
	// after the previous one's, in the order Send was called.
	sendMu     sync.Mutex
	lastSendTS int64 // client_ts of the newest message sent, ms

	framesSent sync.Map // frame type → *atomic.Int64, for tests

	// For tests: connections whose history check is done (checkBehind),
	// and ErrServerBehind reports made.
	behindChecks, behindSaid atomic.Int64
}

// New checks cfg and returns a client ready to Run. The profile's user, if
// the store already has one, must be cfg.User.
func New(cfg Config) (*Client, error) {
	urls := SplitURLs(cfg.URL)
	if len(urls) == 0 || cfg.Store == nil {
		return nil, errors.New("client: URL and Store are required")
	}
	if cfg.User == "" && cfg.Token == "" {
		return nil, errors.New("client: User or Token is required")
	}
	if cfg.User != "" && !protocol.ValidUser(cfg.User) {
		return nil, fmt.Errorf("client: %q is not a valid user id", cfg.User)
	}
	stored, err := cfg.Store.User()
	if err != nil {
		return nil, err
	}
	if stored != "" && cfg.User != "" && stored != cfg.User {
		return nil, fmt.Errorf("client: this profile belongs to %q, not %q", stored, cfg.User)
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.AckDelay <= 0 {
		cfg.AckDelay = 30 * time.Millisecond
	}
	if cfg.AckMaxDelay < cfg.AckDelay {
		cfg.AckMaxDelay = max(time.Second, cfg.AckDelay)
	}
	if cfg.Dialer == nil {
		cfg.Dialer = websocket.DefaultDialer
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	user := cfg.User
	if user == "" {
		user = stored
	}
	c := &Client{
		cfg:     cfg,
		urls:    urls,
		store:   cfg.Store,
		log:     cfg.Logger,
		now:     cfg.Now,
		events:  newEventQueue(),
		kick:    make(chan struct{}, 1),
		retry:   make(chan struct{}, 1),
		conn:    Conn{State: Offline},
		user:    user,
		reads:   make(map[string]int64),
		typedAt: make(map[string]time.Time),
	}
	if err := c.loadPeople(); err != nil {
		return nil, err
	}
	return c, nil
}

// SplitURLs returns the endpoints of a comma-separated list, without
// blanks and empty entries.
func SplitURLs(list string) []string {
	var out []string
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// Close stops delivering events and closes the Events channel (events
// still queued are dropped). Call it once Run has returned.
func (c *Client) Close() { c.events.close() }

// Events returns the client's event stream. Events say what changed; read
// the new state from the query methods. Repeated events of one kind are
// coalesced while the reader is slow, so the channel never holds the
// client back and a change is never unreported.
func (c *Client) Events() <-chan Event { return c.events.out }

// Conn returns the connection's current state.
func (c *Client) Conn() Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn
}

// User returns the user this client speaks for ("" with a token until the
// first welcome, unless the profile already knows it).
func (c *Client) User() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.user
}

// Device returns the profile's device id.
func (c *Client) Device() string { return c.store.DeviceID() }

// Store returns the profile's database.
func (c *Client) Store() *localstore.Store { return c.store }

// setConn records and reports a new connection state.
func (c *Client) setConn(conn Conn) {
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	c.events.push(ConnChanged{Conn: conn})
}

// Reconnect tries to connect now when the client is offline, waiting for
// its next attempt: the user asked for it, or has something to send. It
// does nothing otherwise.
func (c *Client) Reconnect() {
	if c.Conn().State != Offline {
		return
	}
	select {
	case c.retry <- struct{}{}:
	default:
	}
}

// wake tells the client there is something to send.
func (c *Client) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// nextID returns a fresh request id.
func (c *Client) nextID() string { return "c" + fmt.Sprint(c.ids.Add(1)) }

// countSent counts a frame written, by type.
func (c *Client) countSent(typ string) {
	n, _ := c.framesSent.LoadOrStore(typ, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
}

// sentCount returns how many frames of a type this client wrote.
func (c *Client) sentCount(typ string) int64 {
	n, ok := c.framesSent.Load(typ)
	if !ok {
		return 0
	}
	return n.(*atomic.Int64).Load()
}
