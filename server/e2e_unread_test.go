package server_test

import (
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// TestUnreadSkipsSystemMessages: a group's created, added and renamed
// lines are events, not messages (PROTOCOL.md, Sessions): a member who has
// read nothing has nothing unread until a text message arrives.
func TestUnreadSkipsSystemMessages(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob"}})
	alice.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupAdd, Users: []string{"carol"}})
	alice.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupRename, Title: "core"})
	wantUnread(t, bob, g.Conv, 3, 0, 0)

	alice.SendMsg(g.Conv, "hello")
	wantUnread(t, bob, g.Conv, 4, 1, 1)
	carol := env.Dial(t, "carol", "c")
	wantUnread(t, carol, g.Conv, 4, 1, 1) // joined after seq 1: only "hello"
}

// TestUnreadPartialReadCountsOnlyMessages: a read below write_seq leaves
// unread the messages above it, not the events among them.
func TestUnreadPartialReadCountsOnlyMessages(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a")
	bob := env.Dial(t, "bob", "b")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob"}})          // 1
	alice.SendMsg(g.Conv, "one")                                                                   // 2
	alice.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupAdd, Users: []string{"carol"}}) // 3
	alice.SendMsg(g.Conv, "two")                                                                   // 4
	alice.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupRename, Title: "core"})         // 5
	alice.SendMsg(g.Conv, "three")                                                                 // 6
	alice.GroupOp(protocol.GroupOp{Conv: g.Conv, Op: protocol.GroupRename, Title: "x"})            // 7
	wantUnread(t, bob, g.Conv, 7, 3, 3)

	bob.MarkRead(g.Conv, 2)
	wantUnread(t, bob, g.Conv, 7, 2, 2) // 4 and 6
	bob.MarkRead(g.Conv, 5)
	wantUnread(t, bob, g.Conv, 7, 1, 1) // 6
	bob.MarkRead(g.Conv, 6)
	wantUnread(t, bob, g.Conv, 7, 0, 0)
}

// wantUnread requires c's session of conv at write_seq writeSeq with
// unread unread, and c's total_unread total.
func wantUnread(t *testing.T, c *servertest.Client, conv string, writeSeq, unread, total int64) {
	t.Helper()
	all, page := c.SyncAll("")
	for _, s := range all {
		if s.Conv != conv {
			continue
		}
		if s.WriteSeq != writeSeq || s.UnreadCount != unread {
			t.Fatalf("%s: session at write_seq %d with unread %d, want %d with %d (%s)", c.User, s.WriteSeq, s.UnreadCount, writeSeq, unread, servertest.JSON(s))
		}
		if page.TotalUnread != total {
			t.Fatalf("%s: total_unread %d, want %d", c.User, page.TotalUnread, total)
		}
		return
	}
	t.Fatalf("%s has no session of %s", c.User, conv)
}
