package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/imcore/im/internal/testservices"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/blob"
	"github.com/imcore/im/server/servertest"
)

// expectStatus waits for a status of conv on c with at least ticks.
func expectStatus(c *servertest.Client, conv string, delivered, read int64) {
	c.T.Helper()
	c.Expect("status", func(f protocol.Frame) bool {
		s, ok := f.(*protocol.Status)
		return ok && s.Conv == conv && s.DeliveredSeq >= delivered && s.ReadSeq >= read
	})
}

// expectSync waits for a session_sync on c.
func expectSync(c *servertest.Client) {
	c.T.Helper()
	c.Expect("session_sync", func(f protocol.Frame) bool {
		_, ok := f.(*protocol.SessionSync)
		return ok
	})
}

// TestClusterDirectChatAcrossNodes: alice on node A and bob on node B chat
// with live ticks, status, session sync and typing; bob's second device,
// on node A, stays in step with his first.
func TestClusterDirectChatAcrossNodes(t *testing.T) {
	nodes := servertest.Cluster(t, 2)
	a, b := nodes[0], nodes[1]
	alice := a.DialReplayed(t, "alice", "phone")
	bob := b.DialReplayed(t, "bob", "phone")
	bob2 := a.DialReplayed(t, "bob", "laptop")
	conv := servertest.Direct("alice", "bob")

	m1 := alice.SendMsg(conv, "hello from node A", bob, bob2)
	bob.MarkDelivered(conv, m1.Seq)
	expectStatus(alice, conv, m1.Seq, 0)
	bob.MarkRead(conv, m1.Seq)
	expectStatus(alice, conv, m1.Seq, m1.Seq)
	expectSync(bob2) // bob read on his phone: his laptop learns it

	sessions, page := bob2.SyncAll("")
	if s := sessions[conv]; s.UnreadCount != 0 || s.ReadSeq != m1.Seq || page.TotalUnread != 0 {
		t.Fatalf("bob's laptop (node A) after reading on his phone (node B): session %+v, total unread %d", s, page.TotalUnread)
	}

	bob.Write(&protocol.Typing{Conv: conv})
	alice.Expect("bob typing", func(f protocol.Frame) bool {
		ty, ok := f.(*protocol.Typing)
		return ok && ty.Conv == conv && ty.User == "bob"
	})

	m2 := bob2.SendMsg(conv, "answer from bob's laptop on node A", alice, bob)
	if m2.Seq != m1.Seq+1 {
		t.Fatalf("second message seq %d, want %d", m2.Seq, m1.Seq+1)
	}
	alice.MarkRead(conv, m2.Seq)
	expectStatus(bob, conv, m2.Seq, m2.Seq)
	expectStatus(bob2, conv, m2.Seq, m2.Seq)

	// Each node reads the same history and the same sessions.
	for _, c := range []*servertest.Client{alice, bob, bob2} {
		c.WantHistory(servertest.After(conv, 0), false, m1.Seq, m2.Seq)
	}
	aliceSessions, alicePage := alice.SyncAll("")
	if s := aliceSessions[conv]; s.UnreadCount != 0 || s.Ticks != *servertest.Ticks(m2.Seq, m2.Seq) || alicePage.TotalUnread != 0 {
		t.Fatalf("alice's session: %+v (total unread %d), want read, both messages read by both", s, alicePage.TotalUnread)
	}
}

// TestClusterGroupAcrossNodes: a group whose members are spread over both
// nodes gets every message and every tick.
func TestClusterGroupAcrossNodes(t *testing.T) {
	nodes := servertest.Cluster(t, 2)
	a, b := nodes[0], nodes[1]
	alice := a.DialReplayed(t, "alice", "d")
	bob := b.DialReplayed(t, "bob", "d")
	carol := a.DialReplayed(t, "carol", "d")
	dave := b.DialReplayed(t, "dave", "d")
	everyone := []*servertest.Client{alice, bob, carol, dave}

	g := alice.CreateGroup(protocol.CreateGroup{Title: "spread", Members: []string{"bob", "carol", "dave"}})
	for _, c := range everyone[1:] {
		c.ExpectLive(g.Conv, "alice", 1, 1)
	}
	var last protocol.Message
	for i, c := range everyone {
		others := append(append([]*servertest.Client{}, everyone[:i]...), everyone[i+1:]...)
		last = c.SendMsg(g.Conv, "hello from "+c.User, others...)
	}
	if last.Seq != 5 {
		t.Fatalf("last seq %d, want 5 (the system message and 4 messages)", last.Seq)
	}
	for _, c := range everyone {
		c.MarkRead(g.Conv, last.Seq)
	}
	// Every sender sees its message read by all, whichever node it is on.
	for _, c := range everyone {
		expectStatus(c, g.Conv, last.Seq, last.Seq)
	}
	for _, c := range everyone {
		want := map[string]protocol.MemberReceipt{}
		for _, u := range []string{"alice", "bob", "carol", "dave"} {
			want[u] = servertest.Receipt(u, last.Seq, last.Seq)
		}
		got := c.Receipts(g.Conv)
		for u, r := range want {
			if got[u] != r {
				t.Fatalf("%s sees %s's receipt %+v, want %+v", c.User, u, got[u], r)
			}
		}
	}
}

