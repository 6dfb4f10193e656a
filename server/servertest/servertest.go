// Package servertest runs an in-process imserver on a loopback port and
// gives tests a protocol client over real WebSockets.
package servertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/gorilla/websocket"

	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/gateway"
	"github.com/imcore/im/server/store"
	"github.com/imcore/im/server/store/dynamostore"
	"github.com/imcore/im/server/store/memstore"
)

// Timeout bounds every wait of this package: long enough for a loaded
// machine, short enough that a broken test fails rather than hangs.
const Timeout = 20 * time.Second

// Env is a running server.
type Env struct {
	T       testing.TB
	Server  *server.Server
	Config  server.Config
	URL     string // ws://127.0.0.1:port/ws
	Addr    string // 127.0.0.1:port
	nextID  atomic.Int64
	stopped atomic.Bool
}

// StoreEnv names the environment variable that chooses the storage of the
// servers Start runs: "memory" for the in-memory backend (memstore),
// "dynamodb" for a node of the scaled-out deployment (DynamoDB + Redis), empty
// or "sqlite" for the embedded default. scripts/test.sh runs the suites
// that use this package once with each.
const StoreEnv = "IM_TEST_STORE"

// Start starts a server with its data in a temporary directory, on the
// storage IM_TEST_STORE names; each option may change the configuration
// first. The server stops when the test ends.
func Start(t testing.TB, options ...func(*server.Config)) *Env {
	t.Helper()
	return StartWith(t, config(t, options...))
}

// config is the configuration Start starts a server with.
func config(t testing.TB, options ...func(*server.Config)) server.Config {
	t.Helper()
	cfg := server.Config{
		DataDir: t.TempDir(),
		Auth:    server.AuthDev,
		Gateway: gateway.DefaultConfig(),
		Logger:  failureLog(t),
	}
	cfg.Backend, cfg.Cluster = TestStorage(t)
	be, cluster := cfg.Backend, cfg.Cluster
	for _, o := range options {
		o(&cfg)
	}
	if cluster != nil && cfg.Cluster != cluster {
		// An option pinned other storage: let go of the shared services.
		be.Close()
		cluster.Close()
	}
	return cfg
}

// TestStorage returns the storage IM_TEST_STORE asks for: a backend, and
// the cluster a server on it is one node of ("dynamodb": DynamoDB tables
// of their own, Redis, the services named by package testservices).
func TestStorage(t testing.TB) (store.Backend, *server.Cluster) {
	t.Helper()
	if os.Getenv(StoreEnv) != "dynamodb" {
		return TestBackend(t), nil
	}
	so := ScaledOut(t)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	be, cluster, err := server.OpenScaledOut(ctx, so, nil)
	if err != nil {
		t.Fatalf("open the scaled-out storage: %v", err)
	}
	return be, cluster
}

// ScaledOut returns the shared services of a scaled-out deployment of the
// test's own (fresh tables and keys), its tables created. The tables are
// dropped when the test ends, after the servers started on them stopped.
func ScaledOut(t testing.TB) server.ScaleOut {
	t.Helper()
	so := server.ScaleOut{
		DynamoDBEndpoint: testservices.DynamoDB(t),
		Region:           "us-east-1",
		TablePrefix:      testservices.Prefix(t),
		RedisURL:         testservices.Redis(t),
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	// Registered before the tables exist, so that it runs after the
	// cleanups of whatever is started on them (cleanups run last first).
	t.Cleanup(func() { dropTables(so) })
	if _, err := so.Migrate(ctx); err != nil {
		t.Fatalf("create the tables: %v", err)
	}
	return so
}

// dropTables deletes the tables of so, best effort: the service is shared
// by every test, and one that keeps the tables of every test before it
// grows slower with each (dynalite's DeleteTable reads every key it
// holds).
func dropTables(so server.ScaleOut) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	db, err := dynamostore.NewClient(ctx, so.DynamoDBEndpoint, so.Region)
	if err != nil {
		return
	}
	for _, name := range dynamostore.TableNames(so.TablePrefix) {
		db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	}
}

