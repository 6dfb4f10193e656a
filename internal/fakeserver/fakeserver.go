// Package fakeserver is a stand-in for imserver in the client's tests: a
// WebSocket server at /ws that speaks just enough of docs/PROTOCOL.md for
// a test to script exactly what a client receives, and that records every
// frame the client sends.
//
// By default it is an empty, well-behaved server: it welcomes every
// hello, stores each send with the next seq of its conversation (once per
// msg_id), answers sync, history and receipts requests with empty
// answers, delivered and read frames that carry an id with ok, settings
// with the defaults (a change is not kept), block and unblock with ok and
// presence with strangers. Options script the rest: what a hello, a new connection or any frame gets, an
// HTTP status for every upgrade, or a relay to a real server that only
// records. Tests that need the real server's rules use servertest.
package fakeserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
)

// Options say how a Server answers; the zero value is the empty,
// well-behaved server.
type Options struct {
	// Status, when not zero, answers every upgrade with this HTTP status
	// (503: a server that is down behind its load balancer).
	Status int
	// OnHello runs when a connection's hello is read; false leaves the
	// hello unanswered: the server then reads and records what comes,
	// answering nothing, until the client goes.
	OnHello func(c *Conn, hello *protocol.Hello) bool
	// OnOpen runs after the welcome, before the connection's next frame
	// is read.
	OnOpen func(c *Conn)
	// Handle sees every frame the client sends after its hello, once
	// recorded: true says it was handled; false leaves it the default
	// answer.
	Handle func(c *Conn, f protocol.Frame) bool
	// Upstream, a ws:// URL of a real server, makes the Server a relay:
	// every connection is carried there, frame by frame, and the client's
	// frames are recorded; the Server answers nothing itself.
	Upstream string
}

// dialTimeout bounds a relay's dial of its upstream.
const dialTimeout = 20 * time.Second

// Server is a fake imserver listening on loopback until the test ends.
type Server struct {
	// URL is the WebSocket endpoint (ws://host:port/ws).
	URL string

	t    testing.TB
	opts Options
	wg   sync.WaitGroup // the connections' handlers

	mu       sync.Mutex
	closed   bool
	conns    []*Conn
	received []protocol.Frame
	seqs     map[string]int64            // default send answers: next seq per conv
	sentSeq  map[string]map[string]int64 // default send answers: msg_id → seq per conv
}

// Conn is one client connection of a Server.
type Conn struct {
	n        int
	ws       *websocket.Conn
	upstream *websocket.Conn // a relay's connection to the real server
	mu       sync.Mutex      // serializes writes to ws
}

// Start runs a Server with opts until the test ends; then it closes every
// connection left and waits for their handlers.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{t: t, opts: opts, seqs: map[string]int64{}, sentSeq: map[string]map[string]int64{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", s.serve)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		s.mu.Lock()
		s.closed = true
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	s.URL = "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	return s
}

// Frames returns the frames of type typ (a frame's "type", as "send" or
// "delivered") the clients sent so far, over every connection, in order.
func (s *Server) Frames(typ string) []protocol.Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []protocol.Frame
	for _, f := range s.received {
		if f.FrameType() == typ {
			out = append(out, f)
		}
	}
	return out
}

// Conn returns connection n (1 for the first one made); it fails the test
// when there is none yet. Call it from the test's goroutine.
func (s *Server) Conn(n int) *Conn {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 1 || n > len(s.conns) {
		s.t.Fatalf("fakeserver: no connection %d (%d made)", n, len(s.conns))
	}
	return s.conns[n-1]
}

// N returns the connection's number: 1 for the server's first one.
func (c *Conn) N() int { return c.n }

// Push writes f to the client (an error, the client gone, is dropped).
func (c *Conn) Push(f protocol.Frame) { c.write(websocket.TextMessage, protocol.MustEncode(f)) }

// Close closes the connection (and a relay's upstream one) at once.
func (c *Conn) Close() {
	c.ws.Close()
	if c.upstream != nil {
		c.upstream.Close()
	}
}

func (c *Conn) write(kind int, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ws.WriteMessage(kind, data)
}

// serve runs one connection to its end.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.opts.Status != 0 {
		http.Error(w, http.StatusText(s.opts.Status), s.opts.Status)
		return
	}
	ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &Conn{ws: ws}
	if s.opts.Upstream != "" {
		if c.upstream, _, err = (&websocket.Dialer{HandshakeTimeout: dialTimeout}).DialContext(r.Context(), s.opts.Upstream, nil); err != nil {
			ws.Close()
			return
		}
	}
	if !s.open(c) {
		c.Close()
		return
	}
	defer s.wg.Done()
	defer c.Close()
	if c.upstream != nil {
		s.relay(c)
		return
	}
	s.converse(c)
}

