package server_test

import (
	"fmt"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/servertest"
)

// convOwnedBy returns a direct chat of alice whose shard node id owns,
// as /status on node says.
func convOwnedBy(t testing.TB, node *servertest.Process, id string) string {
	t.Helper()
	for i := range 1000 {
		conv, _ := protocol.DirectConv("alice", fmt.Sprintf("peer%d", i))
		if node.OwnsShard(t, id, int(ownership.ShardOfConv(conv))) {
			return conv
		}
	}
	t.Fatalf("node %s owns none of alice's first thousand direct chats", id)
	return ""
}

// awaitSpread waits until two nodes serve every shard between them.
func awaitSpread(t testing.TB, a, b *servertest.Process) {
	t.Helper()
	a.Env().WaitFor("the shards spread over both nodes", func() bool {
		held := 0
		for _, n := range a.Status(t).Nodes {
			if len(n.Shards) == 0 {
				return false
			}
			held += len(n.Shards)
		}
		return held == ownership.Shards
	})
}

// TestAPausedOwnersConversationsAnswerThroughTheOtherNode: an owner
// stopped by SIGSTOP (a long GC pause, a stalled VM) keeps its sockets
// open and answers nothing. A send forwarded to it is answered through
// the other node while it is still paused: the link to it is dropped once
// silent for a lease, and by then its lease has lapsed and the other node
// serves its conversations. Woken, it serves none of them on its stale
// lease, and the conversation has no gap.
func TestAPausedOwnersConversationsAnswerThroughTheOtherNode(t *testing.T) {
	nodes := servertest.Processes(t, servertest.ScaledOut(t), 2, "-lease", "2s")
	a, b := nodes[0], nodes[1]
	awaitSpread(t, a, b)
	conv := convOwnedBy(t, a, "A")
	alice := b.Env().Dial(t, "alice", "phone")
	// The link from B to A is open and in use.
	if sent := alice.Send(conv, "m1", "before the pause"); sent.Seq != 1 {
		t.Fatalf("first message at seq %d", sent.Seq)
	}
	a.Pause()
	sent := alice.Send(conv, "m2", "while its owner is paused")
	a.Resume()
	if sent.Seq != 2 {
		t.Fatalf("the send during the pause got seq %d, want 2", sent.Seq)
	}
	// A, woken, learns it lost the conversation; both nodes show the
	// same log, without a gap, and a third send lands after it.
	if sent := alice.Send(conv, "m3", "after the pause"); sent.Seq != 3 {
		t.Fatalf("the send after the pause got seq %d, want 3", sent.Seq)
	}
	for _, node := range nodes {
		parsed, _ := protocol.ParseConv(conv)
		bob := node.Env().Dial(t, parsed.Peer("alice"), "laptop")
		page := bob.RequestOK(&protocol.History{Conv: conv, Limit: 10}).(*protocol.Messages)
		if len(page.Messages) != 3 {
			t.Fatalf("history on %s holds %d messages, want 3: %s", node.Addr, len(page.Messages), servertest.JSON(page.Messages))
		}
		for i, m := range page.Messages {
			if m.Seq != int64(i+1) {
				t.Fatalf("history on %s: %s", node.Addr, servertest.JSON(page.Messages))
			}
		}
	}
}

// TestNodesKilledAndRestartedServeAtOnce: both nodes SIGKILLed and started
// again under their ids serve their first request without waiting for
// their earlier lives' leases to expire (here a minute, far beyond the
// test's patience): a repeat of an acknowledged send is answered with its
// seq, and a new send after it.
func TestNodesKilledAndRestartedServeAtOnce(t *testing.T) {
	nodes := servertest.Processes(t, servertest.ScaledOut(t), 2, "-lease", "1m")
	a, b := nodes[0], nodes[1]
	awaitSpread(t, a, b)
	conv := convOwnedBy(t, a, "A")
	alice := b.Env().Dial(t, "alice", "phone")
	first := alice.Send(conv, "m1", "before the kill")
	a.Kill()
	b.Kill()
	a.Start()
	b.Start()
	alice = b.Env().Dial(t, "alice", "phone")
	if again := alice.Send(conv, "m1", "before the kill"); again.Seq != first.Seq {
		t.Fatalf("the repeat got seq %d, want %d", again.Seq, first.Seq)
	}
	if next := alice.Send(conv, "m2", "after the restart"); next.Seq != first.Seq+1 {
		t.Fatalf("the next send got seq %d, want %d", next.Seq, first.Seq+1)
	}
}
