package nodelink

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// Handler serves forwarded requests on the owner. It returns the answer
// frame (nil for none), or an error when the request cannot be served
// here (the caller is told why).
type Handler interface {
	ServeForwarded(ctx context.Context, r Request) (json.RawMessage, error)
}

// Starter is a Handler that serves a request in two steps: StartForwarded
// runs in its stream's order (the stream's next request starts once it
// returns) and returns what finishes it, which runs beside the stream's
// next requests. A stream's requests are so applied in order while their
// slow parts (writes) overlap.
type Starter interface {
	StartForwarded(ctx context.Context, r Request) (finish func() (json.RawMessage, error))
}

// HandlerFunc is a Handler of a function.
type HandlerFunc func(ctx context.Context, r Request) (json.RawMessage, error)

// ServeForwarded implements Handler.
func (f HandlerFunc) ServeForwarded(ctx context.Context, r Request) (json.RawMessage, error) {
	return f(ctx, r)
}

// Server is a node's link endpoint (an http.Handler): it accepts the links
// other nodes open and serves what they forward.
type Server struct {
	handler  Handler
	secret   []byte
	log      *slog.Logger
	upgrader websocket.Upgrader
	served   prometheus.Counter
}

// NewServer returns the endpoint serving with h, accepting links that
// present secret.
func NewServer(h Handler, secret []byte, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	return &Server{
		handler: h, secret: secret, log: log,
		upgrader: websocket.Upgrader{ReadBufferSize: 64 << 10, WriteBufferSize: 64 << 10},
		served: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "im_forwarded_frames_served_total",
			Help: "Frames other nodes forwarded to this one, as their owner.",
		}),
	}
}

// Collectors returns the server's counters, to register.
func (s *Server) Collectors() []prometheus.Collector { return []prometheus.Collector{s.served} }

// ServeHTTP accepts a link.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !authorized(r, s.secret) {
		http.Error(w, "this endpoint is for the deployment's nodes", http.StatusUnauthorized)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	s.serveLink(r.Context(), ws)
}

func authorized(r *http.Request, secret []byte) bool {
	got := []byte(r.Header.Get(secretHeader))
	return len(secret) > 0 && subtle.ConstantTimeCompare(got, secret) == 1
}

// secretHeader carries the deployment's secret on a link's handshake.
const secretHeader = "X-Im-Node-Secret"

// serveLink reads a link's requests until it drops; each stream's are
// served in order by a worker of their own.
func (s *Server) serveLink(ctx context.Context, ws *websocket.Conn) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer ws.Close()
	out := make(chan envelope, 256)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for {
			select {
			case env := <-out:
				if err := ws.WriteJSON(env); err != nil {
					cancel()
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	answer := func(env envelope, answer json.RawMessage, err error) {
		s.served.Inc()
		reply := envelope{ID: env.ID, Answer: answer}
		if err != nil {
			reply.Error = err.Error()
		}
		select {
		case out <- reply:
		case <-ctx.Done():
		}
	}
	starter, twoSteps := s.handler.(Starter)
	streams := newStreams(ctx, func(env envelope, done func()) {
		if !twoSteps {
			defer done()
			a, err := s.handler.ServeForwarded(ctx, *env.Request)
			answer(env, a, err)
			return
		}
		finish := starter.StartForwarded(ctx, *env.Request)
		go func() {
			defer done()
			a, err := finish()
			answer(env, a, err)
		}()
	})
	for {
		var env envelope
		if err := ws.ReadJSON(&env); err != nil {
			break
		}
		if env.Request == nil {
			s.log.Warn("a node sent a link envelope without a request", "id", env.ID)
			continue
		}
		streams.push(env)
	}
	cancel()
	streams.wait()
	<-writerDone
}

// streams runs one worker per stream with requests waiting, each serving
// its stream's requests in order and stopping when none waits.
type streams struct {
	ctx context.Context
	// serve serves a request and calls done once it is answered.
	serve func(env envelope, done func())
	// slots bounds the requests a link holds unserved: past it the link's
	// reader waits, and TCP holds the forwarding node back.
	slots chan struct{}
	mu    sync.Mutex
	queue map[string][]envelope
	wg    sync.WaitGroup
}

func newStreams(ctx context.Context, serve func(envelope, func())) *streams {
	return &streams{ctx: ctx, serve: serve, queue: make(map[string][]envelope), slots: make(chan struct{}, maxUnserved)}
}

// maxUnserved bounds the requests one link holds unserved.
const maxUnserved = 4096

func (s *streams) push(env envelope) {
	select {
	case s.slots <- struct{}{}:
	case <-s.ctx.Done():
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, running := s.queue[env.Stream]
	s.queue[env.Stream] = append(q, env)
	if running {
		return
	}
	s.wg.Add(1)
	go s.work(env.Stream)
}

func (s *streams) work(stream string) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		q := s.queue[stream]
		if len(q) == 0 {
			delete(s.queue, stream)
			s.mu.Unlock()
			return
		}
		env := q[0]
		s.queue[stream] = q[1:]
		s.mu.Unlock()
		if s.ctx.Err() != nil {
			<-s.slots
			continue
		}
		s.wg.Add(1)
		s.serve(env, func() {
			<-s.slots
			s.wg.Done()
		})
	}
}

func (s *streams) wait() { s.wg.Wait() }
