package client

import (
	"context"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// A burst waiting for an offline user is acknowledged in a frame or two,
// not one per message, and the sender's ticks go to delivered, then read.
func TestDeliveredPerBurstAndTicksReachTheSender(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	const n = 40
	alice := newProfile(t, env.URL, "alice", "").startOnline()
	var last Message
	for range n {
		m, err := alice.client.Send(dm, "hello")
		if err != nil {
			t.Fatal(err)
		}
		last = m
	}
	alice.waitFor("every sent", func() bool {
		box, _ := alice.store.Outbox()
		return len(box) == 0
	})
	msgs := alice.messages(dm)
	if len(msgs) != n || msgs[n-1].MsgID != last.MsgID || msgs[n-1].Seq != n {
		t.Fatalf("alice's chat: %d messages, last %+v", len(msgs), msgs[len(msgs)-1])
	}
	if tick := protocol.TickOf(n, alice.client.Ticks(dm)); tick != protocol.TickSent {
		t.Fatalf("tick before bob connects: %v", tick)
	}

	bob := newProfile(t, env.URL, "bob", "", func(c *Config) { c.AckDelay = 100 * time.Millisecond }).start()
	alice.waitFor("two grey ticks", func() bool { return protocol.TickOf(n, alice.client.Ticks(dm)) == protocol.TickDelivered })
	requireSeqsOnce(t, bob.messages(dm), n)
	delivered := bob.client.sentCount("delivered")
	t.Logf("bob acknowledged %d messages with %d delivered frames", n, delivered)
	if delivered < 1 || delivered > 3 {
		t.Fatalf("%d delivered frames for a burst of %d", delivered, n)
	}

	bob.client.MarkRead(dm, n)
	alice.waitFor("two blue ticks", func() bool { return protocol.TickOf(n, alice.client.Ticks(dm)) == protocol.TickRead })
	if reads := bob.client.sentCount("read"); reads != 1 {
		t.Fatalf("%d read frames", reads)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	members, err := alice.client.Receipts(ctx, dm)
	if err != nil {
		t.Fatal(err)
	}
	want := []protocol.MemberReceipt{{User: "alice", DeliveredSeq: n, ReadSeq: n}, {User: "bob", DeliveredSeq: n, ReadSeq: n}}
	if len(members) != 2 || members[0] != want[0] || members[1] != want[1] {
		t.Fatalf("receipts %+v, want %+v", members, want)
	}
}

// Ticks seen while offline arrive with the session on the next sync.
func TestTicksArriveBySyncAfterOffline(t *testing.T) {
	env := servertest.Start(t)
	dm := conv(t, "alice", "bob")
	alice := newProfile(t, env.URL, "alice", "").start()
	if _, err := alice.client.Send(dm, "are you there?"); err != nil {
		t.Fatal(err)
	}
	alice.waitFor("sent", func() bool {
		box, _ := alice.store.Outbox()
		return len(box) == 0
	})
	alice.stop()
	bob := env.Dial(t, "bob", "phone")
	bob.ExpectMsg(dm)
	bob.RequestOK(&protocol.Read{Marks: []protocol.Mark{{Conv: dm, Seq: 1}}})
	alice.start()
	alice.waitFor("blue ticks from the sync", func() bool { return alice.client.Ticks(dm).ReadSeq == 1 })
	list, _, _ := alice.client.Sessions("")
	if len(list) != 1 || list[0].Ticks.ReadSeq != 1 {
		t.Fatalf("sessions %+v", list)
	}
}
