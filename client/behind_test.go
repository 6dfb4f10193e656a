package client

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/imcore/im/internal/fakeserver"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// A server that lost its history (a fresh one at the same address) answers
// the messages written meanwhile with seqs this device already holds: each
// send still settles (no clock forever), the device keeps what it held,
// set aside before the server's history, and says the server is behind.
func TestSendToAServerBehindTheDeviceSettles(t *testing.T) {
	dm := conv(t, "alice", "bob")
	path := storedOnAGoneServer(t, posted{dm, "before 1"}, posted{dm, "before 2"})

	empty := servertest.Start(t) // the server came back without its data
	alice := newProfile(t, empty.URL, "alice", path)
	if _, err := alice.client.Send(dm, "written offline"); err != nil {
		t.Fatal(err)
	}
	alice.start()
	said := waitSaidBehind(alice)
	alice.waitOutboxEmpty()
	if !strings.Contains(said.Error(), dm) {
		t.Errorf("the warning does not name the conversation: %v", said)
	}
	var bodies []string
	for _, m := range alice.messages(dm) {
		bodies = append(bodies, m.Body)
		if m.Outbox {
			t.Errorf("%q still waits for the server", m.Body)
		}
		if m.Body == "written offline" && m.Seq != 1 {
			t.Errorf("the new message holds seq %d, want the server's 1", m.Seq)
		}
	}
	if strings.Join(bodies, "|") != "before 1|before 2|written offline" {
		t.Fatalf("the chat reads %q, want what the device held, then the new message", bodies)
	}
}

// posted is a message a test sends: its conversation and body.
type posted struct{ conv, body string }

// storedOnAGoneServer has a fresh profile of alice send msgs to a server
// of its own, waits until the server stored them all, then closes the
// profile and stops the server (its data gone with it); it returns the
// profile's path.
func storedOnAGoneServer(t *testing.T, msgs ...posted) string {
	t.Helper()
	first := servertest.Start(t)
	alice := newProfile(t, first.URL, "alice", "").startOnline()
	for _, m := range msgs {
		if _, err := alice.client.Send(m.conv, m.body); err != nil {
			t.Fatal(err)
		}
	}
	alice.waitOutboxEmpty()
	alice.close()
	first.Stop()
	return alice.path
}

// waitSaidBehind returns the error with which p's client says the server
// is behind.
func waitSaidBehind(p *profile) error {
	p.t.Helper()
	return p.waitEvent("the server said behind", func(e Event) bool {
		ev, ok := e.(ErrorEvent)
		return ok && errors.Is(ev.Err, ErrServerBehind)
	}).(ErrorEvent).Err
}

// behindSaid counts the ErrServerBehind reports p's client made.
func behindSaid(p *profile) int64 { return p.client.behindSaid.Load() }

// requireSaidBehind waits until p's client compared, on one connection,
// what the server lists with what the device holds, and fails unless it
// said the server was behind want times.
func requireSaidBehind(p *profile, want int64) {
	p.t.Helper()
	waitBehindChecked(p, 1)
	if n := behindSaid(p); n != want {
		p.t.Fatalf("%s: said behind %d times, want %d", p.name, n, want)
	}
}

// waitBehindChecked waits until p's client compared, on n connections,
// what the server lists with what the device holds.
func waitBehindChecked(p *profile, n int64) {
	p.t.Helper()
	p.waitFor("the check of the server's history", func() bool { return p.client.behindChecks.Load() >= n })
}

// A device that holds messages and connects to a server that lost them
// all (an empty one) learns it at once, with nothing sent: one warning
// naming how many conversations, and the device keeps what it held.
func TestReconnectToAnEmptyServerSaysBehind(t *testing.T) {
	withBob, withCarol := conv(t, "alice", "bob"), conv(t, "alice", "carol")
	path := storedOnAGoneServer(t, posted{withBob, "before"}, posted{withCarol, "before"})

	empty := servertest.Start(t) // the server came back without its data
	alice := newProfile(t, empty.URL, "alice", path).start()
	said := waitSaidBehind(alice)
	if !strings.Contains(said.Error(), "2 conversations") {
		t.Errorf("the warning does not say how many conversations: %v", said)
	}
	requireSaidBehind(alice, 1)
	for _, dm := range []string{withBob, withCarol} {
		if msgs := alice.messages(dm); len(msgs) != 1 || msgs[0].Body != "before" {
			t.Errorf("%s holds %+v after the check, want what it held", dm, msgs)
		}
	}
}

// reopen closes p and runs a new client on its profile against url.
func reopen(p *profile, url string) *profile {
	path := p.path
	p.close()
	return newProfile(p.t, url, p.name, path).start()
}

