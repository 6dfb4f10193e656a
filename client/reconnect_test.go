package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// burst sends n messages in dm from a raw connection, numbered from
// first, without waiting between them (the server commits them in
// groups), and returns once all are answered sent.
func burst(t *testing.T, sender *servertest.Client, dm string, first, n int) {
	t.Helper()
	go writeBurst(sender, dm, first, n)
	expectSent(t, sender, n)
}

// writeBurst writes n send frames in dm, numbered from first.
func writeBurst(sender *servertest.Client, dm string, first, n int) {
	for i := first; i < first+n; i++ {
		id := fmt.Sprintf("m-%d", i)
		sender.Write(&protocol.Send{Ref: protocol.Ref{ID: id}, Conv: dm, MsgID: id, Body: "message " + id})
	}
}

// expectSent waits for n sent answers.
func expectSent(t *testing.T, sender *servertest.Client, n int) {
	t.Helper()
	for range n {
		f := sender.Expect("sent", func(f protocol.Frame) bool {
			_, sent := f.(*protocol.Sent)
			_, refused := f.(*protocol.ErrorFrame)
			return sent || refused
		})
		if e, ok := f.(*protocol.ErrorFrame); ok {
			t.Fatalf("send refused: %s: %s", e.Code, e.Message)
		}
	}
}

// A connection cut in the middle of a burst loses nothing and doubles
// nothing: what was not acknowledged is replayed on the next hello, and
// the client ends with every seq exactly once.
func TestDroppedConnectionMidBurstLosesNothing(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	const n = 200
	// A long AckDelay keeps the first part unacknowledged when the cut
	// comes, so the server must replay it: duplicates for the store.
	bob := newProfile(t, env.URL, "bob", "", func(c *Config) { c.AckDelay, c.AckMaxDelay = time.Minute, time.Minute }).startOnline()
	alice := env.Dial(t, "alice", "phone")

	go writeBurst(alice, dm, 1, n/2)
	bob.waitFor("part of the burst", func() bool { return len(bob.messages(dm)) >= 20 })
	bob.net.cut()
	t.Logf("cut after %d messages", len(bob.messages(dm)))
	expectSent(t, alice, n/2)
	burst(t, alice, dm, n/2+1, n/2) // while bob reconnects
	bob.waitFor("every message", func() bool { return len(bob.messages(dm)) >= n })
	requireSeqsOnce(t, bob.messages(dm), n)
	if hellos := bob.client.sentCount("hello"); hellos < 2 {
		t.Fatalf("bob said hello %d times: the cut did not happen", hellos)
	}
	bob.waitFor("the session to show them", func() bool {
		s, ok := bob.session(dm)
		return ok && s.WriteSeq == n && s.UnreadCount == n
	})
}

// When another device of the user acknowledged the messages (so nothing
// is replayed), the client fills the gap from history after reconnecting.
func TestGapIsFilledFromHistory(t *testing.T) {
	// alice writes 460 frames back to back: more than a connection's
	// default burst, which this test is not about.
	env := servertest.Start(t, func(c *server.Config) { c.Gateway.RateBurst = 10000 })
	dm := conv(t, "alice", "bob")
	bob := newProfile(t, env.URL, "bob", "").start()
	alice := env.Dial(t, "alice", "phone")
	burst(t, alice, dm, 1, 10)
	bob.waitFor("the first ten", func() bool { return len(bob.messages(dm)) == 10 })
	if err := bob.stop(); err != nil {
		t.Fatal(err)
	}

	// Bob's other device takes the next 450 and acknowledges them: nothing
	// stays pending for bob.
	burst(t, alice, dm, 11, 450)
	tablet := env.Dial(t, "bob", "tablet")
	tablet.RequestOK(&protocol.Delivered{Marks: []protocol.Mark{{Conv: dm, Seq: 460}}})

	bob.start()
	bob.waitFor("every message", func() bool { return len(bob.messages(dm)) == 460 })
	requireSeqsOnce(t, bob.messages(dm), 460)
	if got, _ := bob.store.SyncedSeq(dm); got != 460 {
		t.Fatalf("synced seq %d, want 460", got)
	}
	if bob.client.sentCount("history") < 3 {
		t.Fatalf("%d history requests for 450 messages in pages of 200", bob.client.sentCount("history"))
	}
}

