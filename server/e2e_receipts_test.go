package server_test

// End-to-end tests of PROTOCOL.md "Receipts and ticks" (the source
// design's status table: two tick boundaries per user and conversation,
// and the status the minimum over members).

import (
	"strings"
	"testing"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/servertest"
)

const rcptAB = "d:alice:bob"

// With an id a mark is answered ok; without one it is applied and answered
// with nothing at all.
func TestMarkAnsweredOnlyWithID(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	alice.SendN(rcptAB, 4, bob)

	bob.MarkOK(&protocol.Delivered{Ref: protocol.Ref{ID: "d-1"}, Marks: []protocol.Mark{{Conv: rcptAB, Seq: 1}}})
	bob.MarkOK(&protocol.Read{Ref: protocol.Ref{ID: "r-1"}, Marks: []protocol.Mark{{Conv: rcptAB, Seq: 1}}})

	isAnswer := func(f protocol.Frame) bool {
		return f.FrameType() == "ok" || f.FrameType() == "error" || servertest.RequestID(f) != ""
	}
	bob.Write(servertest.Delivered(servertest.Mark(rcptAB, 3)))
	bob.ExpectNone("answer to a delivered without id", isAnswer)
	// The frame was applied, not dropped: frames of one connection are
	// handled in order, so the barrier above came after it.
	bob.WantReceipt(rcptAB, "bob", 3, 1)

	bob.Write(servertest.Read(servertest.Mark(rcptAB, 2)))
	bob.ExpectNone("answer to a read without id", isAnswer)
	bob.WantReceipt(rcptAB, "bob", 3, 2)
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

	aliceLaptop.SendN(rcptAB, 3, alicePhone, bobLaptop, bobPhone)
	// Alice's sends move only her own boundaries; bob still holds the
	// minimum at 0, so no status yet.
	servertest.WantNoStatus(append(all, carol)...)

	bobLaptop.MarkDelivered(rcptAB, 3)
	servertest.WantStatus(rcptAB, servertest.Ticks(3, 0), all...) // exactly one each
	servertest.WantNoStatus(carol)

	bobPhone.MarkRead(rcptAB, 2)
	servertest.WantStatus(rcptAB, servertest.Ticks(3, 2), all...)
	servertest.WantNoStatus(carol)

	bobLaptop.MarkRead(rcptAB, 3)
	servertest.WantStatus(rcptAB, servertest.Ticks(3, 3), all...)
	servertest.WantNoStatus(carol)
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

	aliceLaptop.SendN(rcptAB, 3, alicePhone, bobLaptop, bobPhone)
	bobLaptop.MarkDelivered(rcptAB, 2)
	servertest.WantStatus(rcptAB, servertest.Ticks(2, 0), all...)

	noRise := []struct {
		name string
		f    protocol.Frame
	}{
		{"repeated delivered", servertest.Delivered(servertest.Mark(rcptAB, 2))},
		{"lower delivered", servertest.Delivered(servertest.Mark(rcptAB, 1))},
		{"delivered 0", servertest.Delivered(servertest.Mark(rcptAB, 0))},
		{"read 0", servertest.Read(servertest.Mark(rcptAB, 0))},
	}
	for _, c := range noRise {
		bobPhone.MarkOK(c.f)
		servertest.WantNoStatus(all...)
		aliceLaptop.WantReceipt(rcptAB, "bob", 2, 0)
	}

	// Above the newest seq: clamped to 3, a rise.
	bobLaptop.MarkDelivered(rcptAB, 50)
	servertest.WantStatus(rcptAB, servertest.Ticks(3, 0), all...)
	// Again: still clamped to 3, no rise.
	bobLaptop.MarkDelivered(rcptAB, 50)
	servertest.WantNoStatus(all...)

	// Alice marking her own conversation changes none of her boundaries
	// (sending implied reading), so the minimum cannot rise.
	aliceLaptop.MarkRead(rcptAB, 3)
	servertest.WantNoStatus(all...)

	// One frame, two conversations: d:bob:carol holds no message, so its
	// mark clamps to 0 and rises nothing; d:alice:bob's read rises. Two
	// marks for one conversation count as the highest.
	bobPhone.MarkOK(&protocol.Read{Marks: []protocol.Mark{
		{Conv: rcptAB, Seq: 1}, {Conv: "d:bob:carol", Seq: 5}, {Conv: rcptAB, Seq: 2},
	}})
	// Exactly one status: neither a second one for d:alice:bob nor one for
	// d:bob:carol.
	servertest.WantStatus(rcptAB, servertest.Ticks(3, 2), all...)
	bobPhone.WantReceipt("d:bob:carol", "bob", 0, 0)

	// A read at the level already read is not a rise either.
	bobLaptop.MarkRead(rcptAB, 2)
	servertest.WantNoStatus(all...)
}

