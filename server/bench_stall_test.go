package server_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/ownership"
	"github.com/imcore/im/server/servertest"
)

// The figures of a node that stops answering, on the real binary (two
// nodes on the services of scripts/services.sh):
//
//	go test -run '^$' -bench 'PausedOwner|KilledNodes' -benchtime 20x ./server/
//
// Each reports the slowest and the median of its runs, and how many runs
// stayed within the bound the deployment promises.

// pausedConvs is how many conversations of the paused owner a run sends to
// (imbench dm 10 × 1: one send in flight each).
const pausedConvs = 10

// BenchmarkPausedOwnerAnswersAgain: node A is stopped by SIGSTOP for 15 s
// while alice keeps sending, through node B, to ten conversations A owns,
// one send in flight each, each send repeated until answered. A run's
// figure is the time from the freeze until every conversation was
// answered again; the bound is 10 s (a 5 s lease, and its margin). Once
// A is resumed, every message acknowledged must be in history, without
// a gap.
func BenchmarkPausedOwnerAnswersAgain(b *testing.B) {
	nodes := servertest.Processes(b, servertest.ScaledOut(b), 2)
	a, bNode := nodes[0], nodes[1]
	awaitSpread(b, a, bNode)
	alice := bNode.Env().Dial(b, "alice", "phone")
	alice.Patience = time.Minute
	var worst []time.Duration
	for run := range b.N {
		// The conversations A owns now (it takes its shards back after
		// each run).
		awaitSpread(b, a, bNode)
		convs := convsOwnedBy(b, a, "A", run)
		for _, conv := range convs {
			alice.Send(conv, fmt.Sprintf("warm-%d", run), "the link to A is open")
		}
		a.Pause()
		frozen := time.Now()
		var (
			mu   sync.Mutex
			last time.Duration
			wg   sync.WaitGroup
		)
		for i, conv := range convs {
			wg.Go(func() {
				c := bNode.Env().Dial(servertest.Async{TB: b}, "alice", fmt.Sprint("d", i))
				c.Patience = time.Minute
				c.Send(conv, fmt.Sprintf("during-%d", run), "while A is frozen")
				mu.Lock()
				last = max(last, time.Since(frozen))
				mu.Unlock()
				c.Close() // a user may hold 64 connections at most: one per send
			})
		}
		wg.Wait()
		if rest := 15*time.Second - time.Since(frozen); rest > 0 {
			time.Sleep(rest) // the scenario: A stays frozen 15 s
		}
		a.Resume()
		worst = append(worst, last)
		for _, conv := range convs {
			checkNoGap(b, alice, conv)
		}
	}
	reportRuns(b, worst, 10*time.Second)
}

// BenchmarkKilledNodesAnswerAfterRestart: both nodes are killed and started
// again under their ids; a run's figure is the time from both answering
// /readyz until the first request (a repeat of an acknowledged send) is
// answered, with its original seq. The bound is 2 s.
func BenchmarkKilledNodesAnswerAfterRestart(b *testing.B) {
	nodes := servertest.Processes(b, servertest.ScaledOut(b), 2)
	a, bNode := nodes[0], nodes[1]
	awaitSpread(b, a, bNode)
	var took []time.Duration
	for run := range b.N {
		awaitSpread(b, a, bNode)
		conv := convOwnedBy(b, a, "A")
		alice := bNode.Env().Dial(b, "alice", "phone")
		id := fmt.Sprint("m", run)
		sent := alice.Send(conv, id, "before the kill")
		alice.Close()
		a.Kill()
		bNode.Kill()
		a.Start()
		bNode.Start()
		ready := time.Now()
		alice = bNode.Env().Dial(b, "alice", "phone")
		again := alice.Send(conv, id, "before the kill")
		took = append(took, time.Since(ready))
		if again.Seq != sent.Seq {
			b.Fatalf("run %d: the repeat got seq %d, want %d", run, again.Seq, sent.Seq)
		}
		alice.Close()
	}
	reportRuns(b, took, 2*time.Second)
}

// convsOwnedBy returns pausedConvs direct chats of alice that node id
// owns, as /status on node says, fresh for run.
func convsOwnedBy(b *testing.B, node *servertest.Process, id string, run int) []string {
	b.Helper()
	var out []string
	for i := 0; len(out) < pausedConvs && i < 10000; i++ {
		conv, _ := protocol.DirectConv("alice", fmt.Sprintf("r%dpeer%d", run, i))
		if node.OwnsShard(b, id, int(ownership.ShardOfConv(conv))) {
			out = append(out, conv)
		}
	}
	if len(out) < pausedConvs {
		b.Fatalf("node %s owns %d of alice's chats, want %d", id, len(out), pausedConvs)
	}
	return out
}

// checkNoGap checks conv's history runs from seq 1 without a gap.
func checkNoGap(b *testing.B, c *servertest.Client, conv string) {
	b.Helper()
	page := c.RequestOK(&protocol.History{Conv: conv, Limit: 100}).(*protocol.Messages)
	for i, m := range page.Messages {
		if m.Seq != int64(i+1) {
			b.Fatalf("history of %s has a gap: %s", conv, servertest.JSON(page.Messages))
		}
	}
}

// reportRuns reports the slowest and the median of runs, in seconds, and
// how many stayed within bound.
func reportRuns(b *testing.B, runs []time.Duration, bound time.Duration) {
	sorted := slices.Sorted(slices.Values(runs))
	within := 0
	for _, d := range runs {
		if d <= bound {
			within++
		}
	}
	b.ReportMetric(sorted[len(sorted)-1].Seconds(), "max-s")
	b.ReportMetric(sorted[len(sorted)/2].Seconds(), "median-s")
	b.ReportMetric(float64(within), "runs-within-bound")
	b.ReportMetric(0, "ns/op")
}
