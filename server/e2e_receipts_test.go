package server_test

// End-to-end tests of PROTOCOL.md "Receipts and ticks" (seed 000: two
// boundaries per user and conversation, the status minimum over members).

import (
	"fmt"
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

const rcptAB = "d:alice:bob"

// rcptSendN sends n messages from c in conv and returns the last seq; every
// client in others must receive them.
func rcptSendN(t *testing.T, c *servertest.Client, conv string, n int, others ...*servertest.Client) int64 {
	t.Helper()
	seqs := make([]int64, n)
	for i := range seqs {
		seqs[i] = c.Send(conv, c.User+"-"+c.Device+"-"+c.Env.ID(), "hello "+fmt.Sprint(i)).Seq
	}
	// Taken by seq: a device's replay of its pending deliveries can repeat
	// a live push that raced with its connecting.
	for _, o := range others {
		for _, seq := range seqs {
			o.Expect(fmt.Sprintf("msg %s seq %d", conv, seq), func(f protocol.Frame) bool {
				m, ok := f.(*protocol.MsgPush)
				return ok && m.Msg.Conv == conv && m.Msg.Seq == seq && m.Msg.From == c.User
			})
		}
	}
	return seqs[n-1]
}

// rcptReceipts asks for conv's receipts and returns them by user, checking
// the shape of the answer and the invariant read <= delivered.
func rcptReceipts(t *testing.T, c *servertest.Client, conv string) map[string]protocol.MemberReceipt {
	t.Helper()
	f := c.RequestOK(&protocol.ReceiptsRequest{Conv: conv})
	r, ok := f.(*protocol.ReceiptsReply)
	if !ok {
		t.Fatalf("receipts %s: want receipts, got %s", conv, servertest.Describe(f))
	}
	if r.Conv != conv {
		t.Fatalf("receipts answer names conv %q, want %q", r.Conv, conv)
	}
	out := make(map[string]protocol.MemberReceipt, len(r.Members))
	for _, m := range r.Members {
		if _, dup := out[m.User]; dup {
			t.Fatalf("receipts %s lists %s twice: %+v", conv, m.User, r.Members)
		}
		if m.ReadSeq > m.DeliveredSeq {
			t.Fatalf("receipts %s: %s has read_seq %d above delivered_seq %d", conv, m.User, m.ReadSeq, m.DeliveredSeq)
		}
		out[m.User] = m
	}
	return out
}

// rcptWant checks one member's boundaries in conv.
func rcptWant(t *testing.T, c *servertest.Client, conv, user string, delivered, read int64) {
	t.Helper()
	got, ok := rcptReceipts(t, c, conv)[user]
	if !ok {
		t.Fatalf("receipts %s: %s missing", conv, user)
	}
	if got.DeliveredSeq != delivered || got.ReadSeq != read {
		t.Fatalf("receipts %s: %s at delivered %d read %d, want delivered %d read %d",
			conv, user, got.DeliveredSeq, got.ReadSeq, delivered, read)
	}
}

// rcptExpectStatus requires the next status of conv on every client to
// carry exactly the given boundaries.
func rcptExpectStatus(t *testing.T, conv string, delivered, read int64, clients ...*servertest.Client) {
	t.Helper()
	for _, c := range clients {
		s := c.ExpectStatus(conv)
		if s.DeliveredSeq != delivered || s.ReadSeq != read {
			t.Fatalf("%s/%s: status %s delivered %d read %d, want delivered %d read %d",
				c.User, c.Device, conv, s.DeliveredSeq, s.ReadSeq, delivered, read)
		}
	}
}

// rcptNoStatus proves that no status (of any conversation) reached any of
// the clients. Called after the marking client got its answer: the server
// queues status pushes before that answer, so a status would already be in
// each device's queue, ahead of the barrier's answer.
func rcptNoStatus(t *testing.T, clients ...*servertest.Client) {
	t.Helper()
	for _, c := range clients {
		c.ExpectNone("status", func(f protocol.Frame) bool { return f.FrameType() == "status" })
	}
}

func rcptOK(t *testing.T, c *servertest.Client, f protocol.Frame) {
	t.Helper()
	answer := c.RequestOK(f)
	if answer.FrameType() != "ok" {
		t.Fatalf("%s: want ok, got %s", f.FrameType(), servertest.Describe(answer))
	}
}

func rcptDelivered(conv string, seq int64) *protocol.Delivered {
	return &protocol.Delivered{Marks: []protocol.Mark{{Conv: conv, Seq: seq}}}
}

func rcptRead(conv string, seq int64) *protocol.Read {
	return &protocol.Read{Marks: []protocol.Mark{{Conv: conv, Seq: seq}}}
}

// With an id a mark is answered ok; without one it is applied and answered
// with nothing at all.
func TestMarkAnsweredOnlyWithID(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	rcptSendN(t, alice, rcptAB, 4, bob)

	rcptOK(t, bob, &protocol.Delivered{Ref: protocol.Ref{ID: "d-1"}, Marks: []protocol.Mark{{Conv: rcptAB, Seq: 1}}})
	rcptOK(t, bob, &protocol.Read{Ref: protocol.Ref{ID: "r-1"}, Marks: []protocol.Mark{{Conv: rcptAB, Seq: 1}}})

	isAnswer := func(f protocol.Frame) bool {
		return f.FrameType() == "ok" || f.FrameType() == "error" || servertest.RequestID(f) != ""
	}
	bob.Write(rcptDelivered(rcptAB, 3))
	bob.ExpectNone("answer to a delivered without id", isAnswer)
	// The frame was applied, not dropped: frames of one connection are
	// handled in order, so the barrier above came after it.
	rcptWant(t, bob, rcptAB, "bob", 3, 1)

	bob.Write(rcptRead(rcptAB, 2))
	bob.ExpectNone("answer to a read without id", isAnswer)
	rcptWant(t, bob, rcptAB, "bob", 3, 2)
}

// A mark that raises the minimum is pushed as status to every online device
// of both members, the marking connection included, and to nobody else.
func TestStatusReachesEveryDeviceOfBothMembers(t *testing.T) {
	env := servertest.Start(t)
	aliceLaptop := env.DialOnline(t, "alice", "laptop")
	alicePhone := env.DialOnline(t, "alice", "phone")
	bobLaptop := env.DialOnline(t, "bob", "laptop")
	bobPhone := env.DialOnline(t, "bob", "phone")
	carol := env.DialOnline(t, "carol", "laptop")
	all := []*servertest.Client{aliceLaptop, alicePhone, bobLaptop, bobPhone}

	rcptSendN(t, aliceLaptop, rcptAB, 3, alicePhone, bobLaptop, bobPhone)
	// Alice's sends move only her own boundaries; bob still holds the
	// minimum at 0, so no status yet.
	rcptNoStatus(t, append(all, carol)...)

	rcptOK(t, bobLaptop, rcptDelivered(rcptAB, 3))
	rcptExpectStatus(t, rcptAB, 3, 0, all...)
	rcptNoStatus(t, append(all, carol)...) // exactly one each

	rcptOK(t, bobPhone, rcptRead(rcptAB, 2))
	rcptExpectStatus(t, rcptAB, 3, 2, all...)
	rcptNoStatus(t, append(all, carol)...)

	rcptOK(t, bobLaptop, rcptRead(rcptAB, 3))
	rcptExpectStatus(t, rcptAB, 3, 3, all...)
	rcptNoStatus(t, append(all, carol)...)
}

// A status is pushed only when a minimum rises: repeated, lower and clamped
// marks that change nothing push nothing, and in a frame with several
// conversations only those whose minimum rose get a status.
func TestStatusOnlyOnRise(t *testing.T) {
	env := servertest.Start(t)
	aliceLaptop := env.DialOnline(t, "alice", "laptop")
	alicePhone := env.DialOnline(t, "alice", "phone")
	bobLaptop := env.DialOnline(t, "bob", "laptop")
	bobPhone := env.DialOnline(t, "bob", "phone")
	all := []*servertest.Client{aliceLaptop, alicePhone, bobLaptop, bobPhone}

	rcptSendN(t, aliceLaptop, rcptAB, 3, alicePhone, bobLaptop, bobPhone)
	rcptOK(t, bobLaptop, rcptDelivered(rcptAB, 2))
	rcptExpectStatus(t, rcptAB, 2, 0, all...)

	noRise := []struct {
		name string
		f    protocol.Frame
	}{
		{"repeated delivered", rcptDelivered(rcptAB, 2)},
		{"lower delivered", rcptDelivered(rcptAB, 1)},
		{"delivered 0", rcptDelivered(rcptAB, 0)},
		{"read 0", rcptRead(rcptAB, 0)},
	}
	for _, c := range noRise {
		rcptOK(t, bobPhone, c.f)
		rcptNoStatus(t, all...)
		rcptWant(t, aliceLaptop, rcptAB, "bob", 2, 0)
	}

	// Above the newest seq: clamped to 3, a rise.
	rcptOK(t, bobLaptop, rcptDelivered(rcptAB, 50))
	rcptExpectStatus(t, rcptAB, 3, 0, all...)
	// Again: still clamped to 3, no rise.
	rcptOK(t, bobLaptop, rcptDelivered(rcptAB, 50))
	rcptNoStatus(t, all...)

	// Alice marking her own conversation changes none of her boundaries
	// (sending implied reading), so the minimum cannot rise.
	rcptOK(t, aliceLaptop, rcptRead(rcptAB, 3))
	rcptNoStatus(t, all...)

	// One frame, two conversations: d:bob:carol holds no message, so its
	// mark clamps to 0 and rises nothing; d:alice:bob's read rises. Two
	// marks for one conversation count as the highest.
	rcptOK(t, bobPhone, &protocol.Read{Marks: []protocol.Mark{
		{Conv: rcptAB, Seq: 1}, {Conv: "d:bob:carol", Seq: 5}, {Conv: rcptAB, Seq: 2},
	}})
	rcptExpectStatus(t, rcptAB, 3, 2, all...)
	rcptNoStatus(t, all...) // neither a second one for d:alice:bob nor one for d:bob:carol
	rcptWant(t, bobPhone, "d:bob:carol", "bob", 0, 0)

	// A read at the level already read is not a rise either.
	rcptOK(t, bobLaptop, rcptRead(rcptAB, 2))
	rcptNoStatus(t, all...)
}

// Boundaries only go up, are clamped to the newest seq, and read implies
// delivered.
func TestMarkBoundaries(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	carol := env.DialOnline(t, "carol", "laptop")

	rcptSendN(t, alice, rcptAB, 3, bob)
	rcptWant(t, alice, rcptAB, "alice", 3, 3) // sending implies reading
	rcptWant(t, alice, rcptAB, "bob", 0, 0)

	rcptOK(t, bob, rcptDelivered(rcptAB, 100))
	rcptWant(t, alice, rcptAB, "bob", 3, 0) // clamped to the newest seq
	rcptOK(t, bob, rcptDelivered(rcptAB, 1))
	rcptWant(t, alice, rcptAB, "bob", 3, 0) // a lower mark is ignored
	rcptOK(t, bob, rcptRead(rcptAB, 2))
	rcptWant(t, alice, rcptAB, "bob", 3, 2)
	rcptOK(t, bob, rcptRead(rcptAB, 1))
	rcptWant(t, alice, rcptAB, "bob", 3, 2) // read never goes down either

	// The clamp is real: a message stored after a too-high mark is not
	// covered by it.
	rcptSendN(t, alice, rcptAB, 1, bob)
	rcptWant(t, alice, rcptAB, "bob", 3, 2)
	rcptOK(t, bob, rcptRead(rcptAB, 1000))
	rcptWant(t, alice, rcptAB, "bob", 4, 4) // read clamped, delivered follows

	// Read implies delivered.
	const convAC = "d:alice:carol"
	rcptSendN(t, alice, convAC, 5, carol)
	rcptOK(t, carol, rcptDelivered(convAC, 1))
	rcptWant(t, alice, convAC, "carol", 1, 0)
	rcptOK(t, carol, rcptRead(convAC, 3))
	rcptWant(t, alice, convAC, "carol", 3, 3)
	rcptOK(t, carol, rcptDelivered(convAC, 2))
	rcptWant(t, alice, convAC, "carol", 3, 3)
	rcptOK(t, carol, rcptDelivered(convAC, 4))
	rcptWant(t, alice, convAC, "carol", 4, 3)
	rcptOK(t, carol, rcptRead(convAC, 99))
	rcptWant(t, alice, convAC, "carol", 5, 5)
}

// A reply is an implicit read: the replier's boundaries move to its own
// message, so the other side sees its earlier messages read.
func TestReplyIsImplicitRead(t *testing.T) {
	env := servertest.Start(t)
	aliceLaptop := env.DialOnline(t, "alice", "laptop")
	alicePhone := env.DialOnline(t, "alice", "phone")
	bobLaptop := env.DialOnline(t, "bob", "laptop")
	bobPhone := env.DialOnline(t, "bob", "phone")
	all := []*servertest.Client{aliceLaptop, alicePhone, bobLaptop, bobPhone}

	last := rcptSendN(t, aliceLaptop, rcptAB, 3, alicePhone, bobLaptop, bobPhone)
	rcptNoStatus(t, all...)

	reply := bobLaptop.Send(rcptAB, "bob-reply", "got them")
	if reply.Seq != last+1 {
		t.Fatalf("reply seq %d, want %d", reply.Seq, last+1)
	}
	for _, c := range []*servertest.Client{aliceLaptop, alicePhone, bobPhone} {
		f := c.Expect("the reply", func(f protocol.Frame) bool {
			m, ok := f.(*protocol.MsgPush)
			return ok && m.Msg.MsgID == "bob-reply"
		})
		if m := f.(*protocol.MsgPush).Msg; m.Seq != reply.Seq || m.From != "bob" || m.Conv != rcptAB {
			t.Fatalf("%s/%s: reply pushed as %+v", c.User, c.Device, m)
		}
	}
	// Alice's boundaries are at 3 (her own messages), bob's at 4: the
	// minimum is 3 on both sides, covering alice's messages 1..3.
	rcptExpectStatus(t, rcptAB, last, last, all...)
	rcptNoStatus(t, all...)
	rcptWant(t, aliceLaptop, rcptAB, "bob", reply.Seq, reply.Seq)
	rcptWant(t, aliceLaptop, rcptAB, "alice", last, last)

	// Alice reading the reply brings both minima to 4.
	rcptOK(t, alicePhone, rcptRead(rcptAB, reply.Seq))
	rcptExpectStatus(t, rcptAB, reply.Seq, reply.Seq, all...)
}

// The receipts request lists every member with its boundaries; only members
// may ask, about a valid conversation id.
func TestReceiptsRequest(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	carol := env.DialOnline(t, "carol", "laptop")

	check := func(who *servertest.Client, want map[string][2]int64) {
		t.Helper()
		got := rcptReceipts(t, who, rcptAB)
		if len(got) != len(want) {
			t.Fatalf("receipts %s: %+v, want members %v", rcptAB, got, want)
		}
		for user, w := range want {
			g, ok := got[user]
			if !ok || g.DeliveredSeq != w[0] || g.ReadSeq != w[1] {
				t.Fatalf("receipts %s: %s = %+v (present %v), want delivered %d read %d", rcptAB, user, g, ok, w[0], w[1])
			}
		}
	}

	// Before any message: both members, at zero.
	f := alice.RequestOK(&protocol.ReceiptsRequest{Ref: protocol.Ref{ID: "rc-1"}, Conv: rcptAB})
	if r, ok := f.(*protocol.ReceiptsReply); !ok || r.ID != "rc-1" || r.Conv != rcptAB {
		t.Fatalf("receipts: got %s", servertest.Describe(f))
	}
	check(alice, map[string][2]int64{"alice": {0, 0}, "bob": {0, 0}})
	check(bob, map[string][2]int64{"alice": {0, 0}, "bob": {0, 0}})

	rcptSendN(t, alice, rcptAB, 2, bob)
	rcptOK(t, bob, rcptDelivered(rcptAB, 1))
	check(bob, map[string][2]int64{"alice": {2, 2}, "bob": {1, 0}})

	carol.RequestError(&protocol.ReceiptsRequest{Conv: rcptAB}, protocol.CodeForbidden)
	for _, bad := range []string{"", "d:bob:alice", "d:alice:alice", "d:alice", "x:alice:bob", "biz:shop", "d:Alice:bob", "g:"} {
		alice.RequestError(&protocol.ReceiptsRequest{Conv: bad}, protocol.CodeInvalid)
	}
}

// A mark frame naming a conversation the caller is not in is forbidden as a
// whole: its valid marks are not applied either, and no status is pushed.
func TestMarkForbiddenConvChangesNothing(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	carol := env.DialOnline(t, "carol", "laptop")
	rcptSendN(t, alice, rcptAB, 3, bob)
	rcptSendN(t, alice, "d:alice:carol", 2, carol)

	frames := []protocol.Frame{
		&protocol.Delivered{Marks: []protocol.Mark{{Conv: rcptAB, Seq: 3}, {Conv: "d:alice:carol", Seq: 2}}},
		&protocol.Delivered{Marks: []protocol.Mark{{Conv: "d:alice:carol", Seq: 2}, {Conv: rcptAB, Seq: 3}}},
		&protocol.Read{Marks: []protocol.Mark{{Conv: rcptAB, Seq: 3}, {Conv: "d:alice:carol", Seq: 2}}},
		&protocol.Read{Marks: []protocol.Mark{{Conv: rcptAB, Seq: 2}, {Conv: "d:carol:dave", Seq: 1}}},
	}
	for _, f := range frames {
		bob.RequestError(f, protocol.CodeForbidden)
		rcptNoStatus(t, alice, bob, carol)
		rcptWant(t, alice, rcptAB, "bob", 0, 0)
		rcptWant(t, alice, "d:alice:carol", "carol", 0, 0)
	}
	// The same marks without the foreign conversation do apply.
	rcptOK(t, bob, rcptDelivered(rcptAB, 3))
	rcptWant(t, alice, rcptAB, "bob", 3, 0)
}

// Mark frames that fail validation are refused and change nothing.
func TestMarkValidation(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	rcptSendN(t, alice, rcptAB, 2, bob)

	for _, typ := range []string{"delivered", "read"} {
		raw := map[string]string{
			"empty marks":    `"marks":[]`,
			"missing marks":  ``,
			"null marks":     `"marks":null`,
			"reversed conv":  `"marks":[{"conv":"d:bob:alice","seq":1}]`,
			"self conv":      `"marks":[{"conv":"d:bob:bob","seq":1}]`,
			"garbage conv":   `"marks":[{"conv":"nonsense","seq":1}]`,
			"empty conv":     `"marks":[{"conv":"","seq":1}]`,
			"biz conv":       `"marks":[{"conv":"biz:shop","seq":1}]`,
			"negative seq":   `"marks":[{"conv":"d:alice:bob","seq":-1}]`,
			"one bad of two": `"marks":[{"conv":"d:alice:bob","seq":2},{"conv":"d:bob:alice","seq":2}]`,
		}
		for name, marks := range raw {
			id := typ + "-" + strings.ReplaceAll(name, " ", "-")
			frame := `{"type":"` + typ + `","id":"` + id + `"`
			if marks != "" {
				frame += "," + marks
			}
			bob.WriteRaw([]byte(frame + "}"))
			f := bob.Expect("answer to "+id, func(f protocol.Frame) bool { return servertest.RequestID(f) == id })
			e, ok := f.(*protocol.ErrorFrame)
			if !ok || e.Code != protocol.CodeInvalid {
				t.Errorf("%s with %s: want error invalid, got %s", typ, name, servertest.Describe(f))
			}
		}
		rcptNoStatus(t, alice, bob)
		rcptWant(t, alice, rcptAB, "bob", 0, 0)
	}

	// A frame carries any number of marks: the frame size bounds them.
	many := make([]protocol.Mark, 1500)
	for i := range many {
		many[i] = protocol.Mark{Conv: rcptAB, Seq: int64(i % 3)}
	}
	bob.RequestOK(&protocol.Delivered{Marks: many})
	rcptWant(t, alice, rcptAB, "bob", 2, 0)
}
