package client

import (
	"testing"

	"github.com/imcore/im/internal/fakeserver"
	"github.com/imcore/im/protocol"
)

// A message of the user's own (from another device) that arrives after a
// newer one still reads the conversation up to it (docs 11.9: concurrent
// senders' messages may arrive out of seq order).
func TestOwnMessageOutOfOrderStillReads(t *testing.T) {
	const dm = "d:alice:bob"
	first := chatMsg(dm, 1, "bob")
	once := onlyOnce()
	srv := fakeserver.Start(t, fakeserver.Options{Handle: func(c *fakeserver.Conn, f protocol.Frame) bool {
		s, ok := f.(*protocol.Sync)
		if !ok || s.SubBiz != "" || !once() {
			return false
		}
		c.Push(chatWithBob(s.Ref, first, 1))
		c.Push(&protocol.MsgPush{Msg: first})
		c.Push(&protocol.MsgPush{Msg: chatMsg(dm, 3, "bob")})
		c.Push(&protocol.MsgPush{Msg: chatMsg(dm, 2, "alice")}) // from alice's phone
		c.Push(&protocol.Typing{Conv: dm, User: "bob"})         // marker
		return true
	}})
	alice := newProfile(t, srv.URL, "alice", "").start()
	alice.waitEvent("the marker", func(e Event) bool { _, ok := e.(TypingEvent); return ok })
	s, ok := alice.session(dm)
	if !ok || s.WriteSeq != 3 {
		t.Fatalf("session %+v", s)
	}
	if s.ReadSeq < 2 || s.UnreadCount != 1 {
		t.Fatalf("after alice's own seq 2 the session has read_seq %d and %d unread, want 2 and 1", s.ReadSeq, s.UnreadCount)
	}
}
