package client

import (
	"testing"
	"time"

	"github.com/imcore/im/internal/fakeserver"
	"github.com/imcore/im/protocol"
)

// A sync refused for a passing reason (internal, rate_limited) is tried
// again after a backoff.
func TestRefusedSyncIsRetried(t *testing.T) {
	const dm = "d:alice:bob"
	once := onlyOnce()
	srv := fakeserver.Start(t, fakeserver.Options{Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
		s, ok := f.(*protocol.Sync)
		if !ok {
			return false
		}
		if once() {
			c.Push(internalError(s.Ref))
		} else {
			c.Push(chatWithBob(s.Ref, chatMsg(dm, 1, "bob"), 1))
		}
		return true
	}})
	alice := newProfile(t, srv.URL, "alice", "").start()
	alice.waitEvent("the refused sync", func(e Event) bool { ev, ok := e.(ErrorEvent); return ok && ev.Op == "sync" })
	deadline := time.Now().Add(10 * time.Second)
	alice.waitFor("the session list (or the deadline)", func() bool {
		list, _, _ := alice.client.Sessions("")
		return len(list) == 1 || time.Now().After(deadline)
	})
	if list, _, _ := alice.client.Sessions(""); len(list) != 1 {
		t.Fatalf("the list is still empty 10s after one refused sync (%d sync frames sent)", len(srv.Frames("sync")))
	}
}

// A read frame refused for a passing reason (internal) is sent again.
func TestReadRefusedInternalIsRetried(t *testing.T) {
	const dm = "d:alice:bob"
	once := onlyOnce()
	srv := fakeserver.Start(t, fakeserver.Options{Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
		switch f := f.(type) {
		case *protocol.Sync:
			if f.SubBiz != "" {
				return false
			}
			c.Push(chatWithBob(f.Ref, chatMsg(dm, 3, "bob"), 3))
			return true
		case *protocol.Read:
			if once() {
				c.Push(internalError(f.Ref))
				return true
			}
		}
		return false
	}})
	alice := newProfile(t, srv.URL, "alice", "").start()
	alice.waitFor("the session", func() bool { _, ok := alice.session(dm); return ok })
	alice.client.MarkRead(dm, 3)
	alice.waitEvent("the refused read", func(e Event) bool { ev, ok := e.(ErrorEvent); return ok && ev.Op == "read" })
	deadline := time.Now().Add(10 * time.Second)
	alice.waitFor("the read sent again (or the deadline)", func() bool {
		return len(srv.Frames("read")) >= 2 || time.Now().After(deadline)
	})
	if n := len(srv.Frames("read")); n < 2 {
		s, _ := alice.session(dm)
		t.Fatalf("%d read frame(s) in 10s: the refused read was dropped (the local session shows %d unread)", n, s.UnreadCount)
	}
}

// A delivered frame refused for a passing reason (internal) counts as not
// acknowledged and is sent again.
func TestDeliveredRefusedInternalIsRetried(t *testing.T) {
	const dm = "d:alice:bob"
	once := onlyOnce()
	srv := fakeserver.Start(t, fakeserver.Options{
		OnOpen: func(c *fakeserver.Conn) {
			for seq := int64(1); seq <= 3; seq++ {
				c.Push(&protocol.MsgPush{Msg: chatMsg(dm, seq, "bob")})
			}
		},
		Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
			d, ok := f.(*protocol.Delivered)
			if ok && once() {
				c.Push(internalError(d.Ref))
				return true
			}
			return false
		},
	})
	alice := newProfile(t, srv.URL, "alice", "").start()
	alice.waitFor("the first delivered frame", func() bool { return len(srv.Frames("delivered")) >= 1 })
	deadline := time.Now().Add(10 * time.Second)
	alice.waitFor("the delivered frame sent again (or the deadline)", func() bool {
		return len(srv.Frames("delivered")) >= 2 || time.Now().After(deadline)
	})
	if n := len(srv.Frames("delivered")); n < 2 {
		t.Fatalf("%d delivered frame(s) in 10s: the refused acknowledgement was never repeated", n)
	}
}
