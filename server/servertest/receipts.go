package servertest

import (
	"slices"

	"github.com/imcore/im/protocol"
)

// Mark is the mark of conv up to seq.
func Mark(conv string, seq int64) protocol.Mark { return protocol.Mark{Conv: conv, Seq: seq} }

// Delivered is a delivered frame of marks.
func Delivered(marks ...protocol.Mark) *protocol.Delivered {
	return &protocol.Delivered{Marks: marks}
}

// Read is a read frame of marks.
func Read(marks ...protocol.Mark) *protocol.Read { return &protocol.Read{Marks: marks} }

// Receipt is one member's boundaries as a receipts answer lists them.
func Receipt(user string, delivered, read int64) protocol.MemberReceipt {
	return protocol.MemberReceipt{User: user, DeliveredSeq: delivered, ReadSeq: read}
}

// Ticks are the boundaries of a status or a session's ticks.
func Ticks(delivered, read int64) *protocol.Ticks {
	return &protocol.Ticks{DeliveredSeq: delivered, ReadSeq: read}
}

// MarkOK sends a delivered or read frame with an id and requires ok.
func (c *Client) MarkOK(f protocol.Frame) {
	c.T.Helper()
	if answer := c.RequestOK(f); answer.FrameType() != "ok" {
		c.T.Fatalf("%s: want ok, got %s", f.FrameType(), Describe(answer))
	}
}

// MarkDelivered marks conv delivered up to seq and requires ok.
func (c *Client) MarkDelivered(conv string, seq int64) {
	c.T.Helper()
	c.MarkOK(Delivered(Mark(conv, seq)))
}

// MarkRead marks conv read up to seq and requires ok.
func (c *Client) MarkRead(conv string, seq int64) {
	c.T.Helper()
	c.MarkOK(Read(Mark(conv, seq)))
}

// receipts asks for conv's receipts and checks what every answer must
// satisfy: it names conv, lists each member once, and no member has read
// beyond what it has delivered.
func (c *Client) receipts(conv string) []protocol.MemberReceipt {
	c.T.Helper()
	f := c.RequestOK(&protocol.ReceiptsRequest{Conv: conv})
	r, ok := f.(*protocol.ReceiptsReply)
	if !ok {
		c.T.Fatalf("receipts %s: want receipts, got %s", conv, Describe(f))
	}
	if r.Conv != conv {
		c.T.Fatalf("receipts answer names conv %q, want %q", r.Conv, conv)
	}
	seen := make(map[string]bool, len(r.Members))
	for _, m := range r.Members {
		if seen[m.User] {
			c.T.Fatalf("receipts %s lists %s twice: %+v", conv, m.User, r.Members)
		}
		seen[m.User] = true
		if m.ReadSeq > m.DeliveredSeq {
			c.T.Fatalf("receipts %s: %s has read_seq %d above delivered_seq %d", conv, m.User, m.ReadSeq, m.DeliveredSeq)
		}
	}
	return r.Members
}

// Receipts asks for conv's receipts and returns them by user.
func (c *Client) Receipts(conv string) map[string]protocol.MemberReceipt {
	c.T.Helper()
	members := c.receipts(conv)
	out := make(map[string]protocol.MemberReceipt, len(members))
	for _, m := range members {
		out[m.User] = m
	}
	return out
}

// WantReceipt requires user's boundaries in conv to be delivered and read.
func (c *Client) WantReceipt(conv, user string, delivered, read int64) {
	c.T.Helper()
	got, ok := c.Receipts(conv)[user]
	if !ok {
		c.T.Fatalf("receipts %s: %s missing", conv, user)
	}
	if got.DeliveredSeq != delivered || got.ReadSeq != read {
		c.T.Fatalf("receipts %s: %s at delivered %d read %d, want delivered %d read %d",
			conv, user, got.DeliveredSeq, got.ReadSeq, delivered, read)
	}
}

// WantReceipts requires the receipts of conv to be exactly want, in order.
func (c *Client) WantReceipts(conv string, want ...protocol.MemberReceipt) {
	c.T.Helper()
	if got := c.receipts(conv); !slices.Equal(got, want) {
		c.T.Fatalf("receipts %s:\n got %s\nwant %s", conv, JSON(got), JSON(want))
	}
}

// WantStatus requires every client to have been pushed exactly the one
// status of conv with ticks (none at all when ticks is nil); other pushes
// are not looked at, and are dropped. The server queues the status pushes
// a mark or a send causes before its answer, so they are in by the time
// of the barrier.
func WantStatus(conv string, ticks *protocol.Ticks, clients ...*Client) {
	for _, c := range clients {
		c.T.Helper()
		var got []protocol.Status
		for _, f := range c.Barrier() {
			if s, ok := f.(*protocol.Status); ok {
				got = append(got, *s)
			}
		}
		wantStatus(c, c.User+"/"+c.Device, conv, ticks, got)
	}
}

// WantNoStatus requires that no status (of any conversation) reached any
// of the clients: WantStatus with nil ticks.
func WantNoStatus(clients ...*Client) {
	for _, c := range clients {
		c.T.Helper()
	}
	WantStatus("", nil, clients...)
}

// wantStatus checks the status pushes got that reached c (who).
func wantStatus(c *Client, who, conv string, ticks *protocol.Ticks, got []protocol.Status) {
	c.T.Helper()
	switch {
	case ticks == nil && len(got) > 0:
		c.T.Fatalf("%s: want no status, got %s", who, JSON(got))
	case ticks != nil:
		want := protocol.Status{Conv: conv, DeliveredSeq: ticks.DeliveredSeq, ReadSeq: ticks.ReadSeq}
		if len(got) != 1 || got[0] != want {
			c.T.Fatalf("%s: got status %s, want exactly %s", who, JSON(got), JSON(want))
		}
	}
}
