package chat

import (
	"context"
	"errors"

	"github.com/imcore/im/protocol"
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
	var res store.AppendResult
	members, perr := s.withMembers(ctx, conv, c.User, func(members memberList) error {
		var err error
		res, err = s.store.Append(ctx, store.AppendRequest{
			Msg:            protocol.Message{Conv: f.Conv, MsgID: f.MsgID, From: c.User, Body: f.Body, ClientTS: f.ClientTS},
			Members:        members.users,
			MembersVersion: members.version,
		})
		return err
	})
	if perr != nil {
		return nil, perr
	}
	if errors.Is(members.err, store.ErrMsgIDTaken) {
		return nil, protocol.Errorf(protocol.CodeInvalid, "msg_id already used: %q names another user's message in %s", f.MsgID, f.Conv)
	}
	if err := members.err; err != nil {
		return nil, s.internal("send", err, "conv", f.Conv, "msg_id", f.MsgID)
	}
	if !res.Duplicate {
		to := res.Members // the members the message was stored for
		if to == nil {
			to = members.users
		}
		s.fanOut(c, res.Msg, to)
		if res.Ticks != nil {
			s.pushStatus(f.Conv, to, *res.Ticks)
		}
	}
	return &protocol.Sent{Ref: f.Ref, Conv: f.Conv, MsgID: f.MsgID, Seq: res.Msg.Seq, ServerTS: res.Msg.ServerTS}, nil
}

// fanOut pushes a stored message to every device of every member but the
// sending one. Delivery needs no bookkeeping here: the message stays pending
// for each recipient until one of its devices marks it delivered.
func (s *Service) fanOut(c Caller, m protocol.Message, members []string) {
	p := msgPush(m)
	for _, member := range members {
		s.push.Push(member, p, c.Device)
	}
}