// open numbers and registers c, unless the server is closing.
func (s *Server) open(c *Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns = append(s.conns, c)
	c.n = len(s.conns)
	s.wg.Add(1)
	return true
}

// converse plays the server's side of c: the welcome, the options' script
// and the default answers.
func (s *Server) converse(c *Conn) {
	f, ok := s.read(c.ws)
	if !ok {
		return
	}
	hello, isHello := f.(*protocol.Hello)
	if !isHello {
		return
	}
	welcomed := s.opts.OnHello == nil || s.opts.OnHello(c, hello)
	if welcomed {
		c.Push(&protocol.Welcome{Ref: hello.Ref, User: hello.User, Device: hello.Device})
		if s.opts.OnOpen != nil {
			s.opts.OnOpen(c)
		}
	}
	for {
		f, ok := s.read(c.ws)
		if !ok {
			return
		}
		if f == nil || !welcomed || (s.opts.Handle != nil && s.opts.Handle(c, f)) {
			continue
		}
		if answer := s.answer(f); answer != nil {
			c.Push(answer)
		}
	}
}

// relay carries c to its upstream and back, recording the client's
// frames, until either side ends.
func (s *Server) relay(c *Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.Close()
		for {
			kind, data, err := c.upstream.ReadMessage()
			if err != nil || c.write(kind, data) != nil {
				return
			}
		}
	}()
	defer func() { <-done }()
	defer c.Close()
	for {
		kind, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		s.decode(data)
		if c.upstream.WriteMessage(kind, data) != nil {
			return
		}
	}
}

// read reads the client's next frame and records it; ok is false once
// the connection ended, f nil for a frame that does not decode (a test
// error).
func (s *Server) read(ws *websocket.Conn) (f protocol.Frame, ok bool) {
	_, data, err := ws.ReadMessage()
	if err != nil {
		return nil, false
	}
	return s.decode(data), true
}

// decode decodes and records a frame the client sent; one that does not
// decode fails the test.
func (s *Server) decode(data []byte) protocol.Frame {
	f, _, perr := protocol.DecodeClientFrame(data)
	if perr != nil {
		s.t.Errorf("the client sent an undecodable frame %q: %v", data, perr)
		return nil
	}
	s.mu.Lock()
	s.received = append(s.received, f)
	s.mu.Unlock()
	return f
}

// answer is the default answer to f, as an empty, well-behaved server
// gives it (nil: none).
func (s *Server) answer(f protocol.Frame) protocol.Frame {
	switch f := f.(type) {
	case *protocol.Send:
		return s.store(f)
	case *protocol.Sync:
		return &protocol.Sessions{Ref: f.Ref, Sessions: []protocol.Session{}, Cursor: f.Since}
	case *protocol.History:
		return &protocol.Messages{Ref: f.Ref, Conv: f.Conv, Messages: []protocol.Message{}}
	case *protocol.ReceiptsRequest:
		return &protocol.ReceiptsReply{Ref: f.Ref, Conv: f.Conv, Members: []protocol.MemberReceipt{}}
	case *protocol.Delivered:
		if f.ID != "" {
			return &protocol.OK{Ref: f.Ref}
		}
	case *protocol.Read:
		if f.ID != "" {
			return &protocol.OK{Ref: f.Ref}
		}
	case *protocol.SettingsRequest:
		return &protocol.SettingsReply{Ref: f.Ref, Settings: protocol.DefaultSettings()}
	case *protocol.Block:
		return &protocol.OK{Ref: f.Ref}
	case *protocol.Unblock:
		return &protocol.OK{Ref: f.Ref}
	case *protocol.PresenceRequest:
		users := make([]protocol.Presence, len(f.Users))
		for i, u := range f.Users {
			users[i] = protocol.Stranger(u)
		}
		return &protocol.PresenceReply{Ref: f.Ref, Users: users}
	}
	return nil
}

// store is the default answer to a send: the next seq of its
// conversation, or the seq its msg_id got before.
func (s *Server) store(f *protocol.Send) *protocol.Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	byID := s.sentSeq[f.Conv]
	if byID == nil {
		byID = map[string]int64{}
		s.sentSeq[f.Conv] = byID
	}
	seq, ok := byID[f.MsgID]
	if !ok {
		s.seqs[f.Conv]++
		seq = s.seqs[f.Conv]
		byID[f.MsgID] = seq
	}
	return &protocol.Sent{Ref: f.Ref, Conv: f.Conv, MsgID: f.MsgID, Seq: seq, ServerTS: 1000 + seq}
}