// The ordinary reconnects are not a server behind: the same server with
// new messages, messages still in the outbox, a group the user left, a
// chat the user deleted.
func TestOrdinaryReconnectsAreNotBehind(t *testing.T) {
	t.Run("new messages", func(t *testing.T) {
		env := servertest.Start(t)
		dm := conv(t, "alice", "bob")
		alice := newProfile(t, env.URL, "alice", "").startOnline()
		bob := env.DialOnline(t, "bob", "phone")
		bob.SendN(dm, 3)
		alice.waitFor("bob's messages", func() bool { return len(alice.messages(dm)) == 3 })
		alice.stop()
		bob.SendN(dm, 2)
		alice = reopen(alice, env.URL)
		alice.waitFor("the new messages", func() bool { return len(alice.messages(dm)) == 5 })
		requireSaidBehind(alice, 0)
	})
	t.Run("pending outbox", func(t *testing.T) {
		env := servertest.Start(t)
		dm := conv(t, "alice", "bob")
		alice := newProfile(t, env.URL, "alice", "").startOnline()
		if _, err := alice.client.Send(dm, "sent"); err != nil {
			t.Fatal(err)
		}
		alice.waitOutboxEmpty()
		alice.stop()
		for _, body := range []string{"offline 1", "offline 2"} {
			if _, err := alice.client.Send(dm, body); err != nil {
				t.Fatal(err)
			}
		}
		alice = reopen(alice, env.URL)
		alice.waitOutboxEmpty()
		requireSaidBehind(alice, 0)
		// A fresh server and a device holding only its outbox: nothing
		// the server lost.
		fresh := newProfile(t, servertest.Start(t).URL, "alice", "")
		if _, err := fresh.client.Send(dm, "first words"); err != nil {
			t.Fatal(err)
		}
		fresh.start()
		requireSaidBehind(fresh, 0)
	})
	t.Run("left group", func(t *testing.T) {
		env := servertest.Start(t)
		alice := newProfile(t, env.URL, "alice", "").start()
		bob := newProfile(t, env.URL, "bob", "").start()
		alice.waitOnline()
		bob.waitOnline()
		g := createGroup(t, bob, "team", "alice")
		if _, err := bob.client.Send(g.Conv, "hello team"); err != nil {
			t.Fatal(err)
		}
		alice.waitFor("bob's message", func() bool { return len(alice.messages(g.Conv)) == 2 })
		bob.client.GroupOp(g.Conv, "remove", []string{"alice"}, "")
		alice.waitFor("the notice that alice left", func() bool {
			msgs := alice.messages(g.Conv)
			return len(msgs) == 3 && msgs[2].Kind == protocol.KindSystem
		})
		if _, err := bob.client.Send(g.Conv, "after alice"); err != nil {
			t.Fatal(err)
		}
		alice = reopen(alice, env.URL)
		requireSaidBehind(alice, 0)
	})
	t.Run("deleted chat", func(t *testing.T) {
		env := servertest.Start(t)
		dm := conv(t, "alice", "bob")
		alice := newProfile(t, env.URL, "alice", "").startOnline()
		bob := env.DialOnline(t, "bob", "phone")
		bob.SendN(dm, 2)
		alice.waitFor("bob's messages", func() bool { return len(alice.messages(dm)) == 2 })
		alice.client.SessionOp(dm, "delete", 0, "")
		alice.waitFor("the delete done", func() bool {
			ops, err := alice.store.PendingOps()
			s, ok := alice.session(dm)
			return err == nil && len(ops) == 0 && ok && s.Deleted
		})
		alice = reopen(alice, env.URL)
		requireSaidBehind(alice, 0)
	})
}

// A server that lost some of its data, then took a new message: the
// conversation whose session is below the device (its pushed message
// collides too) and the one it no longer lists are said together, in one
// warning.
func TestReconnectToAServerThatLostSomeSaysBehindOnce(t *testing.T) {
	withBob, withCarol := conv(t, "alice", "bob"), conv(t, "alice", "carol")
	path := storedOnAGoneServer(t, posted{withBob, "before 1"}, posted{withBob, "before 2"}, posted{withCarol, "before"})

	lost := servertest.Start(t)
	bob := lost.DialOnline(t, "bob", "phone")
	bob.SendMsg(withBob, "after the loss") // seq 1 again, pushed to alice on hello
	alice := newProfile(t, lost.URL, "alice", path).start()
	said := waitSaidBehind(alice)
	if !strings.Contains(said.Error(), "2 conversations") {
		t.Errorf("the warning does not say how many conversations: %v", said)
	}
	waitBehindChecked(alice, 1)
	var bodies []string
	for _, m := range alice.messages(withBob) {
		bodies = append(bodies, m.Body)
	}
	if !slices.Contains(bodies, "before 1") || !slices.Contains(bodies, "before 2") {
		t.Errorf("the chat reads %q, want what the device held kept", bodies)
	}
	requireSaidBehind(alice, 1)
}

// A session is derived from the history and may lag it a moment: a
// session below the device whose history holds the device's newest
// message is not a server behind; one whose history lacks it is.
func TestSessionBelowTheDeviceIsCheckedInTheHistory(t *testing.T) {
	dm := conv(t, "alice", "bob")
	for _, tc := range []struct {
		name    string
		history []protocol.Message
		said    int64
	}{
		{"history holds it", []protocol.Message{chatMsg(dm, 3, "bob")}, 0},
		{"history lacks it", []protocol.Message{}, 1},
		{"another message there", []protocol.Message{{Conv: dm, Seq: 3, MsgID: "other", From: "bob", Body: "other"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lagging := protocol.Session{Conv: dm, Kind: "direct", Title: "bob", Members: []string{"alice", "bob"},
				WriteSeq: 2, ReadSeq: 2, ActiveTS: 10, WriteTS: 10}
			srv := fakeserver.Start(t, fakeserver.Options{Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
				switch f := f.(type) {
				case *protocol.Sync:
					c.Push(&protocol.Sessions{Ref: f.Ref, Sessions: []protocol.Session{lagging}, Cursor: 10})
					return true
				case *protocol.History:
					c.Push(&protocol.Messages{Ref: f.Ref, Conv: f.Conv, Messages: tc.history})
					return true
				}
				return false
			}})
			alice := newProfile(t, srv.URL, "alice", "")
			if err := alice.store.PutSessions([]protocol.Session{lagging}); err != nil {
				t.Fatal(err)
			}
			if _, err := alice.store.PutMessages([]protocol.Message{chatMsg(dm, 1, "bob"), chatMsg(dm, 2, "bob"), chatMsg(dm, 3, "bob")}); err != nil {
				t.Fatal(err)
			}
			alice.start()
			requireSaidBehind(alice, tc.said)
		})
	}
}
