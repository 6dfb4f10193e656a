package chat

import (
	"context"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/hub"
	"github.com/imcore/im/server/store"
)

// Send stores a message and pushes it to every device of every member but
// the sending one. It answers once the message is durable. A repeated
// (conv, msg_id) is answered with the original seq and pushed to nobody.
func (s *Service) Send(ctx context.Context, c Caller, f *protocol.Send) (*protocol.Sent, *protocol.Error) {
	if perr := f.Validate(s.limits); perr != nil {
		return nil, perr
	}
	conv, _ := protocol.ParseConv(f.Conv)
	members, perr := s.members(conv, c.User)
	if perr != nil {
		return nil, perr
	}
	// Recipients with no connected device get a pending row in the same
	// atomic write as the message (seed 001).
	var offline []string
	for _, m := range members {
		if m != c.User && !s.push.Online(m) {
			offline = append(offline, m)
		}
	}
	res, err := s.store.Append(ctx, store.AppendRequest{
		Msg:     protocol.Message{Conv: f.Conv, MsgID: f.MsgID, From: c.User, Body: f.Body, ClientTS: f.ClientTS},
		Members: members,
		Offline: offline,
	})
	if err != nil {
		return nil, s.internal("send", err, "conv", f.Conv, "msg_id", f.MsgID)
	}
	if !res.Duplicate {
		s.fanOut(ctx, c, res.Msg, members, offline)
		if res.Ticks != nil {
			s.pushStatus(f.Conv, members, *res.Ticks)
		}
	}
	return &protocol.Sent{Ref: f.Ref, Conv: f.Conv, MsgID: f.MsgID, Seq: res.Msg.Seq, ServerTS: res.Msg.ServerTS}, nil
}

// fanOut pushes a stored message to the members' devices. A recipient that
// was online when the message was stored but whose devices all went away
// since gets its pending row now.
func (s *Service) fanOut(ctx context.Context, c Caller, m protocol.Message, members, offline []string) {
	p := hub.Push{Frame: protocol.MustEncode(&protocol.MsgPush{Msg: m}), Conv: m.Conv, Seq: m.Seq}
	for _, member := range members {
		n := s.push.Push(member, p, c.Device)
		if n > 0 || member == c.User || contains(offline, member) {
			continue
		}
		if err := s.store.EnsurePending(ctx, member, m.Conv); err != nil {
			s.log.Error("keep pending after failed push", "user", member, "conv", m.Conv, "err", err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