// Boundaries only go up, are clamped to the newest seq, and read implies
// delivered.
func TestMarkBoundaries(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	carol := env.DialOnline(t, "carol", "laptop")

	alice.SendN(rcptAB, 3, bob)
	alice.WantReceipt(rcptAB, "alice", 3, 3) // sending implies reading
	alice.WantReceipt(rcptAB, "bob", 0, 0)

	bob.MarkDelivered(rcptAB, 100)
	alice.WantReceipt(rcptAB, "bob", 3, 0) // clamped to the newest seq
	bob.MarkDelivered(rcptAB, 1)
	alice.WantReceipt(rcptAB, "bob", 3, 0) // a lower mark is ignored
	bob.MarkRead(rcptAB, 2)
	alice.WantReceipt(rcptAB, "bob", 3, 2)
	bob.MarkRead(rcptAB, 1)
	alice.WantReceipt(rcptAB, "bob", 3, 2) // read never goes down either

	// The clamp is real: a message stored after a too-high mark is not
	// covered by it.
	alice.SendN(rcptAB, 1, bob)
	alice.WantReceipt(rcptAB, "bob", 3, 2)
	bob.MarkRead(rcptAB, 1000)
	alice.WantReceipt(rcptAB, "bob", 4, 4) // read clamped, delivered follows

	// Read implies delivered.
	const convAC = "d:alice:carol"
	alice.SendN(convAC, 5, carol)
	carol.MarkDelivered(convAC, 1)
	alice.WantReceipt(convAC, "carol", 1, 0)
	carol.MarkRead(convAC, 3)
	alice.WantReceipt(convAC, "carol", 3, 3)
	carol.MarkDelivered(convAC, 2)
	alice.WantReceipt(convAC, "carol", 3, 3)
	carol.MarkDelivered(convAC, 4)
	alice.WantReceipt(convAC, "carol", 4, 3)
	carol.MarkRead(convAC, 99)
	alice.WantReceipt(convAC, "carol", 5, 5)
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

	last := aliceLaptop.SendN(rcptAB, 3, alicePhone, bobLaptop, bobPhone).Seq
	servertest.WantNoStatus(all...)

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
	servertest.WantStatus(rcptAB, servertest.Ticks(last, last), all...)
	aliceLaptop.WantReceipt(rcptAB, "bob", reply.Seq, reply.Seq)
	aliceLaptop.WantReceipt(rcptAB, "alice", last, last)

	// Alice reading the reply brings both minima to 4.
	alicePhone.MarkRead(rcptAB, reply.Seq)
	servertest.WantStatus(rcptAB, servertest.Ticks(reply.Seq, reply.Seq), all...)
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
		got := who.Receipts(rcptAB)
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

	alice.SendN(rcptAB, 2, bob)
	bob.MarkDelivered(rcptAB, 1)
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
	alice.SendN(rcptAB, 3, bob)
	alice.SendN("d:alice:carol", 2, carol)

	frames := []protocol.Frame{
		&protocol.Delivered{Marks: []protocol.Mark{{Conv: rcptAB, Seq: 3}, {Conv: "d:alice:carol", Seq: 2}}},
		&protocol.Delivered{Marks: []protocol.Mark{{Conv: "d:alice:carol", Seq: 2}, {Conv: rcptAB, Seq: 3}}},
		&protocol.Read{Marks: []protocol.Mark{{Conv: rcptAB, Seq: 3}, {Conv: "d:alice:carol", Seq: 2}}},
		&protocol.Read{Marks: []protocol.Mark{{Conv: rcptAB, Seq: 2}, {Conv: "d:carol:dave", Seq: 1}}},
	}
	for _, f := range frames {
		bob.RequestError(f, protocol.CodeForbidden)
		servertest.WantNoStatus(alice, bob, carol)
		alice.WantReceipt(rcptAB, "bob", 0, 0)
		alice.WantReceipt("d:alice:carol", "carol", 0, 0)
	}
	// The same marks without the foreign conversation do apply.
	bob.MarkDelivered(rcptAB, 3)
	alice.WantReceipt(rcptAB, "bob", 3, 0)
}

// Mark frames that fail validation are refused and change nothing.
func TestMarkValidation(t *testing.T) {
	env := servertest.Start(t)
	alice := env.DialOnline(t, "alice", "laptop")
	bob := env.DialOnline(t, "bob", "laptop")
	alice.SendN(rcptAB, 2, bob)

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
		servertest.WantNoStatus(alice, bob)
		alice.WantReceipt(rcptAB, "bob", 0, 0)
	}

	// A frame carries any number of marks: the frame size bounds them.
	many := make([]protocol.Mark, 1500)
	for i := range many {
		many[i] = protocol.Mark{Conv: rcptAB, Seq: int64(i % 3)}
	}
	bob.RequestOK(&protocol.Delivered{Marks: many})
	alice.WantReceipt(rcptAB, "bob", 2, 0)
}
