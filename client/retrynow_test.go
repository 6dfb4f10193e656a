package client

import (
	"testing"
	"time"

	"github.com/imcore/im/server/servertest"
)

// TestReconnectRetriesAtOnce checks that Reconnect, and a Send, end the
// backoff wait at once instead of at its timer, here a minute away.
func TestReconnectRetriesAtOnce(t *testing.T) {
	env := servertest.Start(t)
	slow := func(c *Config) { c.MinBackoff, c.MaxBackoff = time.Minute, time.Minute }
	for _, tc := range []struct {
		name  string
		retry func(p *profile)
	}{
		{"Reconnect", func(p *profile) { p.client.Reconnect() }},
		{"Send", func(p *profile) {
			if _, err := p.client.Send(conv(t, "alice", "bob"), "wake up"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProfile(t, env.URL, "alice", "", slow)
			p.net.refuse.Store(true)
			p.start()
			p.waitFor("offline, a minute to wait", func() bool {
				c := p.client.Conn()
				return c.State == Offline && time.Until(c.RetryAt) > 30*time.Second
			})
			p.net.refuse.Store(false)
			tc.retry(p)
			p.waitFor("online long before the timer", func() bool { return p.client.Conn().State == Online })
		})
	}
}
