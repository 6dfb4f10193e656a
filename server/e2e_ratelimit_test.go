package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/chat"
	"github.com/imcore/im/server/servertest"
)

// The frame rate is the user's, whatever its connections: frames on a
// second device draw from the same bucket, and another user has its own.
func TestRateLimitIsPerUser(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Gateway.RateLimit = 0.001 // no refill during the test
		c.Gateway.RateBurst = 5
		c.Gateway.RateWait = 0
	})
	laptop := env.Dial(t, "alice", "laptop")
	phone := env.Dial(t, "alice", "phone")
	for range 3 {
		laptop.RequestOK(&protocol.History{Conv: "d:alice:bob"})
	}
	for range 2 {
		phone.RequestOK(&protocol.History{Conv: "d:alice:bob"})
	}
	e := phone.RequestError(&protocol.Send{Conv: "d:alice:bob", MsgID: "m", Body: "x"}, protocol.CodeRateLimited)
	if e.RetryAfterMS <= 0 {
		t.Errorf("rate_limited without retry_after_ms: %+v", e)
	}
	laptop.RequestError(&protocol.History{Conv: "d:alice:bob"}, protocol.CodeRateLimited)
	// Bob has a bucket of his own, and alice's refused send stored nothing.
	bob := env.Dial(t, "bob", "laptop")
	page := bob.RequestOK(&protocol.History{Conv: "d:alice:bob"}).(*protocol.Messages)
	if len(page.Messages) != 0 {
		t.Fatalf("a rate-limited send was stored: %+v", page.Messages)
	}
}

// A burst above the rate on one connection is slowed down to the rate, not
// refused: the client sees only answers.
func TestBurstOverRateIsHeldBack(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Gateway.RateLimit = 50 // a frame every 20ms
		c.Gateway.RateBurst = 2
		c.Gateway.RateWait = 250 * time.Millisecond
	})
	alice := env.Dial(t, "alice", "laptop")
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		ids[i] = env.ID()
		alice.Write(&protocol.History{Ref: protocol.Ref{ID: ids[i]}, Conv: "d:alice:bob"})
	}
	for _, id := range ids {
		f := alice.Expect("answer "+id, func(f protocol.Frame) bool { return servertest.RequestID(f) == id })
		if _, ok := f.(*protocol.Messages); !ok {
			t.Fatalf("request %s of a burst of %d: got %s, want its page", id, n, servertest.Describe(f))
		}
	}
}

// A client that keeps sending while it is answered rate_limited is
// disconnected with 1008 "rate limit exceeded"; its user can connect again.
func TestIgnoredRateLimitDisconnects(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Gateway.RateLimit = 0.001
		c.Gateway.RateBurst = 1
		c.Gateway.RateWait = 0
		c.Gateway.RejectBurst = 3
	})
	alice := env.Dial(t, "alice", "laptop")
	// One frame within the burst, then four refused: the last is the one
	// the server closes on, so no write races the close.
	for range 5 {
		alice.Write(&protocol.Typing{Conv: "d:alice:bob"})
	}
	var refused int
	for {
		f := alice.Expect("rate_limited or the close", func(protocol.Frame) bool { return true })
		e, ok := f.(*protocol.ErrorFrame)
		if !ok || e.Code != protocol.CodeRateLimited {
			t.Fatalf("got %s, want rate_limited", servertest.Describe(f))
		}
		if refused++; refused == 4 {
			break
		}
	}
	err := alice.ExpectClosed()
	if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != websocket.ClosePolicyViolation || ce.Text != "rate limit exceeded" {
		t.Fatalf("after ignoring rate_limited: %v, want close 1008 rate limit exceeded", err)
	}
}

// Typing is relayed at most once per interval per user and conversation,
// whatever the number of the user's connections; other conversations and
// other users are relayed as usual.
func TestTypingIsThrottled(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Quotas = chat.DefaultQuotas
		c.Quotas.TypingInterval = time.Hour // nothing refills during the test
	})
	laptop := env.Dial(t, "alice", "laptop")
	phone := env.Dial(t, "alice", "phone")
	// Live pushes reach bob and carol once their replays are over.
	bob := env.DialReplayed(t, "bob", "laptop")
	carol := env.DialReplayed(t, "carol", "laptop")
	for range 5 {
		laptop.Write(&protocol.Typing{Conv: "d:alice:bob"})
		phone.Write(&protocol.Typing{Conv: "d:alice:bob"})
	}
	phone.Write(&protocol.Typing{Conv: "d:alice:carol"})
	laptop.Barrier()
	phone.Barrier() // every typing frame of alice's is handled
	carol.Write(&protocol.Typing{Conv: "d:bob:carol"})
	carolGot := 0
	for _, f := range carol.Barrier() {
		if ty, ok := f.(*protocol.Typing); ok && ty.User == "alice" {
			carolGot++
		}
	}
	var fromAlice, fromCarol int
	for _, f := range bob.Barrier() {
		if ty, ok := f.(*protocol.Typing); ok {
			switch ty.User {
			case "alice":
				fromAlice++
			case "carol":
				fromCarol++
			}
		}
	}
	if fromAlice != 1 || fromCarol != 1 {
		t.Fatalf("bob got %d typing from alice (10 sent on 2 devices) and %d from carol; want 1 and 1", fromAlice, fromCarol)
	}
	if carolGot != 1 {
		t.Fatalf("carol got %d typing from alice in their own chat, want 1", carolGot)
	}
}

