package servertest

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/imcore/im/protocol"
)

// probeUser prefixes the users that DialReplayed dials to send one typing
// indicator each; TakePushes drops their typing.
const probeUser = "zz-probe"

// probes numbers the probes: each DialReplayed uses a probe user of its
// own, because the server relays one typing indicator per user and
// conversation per typing interval, and two devices of one user dialled in
// a row would otherwise share the probe's conversation.
var probes atomic.Int64

// DialOnline connects user/device and makes one round trip, so that the
// device is registered for pushes (online) when it returns: the welcome is
// written before the server registers the device, an answer to a later
// request is not. Frames already received stay for Expect. Live pushes may
// still be held back for a while; see DialReplayed.
func (e *Env) DialOnline(t testing.TB, user, device string) *Client {
	t.Helper()
	c := e.Dial(t, user, device)
	c.Request(&protocol.History{Conv: "-"}) // any answer proves the read loop runs
	return c
}

// DialReplayed connects user/device and returns once the server pushes to
// the device as it answers it. Registration alone is not enough: while a
// new connection replays its pending deliveries the server holds live
// pushes back (gateway/replay.go) but not the answers to the connection's
// own requests, so for a while a push queued before an answer can arrive
// after it, which Barrier and ExpectNone cannot tell from no push at all. A
// held push is sent once the replay's reads are done: a typing indicator
// sent to the user now arrives only then. For the test's goroutine only
// (t must be able to FailNow); see DialOnline.
func (e *Env) DialReplayed(t testing.TB, user, device string) *Client {
	t.Helper()
	c := e.DialOnline(t, user, device)
	probeName := fmt.Sprintf("%s%d", probeUser, probes.Add(1))
	probe := e.DialOnline(t, probeName, "probe")
	probe.Write(&protocol.Typing{Conv: Direct(user, probeName)})
	c.Expect("the probe's typing", func(f protocol.Frame) bool {
		ty, ok := f.(*protocol.Typing)
		return ok && ty.User == probeName
	})
	probe.Close()
	c.Request(&protocol.History{Conv: "-"})
	return c
}

// Direct returns the id of the direct chat of users a and b; it panics if
// they make none (a test's own mistake).
func Direct(a, b string) string {
	conv, ok := protocol.DirectConv(a, b)
	if !ok {
		panic("bad direct conversation " + a + " " + b)
	}
	return conv
}
