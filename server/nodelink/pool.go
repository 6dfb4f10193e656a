package nodelink

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// Pool holds this node's links to the others, one per address, opened on
// first use and again after one drops.
type Pool struct {
	secret    []byte
	path      string
	silence   time.Duration
	forwarded prometheus.Counter

	mu    sync.Mutex
	links map[string]*link
}

// NewPool returns a pool whose links present secret and reach the other
// nodes' endpoints at path (for example "/internal/link"). A link from
// which nothing was heard for silence (0: no bound) is dropped, failing
// its requests in flight with ErrLinkDown; it is pinged meanwhile, so
// that only a node that cannot answer at all (stopped, partitioned,
// frozen by a long pause) stays silent. The nodes give it their lease:
// a request waits no longer on an owner that cannot answer than the
// owner's own lease lasts, and the caller then asks whoever owns the
// shard by then.
func NewPool(secret []byte, path string, silence time.Duration) *Pool {
	return &Pool{
		secret: secret, path: path, silence: silence, links: make(map[string]*link),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "im_forwarded_frames_total",
			Help: "Frames this node forwarded to the node that owns what they touch.",
		}),
	}
}

// Collectors returns the pool's counters, to register.
func (p *Pool) Collectors() []prometheus.Collector { return []prometheus.Collector{p.forwarded} }

// Forward sends r to the node at addr (host:port) and returns its answer.
// ErrLinkDown: the link dropped before the answer; *RemoteError: the
// owner refused to serve it.
func (p *Pool) Forward(ctx context.Context, addr string, r Request) (json.RawMessage, error) {
	l, err := p.link(ctx, addr)
	if err != nil {
		return nil, err
	}
	p.forwarded.Inc()
	return l.call(ctx, r)
}

// Start sends r to the node at addr now and returns what waits for its
// answer: requests started one after another on one stream are served in
// that order, while their answers are awaited together.
func (p *Pool) Start(ctx context.Context, addr string, r Request) (wait func(ctx context.Context) (json.RawMessage, error), err error) {
	l, err := p.link(ctx, addr)
	if err != nil {
		return nil, err
	}
	p.forwarded.Inc()
	return l.send(r)
}

// Close drops every link.
func (p *Pool) Close() {
	p.mu.Lock()
	links := p.links
	p.links = make(map[string]*link)
	p.mu.Unlock()
	for _, l := range links {
		l.drop()
	}
}

// dialTimeout bounds opening a link when the pool has no silence bound.
const dialTimeout = 5 * time.Second

func (p *Pool) link(ctx context.Context, addr string) (*link, error) {
	p.mu.Lock()
	if l := p.links[addr]; l != nil && !l.isDown() {
		p.mu.Unlock()
		return l, nil
	}
	p.mu.Unlock()
	// A node that cannot answer accepts the TCP connection (its kernel
	// does) and never the upgrade: the dial is bounded like the silence.
	limit := dialTimeout
	if p.silence > 0 {
		limit = p.silence
	}
	dctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	header := http.Header{secretHeader: []string{string(p.secret)}}
	ws, resp, err := websocket.DefaultDialer.DialContext(dctx, "ws://"+addr+p.path, header)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("link to %s: %w (HTTP %d)", addr, err, resp.StatusCode)
		}
		return nil, fmt.Errorf("link to %s: %w", addr, err)
	}
	l := newLink(ws, p.silence)
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.links[addr]; old != nil && !old.isDown() {
		// Another caller opened one meanwhile: keep that one.
		l.drop()
		return old, nil
	}
	p.links[addr] = l
	return l, nil
}

// link is one open WebSocket to another node, its requests in flight
// keyed by id.
type link struct {
	ws      *websocket.Conn
	writeMu sync.Mutex

	mu      sync.Mutex
	nextID  uint64
	waiting map[uint64]chan envelope
	down    bool
	// heard is when the link last read anything (an answer, a pong), in
	// Unix nanoseconds; closed is closed once the link is down.
	heard  atomic.Int64
	closed chan struct{}
}

func newLink(ws *websocket.Conn, silence time.Duration) *link {
	l := &link{ws: ws, waiting: make(map[uint64]chan envelope), closed: make(chan struct{})}
	l.heard.Store(time.Now().UnixNano())
	ws.SetPongHandler(func(string) error {
		l.heard.Store(time.Now().UnixNano())
		return nil
	})
	go l.read()
	if silence > 0 {
		go l.watch(silence)
	}
	return l
}

// watch pings the link a few times per silence bound and drops it once
// nothing was heard for that long.
func (l *link) watch(silence time.Duration) {
	t := time.NewTicker(silence / 4)
	defer t.Stop()
	for {
		select {
		case <-l.closed:
			return
		case now := <-t.C:
			if now.Sub(time.Unix(0, l.heard.Load())) > silence {
				l.drop()
				return
			}
			if err := l.ws.WriteControl(websocket.PingMessage, nil, now.Add(silence/4)); err != nil {
				l.drop()
				return
			}
		}
	}
}

func (l *link) isDown() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.down
}

// call sends r and waits for its answer.
func (l *link) call(ctx context.Context, r Request) (json.RawMessage, error) {
	wait, err := l.send(r)
	if err != nil {
		return nil, err
	}
	return wait(ctx)
}

// send writes r on the link and returns what waits for its answer.
func (l *link) send(r Request) (func(ctx context.Context) (json.RawMessage, error), error) {
	reply := make(chan envelope, 1)
	l.mu.Lock()
	if l.down {
		l.mu.Unlock()
		return nil, ErrLinkDown
	}
	l.nextID++
	id := l.nextID
	l.waiting[id] = reply
	l.mu.Unlock()

	l.writeMu.Lock()
	err := l.ws.WriteJSON(envelope{ID: id, Request: &r})
	l.writeMu.Unlock()
	if err != nil {
		l.drop()
		return nil, ErrLinkDown
	}
	return func(ctx context.Context) (json.RawMessage, error) { return l.await(ctx, id, reply) }, nil
}

// await waits for the answer of request id.
func (l *link) await(ctx context.Context, id uint64, reply chan envelope) (json.RawMessage, error) {
	select {
	case env, ok := <-reply:
		if !ok {
			return nil, ErrLinkDown
		}
		if env.Error != "" {
			return nil, &RemoteError{Reason: env.Error}
		}
		return env.Answer, nil
	case <-ctx.Done():
		l.mu.Lock()
		delete(l.waiting, id)
		l.mu.Unlock()
		return nil, ctx.Err()
	}
}

// read hands each answer to its caller until the link drops.
func (l *link) read() {
	defer l.drop()
	for {
		var env envelope
		if err := l.ws.ReadJSON(&env); err != nil {
			return
		}
		l.heard.Store(time.Now().UnixNano())
		l.mu.Lock()
		reply := l.waiting[env.ID]
		delete(l.waiting, env.ID)
		l.mu.Unlock()
		if reply != nil {
			reply <- env
		}
	}
}

// drop closes the link and fails the requests in flight on it.
func (l *link) drop() {
	l.mu.Lock()
	if l.down {
		l.mu.Unlock()
		return
	}
	l.down = true
	waiting := l.waiting
	l.waiting = nil
	close(l.closed)
	l.mu.Unlock()
	l.ws.Close()
	for _, reply := range waiting {
		close(reply)
	}
}
