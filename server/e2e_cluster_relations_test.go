package server_test

import (
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// TestClusterRelationsAcrossNodes: on two nodes of the scaled-out
// deployment, a reply, an edit, a deletion and reactions made on node A
// reach node B live, a refusal comes back from the conversation's owner as
// it is (routing/wire_test.go sends one across a node link), and
// a member offline meanwhile, connecting to node B, is replayed every
// target as it stands, as history shows it too.
func TestClusterRelationsAcrossNodes(t *testing.T) {
	nodes := servertest.Cluster(t, 2)
	a, b := nodes[0], nodes[1]
	alice := a.DialReplayed(t, "alice", "phone")
	bob := b.DialReplayed(t, "bob", "phone")
	g := alice.CreateGroup(protocol.CreateGroup{Title: "team", Members: []string{"bob", "carol"}})
	bob.ExpectMsg(g.Conv)

	m := alice.SendMsg(g.Conv, "helo", bob)
	gone := alice.SendMsg(g.Conv, "wrong chat", bob)
	reply := bob.Reply(g.Conv, "hi!", m.Seq, alice)
	edit := alice.Relate(g.Conv, protocol.KindEdit, m.Seq, "hello", bob)
	bob.Relate(g.Conv, protocol.KindReaction, m.Seq, "👍", alice)
	alice.Relate(g.Conv, protocol.KindReaction, m.Seq, "👍", bob)
	del := alice.Relate(g.Conv, protocol.KindDelete, gone.Seq, "", bob)
	bob.RelateError(g.Conv, protocol.KindEdit, m.Seq, "bob's words", protocol.CodeForbidden)
	bob.RelateError(g.Conv, protocol.KindReaction, gone.Seq, "👍", protocol.CodeInvalid)

	wantTarget := func(c *servertest.Client, got []protocol.Message) {
		t.Helper()
		byseq := map[int64]protocol.Message{}
		for _, msg := range got {
			byseq[msg.Seq] = msg
		}
		if x := byseq[m.Seq]; x.Body != "hello" || x.EditedTS != edit.ServerTS || servertest.JSON(x.ReactionList()) != `[{"body":"👍","users":["bob","alice"]}]` {
			t.Fatalf("%s on node B: target %s, want it edited with two 👍", c.User, servertest.JSON(x))
		}
		if x := byseq[gone.Seq]; !x.Deleted || x.Body != "" {
			t.Fatalf("%s on node B: deleted message %s, want deleted and empty", c.User, servertest.JSON(x))
		}
		if x := byseq[reply.Seq]; x.ReplyTo != m.Seq {
			t.Fatalf("%s on node B: reply %s, want reply_to %d", c.User, servertest.JSON(x), m.Seq)
		}
	}
	wantTarget(bob, bob.WantHistory(servertest.After(g.Conv, 0), false, servertest.SeqRange(1, del.Seq)...))

	carol := b.Dial(t, "carol", "laptop")
	var replayed []protocol.Message
	for len(replayed) == 0 || replayed[len(replayed)-1].Seq < del.Seq {
		replayed = append(replayed, carol.ExpectMsg(g.Conv))
	}
	wantTarget(carol, replayed)
	history := carol.WantHistory(servertest.After(g.Conv, 0), false, servertest.SeqRange(1, del.Seq)...)
	if servertest.JSON(history) != servertest.JSON(replayed) {
		t.Fatalf("carol's history %s differs from her replay %s", servertest.JSON(history), servertest.JSON(replayed))
	}
	sessions, _ := carol.SyncAll("")
	if s := sessions[g.Conv]; s.LastMsg == nil || s.LastMsg.Seq != reply.Seq || s.WriteSeq != del.Seq {
		t.Fatalf("carol's session %s, want last_msg the reply %d (relation entries are never last) at write_seq %d", servertest.JSON(s), reply.Seq, del.Seq)
	}
}
