package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/imcore/im/server/servertest"
)

// ownShards returns the shards node says it serves now.
func ownShards(t *testing.T, node *servertest.Env) []int {
	t.Helper()
	id := node.Config.Cluster.NodeID
	for _, n := range nodeStatus(t, node).Nodes {
		if n.ID == id {
			return n.Shards
		}
	}
	return nil
}

// spread reports whether the nodes serve every shard between them, each
// some.
func spread(t *testing.T, nodes ...*servertest.Env) bool {
	t.Helper()
	total := 0
	for _, n := range nodes {
		held := len(ownShards(t, n))
		if held == 0 {
			return false
		}
		total += held
	}
	return total == 256
}

// TestClusterNodesJoinAndLeaveWhileChatting: a third node joins and then
// one of the first two leaves (a graceful stop, as on SIGTERM) while a
// client keeps sending to conversations whose owners move: every send is
// answered sent (at worst later), none is refused, and history holds every
// message acknowledged, at its seq, without a gap.
func TestClusterNodesJoinAndLeaveWhileChatting(t *testing.T) {
	servertest.OncePerSuite(t)
	so := servertest.ScaledOut(t)
	nodes := servertest.ClusterOn(t, so, 2)
	a, b := nodes[0], nodes[1]
	alice := a.DialReplayed(t, "alice", "phone")
	const peers = 16 // their conversations hash onto shards all over
	convs := make([]string, peers)
	for i := range convs {
		convs[i] = servertest.Direct("alice", fmt.Sprintf("peer%02d", i))
	}
	acked := map[string]map[int64]string{} // conv → seq → msg_id
	n := 0
	round := func(tag string) {
		for _, conv := range convs {
			n++
			id := fmt.Sprintf("%s-%d", tag, n)
			sent := alice.Send(conv, id, "body of "+id)
			if acked[conv] == nil {
				acked[conv] = map[int64]string{}
			}
			if prev, dup := acked[conv][sent.Seq]; dup {
				t.Fatalf("%s: seq %d given to %s and %s", conv, sent.Seq, prev, id)
			}
			acked[conv][sent.Seq] = id
		}
	}
	// sendUntil keeps sending until cond holds, within a bound: the
	// ownership settles meanwhile.
	sendUntil := func(what string, cond func() bool) {
		t.Helper()
		start := time.Now()
		deadline := start.Add(30 * time.Second)
		r := 0
		for ; !cond(); r++ {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s", what)
			}
			round(fmt.Sprintf("%s%d", what, r))
		}
		t.Logf("%s: ownership settled in %v, %d sends meanwhile", what, time.Since(start).Round(time.Millisecond), r*peers)
		round(what + "-after")
	}

	sendUntil("two-nodes", func() bool { return spread(t, a, b) })
	c := servertest.Node(t, so, "C")
	sendUntil("c-joined", func() bool { return spread(t, a, b, c) })
	b.Stop() // hands its shards over, then stops
	sendUntil("b-left", func() bool { return spread(t, a, c) })

	for _, conv := range convs {
		page := alice.History(servertest.After(conv, 0))
		for i, m := range page.Messages {
			if m.Seq != int64(i+1) {
				t.Fatalf("%s: message %d of history has seq %d (a gap)", conv, i+1, m.Seq)
			}
			if want := acked[conv][m.Seq]; want != m.MsgID {
				t.Fatalf("%s: seq %d holds %q, acknowledged for %q", conv, m.Seq, m.MsgID, want)
			}
		}
		if len(page.Messages) != len(acked[conv]) {
			t.Fatalf("%s: history holds %d messages, %d were acknowledged", conv, len(page.Messages), len(acked[conv]))
		}
	}
}
