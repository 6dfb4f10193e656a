package servertest

import (
	"fmt"
	"slices"

	"github.com/imcore/im/protocol"
)

// SendMsg sends body in conv and returns the message object as stored.
// Every client in others must be pushed exactly that message; it is taken
// by msg_id, so a repeat (a connection's replay of its pending deliveries
// can push again a message that raced with its connecting) is left alone.
func (c *Client) SendMsg(conv, body string, others ...*Client) protocol.Message {
	c.T.Helper()
	m := protocol.Message{Conv: conv, MsgID: "m-" + c.User + "-" + c.Env.ID(), From: c.User, Body: body, ClientTS: 1_700_000_000_000}
	f := c.RequestOK(&protocol.Send{Conv: conv, MsgID: m.MsgID, Body: body, ClientTS: m.ClientTS})
	sent, ok := f.(*protocol.Sent)
	if !ok || sent.Conv != conv || sent.MsgID != m.MsgID || sent.Seq <= 0 || sent.ServerTS == 0 {
		c.T.Fatalf("send: got %s", Describe(f))
	}
	m.Seq, m.ServerTS = sent.Seq, sent.ServerTS
	for _, o := range others {
		got := o.Expect("msg "+m.MsgID, func(f protocol.Frame) bool {
			p, ok := f.(*protocol.MsgPush)
			return ok && p.Msg.Conv == conv && p.Msg.MsgID == m.MsgID
		}).(*protocol.MsgPush).Msg
		if got != m {
			c.T.Fatalf("%s/%s got msg %+v, want %+v", o.User, o.Device, got, m)
		}
	}
	return m
}

// SendN sends n messages from c in conv, each as SendMsg does, and returns
// the last.
func (c *Client) SendN(conv string, n int, others ...*Client) protocol.Message {
	c.T.Helper()
	var m protocol.Message
	for i := range n {
		m = c.SendMsg(conv, fmt.Sprint("hello ", i), others...)
	}
	return m
}

// ExpectSeqs requires the next msg pushes of conv on c to be exactly seqs
// from..to, in order, sent by sender, and returns them.
func (c *Client) ExpectSeqs(conv, sender string, from, to int64) []protocol.Message {
	c.T.Helper()
	var out []protocol.Message
	for seq := from; seq <= to; seq++ {
		m := c.ExpectMsg(conv)
		if m.Seq != seq || m.From != sender {
			c.T.Fatalf("%s/%s: msg %s seq %d from %s, want seq %d from %s", c.User, c.Device, conv, m.Seq, m.From, seq, sender)
		}
		out = append(out, m)
	}
	return out
}

// ExpectLive requires c to be pushed seqs from..to of conv, sent by sender,
// as live pushes to a connected device. It takes them by seq, so it
// tolerates a repeat: a connection's replay of its pending deliveries runs
// alongside live pushes and can push again a message that arrived just
// after the connection did.
func (c *Client) ExpectLive(conv, sender string, from, to int64) {
	c.T.Helper()
	for seq := from; seq <= to; seq++ {
		f := c.Expect(fmt.Sprintf("msg %s seq %d", conv, seq), func(f protocol.Frame) bool {
			m, ok := f.(*protocol.MsgPush)
			return ok && m.Msg.Conv == conv && m.Msg.Seq == seq
		})
		if m := f.(*protocol.MsgPush).Msg; m.From != sender {
			c.T.Fatalf("%s/%s: msg %s seq %d from %s, want from %s", c.User, c.Device, conv, seq, m.From, sender)
		}
	}
}

// History asks for a page of history.
func (c *Client) History(h protocol.History) *protocol.Messages {
	c.T.Helper()
	f := c.RequestOK(&h)
	page, ok := f.(*protocol.Messages)
	if !ok {
		c.T.Fatalf("history: want messages, got %s", Describe(f))
	}
	return page
}

// WantHistory requires a history page to hold exactly seqs, and returns
// its messages.
func (c *Client) WantHistory(h protocol.History, hasMore bool, seqs ...int64) []protocol.Message {
	c.T.Helper()
	page := c.History(h)
	if got := Seqs(page.Messages); !slices.Equal(got, seqs) || page.HasMore != hasMore || page.Conv != h.Conv {
		c.T.Fatalf("%s/%s history %s: seqs %v has_more %v, want seqs %v has_more %v", c.User, c.Device, JSON(h), got, page.HasMore, seqs, hasMore)
	}
	return page.Messages
}

// After is the history request for the messages of conv after seq after,
// 200 at most.
func After(conv string, after int64) protocol.History {
	return protocol.History{Conv: conv, AfterSeq: &after, Limit: 200}
}

// NewestSeq returns the newest seq of conv as c sees it (0 for none).
func (c *Client) NewestSeq(conv string) int64 {
	c.T.Helper()
	page := c.History(protocol.History{Conv: conv, Limit: 1})
	if len(page.Messages) == 0 {
		return 0
	}
	return page.Messages[0].Seq
}

// Seqs returns the seqs of msgs, in their order.
func Seqs(msgs []protocol.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return out
}

// SeqRange returns from, from+1, ..., to (nil when to < from).
func SeqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}
