package client

import (
	"testing"
	"time"

	"github.com/imcore/im/server/servertest"
)

// slowBackoff makes every wait between attempts a minute: longer than any
// wait of these tests, so that only an attempt made at once can pass.
func slowBackoff(c *Config) { c.MinBackoff, c.MaxBackoff = time.Minute, time.Minute }

// A client given several endpoints of a deployment fails over to the next
// when the node it is on goes away, at once rather than after its back-off.
func TestFailsOverToTheNextServer(t *testing.T) {
	a, b := servertest.Start(t), servertest.Start(t)
	alice := newProfile(t, a.URL+","+b.URL, "alice", "", slowBackoff).start()
	alice.waitFor("online on the first server", func() bool {
		c := alice.client.Conn()
		return c.State == Online && c.URL == a.URL
	})
	a.Stop()
	alice.waitFor("online on the second server", func() bool {
		c := alice.client.Conn()
		return c.State == Online && c.URL == b.URL
	})
}

// A first endpoint that does not answer is passed over for the next one
// without waiting out the back-off.
func TestSkipsAServerThatDoesNotAnswer(t *testing.T) {
	b := servertest.Start(t)
	alice := newProfile(t, "ws://127.0.0.1:1/ws, "+b.URL, "alice", "", slowBackoff).start()
	alice.waitFor("online on the server that answers", func() bool {
		c := alice.client.Conn()
		return c.State == Online && c.URL == b.URL
	})
}