// TestClusterCountsItsCalls: a node serves on /metrics what it asks of the
// shared services, the cost of a message being their count over the
// messages.
func TestClusterCountsItsCalls(t *testing.T) {
	node := servertest.Cluster(t, 1)[0]
	alice := node.DialReplayed(t, "alice", "d")
	bob := node.DialReplayed(t, "bob", "d")
	alice.SendMsg(servertest.Direct("alice", "bob"), "counted", bob)
	body := httpGet(t, "http://"+node.Addr+"/metrics")
	for _, want := range []string{`im_dynamodb_calls_total{operation="PutItem"}`, `im_redis_commands_total`, "im_redis_round_trips_total", "im_dynamodb_write_units_total", "im_dynamodb_read_units_total"} {
		i := strings.Index(body, want)
		if i < 0 {
			t.Fatalf("/metrics lacks %s", want)
		}
		line := strings.SplitN(body[i:], "\n", 2)[0]
		if strings.HasSuffix(line, " 0") {
			t.Fatalf("%s: nothing counted after a message", line)
		}
	}
}

// TestClusterHealthzFollowsRedis: /healthz on a node answers 503 while it
// cannot reach Redis and 200 again once it can, without a restart.
func TestClusterHealthzFollowsRedis(t *testing.T) {
	servertest.OncePerSuite(t)
	so := servertest.ScaledOut(t)
	target := strings.TrimPrefix(so.RedisURL, "redis://")
	target, db, _ := strings.Cut(target, "/")
	fwd := startForwarder(t, target)
	so.RedisURL = "redis://" + fwd.addr + "/" + db
	ctx, cancel := context.WithTimeout(context.Background(), servertest.Timeout)
	be, cluster, err := server.OpenScaledOut(ctx, so, nil)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	node := servertest.Start(t, func(c *server.Config) { c.Backend, c.Cluster = be, cluster })
	healthz := func() int {
		resp, err := http.Get("http://" + node.Addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := healthz(); code != http.StatusOK {
		t.Fatalf("healthz with Redis reachable: %d", code)
	}
	fwd.stop()
	if code := healthz(); code != http.StatusServiceUnavailable {
		t.Fatalf("healthz with Redis unreachable: %d, want 503", code)
	}
	fwd.start(t)
	node.WaitFor("healthz 200 again", func() bool { return healthz() == http.StatusOK })
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// forwarder is a TCP forwarder to target on a fixed loopback address that
// can be stopped (every connection cut, new ones refused) and started
// again.
type forwarder struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func startForwarder(t *testing.T, target string) *forwarder {
	f := &forwarder{target: target}
	f.start(t)
	t.Cleanup(f.stop)
	return f
}

func (f *forwarder) start(t *testing.T) {
	t.Helper()
	addr := f.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.ln, f.addr = ln, ln.Addr().String()
	f.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", f.target)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, up)
			f.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

func (f *forwarder) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln != nil {
		f.ln.Close()
		f.ln = nil
	}
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// TestClusterArchiveKeepsBodiesReadable: on the scaled-out deployment,
// archived bodies live only in S3, and history, the pending replay and the
// sessions' last messages still show them; a second run moves nothing.
func TestClusterArchiveKeepsBodiesReadable(t *testing.T) {
	servertest.OncePerSuite(t)
	so := servertest.ScaledOut(t)
	so.Blob = "s3://" + strings.TrimSuffix(testservices.Prefix(t), "-") + "-bodies"
	so.S3Endpoint = testservices.S3(t)
	ctx, cancel := context.WithTimeout(context.Background(), servertest.Timeout)
	defer cancel()
	if _, err := so.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	be, cluster, err := server.OpenScaledOut(ctx, so, nil)
	if err != nil {
		t.Fatal(err)
	}
	node := servertest.Start(t, func(c *server.Config) { c.Backend, c.Cluster = be, cluster })
	conv := servertest.Direct("alice", "bob")
	alice := node.DialReplayed(t, "alice", "d")
	var sent []protocol.Message
	for i := range 3 {
		sent = append(sent, alice.SendMsg(conv, fmt.Sprintf("old body %d", i)))
	}

	tables, closeTables, err := so.OpenStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTables()
	cutoff := sent[len(sent)-1].ServerTS + 1
	if moved, err := tables.Archive(ctx, cutoff, nil); err != nil || moved != 3 {
		t.Fatalf("archive: moved %d, %v; want 3", moved, err)
	}
	blobs, err := so.OpenBlobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range sent {
		body, err := blobs.Get(ctx, blob.Key(conv, m.Seq))
		if err != nil || string(body) != m.Body {
			t.Fatalf("S3 holds %q, %v for seq %d; want %q", body, err, m.Seq, m.Body)
		}
	}
	if moved, err := tables.Archive(ctx, cutoff, nil); err != nil || moved != 0 {
		t.Fatalf("second archive: moved %d, %v; want 0", moved, err)
	}

	// bob was offline: his pending replay, his history and his session's
	// last message come from S3.
	bob := node.Dial(t, "bob", "d")
	bob.ExpectSeqs(conv, "alice", 1, 3)
	got := bob.WantHistory(servertest.After(conv, 0), false, 1, 2, 3)
	for i, m := range got {
		if m.Body != sent[i].Body {
			t.Fatalf("history seq %d: body %q, want %q", m.Seq, m.Body, sent[i].Body)
		}
	}
	sessions, _ := bob.SyncAll("")
	if last := sessions[conv].LastMsg; last == nil || last.Body != "old body 2" {
		t.Fatalf("bob's session's last message: %+v, want the archived body", last)
	}
}
