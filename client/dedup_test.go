package client

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/imcore/im/internal/fakeserver"
	"github.com/imcore/im/localstore"
	"github.com/imcore/im/protocol"
)

// A burst with repeated pushes is stored once per message and
// acknowledged with one delivered frame holding one mark; a status lower
// than one already seen does not lower the ticks.
func TestDuplicatePushesStoredOnceAckedOnceTicksNeverGoBack(t *testing.T) {
	const dm, n = "d:alice:bob", 100
	message := func(seq int64) protocol.Frame {
		return &protocol.MsgPush{Msg: protocol.Message{Conv: dm, Seq: seq, MsgID: "m" + strconv.FormatInt(seq, 10), From: "bob", Body: "hi", ServerTS: seq}}
	}
	fs := fakeserver.Start(t, fakeserver.Options{OnOpen: func(c *fakeserver.Conn) {
		push := c.Push
		for seq := int64(1); seq <= n; seq++ {
			push(message(seq))
			if seq%10 == 0 {
				push(message(seq - 5)) // a duplicate
				push(message(seq))     // and another
			}
		}
		push(&protocol.Status{Conv: dm, DeliveredSeq: 50, ReadSeq: 40})
		push(&protocol.Status{Conv: dm, DeliveredSeq: 10, ReadSeq: 5}) // lower: ignored
		push(&protocol.Typing{Conv: dm, User: "bob"})                  // a marker: all of the above is handled
	}})
	alice := newProfile(t, fs.URL, "alice", "", func(c *Config) { c.AckDelay = 200 * time.Millisecond }).start()
	alice.waitEvent("the typing marker", func(e Event) bool { _, ok := e.(TypingEvent); return ok })

	requireSeqsOnce(t, alice.messages(dm), n)
	if got := alice.client.Ticks(dm); got != (protocol.Ticks{DeliveredSeq: 50, ReadSeq: 40}) {
		t.Fatalf("ticks %+v after a lower status, want 50/40", got)
	}

	alice.waitFor("the delivered frame", func() bool { return len(fs.Frames("delivered")) > 0 })
	// A round trip after it: any further delivered frame would be ahead of
	// the receipts request.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := alice.client.Receipts(ctx, dm); err != nil {
		t.Fatal(err)
	}
	delivered := fs.Frames("delivered")
	if len(delivered) != 1 {
		t.Fatalf("%d delivered frames for one burst, want 1", len(delivered))
	}
	marks := delivered[0].(*protocol.Delivered).Marks
	if len(marks) != 1 || marks[0] != (protocol.Mark{Conv: dm, Seq: n}) {
		t.Fatalf("delivered marks %+v, want one at %d", marks, n)
	}
}

// TestCloseEndsEvents checks that Close closes the Events channel, so a UI
// waiting on it learns that the client has stopped.
func TestCloseEndsEvents(t *testing.T) {
	st, err := localstore.Open(filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := New(Config{URL: "ws://127.0.0.1:1/ws", User: "alice", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, open := <-c.Events():
			if !open {
				return
			}
		case <-deadline:
			t.Fatal("Events is still open 10s after Close")
		}
	}
}
