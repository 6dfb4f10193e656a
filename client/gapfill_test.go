package client

import (
	"fmt"
	"testing"
	"time"

	"github.com/imcore/im/internal/fakeserver"
	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server"
	"github.com/imcore/im/server/servertest"
)

// A device that holds some messages of a conversation but not its start
// fills forward from the highest seq it holds contiguously: every delivered
// mark it sends covers only messages it stored.
func TestGapFillAcknowledgesOnlyStoredMessages(t *testing.T) {
	const dm = "d:alice:bob"
	all := func(from, to int64) []protocol.Message {
		var out []protocol.Message
		for seq := from; seq <= to; seq++ {
			out = append(out, chatMsg(dm, seq, "bob"))
		}
		return out
	}
	srv := fakeserver.Start(t, fakeserver.Options{
		OnOpen: func(c *fakeserver.Conn) {
			if c.N() != 1 {
				return
			}
			// The start of the replay of bob's 900 pending messages
			// (alice's other device acknowledged 1..100).
			for _, m := range all(101, 110) {
				c.Push(&protocol.MsgPush{Msg: m})
			}
		},
		Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
			h, ok := f.(*protocol.History)
			if !ok {
				return false
			}
			page := &protocol.Messages{Ref: h.Ref, Conv: dm}
			switch {
			case h.AfterSeq != nil:
				from := *h.AfterSeq + 1
				to := min(from+int64(max(h.Limit, 20))-1, 1000)
				page.Messages, page.HasMore = all(from, to), to < 1000
			case h.BeforeSeq == 0:
				limit := int64(max(h.Limit, 20))
				page.Messages, page.HasMore = all(1000-limit+1, 1000), true
			default:
				page.Messages = all(max(1, h.BeforeSeq-int64(h.Limit)), h.BeforeSeq-1)
				page.HasMore = h.BeforeSeq-int64(h.Limit) > 1
			}
			c.Push(page)
			return true
		},
	})
	alice := newProfile(t, srv.URL, "alice", "").start()
	alice.waitFor("a delivered mark", func() bool { return len(srv.Frames("delivered")) > 0 })

	held := heldSeqs(alice, dm)
	for _, f := range srv.Frames("delivered") {
		for _, m := range f.(*protocol.Delivered).Marks {
			for seq := int64(101); seq <= m.Seq; seq++ {
				if !held[seq] {
					t.Fatalf("delivered %s up to %d while seq %d (above the oldest held, 101) is not stored; held %d messages", m.Conv, m.Seq, seq, len(held))
				}
			}
		}
	}
}

// A new device with many conversations fills them all although the
// server rate-limits part of the burst of history requests: a gap fill
// refused for a passing reason is tried again after a backoff.
func TestRateLimitedGapFillIsRetried(t *testing.T) {
	env := servertest.Start(t, func(c *server.Config) {
		c.Gateway.RateLimit, c.Gateway.RateBurst = 5, 10
	})
	const peers = 30
	var marks []protocol.Mark
	for i := range peers {
		peer := fmt.Sprintf("p%02d", i)
		dm := conv(t, "alice", peer)
		env.Dial(t, peer, "phone").Send(dm, "hi-"+peer, "hello from "+peer)
		marks = append(marks, protocol.Mark{Conv: dm, Seq: 1})
	}
	// Alice's old device holds them all: nothing is pending for her.
	env.Dial(t, "alice", "old").RequestOK(&protocol.Delivered{Marks: marks})

	alice := newProfile(t, env.URL, "alice", "").start()
	alice.waitFor("the session list", func() bool {
		list, _, _ := alice.client.Sessions("")
		return len(list) == peers
	})
	empty := func() []string {
		var out []string
		for _, m := range marks {
			if len(alice.messages(m.Conv)) == 0 {
				out = append(out, m.Conv)
			}
		}
		return out
	}
	deadline := time.Now().Add(10 * time.Second)
	alice.waitFor("every conversation's message (or the deadline)", func() bool {
		return len(empty()) == 0 || time.Now().After(deadline)
	})
	if e := empty(); len(e) > 0 {
		t.Fatalf("%d of %d conversations still hold nothing after 10s: %v", len(e), peers, e)
	}
}