// Group creations and membership changes draw from per-user quotas; over
// them a request is rate_limited with a retry hint and changes nothing.
func TestGroupQuotas(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Quotas = chat.Quotas{GroupCreates: 2, GroupChanges: 5, Window: time.Hour}
	})
	alice := env.Dial(t, "alice", "laptop")
	g1 := alice.RequestOK(&protocol.CreateGroup{Title: "one", Members: []string{"bob"}}).(*protocol.Group)
	alice.RequestOK(&protocol.CreateGroup{Title: "two", Members: []string{"bob"}})
	e := alice.RequestError(&protocol.CreateGroup{Title: "three", Members: []string{"bob"}}, protocol.CodeRateLimited)
	if e.RetryAfterMS <= 0 || !strings.Contains(e.Message, "created too many groups") {
		t.Errorf("third create: %+v", e)
	}
	// Two of the five changes are spent (bob twice); three more go.
	alice.RequestOK(&protocol.GroupOp{Conv: g1.Conv, Op: protocol.GroupAdd, Users: []string{"carol", "dave", "erin"}})
	e = alice.RequestError(&protocol.GroupOp{Conv: g1.Conv, Op: protocol.GroupAdd, Users: []string{"frank"}}, protocol.CodeRateLimited)
	if e.RetryAfterMS <= 0 {
		t.Errorf("add over the quota: %+v", e)
	}
	alice.RequestError(&protocol.GroupOp{Conv: g1.Conv, Op: protocol.GroupRename, Title: "renamed"}, protocol.CodeRateLimited)
	// Nothing changed, and an op that changes nothing costs nothing.
	g := alice.RequestOK(&protocol.GroupOp{Conv: g1.Conv, Op: protocol.GroupAdd, Users: []string{"bob"}}).(*protocol.Group)
	if len(g.Members) != 5 || g.Title != "one" {
		t.Fatalf("group after refused ops: %+v", g)
	}
	if got := scrape(t, env)[`im_rate_limited_total{scope="quota"}`]; got != 3 {
		t.Errorf("im_rate_limited_total{scope=\"quota\"} = %v, want 3", got)
	}
	// Other users have quotas of their own, and leaving is always allowed.
	bob := env.Dial(t, "bob", "laptop")
	bob.RequestOK(&protocol.CreateGroup{Title: "bob's", Members: []string{"carol"}})
	bob.RequestOK(&protocol.GroupOp{Conv: g1.Conv, Op: protocol.GroupLeave})
}

// Before its hello a connection may send a few small frames; a larger one
// closes it with 1009, more frames close it, and frames that fail draw
// from a bucket per IP address, which valid hellos do not touch.
func TestPreHelloLimits(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Gateway.PreHelloRate = 0.001
		c.Gateway.PreHelloBurst = 6
	})
	big := env.DialRaw(t)
	big.WriteRaw([]byte(`{"type":"hello","junk":"` + strings.Repeat("x", 5000) + `"}`))
	if ce, ok := big.ExpectClosed().(*websocket.CloseError); !ok || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("a 5 KB frame before hello: want close 1009")
	}

	chatty := env.DialRaw(t)
	for range 3 {
		chatty.WriteRaw([]byte(`not json`))
		chatty.ExpectType("error")
	}
	chatty.Write(&protocol.Hello{Protocol: 1, User: "alice", Device: "bad device!"})
	chatty.ExpectType("error")
	chatty.Write(&protocol.Hello{Protocol: 1, User: "alice", Device: "d"}) // the fifth frame
	e := chatty.ExpectType("error").(*protocol.ErrorFrame)
	if e.Code != protocol.CodeUnauthorized || !strings.Contains(e.Message, "without a valid hello") {
		t.Fatalf("fifth frame before hello: %+v", e)
	}
	chatty.ExpectClosed()

	// Four failed frames were charged to 127.0.0.1. A valid hello is not
	// charged: two more failed frames are allowed after it, the third
	// closes the connection.
	env.Dial(t, "alice", "laptop").Send("d:alice:bob", "m1", "still welcome")
	garbage := env.DialRaw(t)
	garbage.WriteRaw([]byte(`{}`))
	garbage.ExpectType("error")
	garbage.WriteRaw([]byte(`{}`))
	garbage.ExpectType("error")
	garbage.WriteRaw([]byte(`{}`))
	e = garbage.ExpectType("error").(*protocol.ErrorFrame)
	if e.Code != protocol.CodeRateLimited {
		t.Fatalf("failed frames over the address's budget: %+v", e)
	}
	garbage.ExpectClosed()
	// Until its bucket refills, the address gets no upgrade at all.
	_, resp, err := websocket.DefaultDialer.Dial(env.URL, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("an upgrade from the address that failed too often: %v %v, want 429", resp, err)
	}
}

// A create retried with its key makes nothing new and costs nothing; a
// refused create costs nothing either.
func TestGroupQuotaSparesRetries(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Quotas = chat.Quotas{GroupCreates: 2, GroupChanges: 3, Window: time.Hour}
	})
	alice := env.Dial(t, "alice", "laptop")
	first := alice.RequestOK(&protocol.CreateGroup{Title: "one", Members: []string{"bob"}, Key: "k1"}).(*protocol.Group)
	for range 3 {
		again := alice.RequestOK(&protocol.CreateGroup{Title: "one", Members: []string{"bob"}, Key: "k1"}).(*protocol.Group)
		if again.Conv != first.Conv {
			t.Fatalf("a retry with the key made %s, want %s", again.Conv, first.Conv)
		}
	}
	// Over the member quota (1 of 3 spent): refused, and the create it
	// would have been is not charged.
	alice.RequestError(&protocol.CreateGroup{Title: "big", Members: []string{"carol", "dave", "erin"}}, protocol.CodeRateLimited)
	alice.RequestOK(&protocol.CreateGroup{Title: "two", Members: []string{"carol"}, Key: "k2"})
	alice.RequestError(&protocol.CreateGroup{Title: "three", Members: []string{"dave"}}, protocol.CodeRateLimited)
}
