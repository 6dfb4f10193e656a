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
	if perr := f.ValidateRelation(s.limits); perr != nil {
		return nil, perr
	}
	conv, _ := protocol.ParseConv(f.Conv)
	if perr := s.checkNotBlocked(ctx, conv, c.User); perr != nil {
		return nil, perr
	}
	if perr := s.checkPointsAtReadable(ctx, conv, c.User, f); perr != nil {
		return nil, perr
	}
	var res store.AppendResult
	members, perr := s.withMembers(ctx, conv, c.User, func(members memberList) error {
		var err error
		res, err = s.store.Append(ctx, appendRequest(c, f, members))
		return err
	})
	if perr != nil {
		return nil, perr
	}
	return s.finishSend(c, f, members.users, res, members.err)
}

// StartSend is Send in two steps: it queues the message and returns what
// finishes it — finish waits until the message is durable, pushes it and
// returns the answer. Sends to direct chats started one after another
// take their seqs in that order while their writes overlap; a send to a
// group is stored before StartSend returns (its membership is checked
// under the group's gate).
func (s *Service) StartSend(ctx context.Context, c Caller, f *protocol.Send) (finish func() (*protocol.Sent, *protocol.Error)) {
	answered := func(sent *protocol.Sent, perr *protocol.Error) func() (*protocol.Sent, *protocol.Error) {
		return func() (*protocol.Sent, *protocol.Error) { return sent, perr }
	}
	if perr := f.ValidateRelation(s.limits); perr != nil {
		return answered(nil, perr)
	}
	conv, _ := protocol.ParseConv(f.Conv)
	if conv.Kind != protocol.ConvDirect {
		return answered(s.Send(ctx, c, f))
	}
	members, perr := s.members(ctx, conv, c.User)
	if perr != nil {
		return answered(nil, perr)
	}
	if perr := s.checkNotBlocked(ctx, conv, c.User); perr != nil {
		return answered(nil, perr)
	}
	wait := s.store.StartAppend(ctx, appendRequest(c, f, members))
	return func() (*protocol.Sent, *protocol.Error) {
		res, err := wait()
		return s.finishSend(c, f, members.users, res, err)
	}
}

// appendRequest is the store's request for f from c.
func appendRequest(c Caller, f *protocol.Send, members memberList) store.AppendRequest {
	return store.AppendRequest{
		Msg: protocol.Message{Conv: f.Conv, MsgID: f.MsgID, From: c.User, Body: f.Body, ClientTS: f.ClientTS,
			Kind: f.Kind, ReplyTo: f.ReplyTo, RefSeq: f.RefSeq},
		Members:        members.users,
		MembersVersion: members.version,
	}
}

// finishSend pushes a message the store took (unless a duplicate) and
// returns the answer to its send; err is the store's.
func (s *Service) finishSend(c Caller, f *protocol.Send, members []string, res store.AppendResult, err error) (*protocol.Sent, *protocol.Error) {
	var refusal *store.Refusal
	if errors.As(err, &refusal) {
		// The target does not allow it (relations): nothing was stored.
		return nil, protocol.Errorf(refusal.Code, "%s", refusal.Reason)
	}
	if errors.Is(err, store.ErrMsgIDTaken) {
		return nil, protocol.Errorf(protocol.CodeInvalid, "msg_id already used: %q names another user's message in %s", f.MsgID, f.Conv)
	}
	if err != nil {
		return nil, s.internal("send", err, "conv", f.Conv, "msg_id", f.MsgID)
	}
	if !res.Duplicate || c.Repeat {
		to := res.Members // the members the message was stored for
		if to == nil {
			to = members
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

// checkPointsAtReadable refuses a reply or relation entry in a group that
// points at a message from before the sender joined it: one it cannot
// read is, for it, no message of the conversation. The rest of the
// target's rules are the store's (engine/relations.go), where the target
// is read as it stands.
func (s *Service) checkPointsAtReadable(ctx context.Context, conv protocol.Conv, user string, f *protocol.Send) *protocol.Error {
	target := max(f.ReplyTo, f.RefSeq)
	if target == 0 || conv.Kind != protocol.ConvGroup {
		return nil
	}
	joined, perr := s.checkMember(ctx, conv, user)
	if perr != nil {
		return perr
	}
	if target < joined {
		return protocol.Errorf(protocol.CodeInvalid, "%d names no message of %s that you can read", target, conv)
	}
	return nil
}
