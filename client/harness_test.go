package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
	"github.com/imcore/im/server/store"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = servertest.Timeout

// profile is one client (a user on one device) with its own database,
// run against a server.
type profile struct {
	t      testing.TB
	name   string
	path   string
	store  *localstore.Store
	client *Client
	net    *netControl
	cancel context.CancelFunc
	done   chan error
}

// newProfile opens a profile database at path ("" for a fresh one in a
// temporary directory) and a client of user on url.
func newProfile(t testing.TB, url, user, path string, options ...func(*Config)) *profile {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), user+".db")
	}
	st, err := localstore.Open(path)
	if err != nil {
		t.Fatalf("open profile %s: %v", path, err)
	}
	p := &profile{t: t, name: user, path: path, store: st, net: &netControl{}}
	cfg := Config{
		URL: url, User: user, Store: st,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Dialer: p.net.dialer(),
	}
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("profile", user)
	}
	for _, o := range options {
		o(&cfg)
	}
	if p.client, err = New(cfg); err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(p.close)
	return p
}

// start runs the client until stop.
func (p *profile) start() *profile {
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan error, 1)
	go func() { p.done <- p.client.Run(ctx) }()
	return p
}

// startOnline runs the client until stop and waits until it is welcomed.
func (p *profile) startOnline() *profile {
	p.t.Helper()
	p.start()
	p.waitOnline()
	return p
}

// stop ends Run and returns what it returned.
func (p *profile) stop() error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	p.cancel = nil
	select {
	case err := <-p.done:
		return err
	case <-time.After(waitTimeout):
		p.t.Fatalf("%s: Run did not return", p.name)
		return nil
	}
}

// close stops the client and closes its database (once).
func (p *profile) close() {
	if p.store == nil {
		return
	}
	p.stop()
	p.client.Close()
	p.store.Close()
	p.store = nil
}

// waitFor returns once cond holds, checking it after every event of the
// client (and every few milliseconds, for conditions on the server); it
// fails the test at the deadline.
func (p *profile) waitFor(what string, cond func() bool) {
	p.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for !cond() {
		select {
		case <-p.client.Events():
		case <-poll.C:
		case <-deadline.C:
			p.t.Fatalf("%s: no %s within %v", p.name, what, waitTimeout)
		}
	}
}

// waitEvent returns the first event that match accepts.
func (p *profile) waitEvent(what string, match func(Event) bool) Event {
	p.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		select {
		case e := <-p.client.Events():
			if match(e) {
				return e
			}
		case <-deadline.C:
			p.t.Fatalf("%s: no %s within %v", p.name, what, waitTimeout)
			return nil
		}
	}
}

// waitOnline waits until the client is welcomed.
func (p *profile) waitOnline() {
	p.t.Helper()
	p.waitFor("online", func() bool { return p.client.Conn().State == Online })
}

// waitOutboxEmpty waits until every outbox entry of p is answered.
func (p *profile) waitOutboxEmpty() {
	p.t.Helper()
	p.waitFor("the outbox to empty", func() bool {
		box, err := p.store.Outbox()
		return err == nil && len(box) == 0
	})
}

// messages returns every message the profile holds in conv.
func (p *profile) messages(conv string) []Message {
	p.t.Helper()
	msgs, err := p.client.Messages(conv, 0, 1<<20)
	if err != nil {
		p.t.Fatalf("%s: messages: %v", p.name, err)
	}
	return msgs
}

// session returns the profile's session of conv.
func (p *profile) session(conv string) (protocol.Session, bool) {
	p.t.Helper()
	s, ok, err := p.store.Session(conv)
	if err != nil {
		p.t.Fatalf("%s: session: %v", p.name, err)
	}
	return s, ok
}

// requireSeqsOnce fails unless msgs hold each seq 1..n exactly once, and
// nothing else.
func requireSeqsOnce(t testing.TB, msgs []Message, n int64) {
	t.Helper()
	if int64(len(msgs)) != n {
		t.Fatalf("%d messages, want %d", len(msgs), n)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
	}
}

