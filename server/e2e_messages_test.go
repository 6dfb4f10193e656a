package server_test

import (
	"fmt"
	"sync"
	"testing"

	"golang.org/x/time/rate"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

func TestSendReachesEveryOtherDevice(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "laptop")
	alicePhone := env.Dial(t, "alice", "phone")
	bob := env.Dial(t, "bob", "laptop")
	carol := env.Dial(t, "carol", "laptop")

	sent := alice.Send("d:alice:bob", "m1", "hey")
	if sent.Seq != 1 || sent.ServerTS == 0 || sent.Conv != "d:alice:bob" || sent.MsgID != "m1" {
		t.Fatalf("sent = %+v", sent)
	}
	for _, c := range []*servertest.Client{alicePhone, bob} {
		m := c.ExpectMsg("d:alice:bob")
		want := protocol.Message{Conv: "d:alice:bob", Seq: 1, MsgID: "m1", From: "alice", Body: "hey", ClientTS: m.ClientTS, ServerTS: sent.ServerTS}
		if m != want {
			t.Errorf("%s/%s got %+v, want %+v", c.User, c.Device, m, want)
		}
	}
	isMsg := servertest.OfType("msg")
	alice.ExpectNone("msg on the sending connection", isMsg)
	carol.ExpectNone("msg for a non-member", isMsg)
}

func TestFromIsTheAuthenticatedUser(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "laptop")
	bob := env.Dial(t, "bob", "laptop")
	alice.WriteRaw([]byte(`{"type":"send","id":"s","conv":"d:alice:bob","msg_id":"m","body":"hi","from":"bob"}`))
	alice.Expect("sent", func(f protocol.Frame) bool { return servertest.RequestID(f) == "s" })
	if m := bob.ExpectMsg("d:alice:bob"); m.From != "alice" {
		t.Fatalf("from = %q, want alice", m.From)
	}
}

// Acceptance: 50 concurrent senders in one conversation get seqs 1..N with
// no gap and no duplicate; a resent msg_id returns the original seq and
// nobody receives it twice.
func TestConcurrentSendersGetGaplessSeqs(t *testing.T) {
	// 25 connections of each user send 500 frames as fast as they can:
	// more than one user's frame rate allows, which is not what this tests.
	env := servertest.Start(t, func(c *server.Config) { c.Gateway.RateLimit = rate.Inf })
	const senders, perSender = 50, 10
	const conv = "d:alice:bob"
	observer := env.Dial(t, "bob", "observer")
	clients := make([]*servertest.Client, senders)
	for i := range clients {
		user := "alice"
		if i%2 == 1 {
			user = "bob"
		}
		clients[i] = env.Dial(t, user, fmt.Sprintf("dev%d", i))
	}
	type result struct {
		msgID string
		seq   int64
	}
	results := make(chan result, senders*perSender*2)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perSender {
				id := fmt.Sprintf("s%d-m%d", i, j)
				first := c.Send(conv, id, "body "+id)
				// Resend with the same msg_id (a retry after a lost answer).
				again := c.Send(conv, id, "a different body")
				if again.Seq != first.Seq || again.ServerTS != first.ServerTS {
					t.Errorf("resend of %s: seq %d ts %d, original seq %d ts %d", id, again.Seq, again.ServerTS, first.Seq, first.ServerTS)
				}
				results <- result{id, first.Seq}
			}
		}()
	}
	wg.Wait()
	close(results)
	const n = senders * perSender
	bySeq := map[int64]string{}
	for r := range results {
		if prev, dup := bySeq[r.seq]; dup {
			t.Fatalf("seq %d given to %s and %s", r.seq, prev, r.msgID)
		}
		bySeq[r.seq] = r.msgID
	}
	for seq := int64(1); seq <= n; seq++ {
		if _, ok := bySeq[seq]; !ok {
			t.Fatalf("gap: no message got seq %d", seq)
		}
	}
	// The observer device gets every message exactly once, with its seq.
	seen := map[string]int64{}
	for range n {
		m := observer.ExpectMsg(conv)
		if _, dup := seen[m.MsgID]; dup {
			t.Fatalf("observer received %s twice", m.MsgID)
		}
		seen[m.MsgID] = m.Seq
		if bySeq[m.Seq] != m.MsgID {
			t.Fatalf("pushed %s with seq %d, sent answered %s", m.MsgID, m.Seq, bySeq[m.Seq])
		}
		if m.Body == "a different body" {
			t.Fatalf("resend overwrote the body of %s", m.MsgID)
		}
	}
	observer.ExpectNone("a duplicate push", servertest.OfType("msg"))
	page := observer.RequestOK(&protocol.History{Conv: conv, Limit: 1}).(*protocol.Messages)
	if len(page.Messages) != 1 || page.Messages[0].Seq != n {
		t.Fatalf("newest stored seq: %+v, want %d", page.Messages, n)
	}
}

func TestResendOfStoredMessageAfterReconnect(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "laptop")
	bob := env.Dial(t, "bob", "laptop")
	first := alice.Send("d:alice:bob", "m1", "original")
	bob.ExpectMsg("d:alice:bob")
	alice.Close()
	alice = env.Dial(t, "alice", "laptop")
	again := alice.Send("d:alice:bob", "m1", "retry from the outbox")
	if again.Seq != first.Seq || again.ServerTS != first.ServerTS {
		t.Fatalf("retry got seq %d, original %d", again.Seq, first.Seq)
	}
	bob.ExpectNone("a second msg", servertest.OfType("msg"))
	page := bob.RequestOK(&protocol.History{Conv: "d:alice:bob"}).(*protocol.Messages)
	if len(page.Messages) != 1 || page.Messages[0].Body != "original" {
		t.Fatalf("history = %+v", page.Messages)
	}
}