// OncePerSuite skips a test of nodes of the scaled-out deployment in the
// passes of the suite on another storage (IM_TEST_STORE memory or
// dynamodb): such a test runs on DynamoDB and Redis whatever
// IM_TEST_STORE says, so it runs once, in the default pass.
func OncePerSuite(t testing.TB) {
	t.Helper()
	if v := os.Getenv(StoreEnv); v != "" && v != "sqlite" {
		t.Skipf("a test of several nodes runs on DynamoDB whatever %s says: once, in the default pass", StoreEnv)
	}
}

// TestBackend returns the backend IM_TEST_STORE asks for when it is not
// shared by nodes: a fresh memstore for "memory", nil (the server's
// SQLite default) for "" or "sqlite". An unknown value fails the test.
func TestBackend(t testing.TB) store.Backend {
	switch v := os.Getenv(StoreEnv); v {
	case "", "sqlite":
		return nil
	case "memory":
		return memstore.New()
	default:
		t.Fatalf("%s=%q: want memory, sqlite or dynamodb", StoreEnv, v)
		return nil
	}
}

// OnSQLite is an option of Start for tests of the SQLite store itself
// (its files, its restarts): the server runs on it whatever IM_TEST_STORE
// says.
func OnSQLite(cfg *server.Config) { cfg.Backend, cfg.Cluster = nil, nil }

// StartWith starts a server with exactly cfg. It is stopped gracefully
// when the test ends, within Timeout: a server still stuck then (a test
// that left it deadlocked) is reported and left behind, rather than
// holding up the whole test binary.
func StartWith(t testing.TB, cfg server.Config) *Env {
	t.Helper()
	e, ln := listen(t, cfg)
	served := make(chan error, 1)
	go func() { served <- e.Server.Serve(ln) }()
	t.Cleanup(func() {
		if e.stopped.Swap(true) {
			return
		}
		// A failed test may have left the server stuck: say so soon.
		grace := Timeout + 5*time.Second
		if t.Failed() {
			grace = 3 * time.Second
		}
		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), Timeout)
			defer cancel()
			stopped <- e.Server.Shutdown(ctx)
		}()
		select {
		case err := <-stopped:
			if err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if err := <-served; err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(grace):
			t.Errorf("shutdown still blocked after %v: the server is stuck (left running)", grace)
		}
	})
	select {
	case <-e.Server.Ready():
	case err := <-served:
		served <- err
		t.Fatalf("serve: %v", err)
	case <-time.After(Timeout):
		t.Fatalf("the server was not ready within %v", Timeout)
	}
	return e
}

// Cluster starts n servers sharing one scaled-out deployment of the
// test's own (DynamoDB tables and Redis keys no other test uses), named
// A, B, …, in this process.
func Cluster(t testing.TB, n int, options ...func(*server.Config)) []*Env {
	t.Helper()
	return ClusterOn(t, ScaledOut(t), n, options...)
}

// ClusterOn starts n servers on the deployment so, named A, B, ….
func ClusterOn(t testing.TB, so server.ScaleOut, n int, options ...func(*server.Config)) []*Env {
	t.Helper()
	OncePerSuite(t)
	nodes := make([]*Env, n)
	for i := range nodes {
		nodes[i] = Node(t, so, string(rune('A'+i)), options...)
	}
	return nodes
}

// Node starts one node, named id, of the deployment so, in this process.
func Node(t testing.TB, so server.ScaleOut, id string, options ...func(*server.Config)) *Env {
	t.Helper()
	OncePerSuite(t)
	so.NodeID = id
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	be, cluster, err := server.OpenScaledOut(ctx, so, nil)
	cancel()
	if err != nil {
		t.Fatalf("node %s: %v", id, err)
	}
	return Start(t, append([]func(*server.Config){func(c *server.Config) { c.Backend, c.Cluster = be, cluster }}, options...)...)
}

