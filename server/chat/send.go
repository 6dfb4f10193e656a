package chat

import (
	"context"
	"errors"

	"github.com/imcore/im/protocol"
	"github.com/imcore/im/server/store"
)

// maxMembershipRetries bounds how often a group write is tried again when
// the members changed between reading them and writing.
const maxMembershipRetries = 8

// Send stores a message and pushes it to every device of every member but
// the sending one. It answers once the message is durable. A repeated
// (conv, msg_id) is answered with the original seq and pushed to nobody.
func (s *Service) Send(ctx context.Context, c Caller, f *protocol.Send) (*protocol.Sent, *protocol.Error) {
	if perr := f.Validate(s.limits); perr != nil {
		return nil, perr
	}
	conv, _ := protocol.ParseConv(f.Conv)
	var (
		res     store.AppendResult
		members memberList
	)
	for attempt := 0; ; attempt++ {
		var perr *protocol.Error
		if members, perr = s.members(ctx, conv, c.User); perr != nil {
			return nil, perr
		}
		// The append writes every member's session: hold their locks, taken
		// in sorted order (every path that holds several does the same).
		err := s.withUserLocks(ctx, members.users, func() error {
			var err error
			res, err = s.store.Append(ctx, store.AppendRequest{
				Msg:            protocol.Message{Conv: f.Conv, MsgID: f.MsgID, From: c.User, Body: f.Body, ClientTS: f.ClientTS},
				Members:        members.users,
				MembersVersion: members.version,
			})
			return err
		})
		if errors.Is(err, store.ErrStaleMembers) && attempt < maxMembershipRetries {
			continue // the members changed meanwhile: check membership again
		}
		if err != nil {
			return nil, s.internal("send", err, "conv", f.Conv, "msg_id", f.MsgID)
		}
		break
	}
	if !res.Duplicate {
		s.fanOut(c, res.Msg, members.users)
		if res.Ticks != nil {
			s.pushStatus(f.Conv, members.users, *res.Ticks)
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