// A profile that holds nothing of a long conversation gets its newest page
// and is synced from there; older pages come with LoadOlder.
func TestNewDeviceGetsTheNewestPageThenOlder(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	alice := env.Dial(t, "alice", "phone")
	burst(t, alice, dm, 1, 120)
	env.Dial(t, "bob", "old").RequestOK(&protocol.Delivered{Marks: []protocol.Mark{{Conv: dm, Seq: 120}}})

	bob := newProfile(t, env.URL, "bob", "").start()
	bob.waitFor("the newest page", func() bool { return len(bob.messages(dm)) == newestPage })
	msgs := bob.messages(dm)
	if msgs[0].Seq != 120-newestPage+1 || msgs[len(msgs)-1].Seq != 120 {
		t.Fatalf("newest page holds %d..%d", msgs[0].Seq, msgs[len(msgs)-1].Seq)
	}
	for len(bob.messages(dm)) < 120 {
		before := bob.messages(dm)[0].Seq
		bob.client.LoadOlder(dm, before)
		bob.waitFor(fmt.Sprintf("the page before %d", before), func() bool { return bob.messages(dm)[0].Seq < before })
	}
	requireSeqsOnce(t, bob.messages(dm), 120)
}

// A refused hello is an answer, not a network failure: Run returns it.
func TestUnauthorizedHelloStopsRun(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) { c.Auth = server.AuthToken })
	p := newProfile(t, env.URL, "", "", func(c *Config) { c.User, c.Token = "", "v1:alice:1:forged" })
	p.start()
	var err error
	select {
	case err = <-p.done:
		p.cancel = nil
	case <-time.After(waitTimeout):
		t.Fatal("Run keeps retrying a bad token")
	}
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.CodeUnauthorized {
		t.Fatalf("Run returned %v, want unauthorized", err)
	}
	if c := p.client.Conn(); c.State != Stopped || c.Err == nil {
		t.Fatalf("conn state %+v", c)
	}
}

// A profile is one user's: a welcome as anyone else stops Run.
func TestProfileOfAnotherUserIsRefused(t *testing.T) {
	env := servertest.Start(t)
	first := newProfile(t, env.URL, "alice", "").startOnline()
	path := first.path
	first.close()
	if _, err := New(Config{URL: env.URL, User: "bob", Store: mustOpen(t, path)}); err == nil {
		t.Fatal("a client of bob on alice's profile was created")
	}
}

// Run returns nil when its context ends, and the state is Stopped.
func TestRunStopsWithItsContext(t *testing.T) {
	env := servertest.Start(t)
	p := newProfile(t, env.URL, "alice", "").startOnline()
	if err := p.stop(); err != nil {
		t.Fatalf("Run returned %v", err)
	}
	if c := p.client.Conn(); c.State != Stopped {
		t.Fatalf("state %v after Run", c.State)
	}
	if _, err := p.client.Receipts(context.Background(), conv(t, "alice", "bob")); !errors.Is(err, ErrOffline) {
		t.Fatalf("Receipts while stopped: %v", err)
	}
}

func TestBackoffStaysWithinBounds(t *testing.T) {
	minWait, maxWait := 100*time.Millisecond, 2*time.Second
	for n := range 70 {
		d := backoff(minWait, maxWait, n)
		ceiling := min(maxWait, minWait<<min(n, 30))
		if d < ceiling/2 || d > ceiling {
			t.Fatalf("attempt %d waits %v, want within [%v, %v]", n, d, ceiling/2, ceiling)
		}
	}
}

// A client left with the default back-off notices a server that restarts
// within a few seconds, however long the outage lasted: the wait between
// attempts is capped at 5 s, drawn from its upper half so that the
// clients of a restarted server do not all come back at once.
func TestDefaultBackoffNoticesARestartWithinSeconds(t *testing.T) {
	c := newProfile(t, "ws://127.0.0.1:1/ws", "alice", "", func(c *Config) { c.MinBackoff, c.MaxBackoff = 0, 0 }).client
	if c.cfg.MaxBackoff > 5*time.Second {
		t.Fatalf("the longest wait between attempts is %v, want at most 5s", c.cfg.MaxBackoff)
	}
	seen := map[time.Duration]bool{}
	for n := range 64 {
		d := backoff(c.cfg.MinBackoff, c.cfg.MaxBackoff, n)
		if d > 5*time.Second {
			t.Fatalf("attempt %d waits %v, want at most 5s", n, d)
		}
		if n >= 8 {
			if d < c.cfg.MaxBackoff/2 {
				t.Fatalf("attempt %d waits %v, below half the cap %v", n, d, c.cfg.MaxBackoff)
			}
			seen[d] = true
		}
	}
	if len(seen) < 2 {
		t.Fatalf("the waits at the cap are all %v: no jitter", seen)
	}
}