// listen makes a server of cfg and a loopback listener for it to serve.
func listen(t testing.TB, cfg server.Config) (*Env, net.Listener) {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return &Env{T: t, Server: srv, Config: cfg, Addr: ln.Addr().String(), URL: "ws://" + ln.Addr().String() + "/ws"}, ln
}

// Stop shuts the server down gracefully (once), before the test ends.
func (e *Env) Stop() {
	if e.stopped.Swap(true) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := e.Server.Shutdown(ctx); err != nil {
		e.T.Errorf("shutdown: %v", err)
	}
}

// Restart stops the server (if it runs) and starts another on the same
// data: the same data directory, and the same in-memory data when the
// server runs on memstore, or the same tables and Redis when scaled out. Each option may change the configuration
// first.
func (e *Env) Restart(t testing.TB, options ...func(*server.Config)) *Env {
	t.Helper()
	e.Stop()
	cfg := e.Config
	if mem, ok := cfg.Backend.(*memstore.Backend); ok {
		cfg.Backend = mem.Reopen()
	}
	if cfg.Cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		var err error
		if cfg.Backend, cfg.Cluster, err = server.OpenScaledOut(ctx, cfg.Cluster.ScaleOut, nil); err != nil {
			t.Fatalf("reopen the scaled-out storage: %v", err)
		}
	}
	for _, o := range options {
		o(&cfg)
	}
	return StartWith(t, cfg)
}

// ID returns a fresh request id.
func (e *Env) ID() string { return "r" + strconv.FormatInt(e.nextID.Add(1), 10) }

// DialRaw opens a WebSocket without saying hello.
func (e *Env) DialRaw(t testing.TB) *Client {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(e.URL, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", e.URL, err)
	}
	c := &Client{T: t, Env: e, WS: ws, arrived: make(chan struct{}, 1), closed: make(chan struct{})}
	go c.readLoop()
	t.Cleanup(func() { c.WS.Close() })
	return c
}

// Dial connects as user on device and completes the hello (dev auth).
func (e *Env) Dial(t testing.TB, user, device string) *Client {
	t.Helper()
	c := e.DialRaw(t)
	c.Hello(&protocol.Hello{Protocol: protocol.Version, User: user, Device: device})
	return c
}

// Client is one test connection. Its reading methods must be called from
// one goroutine at a time; Write may be called from any.
type Client struct {
	T            testing.TB
	Env          *Env
	WS           *websocket.Conn
	User, Device string

	writeMu sync.Mutex // a WebSocket takes one writer at a time

	// The read loop appends to inbox without bound (a test may leave many
	// frames unread) and signals arrived.
	inboxMu  sync.Mutex
	inbox    []protocol.Frame
	arrived  chan struct{}
	backlog  []protocol.Frame
	closed   chan struct{}
	closeErr error

	// Patience bounds each wait of Expect (and so of Request); Timeout
	// when zero. It bounds a hang, not a speed: a test whose requests
	// queue behind many others may allow more.
	Patience time.Duration
}

// Hello sends h and requires a welcome.
func (c *Client) Hello(h *protocol.Hello) {
	c.T.Helper()
	if h.ID == "" {
		h.ID = c.Env.ID()
	}
	f := c.Request(h)
	w, ok := f.(*protocol.Welcome)
	if !ok {
		c.T.Fatalf("hello: want welcome, got %s", Describe(f))
	}
	c.User, c.Device = w.User, w.Device
}

func (c *Client) readLoop() {
	defer close(c.closed)
	for {
		_, data, err := c.WS.ReadMessage()
		if err != nil {
			c.closeErr = err
			return
		}
		f, _, perr := protocol.DecodeServerFrame(data)
		if perr != nil {
			c.T.Errorf("server sent an undecodable frame %q: %v", data, perr)
			continue
		}
		c.inboxMu.Lock()
		c.inbox = append(c.inbox, f)
		c.inboxMu.Unlock()
		select {
		case c.arrived <- struct{}{}:
		default:
		}
	}
}