// serverHistory returns every message the server stores in conv.
func serverHistory(t testing.TB, env *servertest.Env, conv string) []protocol.Message {
	t.Helper()
	msgs, _, err := env.Server.Store().History(context.Background(), conv, store.HistoryQuery{After: true, Limit: 100000})
	if err != nil {
		t.Fatalf("server history: %v", err)
	}
	return msgs
}

// netControl is a test's hand on a client's connections: it can refuse
// new ones, cut the open ones, or cut a connection as soon as the server
// sends it some text.
type netControl struct {
	refuse atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	tripOn []byte // cut the connection when the server sends this
	trips  atomic.Int64
}

var errRefused = errors.New("test: server unreachable")

func (n *netControl) dialer() *websocket.Dialer {
	return &websocket.Dialer{
		HandshakeTimeout: waitTimeout,
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if n.refuse.Load() {
				return nil, errRefused
			}
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			wrapped := &tripConn{Conn: c, control: n, trip: n.tripOn}
			n.conns = append(n.conns, wrapped)
			return wrapped, nil
		},
	}
}

// cut closes every connection made so far.
func (n *netControl) cut() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.conns {
		c.Close()
	}
	n.conns = nil
}

// tripOnce makes the next connection close itself, discarding what it
// read, the first time the server sends text (a frame's JSON).
func (n *netControl) tripOnce(text string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tripOn = []byte(text)
}

// tripConn is a connection that cuts itself when trip is read.
type tripConn struct {
	net.Conn
	control *netControl
	trip    []byte
	tail    []byte // the end of the previous read, for text split across reads
}

func (c *tripConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if len(c.trip) == 0 || n == 0 {
		return n, err
	}
	seen := append(c.tail, p[:n]...)
	if bytes.Contains(seen, c.trip) {
		c.trip = nil
		c.control.mu.Lock()
		c.control.tripOn = nil
		c.control.mu.Unlock()
		c.control.trips.Add(1)
		c.Conn.Close()
		return 0, errors.New("test: connection cut")
	}
	c.tail = append([]byte(nil), seen[max(0, len(seen)-len(c.trip)):]...)
	return n, err
}

// conv returns the direct conversation of a and b.
func conv(t testing.TB, a, b string) string {
	t.Helper()
	c, ok := protocol.DirectConv(a, b)
	if !ok {
		t.Fatalf("no direct conversation of %q and %q", a, b)
	}
	return c
}

func mustOpen(t testing.TB, path string) *localstore.Store {
	t.Helper()
	st, err := localstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// chatMsg is message seq of conv from from.
func chatMsg(conv string, seq int64, from string) protocol.Message {
	return protocol.Message{Conv: conv, Seq: seq, MsgID: fmt.Sprintf("m%d", seq), From: from, Body: fmt.Sprintf("message %d", seq), ClientTS: seq, ServerTS: 1000 + seq}
}

// heldSeqs returns the set of stored seqs of conv.
func heldSeqs(p *profile, conv string) map[int64]bool {
	out := map[int64]bool{}
	for _, m := range p.messages(conv) {
		if m.Seq > 0 {
			out[m.Seq] = true
		}
	}
	return out
}

// chatWithBob is the answer to a sync (ref) that lists one session: the
// direct chat of alice and bob, last its newest message, unread of it
// unread.
func chatWithBob(ref protocol.Ref, last protocol.Message, unread int64) *protocol.Sessions {
	return &protocol.Sessions{Ref: ref, Cursor: 10, TotalUnread: unread, Sessions: []protocol.Session{{
		Conv: last.Conv, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
		UnreadCount: unread, WriteSeq: last.Seq, ActiveTS: 10, WriteTS: 10, LastMsg: &last,
	}}}
}

// internalError is the server's refusal of request ref for a passing
// reason: a storage failure that changed nothing.
func internalError(ref protocol.Ref) *protocol.ErrorFrame {
	return &protocol.ErrorFrame{Ref: ref, Code: protocol.CodeInternal, Message: "storage failure; nothing was changed, try again"}
}

// onlyOnce returns a function that reports true the first time it is
// called, and false ever after (safe for concurrent use).
func onlyOnce() func() bool {
	var done atomic.Bool
	return func() bool { return done.CompareAndSwap(false, true) }
}
