package servertest

import (
	"github.com/imcore/im/protocol"
)

// Reply sends body in conv as a reply to seq replyTo and returns the
// message as stored; every client in others must be pushed it.
func (c *Client) Reply(conv, body string, replyTo int64, others ...*Client) protocol.Message {
	c.T.Helper()
	return c.sendRelated(protocol.Send{Conv: conv, Body: body, ReplyTo: replyTo}, others)
}

// Relate sends a relation entry of kind (protocol.KindEdit, KindDelete,
// KindReaction) on seq ref of conv with body, and returns the entry as
// stored; every client in others must be pushed it.
func (c *Client) Relate(conv, kind string, ref int64, body string, others ...*Client) protocol.Message {
	c.T.Helper()
	return c.sendRelated(protocol.Send{Conv: conv, Body: body, Kind: kind, RefSeq: ref}, others)
}

// RelateError sends a relation entry as Relate does and requires the
// error code as its answer.
func (c *Client) RelateError(conv, kind string, ref int64, body string, code protocol.Code) *protocol.ErrorFrame {
	c.T.Helper()
	return c.RequestError(&protocol.Send{Conv: conv, MsgID: "m-" + c.User + "-" + c.Env.ID(), Body: body,
		ClientTS: 1_700_000_000_000, Kind: kind, RefSeq: ref}, code)
}

// sendRelated sends f (its msg_id and client_ts set here) and returns the
// message as stored, which every client in others must be pushed.
func (c *Client) sendRelated(f protocol.Send, others []*Client) protocol.Message {
	c.T.Helper()
	f.MsgID, f.ClientTS = "m-"+c.User+"-"+c.Env.ID(), 1_700_000_000_000
	sent, ok := c.RequestOK(&f).(*protocol.Sent)
	if !ok || sent.Seq <= 0 || sent.MsgID != f.MsgID {
		c.T.Fatalf("send %s: got %v", JSON(f), sent)
	}
	m := protocol.Message{Conv: f.Conv, Seq: sent.Seq, MsgID: f.MsgID, From: c.User, Body: f.Body, ClientTS: f.ClientTS,
		ServerTS: sent.ServerTS, Kind: f.Kind, ReplyTo: f.ReplyTo, RefSeq: f.RefSeq}
	for _, o := range others {
		got := o.Expect("msg "+m.MsgID, func(g protocol.Frame) bool {
			p, ok := g.(*protocol.MsgPush)
			return ok && p.Msg.Conv == m.Conv && p.Msg.MsgID == m.MsgID
		}).(*protocol.MsgPush).Msg
		if JSON(got) != JSON(m) {
			c.T.Fatalf("%s/%s got msg %s, want %s", o.User, o.Device, JSON(got), JSON(m))
		}
	}
	return m
}

// MessageAt returns the message at seq of conv as history shows it to c.
func (c *Client) MessageAt(conv string, seq int64) protocol.Message {
	c.T.Helper()
	page := c.History(protocol.History{Conv: conv, BeforeSeq: seq + 1, Limit: 1})
	if len(page.Messages) != 1 || page.Messages[0].Seq != seq {
		c.T.Fatalf("%s: history has no message %d of %s: %s", c.User, seq, conv, JSON(page.Messages))
	}
	return page.Messages[0]
}