// takeInbox moves what the read loop received to the backlog, in order.
func (c *Client) takeInbox() {
	c.inboxMu.Lock()
	c.backlog = append(c.backlog, c.inbox...)
	c.inbox = nil
	c.inboxMu.Unlock()
}

// WriteRaw writes one text message as is.
func (c *Client) WriteRaw(data []byte) {
	c.T.Helper()
	c.writeMu.Lock()
	err := c.WS.WriteMessage(websocket.TextMessage, data)
	c.writeMu.Unlock()
	if err != nil {
		c.T.Fatalf("write: %v", err)
	}
}

// Write encodes and writes a frame.
func (c *Client) Write(f protocol.Frame) {
	c.T.Helper()
	c.WriteRaw(protocol.MustEncode(f))
}

// Request writes a frame that carries an id (set one if empty) and returns
// the answer echoing it.
func (c *Client) Request(f protocol.Frame) protocol.Frame {
	c.T.Helper()
	id := setID(f, c.Env.ID())
	c.Write(f)
	return c.Expect("answer to "+id, func(g protocol.Frame) bool { return RequestID(g) == id })
}

// RequestOK is Request that fails the test on an error answer.
func (c *Client) RequestOK(f protocol.Frame) protocol.Frame {
	c.T.Helper()
	answer := c.Request(f)
	if e, ok := answer.(*protocol.ErrorFrame); ok {
		c.T.Fatalf("%s: error %s: %s", f.FrameType(), e.Code, e.Message)
	}
	return answer
}

// RequestError is Request that requires an error answer with code.
func (c *Client) RequestError(f protocol.Frame, code protocol.Code) *protocol.ErrorFrame {
	c.T.Helper()
	answer := c.Request(f)
	e, ok := answer.(*protocol.ErrorFrame)
	if !ok || e.Code != code {
		c.T.Fatalf("%s: want error %s, got %s", f.FrameType(), code, Describe(answer))
	}
	return e
}

// Send sends body in conv and returns the sent answer.
func (c *Client) Send(conv, msgID, body string) *protocol.Sent {
	c.T.Helper()
	f := c.RequestOK(&protocol.Send{Conv: conv, MsgID: msgID, Body: body, ClientTS: time.Now().UnixMilli()})
	sent, ok := f.(*protocol.Sent)
	if !ok {
		c.T.Fatalf("send: want sent, got %s", Describe(f))
	}
	return sent
}

// Expect returns the first frame, received or still to come, for which
// match is true; frames passed over stay for later calls.
func (c *Client) Expect(what string, match func(protocol.Frame) bool) protocol.Frame {
	c.T.Helper()
	patience := c.Patience
	if patience <= 0 {
		patience = Timeout
	}
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for {
		c.takeInbox()
		for i, f := range c.backlog {
			if match(f) {
				c.backlog = append(c.backlog[:i], c.backlog[i+1:]...)
				return f
			}
		}
		select {
		case <-c.arrived:
		case <-c.closed:
			// Take what arrived before the close first.
			c.takeInbox()
			for i, f := range c.backlog {
				if match(f) {
					c.backlog = append(c.backlog[:i], c.backlog[i+1:]...)
					return f
				}
			}
			c.T.Fatalf("%s/%s waiting for %s: connection closed: %v (unmatched: %s)", c.User, c.Device, what, c.closeErr, c.describeBacklog())
			return nil
		case <-deadline.C:
			c.T.Fatalf("%s/%s: no %s within %v (unmatched: %s)", c.User, c.Device, what, patience, c.describeBacklog())
			return nil
		}
	}
}

// ExpectType returns the next frame of the given type.
func (c *Client) ExpectType(typ string) protocol.Frame {
	c.T.Helper()
	return c.Expect(typ, func(f protocol.Frame) bool { return f.FrameType() == typ })
}

