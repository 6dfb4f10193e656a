package client

import (
	"testing"

	"github.com/imcore/im/server/servertest"
)

// TestOfflineSessionOpShowsAtOnce checks that a pin made offline shows
// in the list at once (and a SessionsChanged says so), instead of only
// when the connection comes back; it then reaches the server, which the
// user's other device shows.
func TestOfflineSessionOpShowsAtOnce(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	laptop := newProfile(t, env.URL, "alice", "").start()
	phone := newProfile(t, env.URL, "alice", "").start()
	env.Dial(t, "bob", "b").Send(dm, "b1", "from bob")
	for _, p := range []*profile{laptop, phone} {
		p.waitFor("bob's chat", func() bool { _, ok := p.session(dm); return ok })
	}

	laptop.net.refuse.Store(true)
	laptop.net.cut()
	laptop.waitFor("offline", func() bool { return laptop.client.Conn().State == Offline })
	laptop.client.SessionOp(dm, "pin", 0, "")
	laptop.waitEvent("the list changed", func(e Event) bool { _, ok := e.(SessionsChanged); return ok })
	if s, _ := laptop.session(dm); s.Priority != 1 {
		t.Fatalf("offline, the pin does not show: priority %d", s.Priority)
	}

	laptop.net.refuse.Store(false)
	phone.waitFor("the pin on the other device", func() bool {
		s, ok := phone.session(dm)
		return ok && s.Priority == 1
	})
	laptop.waitFor("the pin answered", func() bool {
		ops, err := laptop.store.PendingOps()
		return err == nil && len(ops) == 0
	})
	if s, _ := laptop.session(dm); s.Priority != 1 {
		t.Fatalf("after the answer: priority %d", s.Priority)
	}
}