func TestConversationsAreSequencedIndependently(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "laptop")
	for i := 1; i <= 3; i++ {
		if s := alice.Send("d:alice:bob", fmt.Sprint("b", i), "x"); s.Seq != int64(i) {
			t.Fatalf("d:alice:bob seq %d, want %d", s.Seq, i)
		}
		if s := alice.Send("d:alice:carol", fmt.Sprint("c", i), "x"); s.Seq != int64(i) {
			t.Fatalf("d:alice:carol seq %d, want %d", s.Seq, i)
		}
	}
}

func TestHistoryPaging(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "laptop")
	const conv = "d:alice:bob"
	empty := alice.RequestOK(&protocol.History{Conv: conv}).(*protocol.Messages)
	if len(empty.Messages) != 0 || empty.HasMore || empty.Messages == nil {
		t.Fatalf("empty conversation: %+v (messages must be [] not null)", empty)
	}
	for i := 1; i <= 250; i++ {
		alice.Send(conv, fmt.Sprint("m", i), fmt.Sprint("body ", i))
	}
	page := func(h *protocol.History) ([]int64, bool) {
		t.Helper()
		m := alice.RequestOK(h).(*protocol.Messages)
		var seqs []int64
		for _, msg := range m.Messages {
			seqs = append(seqs, msg.Seq)
		}
		return seqs, m.HasMore
	}
	check := func(name string, gotSeqs []int64, gotMore bool, from, to int64, more bool) {
		t.Helper()
		if int64(len(gotSeqs)) != to-from+1 || gotMore != more {
			t.Fatalf("%s: %d messages has_more=%v, want %d..%d has_more=%v", name, len(gotSeqs), gotMore, from, to, more)
		}
		for i, s := range gotSeqs {
			if s != from+int64(i) {
				t.Fatalf("%s: seqs %v not ascending from %d", name, gotSeqs, from)
			}
		}
	}
	s, more := page(&protocol.History{Conv: conv})
	check("newest page", s, more, 231, 250, true)
	s, more = page(&protocol.History{Conv: conv, BeforeSeq: 231, Limit: 30})
	check("before 231", s, more, 201, 230, true)
	s, more = page(&protocol.History{Conv: conv, BeforeSeq: 11, Limit: 20})
	check("before 11", s, more, 1, 10, false)
	after := int64(0)
	s, more = page(&protocol.History{Conv: conv, AfterSeq: &after, Limit: 5})
	check("after 0", s, more, 1, 5, true)
	after = 240
	s, more = page(&protocol.History{Conv: conv, AfterSeq: &after, Limit: 20})
	check("after 240", s, more, 241, 250, false)
	s, more = page(&protocol.History{Conv: conv, Limit: 1000})
	check("limit clamped to 200", s, more, 51, 250, true)
	after = 5
	alice.RequestError(&protocol.History{Conv: conv, BeforeSeq: 10, AfterSeq: &after}, protocol.CodeInvalid)
	alice.RequestError(&protocol.History{Conv: conv, Limit: -1}, protocol.CodeInvalid)
	alice.RequestError(&protocol.History{Conv: "d:bob:carol"}, protocol.CodeForbidden)
	alice.RequestError(&protocol.History{Conv: "nope"}, protocol.CodeInvalid)
	last := alice.RequestOK(&protocol.History{Conv: conv, Limit: 1}).(*protocol.Messages).Messages[0]
	if last.Body != "body 250" || last.From != "alice" || last.MsgID != "m250" || last.ServerTS == 0 {
		t.Fatalf("stored message = %+v", last)
	}
}

func TestTypingReachesOtherMembersOnly(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "laptop")
	alicePhone := env.Dial(t, "alice", "phone")
	bob := env.Dial(t, "bob", "laptop")
	bobPhone := env.Dial(t, "bob", "phone")
	carol := env.Dial(t, "carol", "laptop")
	alice.Write(&protocol.Typing{Conv: "d:alice:bob", User: "mallory"})
	for _, c := range []*servertest.Client{bob, bobPhone} {
		f := c.ExpectType("typing").(*protocol.Typing)
		if f.Conv != "d:alice:bob" || f.User != "alice" {
			t.Fatalf("typing = %+v", f)
		}
	}
	isTyping := servertest.OfType("typing")
	alicePhone.ExpectNone("own typing", isTyping)
	carol.ExpectNone("typing for a non-member", isTyping)
	alice.ExpectNone("typing echo", isTyping)
	// Typing in someone else's chat is refused; not stored anywhere.
	carol.Write(&protocol.Typing{Conv: "d:alice:bob"})
	if e := carol.ExpectType("error").(*protocol.ErrorFrame); e.Code != protocol.CodeForbidden {
		t.Fatalf("typing as a non-member: %+v", e)
	}
	bob.ExpectNone("typing from a non-member", isTyping)
	if page := bob.RequestOK(&protocol.History{Conv: "d:alice:bob"}).(*protocol.Messages); len(page.Messages) != 0 {
		t.Fatalf("typing was stored: %+v", page.Messages)
	}
}