// ExpectMsg returns the next msg push in conv.
func (c *Client) ExpectMsg(conv string) protocol.Message {
	c.T.Helper()
	f := c.Expect("msg in "+conv, func(f protocol.Frame) bool {
		m, ok := f.(*protocol.MsgPush)
		return ok && m.Msg.Conv == conv
	})
	return f.(*protocol.MsgPush).Msg
}

// ExpectStatus returns the next status push for conv.
func (c *Client) ExpectStatus(conv string) *protocol.Status {
	c.T.Helper()
	f := c.Expect("status of "+conv, func(f protocol.Frame) bool {
		s, ok := f.(*protocol.Status)
		return ok && s.Conv == conv
	})
	return f.(*protocol.Status)
}

// OfType matches the frames of type typ, for Expect and ExpectNone.
func OfType(typ string) func(protocol.Frame) bool {
	return func(f protocol.Frame) bool { return f.FrameType() == typ }
}

// Barrier makes a round trip to the server and returns every frame that
// arrived before its answer and was not yet taken. Because a connection's
// frames are written in order, a push the server queued for this device
// before the barrier's answer is among them.
func (c *Client) Barrier() []protocol.Frame {
	c.T.Helper()
	id := "barrier-" + c.Env.ID()
	c.WriteRaw([]byte(`{"type":"history","id":"` + id + `","conv":"-"}`))
	c.Expect("barrier", func(f protocol.Frame) bool { return RequestID(f) == id })
	out := c.backlog
	c.backlog = nil
	return out
}

// ExpectNone passes when no frame that match accepts has arrived by the
// time of a barrier round trip; the frames passed over are dropped.
func (c *Client) ExpectNone(what string, match func(protocol.Frame) bool) {
	c.T.Helper()
	for _, f := range c.Barrier() {
		if match(f) {
			c.T.Fatalf("%s/%s: want no %s, got %s", c.User, c.Device, what, Describe(f))
		}
	}
}

// ExpectClosed waits for the server to close the connection and returns the
// close error (a *websocket.CloseError when a close frame came).
func (c *Client) ExpectClosed() error {
	c.T.Helper()
	select {
	case <-c.closed:
		return c.closeErr
	case <-time.After(Timeout):
		c.T.Fatalf("%s/%s: connection still open after %v", c.User, c.Device, Timeout)
		return nil
	}
}

// Close closes the connection from the client side, without a close frame.
func (c *Client) Close() {
	c.WS.Close()
	<-c.closed
}

func (c *Client) describeBacklog() string {
	s := ""
	for i, f := range c.backlog {
		if i == 10 {
			return s + fmt.Sprintf(" … %d more", len(c.backlog)-10)
		}
		s += Describe(f) + " "
	}
	return s
}

// RequestID returns the id a frame carries, "" for none.
func RequestID(f protocol.Frame) string {
	if r, ok := f.(interface{ RequestID() string }); ok {
		return r.RequestID()
	}
	return ""
}

// setID gives a request frame an id if it has none and returns its id.
func setID(f protocol.Frame, id string) string {
	if existing := RequestID(f); existing != "" {
		return existing
	}
	if !protocol.SetRequestID(f, id) {
		panic(fmt.Sprintf("%s carries no id", f.FrameType()))
	}
	return id
}

// DescribeAll renders frames for a failure message, separated by spaces.
func DescribeAll(fs []protocol.Frame) string {
	var parts []string
	for _, f := range fs {
		parts = append(parts, Describe(f))
	}
	return strings.Join(parts, " ")
}

// JSON renders any value as JSON for a failure message, or with %+v if it
// cannot be.
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// Describe renders a frame for a failure message.
func Describe(f protocol.Frame) string {
	if f == nil {
		return "<nil>"
	}
	b, err := protocol.Encode(f)
	if err != nil {
		return f.FrameType()
	}
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
