package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/imcore/im/server/servertest"
)

// A server that lost its history (a fresh one at the same address) answers
// the messages written meanwhile with seqs this device already holds: each
// send still settles (no clock forever), the device keeps what it held,
// set aside before the server's history, and says the server is behind.
func TestSendToAServerBehindTheDeviceSettles(t *testing.T) {
	first := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	alice := newProfile(t, first.URL, "alice", "").start()
	alice.waitOnline()
	for _, body := range []string{"before 1", "before 2"} {
		if _, err := alice.client.Send(dm, body); err != nil {
			t.Fatal(err)
		}
	}
	alice.waitFor("both stored", func() bool {
		box, err := alice.store.Outbox()
		return err == nil && len(box) == 0
	})
	path := alice.path
	alice.close()
	first.Stop()

	empty := servertest.Start(t) // the server came back without its data
	alice = newProfile(t, empty.URL, "alice", path)
	if _, err := alice.client.Send(dm, "written offline"); err != nil {
		t.Fatal(err)
	}
	alice.start()
	said := alice.waitEvent("the server said behind", func(e Event) bool {
		ev, ok := e.(ErrorEvent)
		return ok && errors.Is(ev.Err, ErrServerBehind)
	}).(ErrorEvent).Err
	alice.waitFor("the send settled", func() bool {
		box, err := alice.store.Outbox()
		return err == nil && len(box) == 0
	})
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
