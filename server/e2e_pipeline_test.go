package server_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

// nextAnswer returns the next frame, in arrival order, answering one of
// ids.
func nextAnswer(c *servertest.Client, ids []string) protocol.Frame {
	c.T.Helper()
	return c.Expect("an answer to one of "+fmt.Sprint(ids), func(f protocol.Frame) bool {
		return slices.Contains(ids, servertest.RequestID(f))
	})
}

// Sends written one after another without waiting take their seqs in the
// order written and are answered in it; a request after them (sync) is
// answered after them and sees them; the recipient gets them in order.
func TestPipelinedSendsKeepOrder(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a1")
	bob := env.Dial(t, "bob", "b1")
	const n = 30
	conv := "d:alice:bob"
	var ids []string
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("s%d", i)
		ids = append(ids, id)
		alice.Write(&protocol.Send{Ref: protocol.Ref{ID: id}, Conv: conv, MsgID: fmt.Sprintf("m-%d", i), Body: fmt.Sprintf("body %d", i), ClientTS: 1})
	}
	alice.Write(&protocol.Sync{Ref: protocol.Ref{ID: "sync"}})
	ids = append(ids, "sync")

	for i := 1; i <= n; i++ {
		f := nextAnswer(alice, ids)
		sent, ok := f.(*protocol.Sent)
		if !ok || sent.ID != fmt.Sprintf("s%d", i) || sent.Seq != int64(i) || sent.MsgID != fmt.Sprintf("m-%d", i) {
			t.Fatalf("answer %d: %s, want sent s%d with seq %d", i, servertest.Describe(f), i, i)
		}
	}
	f := nextAnswer(alice, ids)
	page, ok := f.(*protocol.Sessions)
	if !ok {
		t.Fatalf("answer after the sends: %s, want the sync's sessions", servertest.Describe(f))
	}
	if len(page.Sessions) != 1 || page.Sessions[0].Conv != conv || page.Sessions[0].WriteSeq != n {
		t.Fatalf("sync after %d pipelined sends: %+v, want %s at write_seq %d", n, page.Sessions, conv, n)
	}
	for i := 1; i <= n; i++ {
		if m := bob.ExpectMsg(conv); m.Seq != int64(i) || m.Body != fmt.Sprintf("body %d", i) {
			t.Fatalf("bob's push %d: seq %d %q, want seq %d %q", i, m.Seq, m.Body, i, fmt.Sprintf("body %d", i))
		}
	}
}

// Receipts written without waiting are answered in order, a refused one in
// its turn, and a request after them is answered after them.
func TestPipelinedReceiptsAnswerInOrder(t *testing.T) {
	env := servertest.Start(t)
	alice := env.Dial(t, "alice", "a1")
	bob := env.Dial(t, "bob", "b1")
	conv := "d:alice:bob"
	for i := 1; i <= 5; i++ {
		alice.Send(conv, fmt.Sprintf("m-%d", i), "hi")
	}
	var ids []string
	for i := 1; i <= 5; i++ {
		ids = append(ids, fmt.Sprintf("d%d", i), fmt.Sprintf("r%d", i))
		bob.Write(&protocol.Delivered{Ref: protocol.Ref{ID: fmt.Sprintf("d%d", i)}, Marks: []protocol.Mark{{Conv: conv, Seq: int64(i)}}})
		bob.Write(&protocol.Read{Ref: protocol.Ref{ID: fmt.Sprintf("r%d", i)}, Marks: []protocol.Mark{{Conv: conv, Seq: int64(i)}}})
	}
	bob.Write(&protocol.Read{Ref: protocol.Ref{ID: "refused"}, Marks: []protocol.Mark{{Conv: "d:alice:carol", Seq: 1}}})
	bob.Write(&protocol.ReceiptsRequest{Ref: protocol.Ref{ID: "info"}, Conv: conv})
	ids = append(ids, "refused", "info")

	for _, want := range ids[:10] {
		if f := nextAnswer(bob, ids); servertest.RequestID(f) != want || f.FrameType() != "ok" {
			t.Fatalf("answer: %s, want ok %s", servertest.Describe(f), want)
		}
	}
	if f := nextAnswer(bob, ids); servertest.RequestID(f) != "refused" || f.FrameType() != "error" {
		t.Fatalf("answer: %s, want the refusal of the read in another's chat", servertest.Describe(f))
	}
	f := nextAnswer(bob, ids)
	info, ok := f.(*protocol.ReceiptsReply)
	if !ok {
		t.Fatalf("answer: %s, want receipts", servertest.Describe(f))
	}
	i := slices.IndexFunc(info.Members, func(r protocol.MemberReceipt) bool { return r.User == "bob" })
	if i < 0 || info.Members[i].DeliveredSeq != 5 || info.Members[i].ReadSeq != 5 {
		t.Fatalf("receipts after bob's pipelined reads: %+v, want bob at 5/5", info.Members)
	}
}
